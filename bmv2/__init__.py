"""BMv2 (p4lang's behavioral model) as a second target for the project's P4 programs.

The project only *uses* p4c and BMv2 where a user installed them; nothing here
builds them. ``tools`` finds them (PATH, or the environment variables it
documents) and names what is missing; ``compiler`` runs ``p4c-bm2-ss`` with a
cache keyed by the preprocessed source; ``process`` starts and stops
``simple_switch_grpc``; ``dataplane`` and ``switch`` drive a running BMv2 through
the same calls as softswitch's ``Switch`` (docs/softswitch-api.md), so that the
packet tests run unchanged on both targets (docs/bmv2.md).
"""

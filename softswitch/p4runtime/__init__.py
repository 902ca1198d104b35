"""P4Runtime v1 server for the softswitch (gRPC, p4runtime protos shipped with finsy).

Modules: `errors` (status codes, bytestrings, the CONTINUE_ON_ERROR trailer),
`arbitration` (primary/backup election, no I/O), `digests` (DigestList batching, no
I/O), `schema` (P4Info by ID), `pipeline` / `codec` / `writes` / `reads` (entities
to and from the `Switch` API), `device` (one device: pipeline changes, packet I/O),
`pipeline_loader` (device configs), `server` (gRPC service), `gnmi` (port state).
See docs/softswitch-p4runtime.md.
"""

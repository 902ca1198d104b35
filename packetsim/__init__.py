"""Packet-level fabric simulation: ns-3's TCP hosts, every switch running sglb.p4.

Every frame that reaches a switch goes through softswitch's engine running the
real ``p4src/sglb.p4`` on ns-3's clock; every switch's SyncMesh core runs on
the same clock and programs it through the target's P4Runtime write path
(docs/packetsim.md). ``fabric-sim packet`` is the command line.
"""

from .options import LinkEvent, OptionError, SimOptions

__all__ = ["LinkEvent", "OptionError", "SimOptions"]

"""The boundary between the SyncMesh daemon and its switch.

Everything the daemon does to or learns from its switch goes through a
``SwitchDriver``. The P4Runtime implementation (a finsy-based primary client
for ``p4src/sglb.p4``) plugs in here; ``syncmesh.sglb_mapping`` turns the
core's desired state into that program's table entries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from .switchops import OpKey, SwitchOp


class SwitchDriver(Protocol):
    """What the daemon needs from a switch connection."""

    def session(self) -> AbstractAsyncContextManager[None]:
        """Be primary controller for an ``async with`` block, with the pipeline loaded
        (kept if equal); leaving the block drops the connection, and the switch keeps
        forwarding with what it has."""

    async def reconcile(self, desired: Mapping[OpKey, SwitchOp]) -> None:
        """Read the switch's entries back and fix only what differs from ``desired``."""

    async def apply(self, ops: Sequence[SwitchOp]) -> None:
        """Write changed entries (insert or modify by key)."""

    async def read_tx_bytes(self) -> dict[int, int]:
        """Cumulative transmitted bytes per port (the program's ``port_tx`` counter)."""

    def port_events(self) -> AsyncIterator[dict[int, bool]]:
        """Port carrier changes as they happen: {port: up}."""

    async def send_port_status(self, port: int, up: bool, seq: int) -> bool:
        """Inject a port-status packet as PacketOut (targets that do not inject it themselves);
        True when one was sent. It must not wait for a table write in flight: the data
        plane's failover waits for this packet."""


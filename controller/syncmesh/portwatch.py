"""Port carrier of a switch's Linux interfaces, from rtnetlink (BMv2 and Mininet ports).

A software switch's ports are Linux interfaces; when the target does not
tell the controller about carrier changes, the daemon watches them itself.
Mininet names a switch's interfaces ``<switch>-eth<port>``, which
``mininet_names`` reproduces.

Carrier comes from ``rtnetlink.LinkWatch``, the rule softswitch and ReCCL
use too (IFF_UP and IFF_LOWER_UP); in a named network namespace the socket is
made by a thread that enters it, so no process is forked (forking a process
that runs gRPC is unsafe).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from fabricmodel import Fabric
from rtnetlink import LinkWatch


def mininet_names(fabric: Fabric, switch: str) -> dict[str, int]:
    """Interface name -> port for every used port of ``switch``, Mininet style."""
    return {f"{switch}-eth{port}": port for port in fabric.ports(switch)}


class PortWatcher:
    """Yields {port: up} for the watched interfaces: the current state first, then changes."""

    def __init__(self, ports: Mapping[str, int], netns: str | None = None):
        self.ports = dict(ports)
        self.netns = netns

    async def changes(self) -> AsyncIterator[dict[int, bool]]:
        """Carrier changes as they happen; missing interfaces count as down."""
        loop = asyncio.get_running_loop()
        # the dump blocks for a moment (and enters the namespace): off the event loop
        watch = await loop.run_in_executor(None, LinkWatch, self.netns)
        readable = asyncio.Event()
        loop.add_reader(watch.fileno(), readable.set)
        try:
            state = {port: watch.carrier(name) for name, port in self.ports.items()}
            yield dict(state)
            while True:
                await readable.wait()
                readable.clear()
                batch: dict[int, bool] = {}
                for link in watch.read():
                    port = self.ports.get(link.name) if link.name else None
                    if port is not None and state[port] != link.carrier:
                        state[port] = batch[port] = link.carrier
                if batch:
                    yield batch
        finally:
            loop.remove_reader(watch.fileno())
            watch.close()

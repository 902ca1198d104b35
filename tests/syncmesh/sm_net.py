"""Helpers for tests that run real SyncMesh daemons on loopback."""

from __future__ import annotations

import asyncio
import dataclasses

from syncmesh.config import CoreConfig
from syncmesh.daemon import Daemon, DaemonOptions
from testsupport import free_ports

from fabricmodel import Fabric, leaf_spine

TOKEN = "sm-test-secret"
FAST = CoreConfig(keepalive_interval=0.1, dead_interval=0.6, profile_period=0.3,
                  profile_threshold=0)


def loopback_fabric(*args, **kwargs) -> Fabric:
    """A generated leaf-spine fabric whose daemons listen on free loopback ports."""
    fab = leaf_spine(*args, **kwargs)
    ports = free_ports(2 * len(fab.switches))
    switches = tuple(dataclasses.replace(s, syncmesh=f"127.0.0.1:{p}", metrics=f"127.0.0.1:{m}")
                     for s, p, m in zip(fab.switches, ports[::2], ports[1::2], strict=True))
    return dataclasses.replace(fab, switches=switches)


def make_daemon(fab: Fabric, name: str, config: CoreConfig = FAST, token: str = TOKEN,
                **options) -> Daemon:
    options.setdefault("metrics", "127.0.0.1:0")
    options.setdefault("tick_interval", 0.02)
    return Daemon(fab, name, DaemonOptions(token=token, **options), config)


def agree(daemons) -> bool:
    """All daemons hold the same link view."""
    views = [d.core.link_view() for d in daemons]
    return all(v == views[0] for v in views)


async def http_get(port: int, path: str = "/metrics") -> tuple[str, str]:
    """(status line, body) of one GET on loopback."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    return head.splitlines()[0], body

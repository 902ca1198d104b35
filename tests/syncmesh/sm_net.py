"""Helpers for tests that run real SyncMesh daemons on loopback (mutual TLS by default)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from syncmesh import certs
from syncmesh.certs import TlsFiles
from syncmesh.config import CoreConfig
from syncmesh.daemon import Daemon, DaemonOptions
from syncmesh.service import Insecure

from fabricmodel import Fabric, leaf_spine
from testsupport import free_ports

TOKEN = "sm-test-secret"
FAST = CoreConfig(keepalive_interval=0.1, dead_interval=0.6, profile_period=0.3,
                  profile_stale_after=0.9, profile_threshold=0, rate_decay=0.0)


def loopback_fabric(*args, **kwargs) -> Fabric:
    """A generated leaf-spine fabric whose daemons listen on free loopback ports."""
    fab = leaf_spine(*args, **kwargs)
    ports = free_ports(2 * len(fab.switches))
    switches = tuple(dataclasses.replace(s, syncmesh=f"127.0.0.1:{p}", metrics=f"127.0.0.1:{m}")
                     for s, p, m in zip(fab.switches, ports[::2], ports[1::2], strict=True))
    return dataclasses.replace(fab, switches=switches)


def fabric_certs(fab: Fabric, directory: Path) -> Path:
    """Every switch's key and certificate, made the way `syncmesh certs` makes them."""
    certs.generate(fab, directory)
    return directory


def make_daemon(fab: Fabric, name: str, cert_dir: Path | None, config: CoreConfig = FAST,
                **options) -> Daemon:
    """A daemon with its own certificate from ``cert_dir`` (None: --insecure with TOKEN)."""
    options.setdefault("metrics", "127.0.0.1:0")
    options.setdefault("tick_interval", 0.02)
    creds = (Insecure(TOKEN, name) if cert_dir is None else TlsFiles.in_dir(cert_dir, name))
    if cert_dir is not None:
        options.setdefault("state_file", cert_dir / f"{name}.incarnation")
    return Daemon(fab, name, DaemonOptions(credentials=creds, **options), config)


def agree(daemons) -> bool:
    """All daemons hold the same link view."""
    views = [d.core.link_view() for d in daemons]
    return all(v == views[0] for v in views)


def all_peers_up(daemons) -> bool:
    """Every daemon has a session with every peer."""
    return all(len(d.core.peers.up()) == len(d.core.peer_names) for d in daemons)


async def http_get(port: int, path: str = "/metrics") -> tuple[str, str]:
    """(status line, body) of one GET on loopback."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    return head.splitlines()[0], body


class RawPeer:
    """A hand-driven Session to a daemon, as the switch ``as_switch`` (its own certificate):
    what a misbehaving member could send."""

    def __init__(self, fab: Fabric, target: str, as_switch: str, creds=None):
        from syncmesh import wire
        from syncmesh.service import PeerChannel

        self.limits = wire.limits_for(fab)
        self.channel = PeerChannel(fab.switch(target).syncmesh, target, creds,
                                   wire.max_message_bytes(fab))
        self.call = self.channel.session(wait=False)  # fail at once when refused
        self.target = target

    async def send(self, msg) -> None:
        from syncmesh import wire

        await self.call.write(msg if isinstance(msg, bytes) else wire.encode(msg))

    async def recv(self):
        """The next message from the daemon (decoded), or None at the end of the stream."""
        import grpc
        from syncmesh import wire

        data = await self.call.read()
        if data is grpc.aio.EOF:
            return None
        return wire.decode(data, self.target, self.limits)

    async def close(self) -> None:
        self.call.cancel()
        await self.channel.close()

"""In-memory delivery between real SyncMesh cores, on a virtual clock (no sockets, no sleeps).

Every pair of peers has a session, opened at start; messages are delivered
in order with the sender's name as the session's identity, as the daemon
does. A core that is ``down`` neither sends nor receives; ``restart`` opens
new sessions with its peers.
"""

from __future__ import annotations

from collections import deque

from syncmesh.core import Disconnect, Program, Send, SyncMeshCore

from fabricmodel import Fabric


class CoreNet:
    """Cores of every switch of a fabric; ``run`` delivers queued sends until quiet."""

    def __init__(self, fabric: Fabric, config=None, down: set[str] | None = None):
        self.fabric = fabric
        self.config = config
        self.down = set(down or ())
        self.cores: dict[str, SyncMeshCore] = {}
        self.queue: deque[tuple[str, Send]] = deque()
        self.programs: dict[str, list] = {}
        self.sent = 0
        self.now = 0.0
        for i, sw in enumerate(fabric.switches):
            self.cores[sw.name] = SyncMeshCore(fabric, sw.name, 1000 + i, config)
            self.programs[sw.name] = []

    def open_sessions(self, name: str) -> None:
        """Sessions between ``name`` and each of its live peers (both ends say Hello)."""
        for peer in self.cores[name].peer_names:
            if peer in self.down:
                continue
            self.handle(peer, self.cores[peer].on_peer_lost(name, self.now))
            self.handle(name, self.cores[name].on_peer_lost(peer, self.now))
            self.handle(name, self.cores[name].on_session_open(peer, self.now))
            self.handle(peer, self.cores[peer].on_session_open(name, self.now))

    def restart(self, name: str, incarnation: int) -> None:
        """Replace a core by a fresh one (the daemon restarted) and start it."""
        self.cores[name] = SyncMeshCore(self.fabric, name, incarnation, self.config)
        self.down.discard(name)
        self.handle(name, self.cores[name].start(self.now))
        self.open_sessions(name)

    def start(self) -> None:
        for name, core in self.cores.items():
            if name not in self.down:
                self.handle(name, core.start(self.now))
        for name, core in self.cores.items():
            if name not in self.down and core.is_leaf:  # the leaf opens each session
                for peer in core.peer_names:
                    if peer not in self.down:
                        self.handle(name, core.on_session_open(peer, self.now))
                        self.handle(peer, self.cores[peer].on_session_open(name, self.now))
        self.run()

    def handle(self, origin: str, actions) -> None:
        for a in actions:
            if isinstance(a, Send):
                self.queue.append((origin, a))
            elif isinstance(a, Program):
                self.programs[origin].append(a)
            elif isinstance(a, Disconnect):
                self.handle(a.peer, self.cores[a.peer].on_peer_lost(origin, self.now))

    def run(self, limit: int = 100000) -> None:
        while self.queue:
            limit -= 1
            assert limit > 0, "message storm"
            origin, send = self.queue.popleft()
            if send.peer in self.down or origin in self.down:
                continue
            self.sent += 1
            self.handle(send.peer, self.cores[send.peer].on_message(origin, send.message,
                                                                    self.now))

    def advance(self, dt: float, step: float = 0.1) -> None:
        """Move the virtual clock, ticking every core every ``step``."""
        end = self.now + dt
        while self.now < end - 1e-9:
            self.now = round(self.now + step, 9)
            for name, core in self.cores.items():
                if name not in self.down:
                    self.handle(name, core.tick(self.now))
            self.run()

    def views(self) -> dict[str, dict[str, bool]]:
        return {n: c.link_view() for n, c in self.cores.items() if n not in self.down}

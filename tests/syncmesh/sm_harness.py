"""In-memory delivery between real SyncMesh cores, on a virtual clock (no sockets, no sleeps)."""

from __future__ import annotations

from collections import deque

from syncmesh.core import Program, Send, SyncMeshCore
from syncmesh.messages import FullState, Hello, LinkNotice, ProfileUpdate

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

    def restart(self, name: str, incarnation: int) -> None:
        """Replace a core by a fresh one (the daemon restarted) and start it."""
        self.cores[name] = SyncMeshCore(self.fabric, name, incarnation, self.config)
        self.down.discard(name)
        self.handle(name, self.cores[name].start(self.now))

    def start(self) -> None:
        for name, core in self.cores.items():
            if name not in self.down:
                self.handle(name, core.start(self.now))
        self.run()

    def handle(self, origin: str, actions) -> None:
        for a in actions:
            if isinstance(a, Send):
                self.queue.append((origin, a))
            elif isinstance(a, Program):
                self.programs[origin].append(a)

    def run(self, limit: int = 100000) -> None:
        while self.queue:
            limit -= 1
            assert limit > 0, "message storm"
            origin, send = self.queue.popleft()
            if send.peer in self.down or origin in self.down:
                continue
            self.sent += 1
            dst = self.cores[send.peer]
            msg = send.message
            if isinstance(msg, Hello):
                reply, acts = dst.on_hello(msg, self.now)
                self.handle(send.peer, acts)
                self.handle(origin, self.cores[origin].on_hello_reply(send.peer, reply, self.now))
            elif isinstance(msg, LinkNotice):
                self.handle(send.peer, dst.on_notice(msg, self.now)[1])
            elif isinstance(msg, ProfileUpdate):
                self.handle(send.peer, dst.on_profile(msg, self.now)[1])
            elif isinstance(msg, FullState):
                reply, acts = dst.on_resync(msg, self.now)
                self.handle(send.peer, acts)
                self.handle(origin, self.cores[origin].on_resync_reply(send.peer, reply, self.now))

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

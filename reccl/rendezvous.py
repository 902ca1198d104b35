"""Rendezvous: every rank publishes where it listens and learns where the others do.

Works on any key-value store with `set`, `get(key, timeout)`, `add` and
`check` (ReCCL's own `StoreClient`, or torch.distributed's store through the
adapter in `reccl.torch`). Setup mistakes get an error at rendezvous that
names the conflict instead of a transport failure later:

* two processes started as the same rank (`claim/<rank>` counts claimants);
* ranks started with different world sizes (every rank publishes its own and
  compares with rank 0's and with every other it reads);
* a rank that never arrives (the error lists who did and who did not).
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
from dataclasses import dataclass
from typing import Protocol

from .topology import RankInfo


class KeyValueStore(Protocol):
    """What rendezvous needs from a store."""

    def set(self, key: str, value: bytes) -> None: ...

    def get(self, key: str, timeout: float | None = None) -> bytes: ...

    def add(self, key: str, amount: int = 1) -> int: ...

    def check(self, key: str) -> bool: ...


class RendezvousError(RuntimeError):
    """A setup conflict or a missing rank; the message names it."""


@dataclass(frozen=True)
class Me:
    """What this rank publishes."""

    rank: int
    world: int
    host: str
    nics: list[tuple[str, int]]
    ipc: str


def _whoami() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def claim(store: KeyValueStore, group: str, rank: int, world: int, timeout: float) -> int:
    """Claim `rank`, check the world size against rank 0's; returns the job's session id."""
    if store.add(f"{group}/claim/{rank}", 1) > 1:
        try:
            first = store.get(f"{group}/claimer/{rank}", timeout=min(timeout, 5.0)).decode()
        except Exception:  # the first claimant may have died before publishing itself
            first = "another process"
        raise RendezvousError(f"rank {rank} was started twice: {first} already holds it "
                              f"(this is {_whoami()}); check RANK / --rank of every process")
    store.set(f"{group}/claimer/{rank}", _whoami().encode())
    if rank == 0:
        store.set(f"{group}/world", str(world).encode())
        store.set(f"{group}/session", str(random.getrandbits(31) | 1).encode())
    try:
        w0 = int(store.get(f"{group}/world", timeout=timeout))
    except Exception as e:
        raise RendezvousError(f"rank 0 never arrived within {timeout:.0f} s ({e})") from None
    if w0 != world:  # tell the others too: they would otherwise wait for this rank
        store.set(f"{group}/rank/{rank}", json.dumps({"world": world}).encode())
        raise RendezvousError(f"world size mismatch: rank {rank} was started with world size "
                              f"{world}, rank 0 with {w0}")
    return int(store.get(f"{group}/session", timeout=timeout))


def exchange(store: KeyValueStore, group: str, me: Me, timeout: float) -> list[RankInfo]:
    """Publish this rank's addresses and collect every rank's (checked for consistency)."""
    store.set(f"{group}/rank/{me.rank}", json.dumps(
        {"world": me.world, "host": me.host, "nics": me.nics, "ipc": me.ipc}).encode())
    deadline = time.monotonic() + timeout
    infos: list[RankInfo] = []
    for i in range(me.world):
        key = f"{group}/rank/{i}"
        while not store.check(key):
            if time.monotonic() >= deadline:
                missing = [r for r in range(me.world) if not store.check(f"{group}/rank/{r}")]
                here = [r for r in range(me.world) if r not in missing]
                raise RendezvousError(
                    f"rank{'s' if len(missing) > 1 else ''} "
                    f"{', '.join(map(str, missing))} never arrived within {timeout:.0f} s "
                    f"(arrived: {', '.join(map(str, here)) or 'none'}; world size {me.world})")
            time.sleep(0.01)
        d = json.loads(store.get(key, timeout=timeout))
        if int(d.get("world", me.world)) != me.world:
            raise RendezvousError(f"world size mismatch: rank {i} was started with world size "
                                  f"{d['world']}, rank {me.rank} with {me.world}")
        infos.append(RankInfo(i, str(d["host"]), tuple((str(a), int(p)) for a, p in d["nics"]),
                              str(d["ipc"])))
    return infos

"""Run a function on N ranks as local processes (tests, benchmarks, examples).

Each rank is a fresh process (spawn start method) that builds its
`Communicator` from the given layout, calls `fn(comm, *args)`, and sends
back the return value or the error text. The store runs in the caller, with
a fresh job secret that only the ranks get.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .auth import new_secret
from .communicator import CommOptions, Communicator
from .store import StoreServer


@dataclass(frozen=True)
class RankSpec:
    """Where one rank runs: host name and NIC addresses."""

    host: str
    nics: tuple[str, ...]


def loopback_layout(hosts: int, ranks_per_host: int, rails: int) -> list[RankSpec]:
    """Ranks on `hosts` pretend hosts over loopback; host h rail i is 127.<i+1>.<h>.1."""
    return [RankSpec(f"host{h}", tuple(f"127.{i + 1}.{h}.1" for i in range(rails)))
            for h in range(hosts) for _ in range(ranks_per_host)]


def _child(rank: int, world: int, store: str, secret: str, spec: RankSpec,
           options: CommOptions, fn: Callable, args: tuple, q: Any) -> None:
    comm = None
    try:
        comm = Communicator(rank, world, store, host=spec.host, nics=list(spec.nics),
                            options=options, secret=secret)
        out = fn(comm, *args)
        comm.close()
        q.put((rank, True, out))
    except BaseException as e:  # report everything to the parent, which raises
        q.put((rank, False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        if comm is not None:
            comm.abort()


class RankError(RuntimeError):
    """One or more ranks failed; `errors` maps rank to its error text."""

    def __init__(self, errors: dict[int, str]) -> None:
        super().__init__("; ".join(f"rank {r}: {e.splitlines()[0]}" for r, e in
                                   sorted(errors.items())))
        self.errors = errors


def run_ranks(fn: Callable, layout: list[RankSpec], args: tuple = (),
              options: CommOptions | None = None, timeout: float = 120.0,
              allow_errors: bool = False, secret: str | None = None) -> dict[int, Any]:
    """Run fn(comm, *args) on every rank; returns {rank: result} (errors as text when
    allow_errors, else raises RankError)."""
    ctx = mp.get_context("spawn")
    secret = secret or new_secret()
    server = StoreServer("127.0.0.1:0", secret=secret.encode())
    q = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(r, len(layout), server.address, secret, spec,
                                              options or CommOptions(), fn, args, q),
                         name=f"rc-rank{r}", daemon=True)
             for r, spec in enumerate(layout)]
    results: dict[int, Any] = {}
    errors: dict[int, str] = {}
    try:
        for p in procs:
            p.start()
        for _ in procs:
            try:
                rank, ok, out = q.get(timeout=timeout)
            except Exception:
                break
            (results if ok else errors)[rank] = out
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        server.close()
    missing = [r for r in range(len(layout)) if r not in results and r not in errors]
    for r in missing:
        errors[r] = f"no answer within {timeout} s"
    if errors and not allow_errors:
        raise RankError(errors)
    return {**results, **errors}

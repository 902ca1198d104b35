"""The transfers of a run: the testbed's all-to-all, a permutation, an incast."""

from __future__ import annotations

import random
from dataclasses import dataclass

from fabricmodel import Fabric

from .options import OptionError, SimOptions


@dataclass(frozen=True)
class Flow:
    """One TCP connection: ``nbytes`` from ``src``'s NIC on ``rail`` to ``dst``'s."""

    id: int
    src: str
    dst: str
    rail: int
    src_ip: str
    dst_ip: str
    nbytes: int
    port: int
    """The sink's TCP port (unique per flow, so that every flow hashes on its own)."""


def _leaves(fabric: Fabric, host: str) -> set[str]:
    return {n.leaf for n in fabric.host(host).nics}


def _flow(fabric: Fabric, n: int, src: str, dst: str, rail: int, nbytes: int) -> Flow:
    s, d = fabric.host(src), fabric.host(dst)
    return Flow(n, src, dst, rail, str(s.nics[rail % len(s.nics)].ip),
                str(d.nics[rail % len(d.nics)].ip), nbytes, 5000 + n)


def flows(fabric: Fabric, opts: SimOptions) -> list[Flow]:
    """The run's flows, in a fixed order (the seed only draws the permutation)."""
    hosts = [h.name for h in fabric.hosts]
    rails = max((len(h.nics) for h in fabric.hosts), default=0)
    out: list[Flow] = []
    if len(hosts) < 2:
        raise OptionError(f"--workload: fabric {fabric.name!r} has {len(hosts)} host(s), needs 2")
    if opts.workload == "alltoall":
        # the testbed's (topologies/alltoall.py): every pair sharing no leaf, every rail
        for src in hosts:
            for dst in hosts:
                if src == dst or _leaves(fabric, src) & _leaves(fabric, dst):
                    continue
                for rail in range(rails):
                    for _ in range(opts.flows):
                        out.append(_flow(fabric, len(out), src, dst, rail, opts.nbytes))
        if not out:
            raise OptionError(f"--workload alltoall: no two hosts of {fabric.name!r} are on "
                              "different leaves")
    elif opts.workload == "permutation":
        rng = random.Random(opts.seed)
        for _ in range(100):
            perm = hosts[:]
            rng.shuffle(perm)
            if all(a != b for a, b in zip(hosts, perm, strict=True)):
                break
        for src, dst in zip(hosts, perm, strict=True):
            for rail in range(rails):
                for _ in range(opts.flows):
                    out.append(_flow(fabric, len(out), src, dst, rail, opts.nbytes))
    else:  # incast: every host to the first one
        dst = hosts[0]
        for src in hosts[1:]:
            for rail in range(rails):
                for _ in range(opts.flows):
                    out.append(_flow(fabric, len(out), src, dst, rail, opts.nbytes))
    if len(out) > 60_000:
        raise OptionError(f"--flows: {len(out)} connections; at most 60000 fit the port space")
    return out

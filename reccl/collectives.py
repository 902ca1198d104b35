"""Collective algorithms over point-to-point messages, on flat NumPy arrays.

Ring reduce-scatter + ring all-gather for all_reduce (bandwidth-optimal:
each rank sends 2(p-1)/p of the data), ring all-gather, binomial-tree
broadcast, direct exchange for all-to-all, dissemination barrier. The
transport cuts every message into chunks and spreads them over the channels.
Every function takes `p2p`, which provides rank, size, send(peer, tag, data),
recv(peer, tag) and a `tag(step)` giving this collective's message tags.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from .connection import Message, contiguous, pieces
from .ops import combine, finish, segment_bounds


class P2P(Protocol):
    """What the algorithms need from a communicator."""

    rank: int
    size: int
    slice_bytes: int
    """Ring slice size, the same on every rank (see SLICE_BYTES)."""

    def send(self, peer: int, tag: int, data: bytes | memoryview) -> None: ...

    def recv(self, peer: int, tag: int) -> Message: ...


def _size_error(what: str, got: int, count: int) -> ValueError:
    # Sizes agree by construction when every rank runs the same collectives in the same
    # order; a mismatch almost always means they did not (tags count collectives per rank).
    return ValueError(f"{what}: got {got} elements, expected {count} (a message of another "
                      f"collective? every rank must call the same collectives, with the same "
                      f"sizes, in the same order)")


def _view(buf: Any, dtype: np.dtype, count: int, what: str) -> np.ndarray:
    arr = np.frombuffer(contiguous(buf), dtype=dtype)
    if arr.size != count:
        raise _size_error(what, arr.size, count)
    return arr


def _parts(buf: Any, dtype: np.dtype, count: int, what: str
           ) -> list[tuple[int, np.ndarray]]:
    """(element offset, elements) of each part of a received message: a message that came
    over several channels is used where it lies, without joining it first."""
    out, total = [], 0
    for off, mv in pieces(buf):
        if off % dtype.itemsize or len(mv) % dtype.itemsize:
            return [(0, _view(buf, dtype, count, what))]
        arr = np.frombuffer(mv, dtype=dtype)
        out.append((off // dtype.itemsize, arr))
        total += arr.size
    if total != count:
        raise _size_error(what, total, count)
    return out


SLICE_BYTES = 1 << 20
"""Default ring slice: segments travel in slices, so that a rank reduces or forwards
slice j while slice j+1 is still on the wire (pipelining). The communicator uses one
transport chunk (1 MiB: measured better than 512 KiB, see docs/reccl.md) per NIC of the
rank with the fewest, so a slice spreads over the NICs in whole chunks."""


def _slice(p2p: P2P) -> int:
    return getattr(p2p, "slice_bytes", SLICE_BYTES)


def step(phase: int, k: int, j: int = 0) -> int:
    """Message tag step of slice j in ring step k of a phase (fits the 28-bit step field)."""
    return (phase << 26) | (k << 16) | j


def slices(bounds: tuple[int, int], itemsize: int, size: int = SLICE_BYTES
           ) -> list[tuple[int, int, int]]:
    """(j, lo, hi) pieces of one segment, `size` bytes at most each (none if empty)."""
    lo, hi = bounds
    per = max(1, size // max(1, itemsize))
    if (hi - lo + per - 1) // per >= 1 << 16:
        per = -(-(hi - lo) // ((1 << 16) - 1))
    return [(j, a, min(hi, a + per)) for j, a in enumerate(range(lo, hi, per))]


def ring_reduce_scatter(p2p: P2P, tag: Callable[[int], int], work: np.ndarray, op: str,
                        bounds: list[tuple[int, int]], shift: int) -> int:
    """Reduce segments of `work` in place around the ring, slice by slice; returns the
    segment this rank holds fully reduced. Segment s folds ranks s+shift, s+shift+1, ...
    (see ops). The slice reduced at step k is forwarded at once as step k+1's input."""
    p, r = p2p.size, p2p.rank
    if p == 1:
        return r
    right, left = (r + 1) % p, (r - 1) % p
    isz = work.dtype.itemsize
    for j, lo, hi in slices(bounds[(r - shift) % p], isz, _slice(p2p)):
        p2p.send(right, tag(step(0, 0, j)), work[lo:hi].data)
    for k in range(p - 1):
        for j, lo, hi in slices(bounds[(r - k - shift - 1) % p], isz, _slice(p2p)):
            for off, got in _parts(p2p.recv(left, tag(step(0, k, j))), work.dtype, hi - lo,
                                   "reduce-scatter slice"):
                a, b = lo + off, lo + off + got.size
                combine(op, got, work[a:b], out=work[a:b])
            if k + 1 < p - 1:
                p2p.send(right, tag(step(0, k + 1, j)), work[lo:hi].data)
    return (r - shift + 1) % p


def ring_all_gather(p2p: P2P, tag: Callable[[int], int], work: np.ndarray,
                    bounds: list[tuple[int, int]], have: int, phase: int = 1,
                    started: bool = False) -> None:
    """Circulate segments so every rank ends with all of them; this rank starts with `have`
    (already sent if `started`). Each slice is forwarded as soon as it arrives."""
    p, r = p2p.size, p2p.rank
    if p == 1:
        return
    right, left = (r + 1) % p, (r - 1) % p
    isz = work.dtype.itemsize
    if not started:
        for j, lo, hi in slices(bounds[have], isz, _slice(p2p)):
            p2p.send(right, tag(step(phase, 0, j)), work[lo:hi].data)
    for k in range(p - 1):
        for j, lo, hi in slices(bounds[(have - k - 1) % p], isz, _slice(p2p)):
            for off, got in _parts(p2p.recv(left, tag(step(phase, k, j))), work.dtype,
                                   hi - lo, "all-gather slice"):
                work[lo + off:lo + off + got.size] = got
            if k + 1 < p - 1:
                p2p.send(right, tag(step(phase, k + 1, j)), work[lo:hi].data)


def all_reduce(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray, op: str,
               out: np.ndarray | None = None) -> np.ndarray:
    """Ring all-reduce of a flat array (reduce-scatter then all-gather, pipelined in slices:
    a slice finished by the reduce-scatter starts its all-gather at once) into `out` (may
    be `flat` itself: in place) or a new array. No up-front copy: every segment of the
    result is written once, by the reduce-scatter or by the all-gather."""
    work = np.empty_like(flat) if out is None else out
    p, r = p2p.size, p2p.rank
    if p == 1:
        work[...] = flat
        return finish(op, work, 1)
    right, left = (r + 1) % p, (r - 1) % p
    bounds = segment_bounds(work.size, p)
    isz = work.dtype.itemsize
    for j, lo, hi in slices(bounds[r], isz, _slice(p2p)):
        p2p.send(right, tag(step(0, 0, j)), flat[lo:hi].data)
    for k in range(p - 1):
        for j, lo, hi in slices(bounds[(r - k - 1) % p], isz, _slice(p2p)):
            for off, got in _parts(p2p.recv(left, tag(step(0, k, j))), work.dtype, hi - lo,
                                   "reduce-scatter slice"):
                a, b = lo + off, lo + off + got.size
                combine(op, got, flat[a:b], out=work[a:b])
            if k + 1 < p - 1:
                p2p.send(right, tag(step(0, k + 1, j)), work[lo:hi].data)
            else:  # fully reduced: finish it and start its all-gather
                work[lo:hi] = finish(op, work[lo:hi], p)
                p2p.send(right, tag(step(1, 0, j)), work[lo:hi].data)
    ring_all_gather(p2p, tag, work, bounds, (r + 1) % p, phase=1, started=True)
    return work


def tree_all_reduce(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray, op: str
                    ) -> np.ndarray:
    """Binomial-tree reduce to rank 0, then binomial-tree broadcast: 2 log2(p) steps of the
    whole message, for small messages (order: see ops.reference_tree)."""
    p, r = p2p.size, p2p.rank
    acc = flat.copy()
    mask = 1
    while mask < p:
        if r & mask:
            p2p.send(r - mask, tag(0), acc.data)
            break
        if r + mask < p:
            got = _view(p2p.recv(r + mask, tag(0)), acc.dtype, acc.size, "tree reduce")
            acc = combine(op, acc, got)
        mask *= 2
    if r == 0:
        acc = finish(op, acc, p)
    return broadcast(p2p, lambda k: tag(step(1, 0, k)), acc, 0)


def reduce_scatter(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray, op: str
                   ) -> np.ndarray:
    """Ring reduce-scatter: rank r gets segment r of the reduction (equal segments)."""
    p = p2p.size
    if flat.size % p:
        raise ValueError(f"reduce_scatter: {flat.size} elements do not split into {p} equal "
                         f"parts")
    work = flat.copy()
    bounds = segment_bounds(work.size, p)
    if p > 1:
        have = ring_reduce_scatter(p2p, tag, work, op, bounds, shift=1)
        assert have == p2p.rank
    lo, hi = bounds[p2p.rank]
    return finish(op, work[lo:hi].copy(), p)


def reduce(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray, op: str, root: int
           ) -> np.ndarray | None:
    """Reduce to `root` (same order as all_reduce); other ranks get None."""
    p, r = p2p.size, p2p.rank
    work = flat.copy()
    if p == 1:
        return finish(op, work, 1)
    bounds = segment_bounds(work.size, p)
    have = ring_reduce_scatter(p2p, tag, work, op, bounds, shift=0)
    lo, hi = bounds[have]
    work[lo:hi] = finish(op, work[lo:hi], p)
    if r != root:
        p2p.send(root, tag(step(2, 0)), work[lo:hi].data)
        return None
    for src in range(p):
        if src == r:
            continue
        seg = (src + 1) % p
        lo, hi = bounds[seg]
        work[lo:hi] = _view(p2p.recv(src, tag(step(2, 0))), work.dtype, hi - lo,
                            "reduce segment")
    return work


def all_gather(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray) -> np.ndarray:
    """Ring all-gather: concatenation of every rank's (equal-size) flat array."""
    p, m = p2p.size, flat.size
    work = np.empty(p * m, dtype=flat.dtype)
    bounds = [(i * m, (i + 1) * m) for i in range(p)]
    lo, hi = bounds[p2p.rank]
    work[lo:hi] = flat
    ring_all_gather(p2p, tag, work, bounds, p2p.rank, phase=0)
    return work


def broadcast(p2p: P2P, tag: Callable[[int], int], flat: np.ndarray, root: int) -> np.ndarray:
    """Binomial-tree broadcast from `root`; returns the root's data on every rank."""
    p, r = p2p.size, p2p.rank
    vr = (r - root) % p
    work = flat.copy() if r == root else None
    mask = 1
    while mask < p:
        if vr < mask:
            dst = vr + mask
            if dst < p:
                assert work is not None
                p2p.send((dst + root) % p, tag(0), work.data)
        elif vr < 2 * mask:
            src = (vr - mask + root) % p
            work = _view(p2p.recv(src, tag(0)), flat.dtype, flat.size, "broadcast").copy()
        mask *= 2
    assert work is not None
    return work


def all_to_all(p2p: P2P, tag: Callable[[int], int], rows: np.ndarray,
               send_splits: list[int]) -> tuple[np.ndarray, list[int]]:
    """Direct exchange: block j (send_splits[j] rows) goes to rank j; returns the received
    blocks concatenated in rank order and their row counts."""
    p, r = p2p.size, p2p.rank
    row_shape = rows.shape[1:]
    row_bytes = int(np.prod(row_shape, dtype=np.int64)) * rows.dtype.itemsize
    offs = np.concatenate([[0], np.cumsum(send_splits)]).astype(int)
    for k in range(1, p):  # staggered order spreads the load over peers
        dst = (r + k) % p
        p2p.send(dst, tag(0), np.ascontiguousarray(rows[offs[dst]:offs[dst + 1]]).data)
    parts: list[np.ndarray] = [np.empty((0, *row_shape), rows.dtype)] * p
    parts[r] = rows[offs[r]:offs[r + 1]].copy()
    for k in range(1, p):
        src = (r - k) % p
        buf = contiguous(p2p.recv(src, tag(0)))
        if row_bytes and len(buf) % row_bytes:
            raise ValueError(f"all_to_all: {len(buf)} bytes from rank {src} is not a whole "
                             f"number of {row_bytes}-byte rows")
        n = len(buf) // row_bytes if row_bytes else 0
        parts[src] = np.frombuffer(buf, dtype=rows.dtype).reshape((n, *row_shape))
    return np.concatenate(parts), [len(x) for x in parts]


def barrier(p2p: P2P, tag: Callable[[int], int]) -> None:
    """Dissemination barrier: ceil(log2 p) rounds of one message each way."""
    p, r = p2p.size, p2p.rank
    k, dist = 0, 1
    while dist < p:
        p2p.send((r + dist) % p, tag(k), b"")
        p2p.recv((r - dist) % p, tag(k))
        k += 1
        dist *= 2

"""Reduction operators and the single-process reference of every reduction order.

The ring algorithms fix the order in which contributions are combined; the
reference functions here combine in the same order, so a distributed result
can be compared bit for bit (floating-point addition is not associative).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

OPS = ("sum", "prod", "min", "max", "avg")


def check_op(op: str, dtype: np.dtype) -> None:
    """Refuse an unknown operator, or avg on booleans, with a precise message."""
    if op not in OPS:
        raise ValueError(f"unknown reduction op {op!r}; expected one of {', '.join(OPS)}")
    if op == "avg" and dtype == np.bool_:
        raise ValueError("reduction op 'avg' is not defined for dtype bool")


def combine(op: str, acc: np.ndarray, local: np.ndarray, out: np.ndarray | None = None
            ) -> np.ndarray:
    """acc (op) local, elementwise; avg combines as sum (divide with `finish`)."""
    if op in ("sum", "avg"):
        return np.add(acc, local, out=out)
    if op == "prod":
        return np.multiply(acc, local, out=out)
    if op == "min":
        return np.minimum(acc, local, out=out)
    return np.maximum(acc, local, out=out)


def finish(op: str, acc: np.ndarray, world: int) -> np.ndarray:
    """Final step of a reduction: divide by the world size for avg (integers floor-divide)."""
    if op != "avg":
        return acc
    if np.issubdtype(acc.dtype, np.integer):
        return np.floor_divide(acc, world).astype(acc.dtype, copy=False)
    return np.divide(acc, acc.dtype.type(world)).astype(acc.dtype, copy=False)


def segment_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Split n elements into `parts` contiguous segments, sizes differing by at most one."""
    base, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        out.append((start, end))
        start = end
    return out


def reference_ring(inputs: Sequence[np.ndarray], op: str, shift: int = 0) -> np.ndarray:
    """What a ring reduce-scatter with this `shift` computes: segment s folds the ranks
    s+shift, s+shift+1, ... (mod world) left to right. shift 0 = all_reduce/reduce."""
    world = len(inputs)
    flat = [np.ascontiguousarray(x).reshape(-1) for x in inputs]
    out = np.empty_like(flat[0])
    for s, (lo, hi) in enumerate(segment_bounds(flat[0].size, world)):
        acc = flat[(s + shift) % world][lo:hi].copy()
        for i in range(1, world):
            acc = combine(op, acc, flat[(s + shift + i) % world][lo:hi])
        out[lo:hi] = finish(op, acc, world)
    return out.reshape(np.shape(inputs[0]))


TREE_MAX_BYTES = 16 << 10
"""all_reduce picks the binomial tree up to this size (latency-bound), the ring above."""


def choose_algorithm(nbytes: int, world: int, algorithm: str = "auto") -> str:
    """'ring' or 'tree' for an all_reduce of `nbytes` per rank ('auto': tree when small and
    more than two ranks, where 2 log2(p) latency steps beat the ring's 2(p-1))."""
    if algorithm not in ("auto", "ring", "tree"):
        raise ValueError(f"unknown algorithm {algorithm!r}; expected auto, ring or tree")
    if algorithm != "auto":
        return algorithm
    return "tree" if world > 2 and nbytes <= TREE_MAX_BYTES else "ring"


def reference_tree(inputs: Sequence[np.ndarray], op: str) -> np.ndarray:
    """What the binomial-tree all_reduce computes: in round k, rank v (a multiple of 2^(k+1))
    combines its partial result with rank v + 2^k's, in that order."""
    world = len(inputs)
    acc = [np.ascontiguousarray(x).reshape(-1).copy() for x in inputs]
    mask = 1
    while mask < world:
        for v in range(0, world, 2 * mask):
            if v + mask < world:
                acc[v] = combine(op, acc[v], acc[v + mask])
        mask *= 2
    return finish(op, acc[0], world).reshape(np.shape(inputs[0]))


def reference_all_reduce(inputs: Sequence[np.ndarray], op: str, algorithm: str = "auto"
                         ) -> np.ndarray:
    """The exact result of `Communicator.all_reduce` with this algorithm choice."""
    nbytes = np.asarray(inputs[0]).nbytes
    if choose_algorithm(nbytes, len(inputs), algorithm) == "tree":
        return reference_tree(inputs, op)
    return reference_ring(inputs, op)

"""Resource model of the SGLB data plane: bits of switch state by structure.

Counts the state a leaf switch running p4src/sglb.p4 keeps for load balancing
and failover (table entries: key + action data; registers: cells x width) as
a function of the fabric size and the quantisation, with fields packed to the
widths the parameters need (sglb.p4 itself rounds most fields up to 8 bits for
BMv2). Routing tables (ipv4_route, arp_proxy) are left out: ECMP needs them
too. Run ``python -m sglb.resources --help``; docs/sglb.md compares the result
with CONGA, HULA and Broadcom GLB/DLB.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

# Commodity-switch budget assumed for the check: 16 Mibit (2 MiB) of on-chip
# memory for load balancing, a small share of a current switch ASIC's tables.
DEFAULT_BUDGET_BITS = 16 * 1024 * 1024


def index_bits(n: int) -> int:
    """Bits of an index that takes n distinct values (at least 1)."""
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


@dataclass(frozen=True)
class ModelParams:
    """Fabric size and quantisation that the state depends on."""

    leaves: int
    """Leaves in the fabric: entries of the per-destination structures."""
    paths: int
    """Paths (uplinks) per leaf: MAX_PATHS."""
    flowlets: int
    """Entries of the flowlet table."""
    qbits: int = 3
    """Bits of a quantised congestion value."""
    wbits: int = 4
    """Bits of a capacity weight."""
    ts_bits: int = 48
    """Bits of a timestamp (flowlet last-seen, DRE period start)."""
    ports: int = 0
    """Data-plane ports (0: twice the paths, uplinks plus as many host ports)."""
    spines: int = 0
    """Spines a leaf hears notices from (0: one per path)."""
    gen_bits: int = 8
    """Bits of a profile generation."""
    epoch_bits: int = 32
    """Bits of a notice epoch."""
    dre_bits: int = 32
    """Bits of a DRE byte estimate."""

    def __post_init__(self) -> None:
        for name in ("leaves", "paths", "flowlets", "qbits", "wbits", "ts_bits",
                     "gen_bits", "epoch_bits", "dre_bits"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("ports", "spines"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def n_ports(self) -> int:
        """Ports, with the default applied."""
        return self.ports or 2 * self.paths

    @property
    def n_spines(self) -> int:
        """Spines, with the default applied."""
        return self.spines or self.paths


@dataclass(frozen=True)
class Structure:
    """One table or register array: entries x bits per entry."""

    name: str
    kind: str  # "table" or "register"
    entries: int
    entry_bits: int
    note: str

    @property
    def bits(self) -> int:
        """Total bits of the structure."""
        return self.entries * self.entry_bits


def leaf_state(p: ModelParams) -> list[Structure]:
    """The load-balancing state of one leaf, by structure (see module docstring)."""
    leaf_id = index_bits(p.leaves)
    port_id = index_bits(p.n_ports)
    path_tag = index_bits(p.paths + 1)  # path + 1, 0 = empty
    dre_shift = 5  # shifts 0..31
    switch_config = 1 + 1 + 16 + 48 + p.ts_bits + 8 + 16  # role, mode, id, mac, gap, tol, group
    return [
        Structure("dst_profile", "table", p.leaves,
                  leaf_id + p.paths + p.gen_bits + p.paths * (p.qbits + p.wbits),
                  "key leaf; mask, gen, remote congestion + weight per path"),
        Structure("uplinks", "table", 1, p.paths + p.paths * (port_id + dre_shift),
                  "path slots; port and DRE shift per path"),
        Structure("spine_paths", "table", p.n_spines, 16 + index_bits(p.n_spines) + p.paths,
                  "key spine id; epoch slot, path mask"),
        Structure("switch_config", "table", 1, switch_config,
                  "role, mode, id, MAC, flowlet gap, tolerance, notice group"),
        Structure("port_down", "register", p.n_ports, 1, "link state per port"),
        Structure("dre", "register", p.n_ports, p.dre_bits + p.ts_bits,
                  "DRE bytes + period start per port"),
        Structure("flowlets", "register", p.flowlets, p.ts_bits + path_tag,
                  "last seen + path per flowlet"),
        Structure("exclusions", "register", p.leaves, p.paths + p.gen_bits,
                  "notice-excluded paths + generation per destination leaf"),
        Structure("notice_epoch", "register", p.n_spines, p.epoch_bits,
                  "newest epoch per spine"),
    ]


def total_bits(structures: list[Structure]) -> int:
    """Sum of the bits of the structures."""
    return sum(s.bits for s in structures)


PER_DESTINATION = ("dst_profile", "exclusions")


def per_destination_bits(structures: list[Structure]) -> int:
    """Bits of the structures that grow with the number of leaves (what the anchors count)."""
    return sum(s.bits for s in structures if s.name in PER_DESTINATION)


def anchors(p: ModelParams) -> list[tuple[str, int, str]]:
    """State of published schemes for the same fabric, by their own accounting."""
    path_id = index_bits(p.paths)
    return [
        ("CONGA", 2 * p.leaves * p.paths * 3,
         "congestion-to-leaf and congestion-from-leaf tables: leaf x uplink x 3 bits"),
        ("HULA", p.leaves * (path_id + 8),
         "best hop + path utilisation (8 bits) per destination ToR"),
        ("Broadcom GLB/DLB", 64 * p.paths * 3 + p.leaves * 256 * (path_id + 1),
         "64 path-quality profiles x path x 3 bits (8 bands); "
         "256 flowsets (member + valid) per group, a group per destination leaf"),
    ]


def human(bits: int) -> str:
    """Bits as a short human-readable size."""
    byte = bits / 8
    for unit in ("B", "KiB", "MiB", "GiB"):
        if byte < 1024 or unit == "GiB":
            return f"{byte:.1f} {unit}" if unit != "B" else f"{byte:.0f} B"
        byte /= 1024
    return f"{byte:.1f} GiB"


def report(p: ModelParams, budget_bits: int = DEFAULT_BUDGET_BITS) -> tuple[str, bool]:
    """Printable state table for `p` and whether it fits `budget_bits`."""
    rows = leaf_state(p)
    total = total_bits(rows)
    lines = [
        f"SGLB leaf state: {p.leaves} leaves x {p.paths} paths, {p.flowlets} flowlets, "
        f"{p.qbits}-bit congestion, {p.wbits}-bit weights, {p.ts_bits}-bit timestamps",
        f"{'structure':<14} {'kind':<9} {'entries':>8} {'bits/entry':>10} {'bits':>11} {'size':>10}",
    ]
    for s in rows:
        lines.append(f"{s.name:<14} {s.kind:<9} {s.entries:>8} {s.entry_bits:>10} "
                     f"{s.bits:>11} {human(s.bits):>10}  {s.note}")
    lines.append(f"{'total':<14} {'':<9} {'':>8} {'':>10} {total:>11} {human(total):>10}")
    per_dest = per_destination_bits(rows)
    lines.append(f"per-destination state (dst_profile + exclusions): {per_dest} bits ({human(per_dest)})")
    fits = total <= budget_bits
    verdict = "fits" if fits else "does NOT fit"
    lines.append(f"budget {budget_bits} bits ({human(budget_bits)}): {verdict}")
    lines.append("published anchors for the same fabric:")
    for name, bits, how in anchors(p):
        lines.append(f"  {name:<17} {bits:>11} bits {human(bits):>10}  {how}")
    return "\n".join(lines), fits


def main(argv: list[str] | None = None) -> int:
    """CLI: print the state for the given size, then the 1,024 x 64 check."""
    ap = argparse.ArgumentParser(prog="python -m sglb.resources", description=__doc__.split("\n")[0])
    ap.add_argument("--leaves", type=int, default=64)
    ap.add_argument("--paths", type=int, default=8)
    ap.add_argument("--flowlets", type=int, default=4096)
    ap.add_argument("--qbits", type=int, default=3)
    ap.add_argument("--wbits", type=int, default=4)
    ap.add_argument("--ts-bits", type=int, default=48)
    ap.add_argument("--budget-bits", type=int, default=DEFAULT_BUDGET_BITS)
    args = ap.parse_args(argv)
    try:
        asked = ModelParams(args.leaves, args.paths, args.flowlets, args.qbits, args.wbits,
                            args.ts_bits)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text, _ = report(asked, args.budget_bits)
    print(text)
    print()
    big = ModelParams(1024, 64, 65536, args.qbits, args.wbits, args.ts_bits)
    text, fits = report(big, args.budget_bits)
    print(text)
    return 0 if fits else 1


if __name__ == "__main__":
    sys.exit(main())

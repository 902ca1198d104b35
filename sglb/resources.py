"""Resource model of the SGLB data plane: bits of switch state by structure.

Counts the state a leaf switch running p4src/sglb.p4 keeps for load balancing,
in-band feedback and failover (table entries: key + action data; registers:
cells x width) as a function of the fabric size, MAX_PATHS (the compile-time
choice: 8, 16 or 64) and the quantisation, with fields packed to the widths
the parameters need (sglb.p4 itself rounds some fields up to 8 bits for
BMv2). Routing tables (ipv4_route, arp_proxy) are left out: ECMP needs them
too. Run ``python -m sglb.resources --help``; docs/sglb.md compares the result
with CONGA, HULA and Broadcom GLB/DLB.

``--tofino`` compiles p4src/tna/sglb.p4 with bf-p4c for Tofino and Tofino 2 at
MAX_PATHS 8 and 64 and prints the stages, SRAM, TCAM and PHV the compiler
reports (``sglb.tofino``); ``--tofino-logs DIR`` reads an earlier run's output.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sglb.config import EPOCH_BITS, MAX_PATHS, PATH_CHOICES

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
    ts_bits: int = 32
    """Bits of a flowlet's last-seen time."""
    ports: int = 0
    """Data-plane ports (0: twice the paths, uplinks plus as many host ports)."""
    spines: int = 0
    """Spines a leaf hears notices from (0: one per path)."""
    epoch_bits: int = EPOCH_BITS
    """Bits of a notice epoch as compared (the data plane keeps them mod 2^30)."""
    dre_bits: int = 32
    """Bits of a DRE byte estimate."""
    fb_time_bits: int = 28
    """Bits of a feedback timestamp (16 us units)."""
    owd_bits: int = 32
    """Bits of a fed-back one-way delay."""

    def __post_init__(self) -> None:
        for name in ("leaves", "paths", "flowlets", "qbits", "wbits", "ts_bits",
                     "epoch_bits", "dre_bits", "fb_time_bits", "owd_bits"):
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
    path_tag = index_bits(p.paths + 1)  # path + 1, 0 = empty; also the path count
    dre_shift = 5  # shifts 0..31
    writeback = 1 + p.epoch_bits        # valid + epoch
    metric = 1 + p.qbits + p.fb_time_bits  # valid + level + time
    pairs = p.leaves * p.paths          # (destination or source leaf, path)
    switch_config = (1 + 1 + 16 + 48 + 32 + 8 + 16   # role, mode, id, MAC, gap, tol, group
                     + 1 + 16 + 32 + 32 + p.qbits + 32 + 32)  # feedback settings
    return [
        Structure("dst_profile", "table", p.leaves,
                  leaf_id + p.paths + p.paths * (p.qbits + p.wbits + writeback),
                  "key leaf; mask; remote congestion, weight, written-back epoch per path"),
        Structure("uplinks", "table", 1, p.paths + path_tag + p.paths * (port_id + dre_shift),
                  "path slots and count; port and DRE shift per path"),
        Structure("port_neighbour", "table", p.n_ports, port_id + 2 + 16,
                  "key port; host / spine / leaf and its id"),
        Structure("spine_paths", "table", p.n_spines, 16 + p.paths,
                  "key spine id; path mask"),
        Structure("switch_config", "table", 1, switch_config,
                  "role, mode, id, MAC, flowlet gap, tolerance, group, feedback settings"),
        Structure("port_down", "register", p.n_ports, 1, "link state per port"),
        Structure("dre", "register", p.n_ports, p.dre_bits + 48,
                  "DRE bytes + period start per port"),
        Structure("flowlets", "register", p.flowlets, p.ts_bits + path_tag,
                  "last seen + path per flowlet"),
        Structure("notices", "register", pairs, 1 + p.epoch_bits + 1,
                  "notice epoch + fail per (destination, path)"),
        Structure("feedback", "register", pairs, metric,
                  "fed-back level + time per (destination, path)"),
        Structure("delays", "register", pairs, p.owd_bits,
                  "fed-back one-way delay per (destination, path)"),
        Structure("rx_metrics", "register", pairs, metric + p.owd_bits,
                  "level + time + one-way delay per (source, path) to return"),
        Structure("fb_cursor", "register", p.leaves, 2 * path_tag,
                  "next path to return + the source's path count"),
    ]


def total_bits(structures: list[Structure]) -> int:
    """Sum of the bits of the structures."""
    return sum(s.bits for s in structures)


PER_DESTINATION = ("dst_profile", "notices", "feedback", "delays", "rx_metrics", "fb_cursor")


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
    lines.append(f"per-destination state ({' + '.join(PER_DESTINATION)}): {per_dest} bits "
                 f"({human(per_dest)})")
    fits = total <= budget_bits
    verdict = "fits" if fits else "does NOT fit"
    lines.append(f"budget {budget_bits} bits ({human(budget_bits)}): {verdict}")
    lines.append("published anchors for the same fabric:")
    for name, bits, how in anchors(p):
        lines.append(f"  {name:<17} {bits:>11} bits {human(bits):>10}  {how}")
    return "\n".join(lines), fits


def main(argv: list[str] | None = None) -> int:
    """CLI: print the state for the given size and MAX_PATHS, then the 1,024 x 64 check."""
    ap = argparse.ArgumentParser(prog="python -m sglb.resources", description=__doc__.split("\n")[0])
    ap.add_argument("--leaves", type=int, default=64)
    ap.add_argument("--max-paths", type=int, default=MAX_PATHS, choices=PATH_CHOICES,
                    help="MAX_PATHS sglb.p4 is compiled with (-DMAX_PATHS=N)")
    ap.add_argument("--flowlets", type=int, default=4096)
    ap.add_argument("--qbits", type=int, default=3)
    ap.add_argument("--wbits", type=int, default=4)
    ap.add_argument("--ts-bits", type=int, default=32)
    ap.add_argument("--budget-bits", type=int, default=DEFAULT_BUDGET_BITS)
    ap.add_argument("--tofino", action="store_true",
                    help="compile p4src/tna/sglb.p4 with bf-p4c (tofino, tofino2; 8 and 64 "
                         "paths) and print the compiler's resource figures")
    ap.add_argument("--tofino-logs", type=Path, metavar="DIR",
                    help="where bf-p4c writes (default: a temporary directory); with "
                         "--no-compile, read the figures of an earlier run there")
    ap.add_argument("--no-compile", action="store_true",
                    help="with --tofino-logs: only read the logs, do not run bf-p4c")
    args = ap.parse_args(argv)
    if args.tofino or args.tofino_logs:
        return tofino_report(args.tofino_logs, compile_=not args.no_compile)
    try:
        asked = ModelParams(args.leaves, args.max_paths, args.flowlets, args.qbits, args.wbits,
                            args.ts_bits)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"MAX_PATHS = {args.max_paths} (p4c-bm2-ss -DMAX_PATHS={args.max_paths} "
          "p4src/sglb.p4; 8 without the flag)")
    text, _ = report(asked, args.budget_bits)
    print(text)
    print()
    big = ModelParams(1024, 64, 65536, args.qbits, args.wbits, args.ts_bits)
    text, fits = report(big, args.budget_bits)
    print(text)
    return 0 if fits else 1


TOFINO_CASES = [(t, n) for t in ("tofino", "tofino2") for n in (8, 64)]


def tofino_report(logs: Path | None, compile_: bool = True) -> int:
    """Compile (or read) the Tofino program at every case and print its figures;
    0 when every case fits, 1 when one does not, 2 without bf-p4c."""
    from sglb import tofino

    if compile_ and tofino.bf_p4c() is None:
        print(f"error: {tofino.NO_COMPILER}", file=sys.stderr)
        return 2
    base = logs or Path(tempfile.mkdtemp(prefix="sglb-tofino-"))
    rows: list[tofino.Figures] = []
    failed: list[str] = []
    for target, paths in TOFINO_CASES:
        out = base / f"{target}-{paths}"
        try:
            if compile_:
                print(f"compiling {target} MAX_PATHS={paths} into {out} ...", file=sys.stderr,
                      flush=True)
                tofino.compile_tna(target, paths, out)
            rows.append(tofino.figures(out, target, paths))
        except (tofino.CompileError, FileNotFoundError, ValueError) as exc:
            failed.append(f"{target} MAX_PATHS={paths}: {exc}")
    print("bf-p4c resources of p4src/tna/sglb.p4 (rerun: python -m sglb.resources --tofino)")
    if rows:
        print(tofino.table(rows))
    for line in failed:
        print(f"does NOT compile: {line}")
    return 0 if not failed and all(r.fits for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Packet-level simulator speed: simulated packet-hops per wall-clock second.

The workload of issue 28: a 16-host all-to-all (4 leaves x 4 single-NIC hosts,
2 spines, 10 Gbit/s), ``--bytes`` per host pair. Each engine runs the same
simulation (the JSON must come out identical: the engines are one program);
the baseline measured in the same run is the engine alone, in-process, on an
SGLB leaf's data packets, so the ratio says what the simulator adds.

    python bench/bench_packetsim.py [--bytes 1MB] [--engines python,native]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fabricmodel import dump, leaf_spine  # noqa: E402


def engine_alone(engine: str, seconds: float = 3.0) -> float:
    """Packets/s of one SGLB leaf's data path in-process (the engine, nothing around it)."""
    code = f"""
import os, time
os.environ["SOFTSWITCH_ENGINE"] = {engine!r}
from bench_sglb_pipeline import frames, leaf
from sglb.codes import LbMode
from softswitch import compile_file
sw, clock = leaf(compile_file("../p4src/sglb.p4"), LbMode.SGLB)
pkts = frames(2000, seed=1)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < {seconds}:
    for f in pkts:
        clock.now += 1
        sw.process_packet(10, f)
    n += len(pkts)
print(n / (time.perf_counter() - t0))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "bench", capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'controller'}"})
    if proc.returncode != 0:
        return float("nan")
    return float(proc.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bytes", default="100KB", help="bytes per host pair")
    ap.add_argument("--engines", default="python,native")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-packetsim-"))
    fabric = tmp / "ls4x4.yaml"
    dump(leaf_spine(4, 2, 4, 1, link_capacity="10Mbit", nic_capacity="10Mbit", name="ls4x4x1"),
         fabric)
    print(f"# 16-host all-to-all, {args.bytes} per pair, 10 Gbit/s; load average "
          f"{os.getloadavg()[0]:.2f} at the start")
    outputs = {}
    for engine in args.engines.split(","):
        out = tmp / f"{engine}.json"
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "packetsim.cli", "--fabric", str(fabric), "--lb", "sglb",
             "--bytes", args.bytes, "--flows", "1", "--json", str(out), "--quiet"],
            cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "SOFTSWITCH_ENGINE": engine})
        if proc.returncode != 0:
            print(f"{engine}: failed: {proc.stderr.strip()[-500:]}")
            continue
        wall_line = proc.stderr.strip().splitlines()[-1]
        hops = int(wall_line.split(" packet-hops")[0].rsplit(" ", 1)[-1])
        run_s = float(wall_line.split(" s run")[0].rsplit("+ ", 1)[-1])
        alone = engine_alone(engine)
        outputs[engine] = out.read_text()
        print(f"{engine:7s} {hops:,} packet-hops in {run_s:.1f} s: {hops / run_s:,.0f} hops/s "
              f"(the engine alone: {alone:,.0f} packets/s; simulator/engine "
              f"{hops / run_s / alone:.2f}); {time.monotonic() - t0:.0f} s with setup; load "
              f"{os.getloadavg()[0]:.2f}")
    if len(outputs) > 1:
        same = len({json.dumps(json.loads(v), sort_keys=True) for v in outputs.values()}) == 1
        print(f"results identical across engines: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

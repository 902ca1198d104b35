"""ReCCL failover figures: detection time of a dead link, stall of the affected
collective, busbw after losing 1 of k NICs against (k-1)/k of the healthy busbw, and
the fail-stop baseline (the job aborts); for a link that goes down (seen through
netlink) and for a silent failure (link up, every datagram lost: timeouts only).

Runs `reccl-perf` failure runs in network namespaces with every NIC rate-limited
(so the NICs, not the CPU, bound the bandwidth). Needs root; without it, falls back
to loopback with injected link failures and says so. Prints figures, asserts nothing.
"""

from __future__ import annotations

import contextlib
import io
import os

from reccl.perf import drive

RATE = "80mbit"


def run(argv: list[str]) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        _, summary = drive(argv + ["--json"])
    return summary or {}


def main() -> None:
    root = os.geteuid() == 0
    base = ["all_reduce", "-e", "2M", "--hosts", "2", "--fail-at", "1.0",
            "--duration", "3.0", "-c", "1"]
    if root:
        from reccl_baseline import netns_stream

        base += ["--netns", "--rate", RATE]
        stream = netns_stream(RATE) / 1e9
        print(f"# ReCCL failover, 2 hosts in namespaces, every NIC capped at {RATE}; a Python "
              f"TCP stream over one such NIC, measured in this run: {stream:.4f} GB/s")
    else:
        from reccl_baseline import tcp_stream

        stream = tcp_stream() / 1e9
        print(f"# ReCCL failover over loopback (not root: no namespaces, CPU-bound figures); "
              f"a Python TCP stream on loopback, measured in this run: {stream:.4f} GB/s")
    print(f"{'NICs':>4} {'mode':>9} {'failure':>9} {'detect(ms)':>10} {'peer(ms)':>9} "
          f"{'stall(ms)':>9} {'busbw before':>12} {'after':>8} {'after/((k-1)/k*before)':>23} "
          f"{'before/stream':>13} {'#wrong':>6}  outcome")
    runs = [(2, "failover", False), (2, "failover", True), (2, "fail-stop", False),
            (3, "failover", False), (3, "fail-stop", False)]
    for k, mode, silent in runs:
        argv = base + ["--rails", str(k), "--fail-link", "0:1"]
        if mode == "fail-stop":
            argv.append("--fail-stop")
        if silent:  # detection takes ~1.2 s: run longer so "after" is mostly after it
            argv += ["--fail-silent", "--duration", "5.0"]
        s = run(argv)
        nan = float("nan")
        before, after = s.get("busbw_before", nan), s.get("busbw_after", nan)
        ratio = after / ((k - 1) / k * before) if before == before and before else nan
        outcome = ("aborted: " + s["errors"][0][:60]) if s.get("errors") else "completed"
        print(f"{k:>4} {mode:>9} {'silent' if silent else 'link down':>9} "
              f"{s.get('detect_first', nan) * 1e3:>10.1f} {s.get('detect_last', nan) * 1e3:>9.1f} "
              f"{s.get('stall', nan) * 1e3:>9.1f} {before:>12.4f} {after:>8.4f} "
              f"{ratio:>23.2f} {before / stream:>13.2f} {s.get('wrong', 0):>6}  {outcome}",
              flush=True)
    print("# detect = cut to first rank noticing; peer = cut to last rank noticing (told by "
          "the notice, which queues behind data on the capped surviving NIC)")
    print("# stream: one NIC; with k NICs the ideal before/stream is k (all_reduce busbw of 2 "
          "ranks = per-direction rate)")
    print("# targets: detection well under 1 s (NCCL: ~30 s); stall < 100 ms; "
          "after/((k-1)/k*before) >= 0.90")


if __name__ == "__main__":
    main()

"""What one packet-level run is: the options, checked once, frozen."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LB_MODES = ("ecmp", "sglb")
WORKLOADS = ("alltoall", "permutation", "incast")
TCP_VARIANTS = ("cubic", "dctcp", "newreno")


class OptionError(ValueError):
    """An option that cannot be run; the message names it."""


@dataclass(frozen=True)
class LinkEvent:
    """A link cut (``down``) or repaired at ``at_s`` seconds of simulated time."""

    link: str
    """A fabric link's name (``l1:3-s1:1``), or ``SWITCH:PORT`` of either of its ends."""
    at_s: float
    down: bool = True


@dataclass(frozen=True)
class SimOptions:
    """One run of ``fabric-sim packet``."""

    lb: str = "sglb"
    """Leaves run the GLB engine (``sglb``) or hash ECMP over live paths (``ecmp``)."""
    workload: str = "alltoall"
    nbytes: int = 1_000_000
    """Bytes per connection."""
    flows: int = 4
    """Connections per host pair and rail (alltoall), per host (permutation, incast)."""
    link_scale: float = 1000.0
    """Every capacity of the fabric file is multiplied by this (10 Mbit/s -> 10 Gbit/s)."""
    delay_us: float = 1.0
    """Propagation delay of every link."""
    buffer_bytes: int = 512_000
    """Each switch port's output queue (drop-tail)."""
    ecn: bool = False
    """Switch queues mark ECN-capable packets CE above ``ecn_bytes`` (with ``tcp="dctcp"``)."""
    ecn_bytes: int = 90_000
    tcp: str = "cubic"
    min_rto_ms: float = 200.0
    """TCP's minimum retransmission timeout (Linux: 200 ms)."""
    delack_ms: float = 1.0
    """How long a receiver may hold back the ACK of a lone segment. ns-3's default, 200 ms,
    made every segment lost in a window cost 200 ms where Linux acknowledges at once while
    it recovers (quick-ACK mode); 1 ms keeps the every-second-segment ACK of steady state."""
    host_queue: int = 1000
    """Packets a host NIC queues (Linux's txqueuelen)."""
    seed: int = 1
    start_s: float = 0.001
    """When the workload starts (the control plane programs every switch at 0)."""
    stop_s: float = 2.0
    """Simulated time limit; flows not done by then are reported unfinished."""
    detect_us: float = 10.0
    """A cut reaches each end's P4 program (port-status packet) this long after it happens."""
    port_event_ms: float = 1.0
    """A cut reaches each end's SyncMesh daemon this long after it happens."""
    message_ms: float = 16.0
    """SyncMesh messages between daemons arrive this long after they are sent (the median
    agreement measured on the testbed, bench/bench_syncmesh_testbed.py)."""
    events: tuple[LinkEvent, ...] = ()
    sample_us: float = 100.0
    """Period of the per-link utilisation samples (the plot)."""
    max_paths: int = 8
    engine: str | None = None
    """softswitch's engine in every switch (``python``, ``native``); None: its default
    (``$SOFTSWITCH_ENGINE``). Both give the same results, byte for byte."""
    settings: tuple[tuple[str, int], ...] = field(default=())
    """Overrides of the switches' SGLB settings by name (``flowlet_gap_us=500``)."""
    decisions: bool = False
    """Record every new-flowlet decision of the leaves with the state the program read
    (``packetsim.decisions``) in the results' ``decisions``."""
    defines: tuple[tuple[str, str], ...] = field(default=())
    """Preprocessor definitions for compiling sglb.p4 (``SGLB_HASH_DRAW=1``): the program's
    compile-time alternatives, so that one mechanism can be measured against another."""

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> OptionError:
            return OptionError(f"--{name.replace('_', '-')}: {why}")

        if self.lb not in LB_MODES:
            raise bad("lb", f"must be one of {', '.join(LB_MODES)}, got {self.lb!r}")
        if self.workload not in WORKLOADS:
            raise bad("workload", f"must be one of {', '.join(WORKLOADS)}, got {self.workload!r}")
        if self.engine not in (None, "python", "native"):
            raise bad("engine", f"must be python or native, got {self.engine!r}")
        if self.tcp not in TCP_VARIANTS:
            raise bad("tcp", f"must be one of {', '.join(TCP_VARIANTS)}, got {self.tcp!r}")
        if not 0 < self.nbytes <= 1 << 40:
            raise bad("bytes", f"must be in 1..2^40, got {self.nbytes}")
        if not 1 <= self.flows <= 1024:
            raise bad("flows", f"must be in 1..1024, got {self.flows}")
        if not 0 < self.link_scale <= 1e6:
            raise bad("link-scale", f"must be in (0, 1e6], got {self.link_scale:g}")
        for name in ("delay_us", "detect_us", "port_event_ms", "message_ms", "start_s"):
            if not 0 <= getattr(self, name) < 1e6:
                raise bad(name, f"must be in [0, 1e6), got {getattr(self, name):g}")
        if not self.start_s < self.stop_s <= 3600:
            raise bad("stop", f"must be after --start and at most 3600 s, got {self.stop_s:g}")
        if not 1500 <= self.buffer_bytes <= 1 << 30:
            raise bad("buffer", f"must be in 1500..2^30 bytes, got {self.buffer_bytes}")
        if not 0 < self.ecn_bytes <= self.buffer_bytes:
            raise bad("ecn-bytes", f"must be in 1..--buffer, got {self.ecn_bytes}")
        if not 1 <= self.host_queue <= 100_000:
            raise bad("host-queue", f"must be in 1..100000 packets, got {self.host_queue}")
        if not 0.001 <= self.delack_ms <= 1000:
            raise bad("delayed-ack", f"must be in 1 us..1 s, got {self.delack_ms:g} ms")
        if not 1 <= self.min_rto_ms <= 10_000:
            raise bad("min-rto-ms", f"must be in 1..10000, got {self.min_rto_ms:g}")
        if not 1 <= self.sample_us <= 1e6:
            raise bad("sample-us", f"must be in 1..1e6, got {self.sample_us:g}")
        if not 0 <= self.seed < 2**31:
            raise bad("seed", f"must be in 0..2^31-1, got {self.seed}")
        for name, value in self.defines:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name) or \
                    not re.fullmatch(r"[A-Za-z0-9_]{0,64}", value):
                raise bad("define", f"expected NAME=VALUE (an identifier, a word), "
                                    f"got {name}={value}")
            if name in ("MAX_PATHS", "DRE_PERIOD_SHIFT"):
                raise bad("define", f"{name} is set from --max-paths and the fabric")
        for ev in self.events:
            if not 0 <= ev.at_s < self.stop_s:
                raise bad("fail", f"{ev.link}@{ev.at_s:g}: the time must be in [0, --stop)")

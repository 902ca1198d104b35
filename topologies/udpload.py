"""A multi-rail UDP load generator for the testbed (runs inside Mininet hosts).

``send`` paces datagrams of one flow at a fixed rate, round-robin over the
host's rails (NIC i to the peer's NIC i) that are alive:

* the NIC has carrier (checked every few ms with SIOCGIFFLAGS);
* the receiver did not report the rail's far end without carrier;
* the newest datagram the rail got answered was sent within the rail's
  timeout, TCP's retransmission timeout over the round trips that beacons
  measure (``Rails``). A beacon echoes the send time of the datagram it
  answers, so liveness is judged by what got through, not by when an answer
  arrived: on a loaded testbed the software switches can queue for a second,
  so beacons keep arriving long after a cut, and an arrival-time rule would
  keep the dead rail alive that long.

A dead rail gets a probe now and then and rejoins when a beacon answers one.
So a host survives the loss of a NIC or its last-hop link the way a
multi-rail collective library does, and the fabric's own failover shows in
what the receiver records.

``recv`` listens on every rail address, answers with beacons, prints a progress
line (JSON) every ``--report`` seconds on stdout (the first once its sockets are
bound) and writes every datagram it received to an ``.npz`` file at the end. It
listens ``--duration`` seconds (or until the time ``--end-on-stdin`` reads), then
until no data came for ``--drain`` seconds (what the switches still queue is
not lost). The sender writes its send log too, so losses and outages are
computed exactly afterwards (topologies/analysis.py).

Datagram: magic ``TBLD``, flow (16 bits), rail (8), kind (8: 0 data, 1 probe,
2 beacon), seq (32), send time (64, ns, CLOCK_REALTIME: Mininet hosts share the
kernel clock), padding to ``--size`` bytes. In a beacon, seq is a bitmap of the
flow's rails whose receiving interface has carrier, and the time is the echoed
send time of the datagram answered.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path

import numpy as np

HEADER = struct.Struct("!4sHBBIQ")
MAGIC = b"TBLD"
DATA, PROBE, BEACON = 0, 1, 2
SIOCGIFFLAGS = 0x8913
IFF_UP, IFF_RUNNING = 0x1, 0x40
BEACON_EVERY = 0.02  # s between beacons per (flow, rail)
DEAD_AFTER = 0.2  # s: the least time a rail may leave a datagram unanswered (RFC 6298's minimum)
INITIAL_TIMEOUT = 1.0  # s: the same before the first answer (RFC 6298's initial RTO)
PROBE_EVERY = 0.05  # s between probes on a dead rail
DRAIN_MAX = 20.0  # s a receiver keeps draining after --duration, at most
SO_RCVBUFFORCE = 33  # Linux; not exported by Python's socket module
RECEIVE_BUFFER = 4 << 20


def force_receive_buffer(sock: socket.socket, nbytes: int = RECEIVE_BUFFER) -> None:
    """A receive buffer of ``nbytes`` even above net.core.rmem_max (208 KiB on a stock kernel,
    which a receiver that Python stalls for a moment overruns); needs CAP_NET_ADMIN, as the
    testbed has, else the capped size."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, nbytes)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, nbytes)


def carrier(sock: socket.socket, ifname: str) -> bool:
    """True if interface ``ifname`` (in this namespace) is up and has carrier."""
    req = struct.pack("16sH14x", ifname.encode(), 0)
    try:
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, req))[1]
    except OSError:
        return False
    return bool(flags & IFF_UP and flags & IFF_RUNNING)


def _stop_on_signals(flag: list[bool]) -> None:
    def handler(*_):
        flag[0] = True
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


class Rails:
    """Which rails a sender may use, from its NICs' carrier and the receiver's beacons (no I/O).

    A beacon echoes the send time of the datagram it answers and reports which of the
    flow's rails reach an interface with carrier at the receiver. A rail is alive if its
    NIC has carrier, the receiver's latest report (by echoed time) has its far end up,
    and the newest datagram it got answered was sent within the rail's timeout: TCP's
    retransmission timeout (RFC 6298: srtt + 4 rttvar, at least ``DEAD_AFTER``) over
    the round trips that beacons measure. So a rail that is slow (a loaded software
    switch queues for a second) stays alive, and one that is cut dies after about one
    round trip even though beacons sent before the cut keep arriving: they echo old
    send times.
    """

    def __init__(self, count: int, start: float) -> None:
        self.echo = [start] * count  # newest send time (s) a beacon on the rail echoed
        self.srtt: list[float | None] = [None] * count
        self.rttvar = [0.0] * count
        self.far_up = [True] * count
        self._far_up_at = 0.0  # echoed send time of the report in far_up
        self.link_ok = [True] * count

    def on_beacon(self, rail: int, far_bits: int, echoed: float, now: float) -> None:
        """A beacon arrived on ``rail`` at ``now``: the receiver's carrier bitmap, the echoed
        send time."""
        if echoed > self.echo[rail]:  # an answer to something newer: a round-trip sample
            self.echo[rail] = echoed
            sample = max(0.0, now - echoed)
            srtt = self.srtt[rail]
            if srtt is None:
                self.srtt[rail], self.rttvar[rail] = sample, sample / 2
            else:
                self.rttvar[rail] = 0.75 * self.rttvar[rail] + 0.25 * abs(srtt - sample)
                self.srtt[rail] = 0.875 * srtt + 0.125 * sample
        if echoed >= self._far_up_at:
            self._far_up_at = echoed
            self.far_up = [bool(far_bits >> i & 1) for i in range(len(self.echo))]

    def timeout(self, rail: int) -> float:
        """Seconds after a send on ``rail`` within which its answer is due."""
        srtt = self.srtt[rail]
        if srtt is None:
            return INITIAL_TIMEOUT
        return max(DEAD_AFTER, srtt + 4 * self.rttvar[rail] + BEACON_EVERY)

    def alive(self, now: float) -> list[bool]:
        """Per rail: usable for data now."""
        return [self.link_ok[r] and self.far_up[r] and now - self.echo[r] <= self.timeout(r)
                for r in range(len(self.echo))]

    def fallback(self) -> list[int]:
        """When no rail is alive: the freshest one whose NIC is up, if any."""
        ok = [r for r, up in enumerate(self.link_ok) if up]
        return [max(ok, key=lambda r: self.echo[r])] if ok else []


def send(args: argparse.Namespace) -> int:
    """Send one flow over the alive rails; write the send log."""
    rails = len(args.src)
    socks = []
    for ip in args.src:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((ip, 0))
        s.setblocking(False)
        socks.append(s)
    interval = args.size * 8 / (args.rate_mbps * 1e6)
    pad = b"\0" * max(0, args.size - HEADER.size)
    stop = [False]
    _stop_on_signals(stop)
    start = args.start_at or time.time()
    while time.time() < start and not stop[0]:
        time.sleep(min(0.01, start - time.time()))
    state = Rails(rails, start)
    next_probe = [0.0] * rails
    next_carrier = 0.0
    log_seq, log_ts, log_rail = [], [], []
    seq = 0
    rr = 0
    end = start + args.duration
    due = start
    while not stop[0]:
        now = time.time()
        if now >= end:
            break
        if now >= next_carrier:
            state.link_ok = [carrier(socks[r], args.ifaces[r]) for r in range(rails)]
            next_carrier = now + 0.002
        for r, s in enumerate(socks):
            while True:
                try:
                    data = s.recv(2048)
                except BlockingIOError:
                    break
                except OSError:
                    break
                if len(data) < HEADER.size or data[:4] != MAGIC:
                    continue
                _, flow, _, kind, bits, ts = HEADER.unpack_from(data)
                if kind != BEACON or flow != args.flow:
                    continue
                state.on_beacon(r, bits, ts / 1e9, time.time())
        alive = state.alive(now)
        for r in range(rails):
            if not alive[r] and state.link_ok[r] and now >= next_probe[r]:
                next_probe[r] = now + PROBE_EVERY
                try:
                    socks[r].sendto(HEADER.pack(MAGIC, args.flow, r, PROBE, 0, time.time_ns()),
                                    (args.dst[r], args.port))
                except OSError:
                    pass
        if now < due:
            time.sleep(min(due - now, 0.002))
            continue
        usable = [r for r in range(rails) if alive[r]]
        if not usable:
            usable = state.fallback()
        if usable:
            r = usable[rr % len(usable)]
            rr += 1
            ts = time.time_ns()
            try:
                socks[r].sendto(HEADER.pack(MAGIC, args.flow, r, DATA, seq, ts) + pad,
                                (args.dst[r], args.port))
            except OSError:
                pass  # counted as lost: it is in the log and never received
            log_seq.append(seq)
            log_ts.append(ts)
            log_rail.append(r)
            seq += 1
        due += interval
        if due < now - 0.1:  # fell behind (CPU): do not burst to catch up
            due = now
    np.savez(args.out, seq=np.array(log_seq, dtype=np.uint32),
             send_ns=np.array(log_ts, dtype=np.int64), rail=np.array(log_rail, dtype=np.uint8),
             flow=np.array([args.flow], dtype=np.uint16))
    return 0


def _line_unless_stopped(stop: list[bool]) -> str | None:
    """The next line of standard input, or None once SIGTERM/SIGINT set ``stop`` (a plain
    readline is resumed after the signal handler, so the signal would wait for the line)."""
    with selectors.DefaultSelector() as sel:
        sel.register(sys.stdin, selectors.EVENT_READ)
        while not stop[0]:
            if sel.select(timeout=0.05):
                return sys.stdin.readline()
    return None


def recv(args: argparse.Namespace) -> int:
    """Receive on every rail address, answer beacons, report progress, write the receive log."""
    sel = selectors.DefaultSelector()
    socks = []
    for ip in args.listen:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        force_receive_buffer(s)
        s.bind((ip, args.port))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, len(socks))
        socks.append(s)
    stop = [False]
    _stop_on_signals(stop)
    flows, rails, seqs, sends, recvs = [], [], [], [], []
    last_beacon: dict[tuple, float] = {}
    arrives_on: dict[tuple[int, int], int] = {}  # (flow, sender's rail) -> our socket
    up = [True] * len(socks)
    next_carrier = 0.0
    total_bytes = total_pkts = 0
    print(json.dumps({"t": time.time(), "bytes": 0, "pkts": 0, "ready": True}), flush=True)
    if args.end_on_stdin:  # the senders' end time comes once they are scheduled
        line = _line_unless_stopped(stop)
        try:
            listen_end = time.time() if line is None else float(line)
        except ValueError:
            print(f"udpload recv: expected the senders' end time on stdin, got {line[:40]!r}",
                  file=sys.stderr)
            return 2
    else:
        listen_end = time.time() + args.duration
    next_report = time.time() + args.report
    last_data = time.time()
    while not stop[0]:
        now = time.time()
        if now >= listen_end and (now - last_data >= args.drain
                                  or now >= listen_end + DRAIN_MAX):
            break
        if args.ifaces and now >= next_carrier:
            up = [carrier(s, name) for s, name in zip(socks, args.ifaces, strict=True)]
            next_carrier = now + 0.002
        for key, _ in sel.select(timeout=0.02):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            while True:
                try:
                    data, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                except OSError:
                    break
                now_ns = time.time_ns()
                if len(data) < HEADER.size or data[:4] != MAGIC:
                    continue
                _, flow, rail, kind, seq, ts = HEADER.unpack_from(data)
                if kind == BEACON:
                    continue
                arrives_on[(flow, rail)] = key.data
                if kind == DATA:
                    flows.append(flow)
                    rails.append(rail)
                    seqs.append(seq)
                    sends.append(ts)
                    recvs.append(now_ns)
                    total_bytes += len(data)
                    total_pkts += 1
                    last_data = now_ns / 1e9
                bkey = (flow, rail, addr)
                now = now_ns / 1e9
                if now - last_beacon.get(bkey, 0.0) >= BEACON_EVERY or kind == PROBE:
                    last_beacon[bkey] = now
                    # which of this flow's rails reach an interface with carrier (unknown: yes)
                    bits = 0
                    for r in range(8):
                        sock = arrives_on.get((flow, r))
                        bits |= (sock is None or up[sock]) << r
                    try:
                        s.sendto(HEADER.pack(MAGIC, flow, rail, BEACON, bits, ts), addr)
                    except OSError:
                        pass
        now = time.time()
        if now >= next_report:
            print(json.dumps({"t": now, "bytes": total_bytes, "pkts": total_pkts}), flush=True)
            next_report = now + args.report
    np.savez(args.out, flow=np.array(flows, dtype=np.uint16), rail=np.array(rails, dtype=np.uint8),
             seq=np.array(seqs, dtype=np.uint32), send_ns=np.array(sends, dtype=np.int64),
             recv_ns=np.array(recvs, dtype=np.int64))
    print(json.dumps({"t": time.time(), "bytes": total_bytes, "pkts": total_pkts, "done": True}),
          flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command line: ``send`` or ``recv``."""
    p = argparse.ArgumentParser(prog="python -m topologies.udpload", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--flow", type=int, required=True)
    s.add_argument("--src", type=lambda v: v.split(","), required=True, help="rail addresses, comma-separated")
    s.add_argument("--ifaces", type=lambda v: v.split(","), required=True, help="rail interfaces")
    s.add_argument("--dst", type=lambda v: v.split(","), required=True, help="peer rail addresses")
    s.add_argument("--port", type=int, default=9000)
    s.add_argument("--rate-mbps", type=float, required=True)
    s.add_argument("--size", type=int, default=1400, help="UDP payload bytes")
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--start-at", type=float, default=0.0, help="wall-clock start (s since epoch)")
    s.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("recv")
    r.add_argument("--listen", type=lambda v: v.split(","), required=True)
    r.add_argument("--port", type=int, default=9000)
    r.add_argument("--ifaces", type=lambda v: v.split(","), default=[],
                   help="the interfaces of the --listen addresses, same order (their carrier is "
                        "reported to senders)")
    r.add_argument("--duration", type=float, default=0.0, help="seconds to listen at least")
    r.add_argument("--end-on-stdin", action="store_true",
                   help="print a ready line, then read the senders' end time (s since the epoch) "
                        "from stdin and listen until then instead of --duration")
    r.add_argument("--drain", type=float, default=1.0,
                   help=f"then stop after this many seconds without data (at most {DRAIN_MAX:.0f} s)")
    r.add_argument("--report", type=float, default=0.2)
    r.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "send":
        if not (len(args.src) == len(args.ifaces) == len(args.dst)):
            p.error("--src, --ifaces and --dst need one entry per rail")
        if args.rate_mbps <= 0 or args.size < HEADER.size or args.duration <= 0:
            p.error(f"need --rate-mbps > 0, --size >= {HEADER.size}, --duration > 0")
        if len(args.src) > 8:
            p.error("at most 8 rails")
        return send(args)
    if args.ifaces and len(args.ifaces) != len(args.listen):
        p.error("--ifaces needs one entry per --listen address")
    if (args.duration <= 0 and not args.end_on_stdin) or args.drain < 0:
        p.error("need --duration > 0 (or --end-on-stdin) and --drain >= 0")
    return recv(args)


if __name__ == "__main__":
    sys.exit(main())

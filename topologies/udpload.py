"""A multi-rail UDP load generator for the testbed (runs inside Mininet hosts).

``send`` paces datagrams of one flow at a fixed rate, round-robin over the
host's rails (NIC i to the peer's NIC i) that are alive: the NIC has carrier
(checked every few ms with SIOCGIFFLAGS) and the receiver's beacons on that rail
are fresh. A dead rail gets a probe now and then and rejoins when a beacon
answers. So a host survives the loss of a NIC or its last-hop link the way a
multi-rail collective library does, and the fabric's own failover shows in
what the receiver records.

``recv`` listens on every rail address, answers with beacons, prints a progress
line (JSON) every ``--report`` seconds on stdout and writes every datagram it
received to an ``.npz`` file at the end. The sender writes its send log too, so
losses and outages are computed exactly afterwards (topologies/analysis.py).

Datagram: magic ``TBLD``, flow (16 bits), rail (8), kind (8: 0 data, 1 probe,
2 beacon), seq (32), send time (64, ns, CLOCK_REALTIME: Mininet hosts share the
kernel clock), padding to ``--size`` bytes.
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
DEAD_AFTER = 0.2  # s without a beacon: the rail is dead
PROBE_EVERY = 0.05  # s between probes on a dead rail


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
    beacon = [start + 0.3] * rails  # grace: rails count as alive at first
    link_ok = [True] * rails
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
            link_ok = [carrier(socks[r], args.ifaces[r]) for r in range(rails)]
            next_carrier = now + 0.002
        for r, s in enumerate(socks):
            while True:
                try:
                    data = s.recv(2048)
                except BlockingIOError:
                    break
                except OSError:
                    break
                if len(data) >= HEADER.size and data[:4] == MAGIC:
                    beacon[r] = now
        alive = [link_ok[r] and now - beacon[r] < DEAD_AFTER for r in range(rails)]
        for r in range(rails):
            if not alive[r] and link_ok[r] and now >= next_probe[r]:
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
        if not usable:  # every rail looks dead: use the one heard from last, if its NIC is up
            ok = [r for r in range(rails) if link_ok[r]]
            usable = [max(ok, key=lambda r: beacon[r])] if ok else []
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


def recv(args: argparse.Namespace) -> int:
    """Receive on every rail address, answer beacons, report progress, write the receive log."""
    sel = selectors.DefaultSelector()
    for ip in args.listen:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((ip, args.port))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    stop = [False]
    _stop_on_signals(stop)
    flows, rails, seqs, sends, recvs = [], [], [], [], []
    last_beacon: dict[tuple, float] = {}
    total_bytes = total_pkts = 0
    next_report = time.time() + args.report
    end = time.time() + args.duration
    while not stop[0] and time.time() < end:
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
                if kind == DATA:
                    flows.append(flow)
                    rails.append(rail)
                    seqs.append(seq)
                    sends.append(ts)
                    recvs.append(now_ns)
                    total_bytes += len(data)
                    total_pkts += 1
                bkey = (flow, rail, addr)
                now = now_ns / 1e9
                if now - last_beacon.get(bkey, 0.0) >= BEACON_EVERY or kind == PROBE:
                    last_beacon[bkey] = now
                    try:
                        s.sendto(HEADER.pack(MAGIC, flow, rail, BEACON, seq, now_ns), addr)
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
    r.add_argument("--duration", type=float, required=True)
    r.add_argument("--report", type=float, default=0.2)
    r.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "send":
        if not (len(args.src) == len(args.ifaces) == len(args.dst)):
            p.error("--src, --ifaces and --dst need one entry per rail")
        if args.rate_mbps <= 0 or args.size < HEADER.size or args.duration <= 0:
            p.error(f"need --rate-mbps > 0, --size >= {HEADER.size}, --duration > 0")
        return send(args)
    return recv(args)


if __name__ == "__main__":
    sys.exit(main())

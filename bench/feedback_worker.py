"""Traffic of bench/bench_testbed_feedback.py, run inside Mininet hosts.

``echo``  answers every UDP datagram on --listen:--port to its sender.
``probe`` sends a small datagram from --src to --dst:--port every --interval s,
          each from a new source port (a new flow, so a new flowlet at the
          leaf), and reads the echoes so that the reverse direction carries
          traffic (and with it the leaves' in-band feedback).
``blast`` sends --size-byte datagrams from --src to --dst:--port at --rate-mbps
          for --duration s, and prints the wall-clock time of its first send.

Every command stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import collections
import selectors
import signal
import socket
import struct
import sys
import time

PROBE = struct.Struct("!Id")  # seq, send time


def _stopper() -> list[bool]:
    flag = [False]

    def handler(*_):
        flag[0] = True
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return flag


def echo(args: argparse.Namespace) -> int:
    stop = _stopper()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.listen, args.port))
    sock.settimeout(0.2)
    print("ready", flush=True)
    while not stop[0]:
        try:
            data, peer = sock.recvfrom(2048)
        except TimeoutError:
            continue
        sock.sendto(data, peer)
    return 0


def probe(args: argparse.Namespace) -> int:
    stop = _stopper()
    sel = selectors.DefaultSelector()
    open_socks: collections.deque[socket.socket] = collections.deque()
    seq = 0
    next_send = time.monotonic()
    print("ready", flush=True)
    while not stop[0]:
        now = time.monotonic()
        if now >= next_send:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((args.src, 0))
            s.setblocking(False)
            s.sendto(PROBE.pack(seq, time.time()) + b"p" * 64, (args.dst, args.port))
            sel.register(s, selectors.EVENT_READ)
            open_socks.append(s)
            if len(open_socks) > 64:           # keep the last ones open for their echoes
                old = open_socks.popleft()
                sel.unregister(old)
                old.close()
            seq += 1
            next_send += args.interval
            if next_send < now:                # fell behind (loaded machine): do not burst
                next_send = now + args.interval
        for key, _ in sel.select(timeout=max(0.0, next_send - time.monotonic())):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)  # only sockets are registered
            try:
                sock.recv(2048)
            except OSError:
                pass
    return 0


def blast(args: argparse.Namespace) -> int:
    stop = _stopper()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.src, 0))
    gap = args.size * 8 / (args.rate_mbps * 1e6)
    payload = b"b" * args.size
    start = time.monotonic()
    next_send = start
    first = None
    while not stop[0] and time.monotonic() - start < args.duration:
        try:
            sock.sendto(payload, (args.dst, args.port))
        except OSError:
            pass                                # a full qdisc: the fabric is saturated anyway
        if first is None:
            first = time.time()
            print(f"first {first:.6f}", flush=True)
        next_send += gap
        delay = next_send - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("echo")
    e.add_argument("--listen", required=True)
    e.add_argument("--port", type=int, required=True)
    p = sub.add_parser("probe")
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--interval", type=float, default=0.005)
    b = sub.add_parser("blast")
    b.add_argument("--src", required=True)
    b.add_argument("--dst", required=True)
    b.add_argument("--port", type=int, required=True)
    b.add_argument("--rate-mbps", type=float, required=True)
    b.add_argument("--size", type=int, default=1400)
    b.add_argument("--duration", type=float, required=True)
    args = ap.parse_args(argv)
    return {"echo": echo, "probe": probe, "blast": blast}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

"""Baselines measured in the same run as the ReCCL benchmarks: plain Python streams.

`tcp_stream` is the reference the issue names: one process `sendall`s a buffer
over a loopback TCP connection, another `recv_into`s it. `udp_stream` is the
same with datagrams of a given size (no reliability at all), the upper bound
of any transport that sends one datagram per Python call.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import time


def _tcp_sink(port_q, total: int, block: int) -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    port_q.put(srv.getsockname()[1])
    conn, _ = srv.accept()
    buf = bytearray(block)
    mv = memoryview(buf)
    got = 0
    while got < total:
        n = conn.recv_into(mv)
        if not n:
            break
        got += n
    conn.sendall(b"k")
    conn.close()
    srv.close()


def tcp_stream(total: int = 512 << 20, block: int = 4 << 20) -> float:
    """Bytes/s of one Python sendall stream between two processes over loopback TCP."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_tcp_sink, args=(q, total, block), daemon=True)
    p.start()
    port = q.get(timeout=30)
    s = socket.create_connection(("127.0.0.1", port))
    data = memoryview(bytes(block))
    t0 = time.perf_counter()
    sent = 0
    while sent < total:
        s.sendall(data)
        sent += block
    s.recv(1)  # the receiver has everything
    dt = time.perf_counter() - t0
    s.close()
    p.join(timeout=10)
    return total / dt


def _udp_sink(port_q, total: int, size: int, done_q) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind(("127.0.0.1", 0))
    s.settimeout(1.0)
    port_q.put(s.getsockname()[1])
    buf = bytearray(65536)
    got = 0
    first = None
    last = None
    try:
        while got < total:
            n = s.recv_into(buf)
            last = time.perf_counter()
            first = first or last
            got += n
    except TimeoutError:
        pass
    done_q.put((got, first, last))


def udp_stream(total: int = 256 << 20, size: int = 8192) -> tuple[float, float]:
    """(bytes/s received, fraction lost) of Python sendto of `size`-byte datagrams, paced
    only by the socket buffer."""
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_udp_sink, args=(q, total, size, done), daemon=True)
    p.start()
    port = q.get(timeout=30)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    data = bytes(size)
    addr = ("127.0.0.1", port)
    for _ in range(total // size):
        s.sendto(data, addr)
    got, first, last = done.get(timeout=60)
    p.join(timeout=10)
    s.close()
    rate = got / (last - first) if first and last and last > first else 0.0
    return rate, 1 - got / total


def _duplex_peer(role: int, port_q, res_q, total: int, block: int) -> None:
    import threading

    if role == 0:
        srv = socket.create_server(("127.0.0.1", 0))
        port_q.put(srv.getsockname()[1])
        s, _ = srv.accept()
        srv.close()
    else:
        s = socket.create_connection(("127.0.0.1", port_q.get(timeout=30)))
    out = memoryview(bytes(block))
    inb = memoryview(bytearray(block))
    t0 = time.perf_counter()

    def send() -> None:
        for _ in range(total // block):
            s.sendall(out)

    th = threading.Thread(target=send)
    th.start()
    got = 0
    while got < total:
        n = s.recv_into(inb)
        if not n:
            break
        got += n
    th.join()
    res_q.put(time.perf_counter() - t0)
    s.close()


def tcp_duplex(total: int = 256 << 20, block: int = 4 << 20) -> float:
    """Bytes/s per direction when two processes both sendall and recv_into at once over one
    loopback TCP connection (a sender thread and a receiver thread each): what a 2-rank
    all_reduce, whose ranks send and receive at the same time, could reach in Python."""
    ctx = mp.get_context("spawn")
    q, res = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_duplex_peer, args=(i, q, res, total, block), daemon=True)
             for i in range(2)]
    for p in procs:
        p.start()
    dt = max(res.get(timeout=120), res.get(timeout=120))
    for p in procs:
        p.join(timeout=10)
    return total / dt


SINK = """
import socket, sys, time
srv = socket.create_server((sys.argv[1], 0)); print(srv.getsockname()[1], flush=True)
c, _ = srv.accept(); buf = bytearray(1 << 20); got = 0; t0 = None
while True:
    n = c.recv_into(buf)
    if not n: break
    t0 = t0 or time.perf_counter(); got += n
print(got / (time.perf_counter() - t0), flush=True)
"""
SOURCE = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
data = memoryview(bytes(1 << 20)); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end: s.sendall(data)
s.close()
"""


def netns_stream(rate: str, seconds: float = 3.0) -> float:
    """Bytes/s of a Python TCP sendall stream between two namespaces over one NIC capped at
    `rate` (the reference of the namespace benchmarks; needs root)."""
    import secrets
    import subprocess
    import sys

    from reccl.netns import Testbed

    tb = Testbed(f"rb{secrets.token_hex(2)}", 2, 1).create()
    try:
        for h in range(2):
            tb.rate_limit(h, 0, rate)
        sink = subprocess.Popen(["ip", "netns", "exec", tb.ns(1), sys.executable, "-c", SINK,
                                 tb.ip(1, 0)], stdout=subprocess.PIPE, text=True)
        assert sink.stdout is not None
        port = sink.stdout.readline().strip()
        subprocess.run(["ip", "netns", "exec", tb.ns(0), sys.executable, "-c", SOURCE,
                        tb.ip(1, 0), port, str(seconds)], check=True, timeout=seconds + 30)
        rate_bps = float(sink.stdout.readline())
        sink.wait(timeout=10)
        return rate_bps
    finally:
        tb.destroy()

"""All-to-all TCP transfers between the testbed's hosts, with per-transfer completion times.

The workload of ``bench/bench_testbed_alltoall.py``: every host sends a fixed
number of bytes to every host it shares no leaf with (so every byte crosses a
spine), on every rail (NIC i to the peer's NIC i), over several TCP
connections per pair and rail. Each connection has its own source port, so
ECMP hashes each one on its own and collisions on the leaf-spine links show
up as a late finish. The collective is done when the last transfer is.

``serve`` (one per host) accepts connections on every rail address, reads a
12-byte header (magic ``TBA1``, transfer id, length) and exactly that many
bytes, then answers one byte, so the sender's end time includes the last
byte's delivery. ``send`` (one per host) starts all of its transfers at a
common wall-clock time (Mininet hosts share the kernel clock) and prints one
JSON line per transfer: ``{"id", "connect", "start", "end", "bytes"}`` (connect:
before the handshake, start: after it) or an ``"error"``.
"""

from __future__ import annotations

import argparse
import json
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from fabricmodel import (
    Fabric,
    FabricError,
    format_capacity,
    from_dict,
    parse_capacity,
    to_dict,
)

HEADER = struct.Struct("!4sII")
MAGIC = b"TBA1"
CHUNK = 64 * 1024
PORT = 9100


@dataclass(frozen=True)
class Transfer:
    """One TCP connection of the all-to-all: ``nbytes`` from ``src_ip`` to ``dst_ip``."""

    id: int
    src: str
    dst: str
    rail: int
    src_ip: str
    dst_ip: str
    nbytes: int


def plan(fabric: Fabric, flows_per_pair: int, nbytes: int) -> list[Transfer]:
    """Transfers for every ordered pair of hosts with disjoint leaves, every rail, ``flows_per_pair`` each."""
    if flows_per_pair < 1 or nbytes < 1:
        raise ValueError(f"need flows_per_pair >= 1 and nbytes >= 1, got {flows_per_pair} and {nbytes}")
    out: list[Transfer] = []
    for a in fabric.hosts:
        for b in fabric.hosts:
            if a.name == b.name or len(a.nics) != len(b.nics):
                continue
            if {n.leaf for n in a.nics} & {n.leaf for n in b.nics}:
                continue
            for rail, (na, nb) in enumerate(zip(a.nics, b.nics, strict=True)):
                for _ in range(flows_per_pair):
                    out.append(Transfer(len(out), a.name, b.name, rail, str(na.ip), str(nb.ip), nbytes))
    if not out:
        raise FabricError(f"fabric {fabric.name}: no two hosts with disjoint leaves and the same "
                          "number of NICs: no all-to-all traffic would cross a spine")
    return out


def scale_fabric(fabric: Fabric, factor: float) -> Fabric:
    """The same fabric with every capacity (links and NICs) multiplied by ``factor``."""
    if factor <= 0:
        raise ValueError(f"scale factor must be > 0, got {factor}")

    def walk(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: (format_capacity(parse_capacity(v) * factor) if k == "capacity" else walk(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    return from_dict(walk(to_dict(fabric)), file=f"<{fabric.name} x{factor:g}>")


def ideal_seconds(fabric: Fabric, transfers: Iterable[Transfer]) -> float:
    """Lower bound on the completion time: the busiest NIC (sent or received bytes) at its line rate."""
    rate = {str(nic.ip): nic.capacity_mbps * 1e6 / 8 for host in fabric.hosts for nic in host.nics}
    load: dict[tuple[str, str], float] = {}  # (direction, NIC address) -> bytes
    for t in transfers:
        for key in (("tx", t.src_ip), ("rx", t.dst_ip)):
            load[key] = load.get(key, 0.0) + t.nbytes
    return max(v / rate[ip] for (_, ip), v in load.items())


def completion(results: list[dict], start: float) -> dict:
    """Figures of one all-to-all from the transfers' JSON records: completion and spread."""
    errors = [r for r in results if "error" in r]
    done = sorted(r["end"] - start for r in results if "error" not in r)
    if not done:
        raise ValueError("no transfer finished")
    late = max(r["start"] - start for r in results if "error" not in r)
    spawn = max((r["connect"] - start for r in results if "connect" in r), default=0.0)
    return {"completion_s": done[-1], "first_s": done[0], "median_s": done[len(done) // 2],
            "latest_connect_s": spawn, "latest_start_s": late, "transfers": len(done), "errors": len(errors),
            "bytes": sum(r["bytes"] for r in results if "error" not in r)}


def tcp_counters(snmp: str, netstat: str) -> dict[str, int]:
    """Retransmitted segments and detected reorderings from ``/proc/net/snmp`` and ``/proc/net/netstat``."""
    def table(text: str, prefix: str) -> dict[str, int]:
        rows = [ln.split() for ln in text.splitlines() if ln.startswith(prefix)]
        out: dict[str, int] = {}
        for names, values in zip(rows[0::2], rows[1::2], strict=False):
            out.update({k: int(v) for k, v in zip(names[1:], values[1:], strict=False)
                        if v.lstrip("-").isdigit()})
        return out

    tcp = table(snmp, "Tcp:")
    ext = table(netstat, "TcpExt:")
    return {"retrans_segs": tcp.get("RetransSegs", 0),
            "reorder_events": sum(v for k, v in ext.items() if k.endswith("Reorder")),
            "timeouts": ext.get("TCPTimeouts", 0)}


# -- the two processes ---------------------------------------------------------


def _read_exact(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = conn.recv(min(CHUNK, n - len(buf)))
        if not data:
            raise ConnectionError(f"peer closed after {len(buf)} of {n} bytes")
        buf += data
    return bytes(buf)


def _serve_one(conn: socket.socket) -> None:
    try:
        conn.settimeout(120)
        magic, _tid, length = HEADER.unpack(_read_exact(conn, HEADER.size))
        if magic != MAGIC:
            return
        left = length
        while left:
            data = conn.recv(min(CHUNK, left))
            if not data:
                return
            left -= len(data)
        conn.sendall(b"K")
    except OSError:
        pass
    finally:
        conn.close()


def serve(listen: list[str], port: int, duration: float) -> int:
    """Accept transfers on every address until ``duration`` s pass or SIGTERM."""
    stop = [False]

    def on_signal(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sel = selectors.DefaultSelector()
    for ip in listen:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((ip, port))
        s.listen(128)
        sel.register(s, selectors.EVENT_READ)
    print(json.dumps({"ready": True}), flush=True)
    end = time.time() + duration
    while not stop[0] and time.time() < end:
        for key, _ in sel.select(timeout=0.1):
            listener = key.fileobj
            assert isinstance(listener, socket.socket)
            conn, _ = listener.accept()
            threading.Thread(target=_serve_one, args=(conn,), daemon=True).start()
    return 0


def _send_one(t: Transfer, port: int, start: float, out: list[dict], lock: threading.Lock) -> None:
    rec: dict[str, Any] = {"id": t.id, "bytes": t.nbytes}
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(120)
            s.bind((t.src_ip, 0))
            rec["connect"] = time.time()
            s.connect((t.dst_ip, port))
            rec["start"] = time.time()
            s.sendall(HEADER.pack(MAGIC, t.id, t.nbytes))
            chunk = b"\0" * CHUNK
            left = t.nbytes
            while left:
                n = min(CHUNK, left)
                s.sendall(chunk[:n])
                left -= n
            if s.recv(1) != b"K":
                raise ConnectionError("no acknowledgement from the receiver")
            rec["end"] = time.time()
    except OSError as e:
        rec["error"] = f"{t.src_ip}->{t.dst_ip}:{port}: {e}"
    rec["start_at"] = start
    with lock:
        out.append(rec)


def send(transfers: list[Transfer], port: int, start_at: float) -> list[dict]:
    """Run ``transfers`` concurrently from ``start_at`` (wall clock); one record per transfer."""
    while time.time() < start_at:
        time.sleep(min(0.005, max(0.0, start_at - time.time())))
    out: list[dict] = []
    lock = threading.Lock()
    threads = [threading.Thread(target=_send_one, args=(t, port, start_at, out, lock), daemon=True)
               for t in transfers]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sorted(out, key=lambda r: r["id"])


def transfers_to_json(transfers: Iterable[Transfer]) -> str:
    """The transfers as one JSON line (the ``send`` command's ``--transfers``)."""
    return json.dumps([asdict(t) for t in transfers])


def transfers_from_json(text: str) -> list[Transfer]:
    """Inverse of ``transfers_to_json``; a bad record is a ``ValueError`` naming its index."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--transfers: not JSON: {e}") from None
    if not isinstance(data, list):
        raise ValueError("--transfers: expected a JSON list of transfers")
    out = []
    for i, item in enumerate(data):
        try:
            t = Transfer(**item)
        except TypeError as e:
            raise ValueError(f"--transfers[{i}]: {e}") from None
        if not isinstance(t.nbytes, int) or t.nbytes < 1 or t.nbytes >= 1 << 32:
            raise ValueError(f"--transfers[{i}]: nbytes must be an integer in [1, 2^32), got {t.nbytes!r}")
        out.append(t)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: ``serve`` or ``send``."""
    p = argparse.ArgumentParser(prog="python -m topologies.alltoall", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--listen", type=lambda v: v.split(","), required=True, help="rail addresses")
    s.add_argument("--port", type=int, default=PORT)
    s.add_argument("--duration", type=float, required=True)
    c = sub.add_parser("send")
    c.add_argument("--transfers", required=True, help="JSON list (transfers_to_json)")
    c.add_argument("--port", type=int, default=PORT)
    c.add_argument("--start-at", type=float, default=0.0, help="wall-clock start (s since epoch)")
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error(f"--port must be in 1..65535, got {args.port}")
    if args.cmd == "serve":
        if args.duration <= 0:
            p.error("--duration must be > 0")
        return serve(args.listen, args.port, args.duration)
    try:
        transfers = transfers_from_json(args.transfers)
    except ValueError as e:
        p.error(str(e))
    for rec in send(transfers, args.port, args.start_at):
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

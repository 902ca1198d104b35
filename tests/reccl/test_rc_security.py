"""Authentication and setup errors: forged and replayed link handshakes, frames without a
handshake, the store without the secret, and rendezvous conflicts that name themselves."""

import socket
import threading
import time

import numpy as np
import pytest

from reccl import CommOptions, Communicator, ReCCLError, auth, wire
from reccl.spawn import loopback_layout, run_ranks
from reccl.store import StoreClient, StoreError, StoreServer

SECRET = "a-test-secret"


def frame(ptype, src, dst, chan, body):
    return wire.encode(wire.Header(ptype, src, dst, chan), body)


def read_frame(s):
    hdr = s.recv(wire.HEADER.size, socket.MSG_WAITALL)
    h = wire.decode_header(hdr)
    body = s.recv(h.length, socket.MSG_WAITALL) if h.length else b""
    return wire.decode(hdr + body)


def closed(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def attack(comm):
    """Rank 0 plays an attacker against rank 1's NIC listener, then both run a collective
    whose result must be exact."""
    x = np.arange(1000, dtype=np.float64) + comm.rank
    before = comm.all_reduce(x)
    if comm.rank == 0:
        ip, port = comm.topology.ranks[1].nics[0]
        session = comm.endpoint.session
        outcomes = {}
        # 1. DATA straight away, claiming to be rank 0 on channel 0 (no handshake)
        s = socket.create_connection((ip, port))
        s.sendall(frame(wire.DATA, 0, 1, 0, wire.Data(0, 1, 8, 0, b"\xff" * 8)))
        outcomes["no_handshake"] = closed(s)
        # 2. a full handshake with a wrong secret
        s = socket.create_connection((ip, port))
        nonce_c = auth.nonce()
        s.sendall(frame(wire.HELLO, 0, 1, 0, wire.Hello(session, nonce_c)))
        _, ch = read_frame(s)
        bad = auth.link_proof(b"guessed", "client", session, 0, 1, 0, nonce_c, ch.nonce)
        s.sendall(frame(wire.AUTH, 0, 1, 0, wire.Auth(bad)))
        s.sendall(frame(wire.DATA, 0, 1, 0, wire.Data(0, 1, 8, 0, b"\xff" * 8)))
        outcomes["wrong_secret"] = closed(s)
        # 3. replay: a proof that was right for one connection, sent on a new one
        s = socket.create_connection((ip, port))
        s.sendall(frame(wire.HELLO, 0, 1, 0, wire.Hello(session, nonce_c)))
        _, ch1 = read_frame(s)
        good = auth.link_proof(SECRET.encode(), "client", session, 0, 1, 0, nonce_c, ch1.nonce)
        s.close()
        s = socket.create_connection((ip, port))
        s.sendall(frame(wire.HELLO, 0, 1, 0, wire.Hello(session, nonce_c)))
        _, ch2 = read_frame(s)
        s.sendall(frame(wire.AUTH, 0, 1, 0, wire.Auth(good)))
        outcomes["replayed"] = closed(s) and ch2.nonce != ch1.nonce
        # 4. a wrong session id
        s = socket.create_connection((ip, port))
        s.sendall(frame(wire.HELLO, 0, 1, 0, wire.Hello(session ^ 1, nonce_c)))
        outcomes["wrong_session"] = closed(s)
        # 5. not ReCCL at all
        s = socket.create_connection((ip, port))
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        outcomes["garbage"] = closed(s)
    time.sleep(0.2)
    comm.barrier()
    after = comm.all_reduce(x)
    return before, after, comm.counters(), outcomes if comm.rank == 0 else None


def test_links_without_the_secret_are_rejected_counted_and_change_nothing():
    res = run_ranks(attack, loopback_layout(2, 1, 2), timeout=120, secret=SECRET)
    before, after, _, outcomes = res[0]
    assert outcomes == {"no_handshake": True, "wrong_secret": True, "replayed": True,
                        "wrong_session": True, "garbage": True}
    assert before.tobytes() == after.tobytes()
    assert float(after[0]) == 1.0
    counters = res[1][2]
    assert counters["auth_failed"] == 6, counters  # 5 attacks + the abandoned handshake
    assert counters["links_accepted"] == 2  # only rank 0's two real links


def test_store_refuses_clients_without_the_secret():
    srv = StoreServer("127.0.0.1:0", secret=b"right")
    try:
        with pytest.raises(StoreError, match="authentication failed|closed the connection"):
            StoreClient(srv.address, timeout=5, secret=b"wrong").get("x", timeout=1)
        with pytest.raises(StoreError, match="closed the connection|authentication"):
            StoreClient(srv.address, timeout=5).get("x", timeout=1)  # no proof at all
        ok = StoreClient(srv.address, timeout=5, secret=b"right")
        ok.set("k", b"v")
        assert ok.get("k") == b"v"
        ok.close()
        assert srv.rejected == 2
    finally:
        srv.close()


def test_no_secret_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(auth.ENV, raising=False)
    with pytest.raises(ReCCLError, match="no job secret: set RECCL_SECRET"):
        Communicator(0, 1, "127.0.0.1:1")


def start_ranks(store, specs, timeout=3.0):
    """Communicators in threads (rendezvous fails before any link exists)."""
    out = {}

    def one(i, rank, world):
        try:
            c = Communicator(rank, world, store, secret="s",
                             options=CommOptions(store_timeout=timeout))
            out[i] = "ok"
            c.abort()
        except ReCCLError as e:
            out[i] = str(e)

    ts = [threading.Thread(target=one, args=(i, r, w)) for i, (r, w) in enumerate(specs)]
    for t in ts:
        t.start()
        time.sleep(0.1)
    for t in ts:
        t.join(30)
    return out


@pytest.fixture
def store():
    srv = StoreServer("127.0.0.1:0", secret=b"s")
    yield srv.address
    srv.close()


def test_rendezvous_names_a_world_size_mismatch(store):
    out = start_ranks(store, [(0, 2), (1, 3)])
    assert "world size mismatch: rank 1 was started with world size 3, rank 0 with 2" in out[1]
    assert "rank 1 was started with world size 3, rank 0 with 2" in out[0]


def test_rendezvous_names_a_duplicate_rank(store):
    out = start_ranks(store, [(0, 2), (0, 2)])
    assert "rank 0 was started twice" in out[1] and "pid" in out[1]
    assert "rank 1 never arrived within 3 s (arrived: 0; world size 2)" in out[0]


def test_rendezvous_names_ranks_that_never_arrive(store):
    out = start_ranks(store, [(0, 4), (2, 4)])
    assert "ranks 1, 3 never arrived within 3 s (arrived: 0, 2; world size 4)" in out[0]
    out = start_ranks(StoreServer("127.0.0.1:0", secret=b"s").address, [(1, 2)])
    assert "rank 0 never arrived within 3 s" in out[0]

"""ReCCL wire format: round trips, precise errors, and agreement with the scapy layers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.packet import Raw

from reccl import wire
from reccl.layers import (
    NicEntry,
    RecclAck,
    RecclAuth,
    RecclChallenge,
    RecclData,
    RecclHeader,
    RecclHello,
    RecclNotice,
    RecclProbe,
    SackBlock,
)

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)


def header(ptype, **kw):
    return wire.Header(ptype, kw.get("src", 1), kw.get("dst", 2), kw.get("channel", 3),
                       kw.get("epoch", 4), kw.get("tsval", 5), kw.get("tsecr", 6))


def scapy_header(ptype, epoch=4):
    return RecclHeader(src=1, dst=2, channel=3, epoch=epoch, tsval=5, tsecr=6, type=ptype)


@given(seq=u32, tag=st.integers(0, 2**64 - 1), payload=st.binary(max_size=300),
       extra=st.integers(0, 2**40), epoch=u16)
def test_data_round_trip_and_scapy_bytes(seq, tag, payload, extra, epoch):
    h = header(wire.DATA, epoch=epoch)
    body = wire.Data(seq, tag, len(payload) + extra, extra, payload)
    raw = wire.encode(h, body)
    h2, b2 = wire.decode(raw)
    h.length = len(raw) - wire.HEADER.size
    assert h2 == h
    assert (b2.seq, b2.tag, b2.msg_len, b2.offset, bytes(b2.payload)) == \
        (seq, tag, len(payload) + extra, extra, payload)
    pkt = scapy_header(wire.DATA, epoch) / RecclData(seq=seq, tag=tag,
                                                     msg_len=len(payload) + extra, offset=extra)
    if payload:
        pkt = pkt / Raw(payload)
    assert bytes(pkt) == raw
    assert RecclHeader(raw)[RecclData].seq == seq
    assert b"".join(bytes(p) for p in wire.encode_parts(h, body)) == raw


@given(cum=u32, sacks=st.lists(st.tuples(st.integers(0, 2**31), st.integers(1, 1000)),
                               max_size=8))
def test_ack_round_trip_and_scapy_bytes(cum, sacks):
    blocks = [(s, s + n) for s, n in sacks]
    raw = wire.encode(header(wire.ACK), wire.Ack(cum, blocks))
    _, b = wire.decode(raw)
    assert (b.cum, b.sacks) == (cum, blocks)
    pkt = scapy_header(wire.ACK) / RecclAck(cum=cum, sacks=[SackBlock(start=s, end=e)
                                                             for s, e in blocks])
    assert bytes(pkt) == raw


def test_notice_probe_and_handshake_match_scapy():
    n = wire.Notice([(3, 0, False), (3, 1, True)], [0, 5])
    raw = wire.encode(header(wire.NOTICE), n)
    assert wire.decode(raw)[1] == n
    pkt = scapy_header(wire.NOTICE) / RecclNotice(
        nics=[NicEntry(rank=3, rail=0, up=0), NicEntry(rank=3, rail=1, up=1)], channels=[0, 5])
    assert bytes(pkt) == raw
    raw = wire.encode(header(wire.PROBE_ACK), wire.Probe(99))
    assert bytes(scapy_header(wire.PROBE_ACK) / RecclProbe(nonce=99)) == raw
    assert RecclHeader(raw)[RecclProbe].nonce == 99
    for body, layer in ((wire.Hello(77, b"n" * 16), RecclHello(session=77, nonce=b"n" * 16)),
                        (wire.Challenge(b"s" * 16, b"p" * 32),
                         RecclChallenge(nonce=b"s" * 16, proof=b"p" * 32)),
                        (wire.Auth(b"q" * 32), RecclAuth(proof=b"q" * 32))):
        ptype = {wire.Hello: wire.HELLO, wire.Challenge: wire.CHALLENGE,
                 wire.Auth: wire.AUTH}[type(body)]
        raw = wire.encode(header(ptype), body)
        assert wire.decode(raw)[1] == body
        assert bytes(scapy_header(ptype) / layer) == raw


def test_errors_name_the_field_and_offset():
    good = wire.encode(header(wire.DATA), wire.Data(1, 2, 10, 0, b"abcd"))
    with pytest.raises(wire.WireError, match="bad magic at byte 0") as e:
        wire.decode(b"XX" + good[2:])
    assert e.value.foreign
    with pytest.raises(wire.WireError, match="truncated header"):
        wire.decode(good[:10])
    with pytest.raises(wire.WireError, match="frame has 31 body bytes, header at byte 12"):
        wire.decode(good[:-1])
    bad = bytearray(good)
    bad[2] = 9
    with pytest.raises(wire.WireError, match="unsupported version 9 at byte 2"):
        wire.decode(bytes(bad))
    bad = bytearray(good)
    bad[3] = 42
    with pytest.raises(wire.WireError, match="unknown frame type 42 at byte 3"):
        wire.decode(bytes(bad))
    bad = bytearray(good)
    bad[12:16] = (wire.MAX_BODY + 1).to_bytes(4, "big")
    with pytest.raises(wire.WireError, match="exceeds the limit"):
        wire.decode_header(bytes(bad))
    over = wire.encode(header(wire.DATA), wire.Data(1, 2, 3, 0, b"abcd"))
    with pytest.raises(wire.WireError, match="exceeds message length 3"):
        wire.decode(over)
    ack = bytearray(wire.encode(header(wire.ACK), wire.Ack(1, [(1, 2)])))
    del ack[-4:]
    ack[12:16] = (len(ack) - 24).to_bytes(4, "big")
    with pytest.raises(wire.WireError, match="announces 1 SACK blocks"):
        wire.decode(bytes(ack))
    with pytest.raises(wire.WireError, match="PROBE body must be 4 bytes"):
        raw = bytearray(wire.encode(header(wire.PROBE), wire.Probe(1)) + b"x")
        raw[12:16] = (5).to_bytes(4, "big")
        wire.decode(bytes(raw))


@given(st.binary(max_size=80))
def test_random_bytes_never_crash_the_decoder(raw):
    try:
        wire.decode(raw)
    except wire.WireError:
        pass

"""ReCCL wire format: round trips, precise errors, and agreement with the scapy layers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.packet import Raw

from reccl import wire
from reccl.layers import (
    NicEntry,
    RecclAck,
    RecclData,
    RecclHeader,
    RecclNotice,
    RecclProbe,
    SackBlock,
)

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)


def header(ptype, **kw):
    return wire.Header(ptype, kw.get("session", 7), kw.get("src", 1), kw.get("dst", 2),
                       kw.get("channel", 3), kw.get("epoch", 4), kw.get("tsval", 5),
                       kw.get("tsecr", 6))


@given(seq=u32, tag=st.integers(0, 2**64 - 1), payload=st.binary(max_size=300),
       extra=st.integers(0, 50), session=u32, epoch=u16)
def test_data_round_trip_and_scapy_bytes(seq, tag, payload, extra, session, epoch):
    h = header(wire.DATA, session=session, epoch=epoch)
    body = wire.Data(seq, tag, len(payload) + extra, extra, payload)
    raw = wire.encode(h, body)
    h2, b2 = wire.decode(raw)
    assert h2 == h
    assert (b2.seq, b2.tag, b2.msg_len, b2.offset, bytes(b2.payload)) == \
        (seq, tag, len(payload) + extra, extra, payload)
    pkt = (RecclHeader(session=session, src=1, dst=2, channel=3, epoch=epoch, tsval=5,
                       tsecr=6, type=wire.DATA)
           / RecclData(seq=seq, tag=tag, msg_len=len(payload) + extra, offset=extra))
    if payload:
        pkt = pkt / Raw(payload)
    assert bytes(pkt) == raw
    parsed = RecclHeader(raw)
    assert parsed[RecclData].seq == seq and parsed.crc == int.from_bytes(raw[24:28], "big")


@given(cum=u32, trigger=u32, window=u16,
       sacks=st.lists(st.tuples(st.integers(0, 2**31), st.integers(1, 1000)), max_size=8))
def test_ack_round_trip_and_scapy_bytes(cum, trigger, window, sacks):
    blocks = [(s, s + n) for s, n in sacks]
    raw = wire.encode(header(wire.ACK), wire.Ack(cum, trigger, window, blocks))
    _, b = wire.decode(raw)
    assert (b.cum, b.trigger, b.window, b.sacks) == (cum, trigger, window, blocks)
    pkt = (RecclHeader(session=7, src=1, dst=2, channel=3, epoch=4, tsval=5, tsecr=6,
                       type=wire.ACK)
           / RecclAck(cum=cum, trigger=trigger, window=window,
                      sacks=[SackBlock(start=s, end=e) for s, e in blocks]))
    assert bytes(pkt) == raw


def test_notice_and_probe_match_scapy():
    n = wire.Notice([(3, 0, False), (3, 1, True)], [0, 5])
    raw = wire.encode(header(wire.NOTICE), n)
    _, got = wire.decode(raw)
    assert got == n
    pkt = (RecclHeader(session=7, src=1, dst=2, channel=3, epoch=4, tsval=5, tsecr=6,
                       type=wire.NOTICE)
           / RecclNotice(nics=[NicEntry(rank=3, rail=0, up=0), NicEntry(rank=3, rail=1, up=1)],
                         channels=[0, 5]))
    assert bytes(pkt) == raw
    raw = wire.encode(header(wire.PROBE_ACK), wire.Probe(99))
    assert bytes(RecclHeader(session=7, src=1, dst=2, channel=3, epoch=4, tsval=5, tsecr=6,
                             type=wire.PROBE_ACK) / RecclProbe(nonce=99)) == raw
    assert RecclHeader(raw)[RecclProbe].nonce == 99


def test_errors_name_the_field_and_offset():
    good = wire.encode(header(wire.DATA), wire.Data(1, 2, 10, 0, b"abcd"))
    with pytest.raises(wire.WireError, match="bad magic at byte 0") as e:
        wire.decode(b"XX" + good[2:])
    assert e.value.foreign
    with pytest.raises(wire.WireError, match="truncated header"):
        wire.decode(good[:10])
    with pytest.raises(wire.WireError, match="crc mismatch at byte 24"):
        wire.decode(good[:-1] + bytes([good[-1] ^ 1]))
    bad_version = bytearray(good)
    bad_version[2] = 9
    with pytest.raises(wire.WireError, match="unsupported version 9 at byte 2"):
        wire.decode(bytes(bad_version))
    # A chunk that claims to run past the end of its message, with a valid CRC.
    over = wire.encode(header(wire.DATA), wire.Data(1, 2, 3, 0, b"abcd"))
    with pytest.raises(wire.WireError, match="exceeds message length 3"):
        wire.decode(over)
    ack = wire.encode(header(wire.ACK), wire.Ack(1, 1, 1, [(1, 2)]))
    import struct
    import zlib
    cut = bytearray(ack[:-4])
    struct.pack_into("!I", cut, 24, 0)
    struct.pack_into("!I", cut, 24, zlib.crc32(cut))
    with pytest.raises(wire.WireError, match="announces 1 SACK blocks"):
        wire.decode(bytes(cut))


@given(st.binary(max_size=80))
def test_random_bytes_never_crash_the_decoder(raw):
    try:
        wire.decode(raw)
    except wire.WireError:
        pass

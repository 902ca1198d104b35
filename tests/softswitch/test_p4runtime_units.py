"""Pure parts of the P4Runtime server: arbitration, bytestrings, error trailer, digests."""

import grpc
import pytest
from finsy.proto import p4i, p4r, rpc_status
from hypothesis import example, given
from hypothesis import strategies as st

from softswitch.p4runtime.arbitration import Arbitration
from softswitch.p4runtime.batch import ALWAYS_REPORTED, REPORT_BUDGET, error_report
from softswitch.p4runtime.digests import DigestBatcher, DigestConfig
from softswitch.p4runtime.errors import (
    P4RuntimeError,
    decode_uint,
    encode_uint,
)
from softswitch.p4runtime.pipeline_loader import unwrap_device_config

OK, BACKUP, NONE = grpc.StatusCode.OK, grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.NOT_FOUND


def by_stream(notices):
    return {n.stream: (n.election_id, n.code) for n in notices}


def test_first_controller_becomes_primary_and_higher_id_takes_over():
    arb = Arbitration()
    assert by_stream(arb.update("a", "", 10)) == {"a": (10, OK)}
    # a lower backup joins: only it is told, with the primary's id
    assert by_stream(arb.update("b", "", 5)) == {"b": (10, BACKUP)}
    # a higher one joins: everyone of the role is told
    assert by_stream(arb.update("c", "", 20)) == {"a": (20, BACKUP), "b": (20, BACKUP), "c": (20, OK)}
    assert arb.is_primary("", 20) and not arb.is_primary("", 10)


def test_primary_loss_promotes_next_highest_and_notifies():
    arb = Arbitration()
    arb.update("a", "", 10)
    arb.update("b", "", 5)
    assert by_stream(arb.remove("a")) == {"b": (5, OK)}
    assert arb.is_primary_stream("b")
    # a backup leaving changes nothing for the others
    arb.update("c", "", 1)
    assert arb.remove("c") == []


def test_duplicate_election_id_is_refused_and_roles_are_separate():
    arb = Arbitration()
    arb.update("a", "", 10)
    with pytest.raises(P4RuntimeError) as e:
        arb.update("b", "", 10)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert by_stream(arb.update("b", "r1", 10)) == {"b": (10, OK)}
    assert arb.is_primary("r1", 10) and arb.is_primary("", 10)


def test_no_election_id_is_backup_without_primary():
    arb = Arbitration()
    assert by_stream(arb.update("a", "", None)) == {"a": (None, NONE)}
    assert not arb.is_primary_stream("a")


@pytest.mark.parametrize(
    ("data", "width", "value"),
    [(b"\x01", 9, 1), (b"\x00\x01", 9, 1), (b"\x01\xff", 9, 511), (b"\x0a\x00\x00\x01", 32, 0x0A000001)],
)
def test_decode_accepts_canonical_and_padded(data, width, value):
    assert decode_uint(data, width, "f") == value


@pytest.mark.parametrize(
    ("data", "width", "message"),
    [
        (b"", 8, "empty"),
        (b"\x00\x00\x01", 9, "too long"),
        (b"\x02\x00", 9, "does not fit in 9 bits"),
        (b"\x01\x00", 8, "too long"),
    ],
)
def test_decode_refuses_bad_bytestrings(data, width, message):
    with pytest.raises(P4RuntimeError, match=message) as e:
        decode_uint(data, width, "hdr.x")
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "hdr.x" in e.value.message


def test_encode_is_canonical():
    assert encode_uint(0) == b"\x00"
    assert encode_uint(1) == b"\x01"
    assert encode_uint(256) == b"\x01\x00"


def test_write_error_details_has_one_error_per_update_in_order():
    raw = error_report(
        [None, P4RuntimeError(grpc.StatusCode.NOT_FOUND, "no entry"), None]
    )
    status = rpc_status.Status.FromString(raw)
    assert status.code == grpc.StatusCode.UNKNOWN.value[0]
    errors = []
    for d in status.details:
        e = p4r.Error()
        assert d.Unpack(e)
        errors.append((e.canonical_code, e.message))
    assert errors == [(0, ""), (grpc.StatusCode.NOT_FOUND.value[0], "no entry"), (0, "")]


def test_error_report_fits_or_is_none():
    bad = P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, "entry already exists " * 5)
    # every batch up to ALWAYS_REPORTED is reported whatever fails, messages while they fit
    raw = error_report([bad] * ALWAYS_REPORTED)
    assert raw is not None and len(raw) <= REPORT_BUDGET
    details = rpc_status.Status.FromString(raw).details
    assert len(details) == ALWAYS_REPORTED
    errors = [p4r.Error() for _ in details]
    for d, e in zip(details, errors, strict=True):
        assert d.Unpack(e)
    assert {e.canonical_code for e in errors} == {grpc.StatusCode.ALREADY_EXISTS.value[0]}
    # messages are kept while they fit, first failures first
    some = rpc_status.Status.FromString(error_report([None] + [bad] * 100)).details
    messages = [e.message for e in (p4r.Error.FromString(d.value) for d in some)]
    assert messages[0] == "" and messages[1] == bad.message and messages[-1] == ""
    # a batch whose compact report cannot fit has none
    assert error_report([None] * 399 + [bad]) is None


def test_digest_lists_by_size_timeout_ack_and_dedup():
    b = DigestBatcher()
    assert b.add(0, 7, b"x") == []  # not configured: dropped
    b.configure(7, DigestConfig(max_timeout_ns=1000, max_list_size=2, ack_timeout_ns=5000))
    assert b.add(0, 7, b"a") == []
    [full] = b.add(10, 7, b"b")
    assert full.data == (b"a", b"b")
    # while unacknowledged, the same message is suppressed
    assert b.add(20, 7, b"a") == []
    assert b.add(30, 7, b"c") == []
    [timed] = b.due(1030)
    assert timed.data == (b"c",)
    assert b.ack(7, full.list_id) and not b.ack(7, full.list_id)
    assert b.add(1040, 7, b"a") == []  # acked: accepted again, pending
    assert b.next_deadline() == 2040
    # "c" was in a list never acked: after ack_timeout it is accepted again
    [again] = b.add(7000, 7, b"c")
    assert again.data == (b"a", b"c")


def test_legacy_device_config_wrapper_is_unwrapped():
    program = b"#include <core.p4>\n"
    extras = b"\x0a\x04\x0a\x01k\x12\x01v"  # Extras{kv{"k": "v"}}
    wrapped = b"\x08\x01" + b"\x12" + bytes([len(extras)]) + extras + b"\x1a" + bytes([len(program)]) + program
    assert unwrap_device_config(wrapped) == program
    assert unwrap_device_config(program) == program
    assert unwrap_device_config(b"\x1a\x50short") == b"\x1a\x50short"  # truncated: kept raw


@given(st.integers(min_value=1, max_value=128).flatmap(
    lambda w: st.tuples(st.just(w), st.integers(min_value=0, max_value=(1 << w) - 1))))
def test_bytestring_round_trip(width_value):
    width, value = width_value
    data = encode_uint(value)
    assert decode_uint(data, width, "f") == value
    assert len(data) <= (width + 7) // 8 and (len(data) == 1 or data[0] != 0)  # canonical
    padded = data.rjust((width + 7) // 8, b"\0")
    assert decode_uint(padded, width, "f") == value


@given(st.lists(st.from_regex(r"[A-Za-z]{1,3}(\.[a-z_]{1,4}){0,2}", fullmatch=True),
                min_size=1, max_size=40, unique=True))
def test_ids_are_unique_prefixed_and_aliases_unique(names):
    from softswitch import p4info

    alloc = p4info.IdAllocator()
    for n in names:
        alloc.add(p4info.TABLE, n)
    ids = alloc.assign()
    assert len(set(ids.values())) == len(names)
    assert all(i >> 24 == p4info.TABLE for i in ids.values())
    aliases = p4info.shortest_unique_suffixes(names)
    assert len(set(aliases.values())) == len(names)
    assert all(n.endswith(a) for n, a in aliases.items())


def _schema_with(fields, params):
    """A one-table, one-action P4Info index: fields (id, bitwidth, match type), params (id, bitwidth)."""
    from softswitch.p4runtime.schema import Schema

    info = p4i.P4Info()
    t = info.tables.add()
    t.preamble.id, t.preamble.name = 0x02000001, "T"
    for fid, w, mt in fields:
        t.match_fields.add(id=fid, name=f"f{fid}", bitwidth=w, match_type=mt)
    a = info.actions.add()
    a.preamble.id, a.preamble.name = 0x01000001, "A"
    for pid, w in params:
        a.params.add(id=pid, name=f"p{pid}", bitwidth=w)
    t.action_refs.add(id=a.preamble.id)
    return Schema(info)


_MT = p4i.MatchField
_BYTES = st.binary(min_size=0, max_size=3)


@given(fields=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([9, 16]),
                                 st.sampled_from([_MT.EXACT, _MT.LPM])),
                       min_size=1, max_size=2, unique_by=lambda f: f[0]),
       given_=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["exact", "lpm"]), _BYTES,
                                 st.integers(-1, 20)), max_size=3))
@example(fields=[(1, 16, _MT.LPM), (2, 9, _MT.EXACT)],
         given_=[(1, "lpm", b"\x0a\x00", 8), (2, "exact", b"\x01\x02", 0)])
def test_fast_key_decoder_agrees_with_the_general_one(fields, given_):
    """The write path's fast decoder accepts only what the general one accepts, with the same key."""
    from softswitch.p4runtime.codec import _fast_key_decoder, _match_keys_checked

    t = next(iter(_schema_with(fields, []).tables.values()))
    matches = []
    for fid, kind, raw, plen in given_:
        m = p4r.FieldMatch(field_id=fid)
        if kind == "exact":
            m.exact.value = raw
        else:
            m.lpm.value, m.lpm.prefix_len = raw, plen
        matches.append(m)
    try:
        expected = _match_keys_checked(t, matches)
    except P4RuntimeError:
        expected = None
    fast = _fast_key_decoder(t)(matches)
    assert fast is None or fast == expected
    if [g[:2] for g in given_] == [(1, "lpm"), (2, "exact")] and expected is not None:
        assert fast == expected  # the usual request takes the fast path


@given(params=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 9, 48])), max_size=3,
                       unique_by=lambda p: p[0]),
       sent=st.lists(st.tuples(st.integers(0, 5), _BYTES), max_size=4))
@example(params=[(1, 48), (2, 9)], sent=[(1, b"\x02\x00\x00\x00\x00\x01"), (2, b"\x01")])
def test_fast_action_decoder_agrees_with_the_general_one(params, sent):
    from softswitch.p4runtime.codec import _action_args_checked, action_args
    from softswitch.p4runtime.pipeline import Pipeline

    schema = _schema_with([(1, 9, _MT.EXACT)], params)
    p = Pipeline(schema.info, b"", None, None, schema, None)  # action_args reads only the schema

    action = p4r.Action(action_id=0x01000001,
                        params=[p4r.Action.Param(param_id=i, value=v) for i, v in sent])
    try:
        expected = _action_args_checked(p, action, "T")
    except P4RuntimeError:
        expected = None
    try:
        got = action_args(p, action, "T")
    except P4RuntimeError:
        got = None
    assert got == expected

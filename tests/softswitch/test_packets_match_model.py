"""Table lookups against a reference model of BMv2's match rules, with random entries.

Ternary (tables_ext.p4, t_tern on an 8-bit key): among the entries with
(key & mask) == (value & mask) the one with the largest priority wins.  LPM
(router.p4, ipv4_lpm on a 32-bit key): the longest matching prefix wins.  Every
possible 8-bit key, and for lpm keys inside and next to every prefix, are
checked.
"""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st
from sst_packets import program

SETTINGS = settings(max_examples=25, deadline=None)


@cache
def compiled(name: str):
    return program(name)


def ternary_entries():
    entry = st.tuples(st.integers(0, 255), st.integers(0, 255))
    return st.lists(entry, min_size=1, max_size=12).flatmap(
        lambda es: st.permutations(range(1, len(es) + 1)).map(
            lambda prios: [(v & m, m, p) for (v, m), p in zip(es, prios, strict=True)]))


@SETTINGS
@given(entries=ternary_entries())
def test_ternary_lookup_matches_the_model(entries) -> None:
    from softswitch import Switch, SwitchError, Ternary

    sw = Switch(compiled("tables_ext.p4"))
    installed = []
    for value, mask, prio in entries:
        try:
            sw.table_add("t_tern", [Ternary(value, mask)], "set_tern", [prio], priority=prio)
            installed.append((value, mask, prio))
        except SwitchError as err:   # the same value/mask twice: refused, as in P4Runtime
            assert err.code == "ALREADY_EXISTS"
            assert any((v, m) == (value, mask) for v, m, _ in installed)
    for key in range(256):
        matches = [p for v, m, p in installed if key & m == v]
        want = max(matches) if matches else 0
        header = bytes([0, 0, 0, key, 0]) + bytes(4) + bytes(5)   # r_tern is byte 10
        outs = sw.process_packet(0, header)
        assert len(outs) == 1
        assert bytes(outs[0].data)[10] == want, f"key {key:#04x}, entries {installed}"


def lpm_entries():
    prefix = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 32))
    return st.lists(prefix, min_size=1, max_size=10)


def mask(plen: int) -> int:
    return ((1 << plen) - 1) << (32 - plen) if plen else 0


def ip_str(addr: int) -> str:
    return ".".join(str(b) for b in addr.to_bytes(4, "big"))


@SETTINGS
@given(prefixes=lpm_entries(), extra=st.lists(st.integers(0, 2**32 - 1), max_size=5))
def test_lpm_lookup_matches_the_model(prefixes, extra) -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from softswitch import Lpm, Switch

    sw = Switch(compiled("router.p4"))
    table = {}
    for value, plen in prefixes:
        key = (value & mask(plen), plen)
        if key in table:
            continue
        port = len(table) + 1
        sw.table_add("ipv4_lpm", [Lpm(*key)], "set_nhop", [port, port])
        table[key] = port
    probes = set(extra)
    for value, plen in table:
        probes |= {value, value | (~mask(plen) & 0xFFFFFFFF), (value - 1) & 0xFFFFFFFF,
                   ((value | (~mask(plen) & 0xFFFFFFFF)) + 1) & 0xFFFFFFFF}
    for dst in sorted(probes):
        best = max(((plen, port) for (value, plen), port in table.items()
                    if dst & mask(plen) == value), default=None)
        frame = Ether(dst="00:00:00:00:00:aa") / IP(dst=ip_str(dst), ttl=9) / UDP()
        outs = sw.process_packet(1, bytes(frame))
        got = outs[0].port if outs else None
        assert got == (best[1] if best else None), f"dst {dst:#010x}, table {table}"


def range_entries():
    entry = st.tuples(st.integers(0, 255), st.integers(0, 255), st.one_of(st.none(), st.integers(0, 3)))
    return st.lists(entry, min_size=1, max_size=10).flatmap(
        lambda es: st.permutations(range(1, len(es) + 1)).map(
            lambda prios: [(min(a, b), max(a, b), opt, p)
                           for (a, b, opt), p in zip(es, prios, strict=True)]))


@SETTINGS
@given(entries=range_entries())
def test_range_and_optional_lookup_matches_the_model(entries) -> None:
    """Range (inclusive bounds) plus optional (value or wildcard), largest priority wins."""
    from softswitch import Optional, Range, Switch

    sw = Switch(compiled("tables_ext.p4"))
    for lo, hi, opt, prio in entries:
        sw.table_add("t_range", [Range(lo, hi), Optional(opt)], "set_range", [prio], priority=prio)
    for k_opt in range(4):
        for k_range in range(256):
            matches = [p for lo, hi, opt, p in entries
                       if lo <= k_range <= hi and opt in (None, k_opt)]
            want = max(matches) if matches else 0
            header = bytes([0, k_range, k_opt, 0, 0]) + bytes(4) + bytes(5)   # r_range is byte 9
            outs = sw.process_packet(0, header)
            assert bytes(outs[0].data)[9] == want, f"k=({k_range}, {k_opt}), entries {entries}"

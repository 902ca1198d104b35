"""P4Info IDs and aliases as p4c assigns them (p4c control-plane/p4RuntimeSymbolTable.cpp)."""

import pytest

from softswitch import p4info
from softswitch.p4info import (
    IdAllocator,
    P4InfoError,
    jenkins_one_at_a_time,
    shortest_unique_suffixes,
)

# IDs published in the P4 tutorials' P4Info files (basic.p4 and basic_tunnel.p4, p4c output).
PUBLISHED = [
    (p4info.TABLE, "MyIngress.ipv4_lpm", 37375156),
    (p4info.TABLE, "MyIngress.myTunnel_exact", 35862311),
    (p4info.ACTION, "NoAction", 21257015),
    (p4info.ACTION, "MyIngress.drop", 25652968),
    (p4info.ACTION, "MyIngress.ipv4_forward", 28792405),
    (p4info.ACTION, "MyIngress.myTunnel_ingress", 24181246),
    (p4info.ACTION, "MyIngress.myTunnel_forward", 27454791),
    (p4info.ACTION, "MyIngress.myTunnel_egress", 33029817),
    (p4info.COUNTER, "MyIngress.ingressTunnelCounter", 315557958),
    (p4info.COUNTER, "MyIngress.egressTunnelCounter", 312374841),
]


def test_jenkins_known_values():
    # Reference values of the one-at-a-time hash (Wikipedia's test vectors).
    assert jenkins_one_at_a_time("a") == 0xCA2E9442
    assert jenkins_one_at_a_time("The quick brown fox jumps over the lazy dog") == 0x519E91F5


def test_ids_match_published_p4info():
    alloc = IdAllocator()
    for prefix, name, _ in PUBLISHED:
        alloc.add(prefix, name)
    ids = alloc.assign()
    for prefix, name, expected in PUBLISHED:
        assert ids[(prefix, name)] == expected, name


def test_collision_is_resolved_by_linear_probing_in_name_order():
    # These two names have the same lower 24 hash bits (0x3a2734).
    a, b = "c.t1626", "c.t3872"
    assert jenkins_one_at_a_time(a) & 0xFFFFFF == jenkins_one_at_a_time(b) & 0xFFFFFF
    alloc = IdAllocator()
    alloc.add(p4info.TABLE, b)  # registration order must not matter: names are sorted
    alloc.add(p4info.TABLE, a)
    ids = alloc.assign()
    assert ids[(p4info.TABLE, a)] == (p4info.TABLE << 24) | 0x3A2734
    assert ids[(p4info.TABLE, b)] == (p4info.TABLE << 24) | 0x3A2735


def test_explicit_id_is_reserved_first_and_gets_prefix():
    name = "MyIngress.ipv4_lpm"
    taken = 37375156 & 0xFFFFFF  # @id without prefix, equal to the hash of `name`
    alloc = IdAllocator()
    alloc.add(p4info.TABLE, name)
    alloc.add(p4info.TABLE, "MyIngress.other", explicit_id=taken)
    ids = alloc.assign()
    assert ids[(p4info.TABLE, "MyIngress.other")] == 37375156
    assert ids[(p4info.TABLE, name)] == 37375157


def test_explicit_id_with_wrong_prefix_or_duplicate_is_refused():
    alloc = IdAllocator()
    with pytest.raises(P4InfoError, match="wrong 8-bit prefix"):
        alloc.add(p4info.TABLE, "t", explicit_id=0x01000005)
    alloc.add(p4info.ACTION, "a1", explicit_id=5)
    alloc.add(p4info.ACTION, "a2", explicit_id=0x01000005)
    with pytest.raises(P4InfoError, match="multiple declarations"):
        alloc.assign()


def test_aliases_are_shortest_unique_suffixes():
    names = ["MyIngress.ipv4_lpm", "MyIngress.drop", "MyEgress.drop", "NoAction", "a.b.c", "d.b.c"]
    aliases = shortest_unique_suffixes(names)
    assert aliases["MyIngress.ipv4_lpm"] == "ipv4_lpm"
    assert aliases["MyIngress.drop"] == "MyIngress.drop"
    assert aliases["MyEgress.drop"] == "MyEgress.drop"
    assert aliases["NoAction"] == "NoAction"
    assert aliases["a.b.c"] == "a.b.c"
    # a name that is a suffix of another keeps its full name
    assert shortest_unique_suffixes(["b.c", "a.b.c"]) == {"b.c": "b.c", "a.b.c": "a.b.c"}

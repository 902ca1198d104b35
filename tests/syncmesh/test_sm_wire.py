"""Wire form: round trips, limits, and arbitrary bytes never crash a daemon or change its state."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syncmesh import wire
from syncmesh.core import Rejected, SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import Hello, LinkNotice, ProfileUpdate, ResyncChunk
from syncmesh.profiles import Profile
from syncmesh.proto import syncmesh_pb2 as pb

from fabricmodel import leaf_spine, load

FAB = leaf_spine(2, 2, 1, 1)
LIMITS = wire.limits_for(FAB)
ORIGIN = "s1"

versions = st.builds(Version, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
names = st.sampled_from(["l1", "l2", "s1", "s2", "zz"])
states = st.builds(PortState, names, st.integers(0, 2**32 - 1), st.booleans(), versions,
                   st.floats(0, 1e10))
profiles = st.builds(Profile, st.just(ORIGIN), versions, st.integers(0, 8),
                     st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                              max_size=LIMITS.entries).map(tuple))
messages = st.one_of(
    st.builds(Hello, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.builds(LinkNotice, st.lists(states, max_size=LIMITS.states).map(tuple)),
    st.builds(ProfileUpdate, profiles, st.booleans()),
    st.builds(ResyncChunk, st.lists(states, max_size=LIMITS.states).map(tuple),
              st.one_of(st.none(), profiles), st.booleans()),
)


@given(messages)
@settings(max_examples=200)
def test_round_trip(msg):
    assert wire.decode(wire.encode(msg), ORIGIN, LIMITS) == msg


def test_no_message_names_its_sender():
    """Identity comes from the session: no message type has a field a sender could fill in."""
    for cls in (pb.Hello, pb.LinkNotice, pb.Profile, pb.ResyncChunk, pb.Envelope):
        fields = {f.name for f in cls.DESCRIPTOR.fields}
        assert not fields & {"sender", "origin", "responder"}, (cls, fields)


def test_missing_fields_and_counts_beyond_the_fabric_are_malformed():
    bare = pb.Envelope(notice=pb.LinkNotice(states=[pb.PortState(switch="l1", port=2)]))
    with pytest.raises(wire.Malformed, match=r"notice.states\[0\].epoch: missing"):
        wire.decode(bare.SerializeToString(), ORIGIN, LIMITS)
    with pytest.raises(wire.Malformed, match="empty Envelope"):
        wire.decode(b"", ORIGIN, LIMITS)
    many = LinkNotice(tuple(PortState("l1", 2, True, Version(1, i)) for i in range(LIMITS.states + 1)))
    with pytest.raises(wire.Malformed, match="more than the 4 this fabric allows"):
        wire.decode(wire.encode(many), ORIGIN, LIMITS)
    wide = ProfileUpdate(Profile(ORIGIN, Version(1, 1), 3, ((1, 1), (2, 1), (3, 1))))
    with pytest.raises(wire.Malformed, match="more than the 2 leaves"):
        wire.decode(wire.encode(wide), ORIGIN, LIMITS)
    delta = pb.Envelope(resync=pb.ResyncChunk(profile=pb.Profile(version=pb.Version(), delta=True)))
    with pytest.raises(wire.Malformed, match="whole profile"):
        wire.decode(delta.SerializeToString(), ORIGIN, LIMITS)


def test_message_limit_is_sized_from_the_fabric():
    ls4x2 = load(Path(__file__).resolve().parents[2] / "topologies" / "fabrics" / "ls4x2.yaml")
    assert wire.max_message_bytes(ls4x2) == wire.MIN_MESSAGE
    big = leaf_spine(250, 2, 1, 1, links_per_pair=2)  # a spine speaks for 1,000 link ends
    size = wire.max_message_bytes(big)
    assert wire.MIN_MESSAGE < size <= wire.MAX_MESSAGE
    lim = wire.limits_for(big)
    widest = Version(2**64 - 1, 2**64 - 1)
    largest = ResyncChunk(tuple(PortState("l250", 2**32 - 1, True, widest, 1e18)
                                for _ in range(lim.states)),
                          Profile("s2", widest, 2**32 - 1, tuple((2**32 - 1, 2**32 - 1)
                                                                  for _ in range(lim.entries))))
    assert 2 * len(wire.encode(largest)) <= size


@given(st.one_of(st.binary(max_size=200), messages.map(wire.encode)))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_any_bytes_are_accepted_or_refused_cleanly(data):
    core = SyncMeshCore(FAB, "l1", 5)
    core.start(0.0)
    core.on_hello(ORIGIN, Hello(3, 1), 0.0)
    before = (core.links.snapshot(), dict(core.programmed), core.store.all())
    try:
        core.on_message(ORIGIN, wire.decode(data, ORIGIN, LIMITS), 1.0)
    except (wire.Malformed, Rejected):
        assert (core.links.snapshot(), dict(core.programmed), core.store.all()) == before

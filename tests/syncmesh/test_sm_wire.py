"""Wire form: round trips, and arbitrary bytes never crash a daemon or change its state."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syncmesh import wire
from syncmesh.core import Rejected, SyncMeshCore
from syncmesh.linkstate import PortState, Version
from syncmesh.messages import FullState, Hello, HelloReply, LinkNotice, ProfileUpdate
from syncmesh.profiles import Profile
from syncmesh.proto import syncmesh_pb2 as pb

from fabricmodel import leaf_spine

FAB = leaf_spine(2, 2, 1, 1)

versions = st.builds(Version, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
names = st.sampled_from(["l1", "l2", "s1", "s2", "zz"])
states = st.builds(PortState, names, st.integers(0, 2**32 - 1), st.booleans(), versions,
                   st.floats(0, 1e10))
profiles = st.builds(Profile, names, versions, st.integers(0, 8),
                     st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                              max_size=5).map(tuple))
messages = st.one_of(
    st.builds(Hello, names, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.builds(HelloReply, names, st.integers(0, 2**64 - 1)),
    st.builds(LinkNotice, names, st.lists(states, max_size=4).map(tuple)),
    st.builds(ProfileUpdate, names, profiles),
    st.builds(FullState, names, st.integers(0, 2**64 - 1), st.lists(states, max_size=4).map(tuple),
              st.lists(profiles, max_size=2).map(tuple)),
)
DECODE = {Hello: wire.decode_hello, HelloReply: wire.decode_hello_reply,
          LinkNotice: wire.decode_notice, ProfileUpdate: wire.decode_profile_update,
          FullState: wire.decode_full_state}


@given(messages)
@settings(max_examples=200)
def test_round_trip(msg):
    assert DECODE[type(msg)](wire.encode(msg)) == msg


def test_missing_nested_fields_are_malformed():
    bare = pb.LinkNotice(sender="s1", states=[pb.PortState(switch="l1", port=2)])
    try:
        wire.decode_notice(bare.SerializeToString())
    except wire.Malformed as e:
        assert "states[0].epoch: missing" in str(e)
    else:
        raise AssertionError("accepted a port state without an epoch")
    try:
        wire.decode_profile_update(pb.ProfileUpdate(sender="s1").SerializeToString())
    except wire.Malformed as e:
        assert str(e) == "profile: missing"
    else:
        raise AssertionError("accepted an update without a profile")


def _feed(core, method, data):
    msg = {"hello": wire.decode_hello, "notice": wire.decode_notice,
           "profile": wire.decode_profile_update, "resync": wire.decode_full_state}[method](data)
    if method == "hello":
        core.on_hello(msg, 1.0)
    elif method == "notice":
        core.on_notice(msg, 1.0)
    elif method == "profile":
        core.on_profile(msg, 1.0)
    else:
        core.on_resync(msg, 1.0)


@given(st.sampled_from(["hello", "notice", "profile", "resync"]),
       st.one_of(st.binary(max_size=200), messages.map(wire.encode)))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_any_bytes_are_accepted_or_refused_cleanly(method, data):
    core = SyncMeshCore(FAB, "l1", 5)
    core.start(0.0)
    before = (core.links.snapshot(), dict(core.programmed), core.store.all())
    try:
        _feed(core, method, data)
    except (wire.Malformed, Rejected):
        assert (core.links.snapshot(), dict(core.programmed), core.store.all()) == before

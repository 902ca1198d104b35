"""Conversion between SyncMesh messages and their protobuf wire form (proto/syncmesh.proto).

Every message travels as one ``Envelope``. Decoding takes the peer's name
(from the session's credentials), which becomes the origin of a profile,
and limits on repeated fields, checked before any element is converted.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from fabricmodel import Fabric

from .linkstate import PortState, Version
from .messages import Hello, LinkNotice, Message, ProfileUpdate, ResyncChunk
from .profiles import Profile
from .proto import syncmesh_pb2 as pb


class Malformed(Exception):
    """Bytes that are not a well-formed SyncMesh message (or exceed a count limit)."""


@dataclass(frozen=True)
class Limits:
    """Most elements a message may carry (sized from the fabric by the caller)."""

    states: int
    """Port states in one notice or resync chunk."""
    entries: int
    """Entries in one profile."""


def _version(v: Version) -> pb.Version:
    return pb.Version(incarnation=v.incarnation, seq=v.seq)


def _port_state_pb(st: PortState) -> pb.PortState:
    return pb.PortState(switch=st.switch, port=st.port, up=st.up, epoch=_version(st.epoch),
                        detected_at=st.detected_at)


def _profile_pb(p: Profile, delta: bool) -> pb.Profile:
    return pb.Profile(version=_version(p.version), bits=p.bits, delta=delta,
                      entries=[pb.ProfileEntry(dst_leaf=d, level=lv) for d, lv in p.levels])


def encode(msg: Message) -> bytes:
    """Serialise one message as an Envelope."""
    if isinstance(msg, Hello):
        env = pb.Envelope(hello=pb.Hello(incarnation=msg.incarnation, seq=msg.seq))
    elif isinstance(msg, LinkNotice):
        env = pb.Envelope(notice=pb.LinkNotice(states=[_port_state_pb(s) for s in msg.states]))
    elif isinstance(msg, ProfileUpdate):
        env = pb.Envelope(profile=_profile_pb(msg.profile, msg.delta))
    elif isinstance(msg, ResyncChunk):
        chunk = pb.ResyncChunk(ports=[_port_state_pb(s) for s in msg.ports], last=msg.last)
        if msg.profile is not None:
            chunk.profile.CopyFrom(_profile_pb(msg.profile, False))
        env = pb.Envelope(resync=chunk)
    else:  # pragma: no cover - the type union above is closed
        raise TypeError(f"not a SyncMesh message: {msg!r}")
    return env.SerializeToString()


def _port_states(states, limits: Limits, where: str) -> tuple[PortState, ...]:
    if len(states) > limits.states:
        raise Malformed(f"{where}: {len(states)} port states, more than the {limits.states} "
                        "this fabric allows in one message")
    out = []
    for i, m in enumerate(states):
        if not m.HasField("epoch"):
            raise Malformed(f"{where}[{i}].epoch: missing")
        if not m.switch:
            raise Malformed(f"{where}[{i}].switch: missing")
        out.append(PortState(m.switch, m.port, m.up, Version(m.epoch.incarnation, m.epoch.seq),
                             m.detected_at))
    return tuple(out)


def _profile(m: pb.Profile, origin: str, limits: Limits, where: str) -> Profile:
    if not m.HasField("version"):
        raise Malformed(f"{where}.version: missing")
    if len(m.entries) > limits.entries:
        raise Malformed(f"{where}.entries: {len(m.entries)} entries, more than the "
                        f"{limits.entries} leaves of this fabric")
    return Profile(origin, Version(m.version.incarnation, m.version.seq), m.bits,
                   tuple((e.dst_leaf, e.level) for e in m.entries))


def decode(data: bytes, origin: str, limits: Limits) -> Message:
    """Parse one Envelope received from the peer ``origin``."""
    env = pb.Envelope()
    try:
        env.ParseFromString(data)
    except DecodeError as e:
        raise Malformed(f"not an Envelope: {e}") from None
    kind = env.WhichOneof("body")
    if kind == "hello":
        return Hello(env.hello.incarnation, env.hello.seq)
    if kind == "notice":
        return LinkNotice(_port_states(env.notice.states, limits, "notice.states"))
    if kind == "profile":
        return ProfileUpdate(_profile(env.profile, origin, limits, "profile"), env.profile.delta)
    if kind == "resync":
        r = env.resync
        if r.HasField("profile") and r.profile.delta:
            raise Malformed("resync.profile.delta: a resync carries the whole profile")
        profile = _profile(r.profile, origin, limits, "resync.profile") \
            if r.HasField("profile") else None
        return ResyncChunk(_port_states(r.ports, limits, "resync.ports"), profile, r.last)
    raise Malformed("empty Envelope (no message in it)")


MIN_MESSAGE = 64 << 10
MAX_MESSAGE = 4 << 20


def limits_for(fabric: Fabric) -> Limits:
    """The element limits of ``fabric``: a switch speaks for both ends of each of its links."""
    return Limits(states=max(2 * len(fabric.links_of(s.name)) for s in fabric.switches),
                  entries=len(fabric.leaves))


def max_message_bytes(fabric: Fabric) -> int:
    """The largest message a daemon of ``fabric`` sends or accepts, in bytes.

    Twice the encoded size of the largest legitimate message (a notice or a
    resync chunk with every record a switch can speak for, all numbers at
    their widest, plus a whole profile), at least 64 KiB and at most 4 MiB;
    gRPC refuses anything larger from its length prefix, before reading it.
    """
    lim = limits_for(fabric)
    name = max((s.name for s in fabric.switches), key=len)
    widest = Version(2**64 - 1, 2**64 - 1)
    states = tuple(PortState(name, 2**32 - 1, True, widest, 1e18) for _ in range(lim.states))
    profile = Profile(name, widest, 2**32 - 1,
                      tuple((2**32 - 1, 2**32 - 1) for _ in range(lim.entries)))
    largest = max(len(encode(ResyncChunk(states, profile, True))),
                  len(encode(LinkNotice(states))))
    if 2 * largest > MAX_MESSAGE:
        raise ValueError(f"fabric {fabric.name}: its largest SyncMesh message ({largest} "
                         f"bytes) does not fit the {MAX_MESSAGE >> 20} MiB limit twice")
    return max(MIN_MESSAGE, 2 * largest)

"""Conversion between SyncMesh messages and their protobuf wire form (proto/syncmesh.proto)."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from .linkstate import PortState, Version
from .messages import FullState, Hello, HelloReply, LinkNotice, ProfileUpdate
from .profiles import Profile
from .proto import syncmesh_pb2 as pb


class Malformed(Exception):
    """Bytes that are not a well-formed SyncMesh message."""


def _version(v: Version) -> pb.Version:
    return pb.Version(incarnation=v.incarnation, seq=v.seq)


def _port_state_pb(st: PortState) -> pb.PortState:
    return pb.PortState(switch=st.switch, port=st.port, up=st.up, epoch=_version(st.epoch),
                        detected_at=st.detected_at)


def _profile_pb(p: Profile) -> pb.Profile:
    return pb.Profile(origin=p.origin, version=_version(p.version), bits=p.bits,
                      entries=[pb.ProfileEntry(dst_leaf=d, level=lv) for d, lv in p.levels])


def encode(msg: Hello | HelloReply | LinkNotice | ProfileUpdate | FullState) -> bytes:
    """Serialise one message."""
    if isinstance(msg, Hello):
        m = pb.Hello(sender=msg.sender, incarnation=msg.incarnation, seq=msg.seq)
    elif isinstance(msg, HelloReply):
        m = pb.HelloReply(responder=msg.responder, incarnation=msg.incarnation)
    elif isinstance(msg, LinkNotice):
        m = pb.LinkNotice(sender=msg.sender, states=[_port_state_pb(s) for s in msg.states])
    elif isinstance(msg, ProfileUpdate):
        m = pb.ProfileUpdate(sender=msg.sender, profile=_profile_pb(msg.profile))
    elif isinstance(msg, FullState):
        m = pb.FullState(sender=msg.sender, incarnation=msg.incarnation,
                         ports=[_port_state_pb(s) for s in msg.ports],
                         profiles=[_profile_pb(p) for p in msg.profiles])
    else:  # pragma: no cover - the type union above is closed
        raise TypeError(f"not a SyncMesh message: {msg!r}")
    return m.SerializeToString()


def _parse(cls, data: bytes):
    m = cls()
    try:
        m.ParseFromString(data)
    except DecodeError as e:
        raise Malformed(f"not a {cls.DESCRIPTOR.name} message: {e}") from None
    return m


def _need(m, fld: str, where: str) -> None:
    if not m.HasField(fld):
        raise Malformed(f"{where}.{fld}: missing" if where else f"{fld}: missing")


def _port_state(m: pb.PortState, where: str) -> PortState:
    _need(m, "epoch", where)
    if not m.switch:
        raise Malformed(f"{where}.switch: missing")
    return PortState(m.switch, m.port, m.up, Version(m.epoch.incarnation, m.epoch.seq),
                     m.detected_at)


def _profile(m: pb.Profile, where: str) -> Profile:
    _need(m, "version", where)
    return Profile(m.origin, Version(m.version.incarnation, m.version.seq), m.bits,
                   tuple((e.dst_leaf, e.level) for e in m.entries))


def _sender(name: str, where: str = "sender") -> str:
    if not name:
        raise Malformed(f"{where}: missing")
    return name


def decode_hello(data: bytes) -> Hello:
    """Parse a Hello."""
    m = _parse(pb.Hello, data)
    return Hello(_sender(m.sender), m.incarnation, m.seq)


def decode_hello_reply(data: bytes) -> HelloReply:
    """Parse a HelloReply."""
    m = _parse(pb.HelloReply, data)
    return HelloReply(_sender(m.responder, "responder"), m.incarnation)


def decode_notice(data: bytes) -> LinkNotice:
    """Parse a LinkNotice."""
    m = _parse(pb.LinkNotice, data)
    return LinkNotice(_sender(m.sender),
                      tuple(_port_state(s, f"states[{i}]") for i, s in enumerate(m.states)))


def decode_profile_update(data: bytes) -> ProfileUpdate:
    """Parse a ProfileUpdate."""
    m = _parse(pb.ProfileUpdate, data)
    _need(m, "profile", "")
    return ProfileUpdate(_sender(m.sender), _profile(m.profile, "profile"))


def decode_full_state(data: bytes) -> FullState:
    """Parse a FullState."""
    m = _parse(pb.FullState, data)
    return FullState(_sender(m.sender), m.incarnation,
                     tuple(_port_state(s, f"ports[{i}]") for i, s in enumerate(m.ports)),
                     tuple(_profile(p, f"profiles[{i}]") for i, p in enumerate(m.profiles)))


def encode_ack(changed: bool) -> bytes:
    """Serialise an Ack."""
    return pb.Ack(changed=changed).SerializeToString()


def decode_ack(data: bytes) -> bool:
    """Parse an Ack."""
    return _parse(pb.Ack, data).changed

"""Read (P4Runtime spec 11): entities matching a possibly wildcard request, canonical form."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from finsy.proto import p4d, p4r

from softswitch.p4runtime.codec import action_proto, entry_to_proto, match_keys
from softswitch.p4runtime.errors import P4RuntimeError, encode_uint, invalid
from softswitch.p4runtime.pipeline import Pipeline, switch_call
from softswitch.p4runtime.writes import index_of


def read_entities(p: Pipeline, entities) -> list[p4r.Entity]:
    """Every entity of the pipeline matching the request's entities."""
    out: list[p4r.Entity] = []
    for ent in entities:
        out.extend(read_entity(p, ent))
    return out


def read_entity(p: Pipeline, ent: p4r.Entity) -> Iterator[p4r.Entity]:
    kind = ent.WhichOneof("entity")
    reader = {
        "table_entry": _read_tables,
        "action_profile_member": _read_members,
        "action_profile_group": _read_groups,
        "counter_entry": _read_counters,
        "direct_counter_entry": _read_direct_counters,
        "meter_entry": _read_meters,
        "direct_meter_entry": _read_direct_meters,
        "register_entry": _read_registers,
        "packet_replication_engine_entry": _read_pre,
        "digest_entry": _read_digests,
    }.get(kind)
    if reader is None:
        raise P4RuntimeError(
            grpc.StatusCode.UNIMPLEMENTED, f"reading {kind or 'an empty entity'} is not supported"
        )
    for item in reader(p, getattr(ent, kind)):
        yield p4r.Entity(**{kind: item})


def _read_tables(p: Pipeline, q: p4r.TableEntry) -> Iterator[p4r.TableEntry]:
    tables = [p.schema.table(q.table_id)] if q.table_id else list(p.schema.tables.values())
    with_counter = q.HasField("counter_data")
    if q.is_default_action:
        for t in tables:
            name, args = switch_call(p.switch.table_get_default, t.name)
            e = p4r.TableEntry(table_id=t.info.preamble.id, is_default_action=True)
            if name is not None:
                e.action.action.CopyFrom(action_proto(p, name, args))
            yield e
        return
    if q.match and q.table_id:  # one entry: looked up, not scanned
        t = tables[0]
        keys, _ = match_keys(t, q.match)
        handle = switch_call(p.switch.table_find, t.name, keys, q.priority)
        if handle is not None:
            yield entry_to_proto(p, t, p.switch.table(t.name).get(handle), with_counter)
        return
    for t in tables:
        for entry in switch_call(p.switch.table_entries, t.name):
            if q.priority and entry.priority != q.priority:
                continue
            yield entry_to_proto(p, t, entry, with_counter)


def _read_members(p: Pipeline, q: p4r.ActionProfileMember):
    profs = [q.action_profile_id] if q.action_profile_id else list(p.schema.profiles)
    for pid in profs:
        p.schema.lookup("profiles", pid)
        for mid, m in sorted(p.members.get(pid, {}).items()):
            if not q.member_id or q.member_id == mid:
                yield m


def _read_groups(p: Pipeline, q: p4r.ActionProfileGroup):
    profs = [q.action_profile_id] if q.action_profile_id else list(p.schema.profiles)
    for pid in profs:
        p.schema.lookup("profiles", pid)
        for gid, g in sorted(p.groups.get(pid, {}).items()):
            if not q.group_id or q.group_id == gid:
                yield g


def _read_counters(p: Pipeline, q: p4r.CounterEntry):
    ids = [q.counter_id] if q.counter_id else list(p.schema.counters)
    for cid in ids:
        info = p.schema.lookup("counters", cid)
        idx = [index_of(info.size, q, info.preamble.name)] if q.HasField("index") else range(info.size)
        for i in idx:
            pk, by = switch_call(p.switch.counter_read, info.preamble.name, i)
            yield p4r.CounterEntry(counter_id=cid, index=p4r.Index(index=i),
                                   data=p4r.CounterData(packet_count=pk, byte_count=by))


def _read_direct_counters(p: Pipeline, q: p4r.DirectCounterEntry):
    te = q.table_entry
    tables = [p.schema.table(te.table_id)] if te.table_id else list(p.schema.tables.values())
    for t in tables:
        if p.schema.direct_resource(t, "direct_counters") is None:
            if te.table_id:
                raise invalid(f"{t.name}: table has no direct counter")
            continue
        sub = p4r.TableEntry(table_id=t.info.preamble.id, match=te.match, priority=te.priority)
        for e in _read_tables(p, sub):
            handle = switch_call(p.switch.table_find, t.name, match_keys(t, e.match)[0], e.priority)
            pk, by = switch_call(p.switch.direct_counter_read, t.name, handle)
            yield p4r.DirectCounterEntry(table_entry=e, data=p4r.CounterData(packet_count=pk, byte_count=by))


def _read_meters(p: Pipeline, q: p4r.MeterEntry):
    ids = [q.meter_id] if q.meter_id else list(p.schema.meters)
    for mid in ids:
        info = p.schema.lookup("meters", mid)
        idx = [index_of(info.size, q, info.preamble.name)] if q.HasField("index") else range(info.size)
        for i in idx:
            e = p4r.MeterEntry(meter_id=mid, index=p4r.Index(index=i))
            if (mid, i) in p.meter_cfg:
                e.config.CopyFrom(p.meter_cfg[(mid, i)])
            yield e


def _read_direct_meters(p: Pipeline, q: p4r.DirectMeterEntry):
    te = q.table_entry
    tables = [p.schema.table(te.table_id)] if te.table_id else list(p.schema.tables.values())
    for t in tables:
        if p.schema.direct_resource(t, "direct_meters") is None:
            if te.table_id:
                raise invalid(f"{t.name}: table has no direct meter")
            continue
        sub = p4r.TableEntry(table_id=t.info.preamble.id, match=te.match, priority=te.priority)
        for e in _read_tables(p, sub):
            out = p4r.DirectMeterEntry(table_entry=e)
            if e.HasField("meter_config"):
                out.config.CopyFrom(e.meter_config)
                out.table_entry.ClearField("meter_config")
            yield out


def _read_registers(p: Pipeline, q: p4r.RegisterEntry):
    ids = [q.register_id] if q.register_id else list(p.schema.registers)
    for rid in ids:
        info = p.schema.lookup("registers", rid)
        idx = [index_of(info.size, q, info.preamble.name)] if q.HasField("index") else range(info.size)
        for i in idx:
            v = switch_call(p.switch.register_read, info.preamble.name, i)
            yield p4r.RegisterEntry(register_id=rid, index=p4r.Index(index=i),
                                    data=p4d.P4Data(bitstring=encode_uint(v)))


def _read_pre(p: Pipeline, q: p4r.PacketReplicationEngineEntry):
    which = q.WhichOneof("type")
    if which in (None, "multicast_group_entry"):
        gid = q.multicast_group_entry.multicast_group_id if which else 0
        for k, g in sorted(p.mc_groups.items()):
            if not gid or gid == k:
                yield p4r.PacketReplicationEngineEntry(multicast_group_entry=g)
    if which in (None, "clone_session_entry"):
        sid = q.clone_session_entry.session_id if which else 0
        for k, s in sorted(p.clone_sessions.items()):
            if not sid or sid == k:
                yield p4r.PacketReplicationEngineEntry(clone_session_entry=s)


def _read_digests(p: Pipeline, q: p4r.DigestEntry):
    if q.digest_id:
        p.schema.lookup("digests", q.digest_id)
    for did, d in sorted(p.digest_entries.items()):
        if not q.digest_id or q.digest_id == did:
            yield d

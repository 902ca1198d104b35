"""Write (P4Runtime spec 12): each entity validated, then applied to the engine whole.

Every function either changes the pipeline (engine and stored controller state) or
raises P4RuntimeError and changes nothing.
"""

from __future__ import annotations

import grpc
from finsy.proto import p4i, p4r

from softswitch.p4runtime.codec import action_args, check_action_in_table, match_keys
from softswitch.p4runtime.digests import DigestConfig
from softswitch.p4runtime.entry_plans import plan_for
from softswitch.p4runtime.errors import P4RuntimeError, decode_uint, invalid, not_found
from softswitch.p4runtime.pipeline import Pipeline, copy_msg, switch_call
from softswitch.p4runtime.schema import TableSchema

Update = p4r.Update
_MAX_PRIORITY = (1 << 31) - 1


_OPS = (Update.INSERT, Update.MODIFY, Update.DELETE)


def apply_update(p: Pipeline, update: p4r.Update) -> None:
    """Apply one Update (spec 12) to a pipeline, raising P4RuntimeError when it is refused."""
    entity = update.entity
    op = update.type
    table_id = entity.table_entry.table_id  # 0 (never a table's id) for other entities
    if table_id and op in _OPS:
        plans = p.table_plans
        plan = plans[table_id] if table_id in plans else plan_for(p, table_id)
        if plan is not None and plan.apply(op, entity.table_entry):
            return
    kind = entity.WhichOneof("entity")
    if op not in _OPS:
        raise invalid(f"update type {op} is not INSERT, MODIFY or DELETE")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise P4RuntimeError(
            grpc.StatusCode.UNIMPLEMENTED, f"writing {kind or 'an empty entity'} is not supported"
        )
    handler(p, op, getattr(entity, kind))


def _write_table_entry(p: Pipeline, op: int, e: p4r.TableEntry) -> None:
    t = p.schema.table(e.table_id)
    sw = p.switch
    if e.is_default_action:
        _write_default(p, t, op, e)
        return
    if t.is_const:
        raise P4RuntimeError(
            grpc.StatusCode.PERMISSION_DENIED, f"{t.name}: table has const entries"
        )
    if e.idle_timeout_ns:
        raise invalid(f"{t.name}: table does not support idle timeout")
    priority = e.priority
    if t.needs_priority:
        if op != Update.DELETE and not 0 < priority <= _MAX_PRIORITY:
            raise invalid(f"{t.name}: entries need a priority in 1..{_MAX_PRIORITY}, got {priority}")
    elif priority != 0:
        raise invalid(f"{t.name}: priority must be 0 for a table without ternary/range/optional keys")
    keys, key = match_keys(t, e.match)  # validated and canonical: the engine trusts it
    table = sw.table(t.name)
    handle = table.find_canonical(key, priority)
    if op == Update.DELETE:
        if handle is None:
            raise not_found(f"{t.name}: no entry with this match key")
        switch_call(sw.table_delete, t.name, handle)
        p.entry_metadata.pop((t.info.preamble.id, handle), None)
        p.direct_meter_cfg.pop((t.info.preamble.id, handle), None)
        return
    if op == Update.INSERT and handle is not None:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, f"{t.name}: entry already exists")
    if op == Update.MODIFY and handle is None:
        raise not_found(f"{t.name}: no entry with this match key")
    table_action = e.action
    which = table_action.WhichOneof("type")
    direct = t.direct
    if which is None:
        raise invalid(f"{t.name}: entry has no action")
    if which == "action_profile_action_set":
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"{t.name}: one-shot action sets")
    if direct != (which == "action"):
        raise invalid(
            f"{t.name}: "
            + ("direct table needs an action" if direct else "indirect table needs a member or group id")
        )
    member = group = None
    if which == "action":
        action = table_action.action
        check_action_in_table(t, action.action_id, default=False, schema=p.schema)
        name, args = action_args(p, action, t.name)
    else:
        prof = t.info.implementation_id
        members = p.members.get(prof, {})
        groups = p.groups.get(prof, {})
        if which == "action_profile_member_id":
            member = table_action.action_profile_member_id
            if member not in members:
                raise not_found(f"{t.name}: action profile member {member} does not exist")
        else:
            group = table_action.action_profile_group_id
            if group not in groups:
                raise not_found(f"{t.name}: action profile group {group} does not exist")
    counter = _direct_counter_values(p, t, e)
    meter = _direct_meter_values(p, t, e)
    tid = t.id
    if op == Update.INSERT:
        if which == "action":
            handle = switch_call(table.add_canonical, key, name, args, priority)
        else:
            handle = switch_call(
                sw.table_add_indirect, t.name, keys, member=member, group=group, priority=priority
            )
    else:
        entry = sw.table(t.name).get(handle)  # modified in place: keep its values
        before = (entry.action, entry.args, entry.member, entry.group)
        if which == "action":
            switch_call(sw.table_modify, t.name, handle, name, args)
        else:
            switch_call(sw.table_modify, t.name, handle, None, (), member=member, group=group)
    try:
        if meter is not None:
            switch_call(sw.direct_meter_set, t.name, handle, *meter)
        if counter is not None:
            switch_call(sw.direct_counter_write, t.name, handle, *counter)
    except P4RuntimeError:  # e.g. a meter config the engine refuses: undo the entry change
        if op == Update.INSERT:
            sw.table_delete(t.name, handle)
        elif before[0] is not None:
            sw.table_modify(t.name, handle, before[0], before[1])
        else:
            sw.table_modify(t.name, handle, None, (), member=before[2], group=before[3])
        raise
    if meter is not None:
        p.direct_meter_cfg[(tid, handle)] = copy_msg(e.meter_config)
    metadata = e.metadata
    if metadata:
        p.entry_metadata[(tid, handle)] = bytes(metadata)
    elif op == Update.MODIFY:  # a new handle has none
        p.entry_metadata.pop((tid, handle), None)


_HANDLERS: dict = {}  # filled below, once every writer is defined


def _direct_counter_values(p: Pipeline, t: TableSchema, e: p4r.TableEntry):
    if not e.HasField("counter_data"):
        return None
    if p.schema.direct_resource(t, "direct_counters") is None:
        raise invalid(f"{t.name}: counter_data given but the table has no direct counter")
    return (e.counter_data.packet_count, e.counter_data.byte_count)


def _direct_meter_values(p: Pipeline, t: TableSchema, e: p4r.TableEntry):
    if not e.HasField("meter_config"):
        return None
    if p.schema.direct_resource(t, "direct_meters") is None:
        raise invalid(f"{t.name}: meter_config given but the table has no direct meter")
    c = e.meter_config
    return (c.cir, c.cburst, c.pir, c.pburst)


def _write_default(p: Pipeline, t: TableSchema, op: int, e: p4r.TableEntry) -> None:
    if op != Update.MODIFY:
        raise invalid(f"{t.name}: the default entry can only be modified (MODIFY)")
    if e.match:
        raise invalid(f"{t.name}: a default entry must not have match fields")
    if e.priority:
        raise invalid(f"{t.name}: a default entry must not have a priority")
    if t.info.const_default_action_id:
        raise P4RuntimeError(
            grpc.StatusCode.PERMISSION_DENIED, f"{t.name}: the default action is const"
        )
    which = e.action.WhichOneof("type")
    if which is None:
        switch_call(p.switch.table_reset_default, t.name)
        return
    if which != "action":
        raise invalid(f"{t.name}: the default entry needs a direct action")
    check_action_in_table(t, e.action.action.action_id, default=True, schema=p.schema)
    name, args = action_args(p, e.action.action, t.name)
    switch_call(p.switch.table_set_default, t.name, name, args)


def _profile_actions_ok(p: Pipeline, prof: p4i.ActionProfile, action_id: int) -> None:
    for tid in prof.table_ids:
        t = p.schema.tables.get(tid)
        if t is not None and action_id in t.action_scopes:
            return
    raise invalid(
        f"{prof.preamble.name}: action id {action_id} is not an action of the tables using it"
    )


def _write_member(p: Pipeline, op: int, m: p4r.ActionProfileMember) -> None:
    prof = p.schema.lookup("profiles", m.action_profile_id)
    pname = prof.preamble.name
    members = p.members.setdefault(m.action_profile_id, {})
    exists = m.member_id in members
    if op == Update.DELETE:
        if not exists:
            raise not_found(f"{pname}: member {m.member_id} does not exist")
        for g in p.groups.get(m.action_profile_id, {}).values():
            if any(x.member_id == m.member_id for x in g.members):
                raise P4RuntimeError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"{pname}: member {m.member_id} is still in group {g.group_id}",
                )
        switch_call(p.switch.ap_member_delete, pname, m.member_id)
        del members[m.member_id]
        return
    if op == Update.INSERT and exists:
        raise P4RuntimeError(
            grpc.StatusCode.ALREADY_EXISTS, f"{pname}: member {m.member_id} already exists"
        )
    if op == Update.MODIFY and not exists:
        raise not_found(f"{pname}: member {m.member_id} does not exist")
    _profile_actions_ok(p, prof, m.action.action_id)
    name, args = action_args(p, m.action, pname)
    if op == Update.INSERT:
        if prof.size and len(members) >= prof.size:
            raise P4RuntimeError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"{pname}: profile is full ({prof.size} members)"
            )
        switch_call(p.switch.ap_member_add, pname, m.member_id, name, args)
    else:
        switch_call(p.switch.ap_member_modify, pname, m.member_id, name, args)
    members[m.member_id] = copy_msg(m)


def _write_group(p: Pipeline, op: int, g: p4r.ActionProfileGroup) -> None:
    prof = p.schema.lookup("profiles", g.action_profile_id)
    pname = prof.preamble.name
    if not prof.with_selector:
        raise invalid(f"{pname}: groups need an action selector, this is a plain profile")
    groups = p.groups.setdefault(g.action_profile_id, {})
    exists = g.group_id in groups
    if op == Update.DELETE:
        if not exists:
            raise not_found(f"{pname}: group {g.group_id} does not exist")
        switch_call(p.switch.ap_group_delete, pname, g.group_id)
        del groups[g.group_id]
        return
    if op == Update.INSERT and exists:
        raise P4RuntimeError(
            grpc.StatusCode.ALREADY_EXISTS, f"{pname}: group {g.group_id} already exists"
        )
    if op == Update.MODIFY and not exists:
        raise not_found(f"{pname}: group {g.group_id} does not exist")
    members = p.members.get(g.action_profile_id, {})
    ids: list[int] = []
    seen: set[int] = set()
    for x in g.members:
        if x.member_id not in members:
            raise not_found(f"{pname}: group {g.group_id}: member {x.member_id} does not exist")
        if x.member_id in seen:
            raise invalid(f"{pname}: group {g.group_id}: member {x.member_id} listed twice")
        seen.add(x.member_id)
        ids.extend([x.member_id] * max(1, x.weight))
    limit = g.max_size or prof.max_group_size
    if limit and len(ids) > limit:
        raise P4RuntimeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"{pname}: group {g.group_id} has total weight {len(ids)} above the maximum {limit}",
        )
    if op == Update.INSERT:
        switch_call(p.switch.ap_group_add, pname, g.group_id, ids)
    else:
        switch_call(p.switch.ap_group_modify, pname, g.group_id, ids)
    groups[g.group_id] = copy_msg(g)



def _only_modify(op: int, what: str) -> None:
    if op != Update.MODIFY:
        raise invalid(f"{what} entries can only be modified (MODIFY), not inserted or deleted")


def index_of(size: int, entry, what: str) -> int:
    """The entry's index if within 0..size-1 (OUT_OF_RANGE otherwise); it must be given."""
    if not entry.HasField("index"):
        raise invalid(f"{what}: an index is required to write")
    i = entry.index.index
    if not 0 <= i < size:
        raise P4RuntimeError(
            grpc.StatusCode.OUT_OF_RANGE, f"{what}: index {i} out of range 0..{size - 1}"
        )
    return i


def _write_counter(p: Pipeline, op: int, c: p4r.CounterEntry) -> None:
    info = p.schema.lookup("counters", c.counter_id)
    _only_modify(op, "counter")
    i = index_of(info.size, c, info.preamble.name)
    switch_call(
        p.switch.counter_write, info.preamble.name, i, c.data.packet_count, c.data.byte_count
    )


def _table_handle(p: Pipeline, e: p4r.TableEntry, what: str) -> tuple[TableSchema, int]:
    t = p.schema.table(e.table_id)
    if e.is_default_action:
        raise P4RuntimeError(
            grpc.StatusCode.UNIMPLEMENTED, f"{what} of the default entry of {t.name}"
        )
    keys, _ = match_keys(t, e.match)
    handle = switch_call(p.switch.table_find, t.name, keys, e.priority)
    if handle is None:
        raise not_found(f"{t.name}: no entry with this match key")
    return t, handle


def _write_direct_counter(p: Pipeline, op: int, c: p4r.DirectCounterEntry) -> None:
    _only_modify(op, "direct counter")
    t, handle = _table_handle(p, c.table_entry, "direct counter")
    if p.schema.direct_resource(t, "direct_counters") is None:
        raise invalid(f"{t.name}: table has no direct counter")
    switch_call(
        p.switch.direct_counter_write, t.name, handle, c.data.packet_count, c.data.byte_count
    )


def _write_meter(p: Pipeline, op: int, m: p4r.MeterEntry) -> None:
    info = p.schema.lookup("meters", m.meter_id)
    _only_modify(op, "meter")
    i = index_of(info.size, m, info.preamble.name)
    c = m.config
    switch_call(p.switch.meter_set, info.preamble.name, i, c.cir, c.cburst, c.pir, c.pburst)
    if m.HasField("config"):
        p.meter_cfg[(m.meter_id, i)] = copy_msg(c)
    else:
        p.meter_cfg.pop((m.meter_id, i), None)


def _write_direct_meter(p: Pipeline, op: int, m: p4r.DirectMeterEntry) -> None:
    _only_modify(op, "direct meter")
    t, handle = _table_handle(p, m.table_entry, "direct meter")
    if p.schema.direct_resource(t, "direct_meters") is None:
        raise invalid(f"{t.name}: table has no direct meter")
    c = m.config
    switch_call(p.switch.direct_meter_set, t.name, handle, c.cir, c.cburst, c.pir, c.pburst)
    key = (t.info.preamble.id, handle)
    if m.HasField("config"):
        p.direct_meter_cfg[key] = copy_msg(c)
    else:
        p.direct_meter_cfg.pop(key, None)


def _write_register(p: Pipeline, op: int, r: p4r.RegisterEntry) -> None:
    info = p.schema.lookup("registers", r.register_id)
    _only_modify(op, "register")
    i = index_of(info.size, r, info.preamble.name)
    if r.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{info.preamble.name}: register data must be a bitstring")
    width = info.type_spec.bitstring.bit.bitwidth or info.type_spec.bitstring.int.bitwidth
    v = decode_uint(r.data.bitstring, width, f"{info.preamble.name}[{i}]")
    switch_call(p.switch.register_write, info.preamble.name, i, v)



def _replicas_of(replicas, what: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in replicas:
        if r.WhichOneof("port_kind") == "port":
            port = decode_uint(r.port, 32, f"{what}: replica port")
        else:
            port = r.egress_port
        if (port, r.instance) in out:
            raise invalid(f"{what}: replica (port {port}, instance {r.instance}) listed twice")
        out.append((port, r.instance))
    return out


def _write_pre(p: Pipeline, op: int, e: p4r.PacketReplicationEngineEntry) -> None:
    which = e.WhichOneof("type")
    if which == "multicast_group_entry":
        g = e.multicast_group_entry
        gid = g.multicast_group_id
        what = f"multicast group {gid}"
        if gid == 0:
            raise invalid("multicast group id 0 is reserved")
        exists = gid in p.mc_groups
        _check_existence(op, exists, what)
        if op == Update.DELETE:
            switch_call(p.switch.mc_group_delete, gid)
            del p.mc_groups[gid]
            return
        switch_call(p.switch.mc_group_set, gid, _replicas_of(g.replicas, what))
        p.mc_groups[gid] = copy_msg(g)
    elif which == "clone_session_entry":
        s = e.clone_session_entry
        sid = s.session_id
        what = f"clone session {sid}"
        if sid == 0:
            raise invalid("clone session id 0 is reserved")
        exists = sid in p.clone_sessions
        _check_existence(op, exists, what)
        if op == Update.DELETE:
            switch_call(p.switch.clone_session_delete, sid)
            del p.clone_sessions[sid]
            return
        switch_call(
            p.switch.clone_session_set, sid, _replicas_of(s.replicas, what), s.packet_length_bytes
        )
        p.clone_sessions[sid] = copy_msg(s)
    else:
        raise invalid("PacketReplicationEngineEntry has neither a multicast group nor a clone session")


def _check_existence(op: int, exists: bool, what: str) -> None:
    if op == Update.INSERT and exists:
        raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, f"{what} already exists")
    if op != Update.INSERT and not exists:
        raise not_found(f"{what} does not exist")


def _write_digest(p: Pipeline, op: int, d: p4r.DigestEntry) -> None:
    info = p.schema.lookup("digests", d.digest_id)
    what = f"digest {info.preamble.name}"
    _check_existence(op, d.digest_id in p.digest_entries, what)
    if op == Update.DELETE:
        p.digests.configure(d.digest_id, None)
        del p.digest_entries[d.digest_id]
        return
    c = d.config
    if c.max_list_size < 0 or c.max_timeout_ns < 0 or c.ack_timeout_ns < 0:
        raise invalid(f"{what}: negative config values")
    p.digests.configure(
        d.digest_id, DigestConfig(c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns)
    )
    p.digest_entries[d.digest_id] = copy_msg(d)


_HANDLERS.update({
    "table_entry": _write_table_entry,
    "action_profile_member": _write_member,
    "action_profile_group": _write_group,
    "counter_entry": _write_counter,
    "direct_counter_entry": _write_direct_counter,
    "meter_entry": _write_meter,
    "direct_meter_entry": _write_direct_meter,
    "register_entry": _write_register,
    "packet_replication_engine_entry": _write_pre,
    "digest_entry": _write_digest,
})

"""Mapping entities as P4Runtime messages, without a switch connection.

``to_finsy`` / ``from_finsy`` convert between ``syncmesh.entities`` and
finsy's entities; ``plan_updates`` encodes a ``Plan`` as the P4Runtime
``Update`` messages of one WriteRequest for a program's P4Info
(``finsy.P4Schema``), which is all a switch connection adds. The way from
the core's desired state to the protobuf a switch receives is
``desired_updates(core.desired(), identity, schema)``; a caller that keeps
the switch's state across changes, as the driver does, uses the book::

    book = SwitchBook(mapping_for(identity))       # syncmesh.sglb_switch / sglb_programs
    plan = book.plan(core.desired())               # only what differs from book.held
    updates = plan_updates(plan, schema)           # list[p4r.Update], one WriteRequest
    frames = book.writeback_frames(plan)           # PacketOuts (Tofino program), after it
    book.commit(plan)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import finsy as fy
from finsy.p4entity import P4Replica
from finsy.proto import p4r

from .entities import Entity, MatchValue, MulticastWrite, Plan, TableWrite, reconcile
from .sglb_programs import mapping_for
from .sglb_switch import Identity
from .switchops import OpKey, SwitchOp


def _suffix(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def to_finsy(e: Entity) -> Any:
    """A mapping entity as a finsy entity."""
    if isinstance(e, MulticastWrite):
        return fy.P4MulticastGroupEntry(e.group_id, replicas=list(e.ports))
    return fy.P4TableEntry(
        e.table,
        match=fy.Match(dict(e.match)) if e.match else None,
        action=fy.Action(e.action, **dict(e.params)),
        is_default_action=e.is_default,
        priority=e.priority,
    )


def from_finsy(entry: object, schema: fy.P4Schema) -> Entity | None:
    """A read-back finsy entity as a mapping entity (None for what the mapping never writes)."""
    if isinstance(entry, fy.P4MulticastGroupEntry):
        ports = []
        for r in entry.replicas:  # finsy reads a replica back as a port or (port, instance)
            if isinstance(r, P4Replica):
                ports.append((r.port, r.instance) if r.instance else r.port)
            else:
                ports.append(r if isinstance(r, int) else (r[0], r[1]))
        return MulticastWrite(entry.multicast_group_id, tuple(ports))
    if not isinstance(entry, fy.P4TableEntry) or entry.action is None:
        return None
    action = entry.action
    if not isinstance(action, fy.P4TableAction):
        return None
    match: tuple[tuple[str, MatchValue], ...] = ()
    if entry.match is not None and not entry.is_default_action:
        # finsy names match fields by alias; the mapping uses the P4Info names
        fields = schema.tables[entry.table_id].match_fields
        match = tuple((fields[k].name, v) for k, v in entry.match.items())
    params = tuple((k, int(v)) for k, v in (action.args or {}).items())
    return TableWrite(_suffix(entry.table_id), match, _suffix(action.name), params,
                      entry.priority or 0)


def plan_finsy(plan: Plan) -> list[Any]:
    """The plan as finsy updates: deletes, inserts, then modifies. The plan never touches
    one entity twice, so the order a switch applies them in does not matter (P4Runtime
    spec 12.1)."""
    return ([-to_finsy(e) for e in plan.delete] + [+to_finsy(e) for e in plan.insert]
            + [~to_finsy(e) for e in plan.modify])


def plan_updates(plan: Plan, schema: fy.P4Schema) -> list[p4r.Update]:
    """The plan as P4Runtime ``Update`` messages for the program ``schema`` describes
    (names and values checked against its P4Info by finsy)."""
    return [u.encode_update(schema) for u in plan_finsy(plan)]


def desired_updates(desired: Mapping[OpKey, SwitchOp], identity: Identity,
                    schema: fy.P4Schema, held: Iterable[Entity] = ()) -> list[p4r.Update]:
    """The P4Runtime Updates that bring a switch holding ``held`` (nothing: a fresh one)
    to the core's desired state, for the program of ``identity.target`` as ``schema``'s
    P4Info describes it."""
    mapping = mapping_for(identity)
    return plan_updates(reconcile(mapping.entities(desired), list(held), mapping.tables), schema)

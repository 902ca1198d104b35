"""What a P4Runtime switch holds, as plain data, and the writes that change it.

Program-independent: a ``TableWrite`` is one table entry (or a keyless
table's default action), a ``MulticastWrite`` one multicast group; names are
P4Info suffixes. ``reconcile`` diffs the entities a program mapping wants
(``syncmesh.sglb_mapping`` for p4src/sglb.p4, ``syncmesh.sglb_tna_mapping``
for p4src/tna/sglb.p4) against what the switch reports, so that only the
differences are written and nothing is wiped. ``syncmesh.p4runtime_entities``
turns them into P4Runtime messages.
"""

from __future__ import annotations

from dataclasses import dataclass

MatchValue = int | tuple[int, int]
"""A key field's value: an int (exact), (value, prefix length) (lpm), (value, mask)
(ternary) or (low, high) (range); the table's P4Info says which."""

EntityKey = tuple[object, ...]
"""Where an entity sits on the switch: (table, match) or ("mcast", group id)."""


@dataclass(frozen=True)
class TableWrite:
    """One table entry (or the table's default action when ``match`` is empty)."""

    table: str
    match: tuple[tuple[str, MatchValue], ...]
    """(key field, value) with value an int (exact) or (int, prefix length) (lpm)."""
    action: str
    params: tuple[tuple[str, int], ...]
    priority: int = 0
    """P4Runtime priority of a ternary / range entry (0 for exact and lpm tables)."""

    @property
    def is_default(self) -> bool:
        """True when this sets the default action of a keyless table."""
        return not self.match


Replica = int | tuple[int, int]
"""A multicast replica: a port (instance 0) or (port, instance)."""


@dataclass(frozen=True)
class MulticastWrite:
    """One multicast group of the packet replication engine."""

    group_id: int
    ports: tuple[Replica, ...]
    """Replicas: a port, or (port, instance) for further copies to the same port."""


Entity = TableWrite | MulticastWrite


def entity_key(e: Entity) -> EntityKey:
    """Identity of an entity on the switch: (table, match) or the multicast group id."""
    if isinstance(e, MulticastWrite):
        return ("mcast", e.group_id)
    return (e.table, e.match)


@dataclass(frozen=True)
class Plan:
    """Writes that turn the switch's entities into the desired ones, nothing more."""

    insert: tuple[Entity, ...] = ()
    modify: tuple[Entity, ...] = ()
    """Changed entries, keyless defaults and replaced multicast groups."""
    delete: tuple[Entity, ...] = ()
    writebacks: tuple[tuple[tuple[int, int], int], ...] = ()
    """Notice epochs written back ((spine id, destination leaf id), epoch) once written."""

    @property
    def empty(self) -> bool:
        """True when the switch already holds the desired state."""
        return not (self.insert or self.modify or self.delete)


def reconcile(desired: list[Entity], actual: list[Entity], owned_tables: frozenset[str]) -> Plan:
    """Diff desired against read-back entities: equal ones are left alone (never wiped).

    Entries the switch holds in ``owned_tables`` that are not desired are
    deleted; entries of other tables (and multicast groups this daemon does not
    describe) belong to someone else and stay.
    """
    want = {entity_key(e): e for e in desired}
    have = {entity_key(e): e for e in actual}
    insert: list[Entity] = []
    modify: list[Entity] = []
    delete: list[Entity] = []
    for key, e in want.items():
        old = have.get(key)
        if old is None:
            # a keyless table always has a default: setting it is a modify
            (modify if isinstance(e, TableWrite) and e.is_default else insert).append(e)
        elif old != e:
            modify.append(e)
    for key, e in have.items():
        if key in want:
            continue
        if isinstance(e, TableWrite) and e.table in owned_tables and not e.is_default:
            delete.append(e)
    return Plan(tuple(insert), tuple(modify), tuple(delete))

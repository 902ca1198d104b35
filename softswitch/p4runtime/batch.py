"""Write batches (P4Runtime spec 12.1-12.3): per-update results, an error report that fits.

Spec 12.3 answers a batch with failures with UNKNOWN and one `p4.v1.Error` per update
in the `grpc-status-details-bin` trailer. gRPC clients refuse trailers above 8 KiB
(grpc.max_metadata_size; refused at random between 8 and 16 KiB), and each `Error`
costs 35 bytes (OK) to 39 bytes (failed, without message), so only about 150 updates
can always be reported. The server therefore

* reports every batch whose report fits in `REPORT_BUDGET` as the spec says
  (messages kept while they fit, codes always);
* applies a larger batch with an undo log, and if some of its updates fail and the
  report would not fit, undoes the applied ones and answers ABORTED naming the first
  failure: nothing was applied (spec 12.3 case 2, an RPC-wide error without
  details). The client can always tell exactly what was applied.

Packets may see the intermediate states of a batch that is undone, as with the
spec's ROLLBACK_ON_ERROR (12.2).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import grpc
from finsy.proto import p4r, rpc_status
from google.protobuf import any_pb2

from softswitch.engine.tables import Entry
from softswitch.p4runtime.codec import entry_proto, match_keys
from softswitch.p4runtime.entry_plans import plan_for
from softswitch.p4runtime.errors import P4RuntimeError, code_number
from softswitch.p4runtime.pipeline import Pipeline, switch_call
from softswitch.p4runtime.reads import read_entity
from softswitch.p4runtime.schema import TableSchema

log = logging.getLogger("softswitch.p4runtime")

Update = p4r.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE

REPORT_BUDGET = 6000
"""Bytes of serialised google.rpc.Status the server sends (below gRPC's 8 KiB limit
with room for the other trailers)."""

_ERROR_URL = "type.googleapis.com/p4.v1.Error"
_OK_COST = 2 + 2 + len(_ERROR_URL)  # details entry: tag, length, Any(type_url)
_FAILED_COST = _OK_COST + 4  # Any.value: Error{canonical_code}
ALWAYS_REPORTED = (REPORT_BUDGET - 100) // _FAILED_COST
"""Batches up to this size are reported update by update whatever fails (151)."""

UPDATES_PER_LOCK = 16
"""Updates applied per acquisition of the engine lock: each stays atomic for packets,
which wait at most for that many (tens of microseconds)."""


@dataclass
class BatchOutcome:
    """What a Write batch did: one result per update, or an abort with nothing applied."""

    results: list[P4RuntimeError | None]
    aborted: P4RuntimeError | None = None  # set when the batch was undone

    @property
    def failures(self) -> list[P4RuntimeError]:
        return [r for r in self.results if r is not None]


def error_report(results: Sequence[P4RuntimeError | None],
                 budget: int = REPORT_BUDGET) -> bytes | None:
    """The spec 12.3 trailer (google.rpc.Status, one p4.v1.Error per update), or None
    when even its compact form (codes only) does not fit in `budget` bytes."""
    failed = [r for r in results if r is not None]
    size = 100 + len(results) * _OK_COST + 4 * len(failed)
    if size > budget:
        return None
    status = rpc_status.Status(code=code_number(grpc.StatusCode.UNKNOWN),
                               message=f"{len(failed)} of {len(results)} updates failed")
    room = budget - size
    for r in results:
        err = p4r.Error()
        if r is not None:
            err.canonical_code = code_number(r.code)
            cost = len(r.message.encode()) + 4
            if cost <= room:  # messages while they fit, first failures first
                err.message = r.message
                room -= cost
        packed = any_pb2.Any(type_url=_ERROR_URL, value=err.SerializeToString())
        status.details.append(packed)
    return status.SerializeToString()


def apply_batch(p: Pipeline, updates: Sequence[p4r.Update],
                apply: Callable[[Pipeline, p4r.Update], None],
                guard) -> BatchOutcome:
    """Apply every update (CONTINUE_ON_ERROR); undo them all if the report would not fit.

    `guard` is the lock that makes each update atomic with respect to packets, taken
    once for up to `UPDATES_PER_LOCK` updates; the caller holds the lock that keeps
    other Writes and pipeline changes out.
    """
    n = len(updates)
    undo = _UndoLog() if n > ALWAYS_REPORTED else None
    results: list[P4RuntimeError | None] = [None] * n
    failed = False
    pending = iter(updates)
    i = 0
    while i < n:
        with guard:
            for u in islice(pending, UPDATES_PER_LOCK):
                try:
                    if undo is not None and u.type != INSERT:  # an INSERT's inverse needs nothing
                        undo.before(p, i, u)
                    apply(p, u)
                except P4RuntimeError as exc:
                    results[i] = exc
                    failed = True
                except Exception as exc:  # a server bug: reported for this update, not fatal
                    log.exception("rpc=Write update_failed_internally")
                    results[i] = P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {exc}")
                    failed = True
                i += 1
    outcome = BatchOutcome(results)
    if not failed or undo is None or error_report(results) is not None:
        return outcome
    failures = outcome.failures
    first = next(i for i, r in enumerate(results) if r is not None)
    undone = undo.rollback(p, updates, results, apply, guard)
    if undone is not None:
        outcome.aborted = undone
        return outcome
    outcome.aborted = P4RuntimeError(
        grpc.StatusCode.ABORTED,
        f"batch of {n} updates aborted, nothing applied: update {first} failed "
        f"({failures[0]}); {len(failures)} of {n} failed in all. A per-update error "
        f"report of more than {ALWAYS_REPORTED} updates does not fit in gRPC's metadata limit, "
        "so a larger batch is applied all or nothing")
    return outcome


@dataclass(slots=True)
class _EntrySnapshot:
    """A table entry as it was before an update, made into an Entity only if the batch is
    undone: building the message for every MODIFY or DELETE of a large batch cost four
    times the update itself, and most batches are never undone."""

    table: TableSchema
    entry: Entry  # a copy: a MODIFY changes the engine's entry in place
    metadata: bytes | None
    meter_cfg: p4r.MeterConfig | None  # stored configs are replaced, never changed
    counters: tuple[int, int] | None

    def entity(self, p: Pipeline) -> p4r.Entity:
        return p4r.Entity(table_entry=entry_proto(p, self.table, self.entry, self.metadata,
                                                  self.meter_cfg, self.counters))


class _UndoLog:
    """What undoes the applied updates of a batch. An applied INSERT is undone by deleting
    its entity, which needs nothing recorded; a MODIFY or DELETE by the prior state of its
    entity, read before it is applied."""

    def __init__(self) -> None:
        # update index -> (whether it deletes, prior state), or None
        self._restore: dict[int, tuple[bool, p4r.Entity | _EntrySnapshot] | None] = {}

    def before(self, p: Pipeline, index: int, u: p4r.Update) -> None:
        """Record what restores the state update `index` (a MODIFY or DELETE) is about to
        change (None: it changes nothing, as a MODIFY or DELETE of a missing entity fails)."""
        deleting = u.type == DELETE
        prior = _prior_state(p, u.entity, deleting=deleting)
        self._restore[index] = None if prior is None else (deleting, prior)

    def rollback(self, p: Pipeline, updates: Sequence[p4r.Update],
                 results: list[P4RuntimeError | None], apply, guard) -> P4RuntimeError | None:
        """Undo the applied updates, last first; an error (INTERNAL) if one could not be undone."""
        broken = 0
        for index in range(len(updates) - 1, -1, -1):
            if results[index] is not None:
                continue  # it failed: it changed nothing
            if index in self._restore:
                recorded = self._restore[index]
                if recorded is None:
                    continue
                deleted, prior = recorded
                entity = prior.entity(p) if isinstance(prior, _EntrySnapshot) else prior
                inverse = Update(type=INSERT if deleted else MODIFY, entity=entity)
            else:  # an applied INSERT
                inverse = Update(type=DELETE, entity=updates[index].entity)
            with guard:
                try:
                    apply(p, inverse)
                except Exception:
                    log.exception("rpc=Write undo_failed update=%s", inverse)
                    broken += 1
        self._restore.clear()
        if broken:
            return P4RuntimeError(grpc.StatusCode.INTERNAL,
                                  f"a failed batch could not be undone ({broken} updates); "
                                  "read the state back before writing again")
        return None


def _prior_state(p: Pipeline, ent: p4r.Entity,
                 deleting: bool) -> p4r.Entity | _EntrySnapshot | None:
    """The current state of the entity an update names (by its key), or None if absent.

    A deleted table entry is restored with its direct counter values.
    """
    kind = ent.WhichOneof("entity")
    if kind == "table_entry":
        e = ent.table_entry
        return _prior_table_entry(p, e, deleting or e.HasField("counter_data"))
    if kind in ("direct_counter_entry", "direct_meter_entry"):
        e = getattr(ent, kind)
        found = _prior_table_entry(p, e.table_entry, False)
        if found is None:
            return None
        meter_cfg = (found.meter_cfg if isinstance(found, _EntrySnapshot)
                     else found.table_entry.meter_config
                     if found.table_entry.HasField("meter_config") else None)
        key = p4r.TableEntry(table_id=e.table_entry.table_id, match=e.table_entry.match,
                             priority=e.table_entry.priority)
        if kind == "direct_counter_entry":
            t = p.schema.table(key.table_id)
            handle = _handle(p, key)
            pk, by = switch_call(p.switch.direct_counter_read, t.name, handle)
            return p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
                table_entry=key, data=p4r.CounterData(packet_count=pk, byte_count=by)))
        out = p4r.DirectMeterEntry(table_entry=key)
        if meter_cfg is not None:
            out.config.CopyFrom(meter_cfg)
        return p4r.Entity(direct_meter_entry=out)
    if kind is None:
        return None
    query = _key_query(kind, getattr(ent, kind))
    if query is None:
        return None
    return next(iter(read_entity(p, query)), None)


def _handle(p: Pipeline, key: p4r.TableEntry) -> int | None:
    t = p.schema.table(key.table_id)
    _, canonical = match_keys(t, key.match)  # validated: the engine need not check it again
    return p.switch.table(t.name).find_canonical(canonical, key.priority)


def _prior_table_entry(p: Pipeline, e: p4r.TableEntry,
                       with_counter: bool) -> p4r.Entity | _EntrySnapshot | None:
    if e.is_default_action:
        query = p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_id, is_default_action=True))
        return next(iter(read_entity(p, query)), None)
    tid = e.table_id
    t = p.schema.table(tid)
    plan = p.table_plans[tid] if tid in p.table_plans else plan_for(p, tid)
    key = plan.decode_key(e.match) if plan is not None else None
    if plan is not None and key is not None:  # the usual key, decoded as the short path does
        table = plan.table
        handle = table.find_canonical(key, e.priority)
    else:
        table = p.switch.table(t.name)
        handle = _handle(p, e)
    if handle is None:
        return None
    entry = table.get(handle)
    counters = None
    if with_counter and p.schema.direct_resource(t, "direct_counters") is not None:
        counters = p.switch.direct_counter_read(t.name, handle)
    copy = Entry(handle, entry.key, entry.action, entry.args, entry.priority, entry.member,
                 entry.group)
    return _EntrySnapshot(t, copy, p.entry_metadata.get((tid, handle)),
                          p.direct_meter_cfg.get((tid, handle)), counters)


def _key_query(kind: str, e: Any) -> p4r.Entity | None:
    """A Read query for exactly the entity `e` names (its key fields only)."""
    q: Any
    if kind == "action_profile_member":
        if not e.member_id:
            return None
        q = p4r.ActionProfileMember(action_profile_id=e.action_profile_id, member_id=e.member_id)
    elif kind == "action_profile_group":
        if not e.group_id:
            return None
        q = p4r.ActionProfileGroup(action_profile_id=e.action_profile_id, group_id=e.group_id)
    elif kind in ("counter_entry", "meter_entry", "register_entry"):
        if not e.HasField("index"):
            return None
        q = type(e)()
        id_field = {"counter_entry": "counter_id", "meter_entry": "meter_id",
                    "register_entry": "register_id"}[kind]
        setattr(q, id_field, getattr(e, id_field))
        q.index.CopyFrom(e.index)
    elif kind == "packet_replication_engine_entry":
        which = e.WhichOneof("type")
        if which == "multicast_group_entry" and e.multicast_group_entry.multicast_group_id:
            q = p4r.PacketReplicationEngineEntry(multicast_group_entry=p4r.MulticastGroupEntry(
                multicast_group_id=e.multicast_group_entry.multicast_group_id))
        elif which == "clone_session_entry" and e.clone_session_entry.session_id:
            q = p4r.PacketReplicationEngineEntry(clone_session_entry=p4r.CloneSessionEntry(
                session_id=e.clone_session_entry.session_id))
        else:
            return None
    elif kind == "digest_entry":
        if not e.digest_id:
            return None
        q = p4r.DigestEntry(digest_id=e.digest_id)
    else:
        return None
    return p4r.Entity(**{kind: q})

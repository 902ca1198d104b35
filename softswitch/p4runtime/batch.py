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
from typing import Any

import grpc
from finsy.proto import p4r, rpc_status
from google.protobuf import any_pb2

from softswitch.p4runtime.codec import entry_to_proto, match_keys
from softswitch.p4runtime.errors import P4RuntimeError, code_number
from softswitch.p4runtime.pipeline import Pipeline, switch_call
from softswitch.p4runtime.reads import read_entity

log = logging.getLogger("softswitch.p4runtime")

Update = p4r.Update

REPORT_BUDGET = 6000
"""Bytes of serialised google.rpc.Status the server sends (below gRPC's 8 KiB limit
with room for the other trailers)."""

_ERROR_URL = "type.googleapis.com/p4.v1.Error"
_OK_COST = 2 + 2 + len(_ERROR_URL)  # details entry: tag, length, Any(type_url)
_FAILED_COST = _OK_COST + 4  # Any.value: Error{canonical_code}
ALWAYS_REPORTED = (REPORT_BUDGET - 100) // _FAILED_COST
"""Batches up to this size are reported update by update whatever fails (151)."""


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

    `guard` is the lock that makes each update atomic with respect to packets; the
    caller holds the lock that keeps other Writes and pipeline changes out.
    """
    undo = _UndoLog() if len(updates) > ALWAYS_REPORTED else None
    results: list[P4RuntimeError | None] = []
    for u in updates:
        with guard:
            try:
                inverse = undo.inverse(p, u) if undo is not None else None
                apply(p, u)
            except P4RuntimeError as exc:
                results.append(exc)
                continue
            except Exception as exc:  # a server bug: reported for this update, not fatal
                log.exception("rpc=Write update_failed_internally")
                results.append(P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {exc}"))
                continue
            results.append(None)
            if undo is not None:
                undo.push(inverse)
    outcome = BatchOutcome(results)
    failures = outcome.failures
    if not failures or undo is None or error_report(results) is not None:
        return outcome
    first = next(i for i, r in enumerate(results) if r is not None)
    undone = undo.rollback(p, apply, guard)
    if undone is not None:
        outcome.aborted = undone
        return outcome
    outcome.aborted = P4RuntimeError(
        grpc.StatusCode.ABORTED,
        f"batch of {len(updates)} updates aborted, nothing applied: update {first} failed "
        f"({failures[0]}); {len(failures)} of {len(updates)} failed in all. A per-update error "
        f"report of more than {ALWAYS_REPORTED} updates does not fit in gRPC's metadata limit, "
        "so a larger batch is applied all or nothing")
    return outcome


class _Inserted:
    """An applied INSERT: its inverse (a DELETE) is built only if the batch is undone."""

    __slots__ = ("update",)

    def __init__(self, update: p4r.Update) -> None:
        self.update = update


class _UndoLog:
    """Inverses of the applied updates of a batch, computed before each is applied."""

    def __init__(self) -> None:
        # an Update to apply, or an INSERT whose DELETE is built only if it is needed
        self._inverses: list[p4r.Update | _Inserted | None] = []

    def push(self, inverse: p4r.Update | _Inserted | None) -> None:
        self._inverses.append(inverse)

    def inverse(self, p: Pipeline, u: p4r.Update) -> p4r.Update | _Inserted | None:
        """What restores the state `u` is about to change (None: it changes nothing)."""
        if u.type == Update.INSERT:
            return _Inserted(u)
        prior = _prior_state(p, u.entity, deleting=u.type == Update.DELETE)
        if prior is None:
            return None  # MODIFY/DELETE of a missing entity fails without changing anything
        return Update(type=Update.INSERT if u.type == Update.DELETE else Update.MODIFY,
                      entity=prior)

    def rollback(self, p: Pipeline, apply, guard) -> P4RuntimeError | None:
        """Apply the inverses, last first; an error (INTERNAL) if one could not be applied."""
        broken = 0
        for inverse in reversed(self._inverses):
            if inverse is None:
                continue
            if isinstance(inverse, _Inserted):
                inverse = Update(type=Update.DELETE, entity=inverse.update.entity)
            with guard:
                try:
                    apply(p, inverse)
                except Exception:
                    log.exception("rpc=Write undo_failed update=%s", inverse)
                    broken += 1
        self._inverses.clear()
        if broken:
            return P4RuntimeError(grpc.StatusCode.INTERNAL,
                                  f"a failed batch could not be undone ({broken} updates); "
                                  "read the state back before writing again")
        return None


def _prior_state(p: Pipeline, ent: p4r.Entity, deleting: bool) -> p4r.Entity | None:
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
        key = p4r.TableEntry(table_id=e.table_entry.table_id, match=e.table_entry.match,
                             priority=e.table_entry.priority)
        if kind == "direct_counter_entry":
            t = p.schema.table(key.table_id)
            handle = _handle(p, key)
            pk, by = switch_call(p.switch.direct_counter_read, t.name, handle)
            return p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
                table_entry=key, data=p4r.CounterData(packet_count=pk, byte_count=by)))
        out = p4r.DirectMeterEntry(table_entry=key)
        if found.table_entry.HasField("meter_config"):
            out.config.CopyFrom(found.table_entry.meter_config)
        return p4r.Entity(direct_meter_entry=out)
    if kind is None:
        return None
    query = _key_query(kind, getattr(ent, kind))
    if query is None:
        return None
    return next(iter(read_entity(p, query)), None)


def _handle(p: Pipeline, key: p4r.TableEntry) -> int | None:
    t = p.schema.table(key.table_id)
    keys, _ = match_keys(t, key.match)
    return switch_call(p.switch.table_find, t.name, keys, key.priority)


def _prior_table_entry(p: Pipeline, e: p4r.TableEntry, with_counter: bool) -> p4r.Entity | None:
    if e.is_default_action:
        query = p4r.Entity(table_entry=p4r.TableEntry(table_id=e.table_id, is_default_action=True))
        return next(iter(read_entity(p, query)), None)
    t = p.schema.table(e.table_id)
    handle = _handle(p, e)
    if handle is None:
        return None
    entry = p.switch.table(t.name).get(handle)
    return p4r.Entity(table_entry=entry_to_proto(p, t, entry, with_counter))


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

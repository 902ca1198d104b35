"""From the core's desired state to P4Runtime Update messages for a P4Info, without a
switch connection (what the driver sends, and what a simulator feeds its switches)."""

from __future__ import annotations

from pathlib import Path

import finsy as fy
from finsy.proto import p4r
from syncmesh.core import SyncMeshCore
from syncmesh.entities import MulticastWrite, TableWrite, reconcile
from syncmesh.p4runtime_entities import desired_updates, from_finsy, plan_updates
from syncmesh.sglb_mapping import Identity, switch_mac
from syncmesh.sglb_programs import mapping_for

from fabricmodel import load
from switchtarget.pipeline import compile_pipeline

ROOT = Path(__file__).resolve().parents[2]


def test_desired_state_becomes_updates_of_the_programs_p4info(tmp_path):
    files = compile_pipeline(ROOT / "p4src" / "sglb.p4", tmp_path)
    schema = fy.P4Schema(files.p4info, files.device_config)
    fab = load(ROOT / "topologies" / "fabrics" / "ls4x2-asym.yaml")
    for name in ("l1", "s2"):
        mapping = mapping_for(Identity(switch_mac(fab.switch(name).id)))
        ents = mapping.entities(SyncMeshCore(fab, name, 1).desired())
        plan = reconcile(ents, [], mapping.tables)
        updates = plan_updates(plan, schema)
        assert len(updates) == len(ents)
        kinds = {u.type for u in updates}
        # keyless defaults are modifies, everything else a fresh insert
        assert kinds == {p4r.Update.INSERT, p4r.Update.MODIFY}
        ids = {t.id: t.alias for t in schema.tables}
        tables = [ids[u.entity.table_entry.table_id] for u in updates
                  if u.entity.WhichOneof("entity") == "table_entry"]
        assert sorted(tables) == sorted(e.table for e in ents if isinstance(e, TableWrite))
        groups = [u for u in updates
                  if u.entity.WhichOneof("entity") == "packet_replication_engine_entry"]
        assert len(groups) == sum(isinstance(e, MulticastWrite) for e in ents)
        # and back: every update decodes to the entity it came from
        back = [from_finsy(fy.p4entity.decode_entity(u.entity, schema), schema) for u in updates]
        assert sorted(map(repr, back)) == sorted(map(repr, plan.modify + plan.insert))
        desired = SyncMeshCore(fab, name, 1).desired()
        ident = Identity(switch_mac(fab.switch(name).id))
        assert desired_updates(desired, ident, schema) == updates
        # a switch that already holds all of it but one entry gets that one entry
        assert [u.entity for u in desired_updates(desired, ident, schema, back[1:])] == \
            [updates[0].entity]

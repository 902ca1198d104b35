"""Undo of a batch too large to report update by update (batch.py's undo log).

The log keeps a table entry's prior state as engine values and builds the message only
when the batch is undone; these tests check that what it restores is exactly what was
there: action and params, metadata, meter config and counters, on a table with ternary,
range and optional fields (the general path) and an lpm table (the short path).
"""

from pathlib import Path

import grpc
import pytest
from finsy.proto import p4r

from softswitch.p4info import p4info_from_program
from softswitch.p4runtime.batch import ALWAYS_REPORTED
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program

PROG = Path(__file__).with_name("test_p4runtime_prog.p4")
A = p4r.SetForwardingPipelineConfigRequest
U = p4r.Update


@pytest.fixture
def device():
    blob = device_config_from_file(PROG)
    prog = load_program(blob)
    p4info = p4info_from_program(prog)
    d = Device(device_id=1, cpu_port=255, load_program=lambda _config: prog)
    d.set_pipeline(A.VERIFY_AND_COMMIT,
                   p4r.ForwardingPipelineConfig(p4info=p4info, p4_device_config=blob))
    d.ids = {o.preamble.name.rsplit(".", 1)[-1]: o.preamble.id
             for o in [*p4info.tables, *p4info.actions]}
    return d


def lpm(d: Device, i: int, port: int = 1, metadata: bytes = b"") -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=d.ids["ipv4_lpm"], metadata=metadata)
    e.match.add(field_id=1, lpm=p4r.FieldMatch.LPM(value=bytes([10, 1, i >> 8, i & 255]),
                                                   prefix_len=32))
    e.action.action.action_id = d.ids["set_nhop"]
    e.action.action.params.add(param_id=1, value=bytes([2, 0, 0, 0, 0, i & 255]))
    e.action.action.params.add(param_id=2, value=bytes([port]))
    return e


def acl(d: Device, i: int, action: str = "to_cpu", metadata: bytes = b"", cir: int = 0,
        packets: int | None = None) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=d.ids["acl"], priority=10 + i, metadata=metadata)
    e.match.add(field_id=1, ternary=p4r.FieldMatch.Ternary(value=bytes([10, 0, 0, i]),
                                                           mask=b"\xff\xff\xff\xff"))
    e.match.add(field_id=2, range=p4r.FieldMatch.Range(low=b"\x06", high=b"\x11"))
    e.match.add(field_id=3, optional=p4r.FieldMatch.Optional(value=bytes([i % 8 + 1])))
    e.action.action.action_id = d.ids[action]
    if cir:
        e.meter_config.CopyFrom(p4r.MeterConfig(cir=cir, cburst=cir, pir=2 * cir, pburst=2 * cir))
    if packets is not None:
        e.counter_data.packet_count = packets
        e.counter_data.byte_count = 64 * packets
    return e


def key_of(e: p4r.TableEntry) -> p4r.TableEntry:
    return p4r.TableEntry(table_id=e.table_id, match=e.match, priority=e.priority)


def state(d: Device) -> list[bytes]:
    """Every table entry with its counters, direct meter configs included."""
    query = p4r.Entity(table_entry=p4r.TableEntry(counter_data=p4r.CounterData()))
    return sorted(e.SerializeToString(deterministic=True) for e in d.read([query]))


def test_an_undone_batch_restores_every_entry_with_its_data(device):
    d = device
    setup = [U(type=U.INSERT, entity=p4r.Entity(table_entry=lpm(d, i, metadata=bytes([i]))))
             for i in range(100)]
    setup += [U(type=U.INSERT, entity=p4r.Entity(table_entry=acl(
        d, i, metadata=b"acl%d" % i, cir=100 + i, packets=i))) for i in range(60)]
    assert d.write(setup).failures == []
    before = state(d)

    batch = []
    for i in range(100):  # lpm: new params and no metadata (MODIFY), or gone (DELETE)
        e = lpm(d, i, port=9)
        kind = U.DELETE if i % 3 == 0 else U.MODIFY
        batch.append(U(type=kind, entity=p4r.Entity(table_entry=key_of(e) if kind == U.DELETE
                                                     else e)))
    for i in range(60):  # acl: another action, metadata, meter config and counters
        if i % 4 == 0:
            batch.append(U(type=U.DELETE, entity=p4r.Entity(table_entry=key_of(acl(d, i)))))
        elif i % 4 == 1:
            batch.append(U(type=U.MODIFY, entity=p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
                table_entry=key_of(acl(d, i)), data=p4r.CounterData(packet_count=999)))))
        elif i % 4 == 2:
            batch.append(U(type=U.MODIFY, entity=p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(
                table_entry=key_of(acl(d, i)), config=p4r.MeterConfig(cir=1, cburst=1, pir=1,
                                                                      pburst=1)))))
        else:
            batch.append(U(type=U.MODIFY, entity=p4r.Entity(table_entry=acl(
                d, i, action="drop", metadata=b"new", cir=7, packets=5))))
    batch += [U(type=U.INSERT, entity=p4r.Entity(table_entry=lpm(d, 100 + i))) for i in range(10)]
    batch.append(setup[5])  # already exists: the batch fails
    assert len(batch) > ALWAYS_REPORTED  # too large to report: applied all or nothing

    outcome = d.write(batch)
    assert outcome.aborted is not None and outcome.aborted.code == grpc.StatusCode.ABORTED
    assert state(d) == before

    # the same batch without the failing update applies whole: the undo was not a no-op
    assert d.write(batch[:-1]).failures == []
    after = state(d)
    assert after != before and len(after) == len(before) - 34 - 15 + 10

"""The native engine against the Python engine (the reference): the STF corpus, random
packets through the benchmark routers and sglb.p4 (leaf and spine), refusals, the cache,
and the same fuzzing under AddressSanitizer + UndefinedBehaviorSanitizer.

Every comparison is byte for byte: outputs of each packet, then every register and
counter cell and the switch's stats (native_fuzz.py).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from native_fuzz import FuzzClock, run_both

from softswitch import Exact, Lpm, Switch, compile_file, compile_source
from softswitch.engine import CompileError
from softswitch.engine.native import available
from softswitch.stf import run_file

ROOT = Path(__file__).resolve().parents[2]
STF_DIR = Path(__file__).parent / "stf"
BENCH = ROOT / "bench" / "programs"

pytestmark = pytest.mark.skipif(available() is not None, reason=f"native engine: {available()}")

# STF programs the native engine refuses at load time, and the construct its message names.
# A program that starts to run natively (or a new refusal) fails test_stf_on_both_engines.
NATIVE_REFUSES: dict[str, str] = {}  # none today: every program of the corpus runs natively


@pytest.mark.parametrize("stf", sorted(STF_DIR.glob("*.stf")), ids=lambda p: p.stem)
def test_stf_on_both_engines(stf: Path) -> None:
    """The corpus passes on the Python engine, and on the native one wherever it loads."""
    reference = run_file(str(stf.with_suffix(".p4")), str(stf), engine="python")
    assert reference.ok, reference.report
    native = run_file(str(stf.with_suffix(".p4")), str(stf), engine="native")
    if stf.stem in NATIVE_REFUSES:
        assert native.code == 2, native.report
        assert NATIVE_REFUSES[stf.stem] in native.report and "--engine python" in native.report
        assert f"{stf.stem}.p4:" in native.report  # the construct's location
    else:
        assert native.ok, native.report


def _l3(engine: str, clock: FuzzClock) -> Switch:
    sw = Switch(compile_file(str(BENCH / "l3_router.p4")), clock=clock, engine=engine)
    for i in range(40):
        sw.table_add("ipv4_lpm", [Lpm(0x0A000000 | i << 8, 24)], "set_nhop",
                     [0x020000000000 + i, 0x02AA00000000, 1 + i % 8])
    sw.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [1, 2, 9])
    sw.table_add("ipv4_lpm", [Lpm(0x0A000000 | 7 << 8 | 9, 32)], "drop", [])
    return sw


def _ecmp(engine: str, clock: FuzzClock) -> Switch:
    sw = Switch(compile_file(str(BENCH / "ecmp_router.p4")), clock=clock, engine=engine)
    for sel in range(16):
        sw.table_add("ecmp_nhop", [Exact(sel)], "set_nhop", [0x020000000000 + sel, 0x02AA00000000, 1 + sel % 8])
    for i in range(40):
        sw.table_add("ipv4_lpm", [Lpm(0x0A000000 | i << 8, 24)], "set_ecmp", [(i % 4) * 4, 4])
    return sw


DSTS = [0x0A000000 | i << 8 | 9 for i in range(48)]


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_l3_router(seed: int) -> None:
    sent, out = run_both(_l3, seed, 1500, [0, 1, 2, 511], DSTS)
    assert out > sent // 20  # the frames reach forwarding, not only the parser's errors


def test_fuzz_ecmp_router_hash_and_register() -> None:
    sent, out = run_both(_ecmp, 3, 1500, [1, 3], DSTS)
    assert out > sent // 20


def _sglb_dsts() -> list[int]:
    return [0x0A000001, 0x0A0000FE, 0x0A010005, 0x0A020007, 0x0A030001, 0x0A010101]


def _sglb_maker(role: str, **kw):
    sys.path.insert(0, str(ROOT / "tests" / "sglb"))
    import sglb_harness as h

    from sglb.codes import LbMode

    def make(engine: str, clock: FuzzClock):
        old = os.environ.get("SOFTSWITCH_ENGINE")
        os.environ["SOFTSWITCH_ENGINE"] = engine  # the harness makes its switch with the default
        try:
            program = h.softswitch_compiled()
            if role == "spine":
                node = h.configure_spine(program, clock=clock, copies=2)
            else:
                node = h.configure_leaf(program, clock=clock, mode=kw.get("mode", LbMode.SGLB),
                                        feedback=kw.get("feedback", h.NO_FEEDBACK), switch_id=0)
                node.set_profile(1, mask=0x0F, rq=(1, 0, 3, 2), w=(1, 2, 1, 1))
        finally:
            if old is None:
                del os.environ["SOFTSWITCH_ENGINE"]
            else:
                os.environ["SOFTSWITCH_ENGINE"] = old
        return node.sw

    return make


def test_fuzz_sglb_leaf_with_feedback() -> None:
    from sglb.settings import Feedback

    sent, out = run_both(_sglb_maker("leaf", feedback=Feedback(enabled=True)), 11, 2500,
                         [10, 10, 1, 2, 3, 4, 255, 77], _sglb_dsts())
    assert out > sent // 20


def test_fuzz_sglb_leaf_ecmp() -> None:
    from sglb.codes import LbMode

    sent, out = run_both(_sglb_maker("leaf", mode=LbMode.ECMP), 12, 1500,
                         [10, 1, 2, 255], _sglb_dsts())
    assert out > sent // 20


def test_fuzz_sglb_spine_multicast_notices() -> None:
    sent, out = run_both(_sglb_maker("spine"), 13, 2500, [3, 4, 5, 6, 255, 9], _sglb_dsts())
    assert out > sent // 20


# a bit<129> field: the native engine refuses it, the python engine runs it
REFUSED = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<129> wide; }
struct hs { h_t h; }
struct m { }
parser P(packet_in p, out hs h, inout m meta, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    bit<8> r; apply { random(r, 8w0, 8w5); }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_refusal_names_construct_location_and_the_python_engine() -> None:
    src = REFUSED
    prog = compile_source(src, filename="refused.p4")
    with pytest.raises(CompileError) as exc:
        Switch(prog, engine="native")
    msg = str(exc.value)
    assert "refused.p4:4:" in msg and "wider than 128 bits" in msg and "--engine python" in msg
    Switch(prog, engine="python")  # the reference runs it


def test_compiled_program_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from softswitch.engine.native import cbuild

    monkeypatch.setenv(cbuild.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(cbuild, "_loaded", {})
    prog = compile_file(str(BENCH / "l3_router.p4"))
    Switch(prog, engine="native")
    built = list(tmp_path.glob("_ssnative_*"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    monkeypatch.setattr(cbuild, "_loaded", {})
    Switch(prog, engine="native")
    assert [p.stat().st_mtime_ns for p in tmp_path.glob("_ssnative_*")] == [stamp]


def test_builds_in_threads_of_one_process_do_not_collide(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """cffi builds in the process's working directory: two at once (a pipeline and the ring
    I/O, as `softswitch run` did) once linked each other's objects and failed."""
    import threading

    from softswitch.engine.native import cbuild

    monkeypatch.setenv(cbuild.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(cbuild, "_loaded", {})
    results: dict[int, object] = {}

    def build(i: int) -> None:
        try:
            results[i] = cbuild.load(f"int answer{i}(void) {{ return {i}; }}\n",
                                     f"int answer{i}(void);", f"thread {i}").lib
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=build, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: getattr(lib, f"answer{i}")() for i, lib in results.items()} == {0: 0, 1: 1, 2: 2}


def test_switches_of_one_program_keep_separate_state() -> None:
    prog = compile_file(str(BENCH / "ecmp_router.p4"))
    a, b = (Switch(prog, engine="native") for _ in range(2))
    name = next(iter(a.registers))
    a.register_write(name, 1, 5)
    assert a.register_read(name, 1) == 5 and b.register_read(name, 1) == 0


def test_engine_is_chosen_by_argument_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = compile_file(str(BENCH / "l3_router.p4"))
    monkeypatch.setenv("SOFTSWITCH_ENGINE", "native")
    assert Switch(prog).engine == "native"
    assert Switch(prog, engine="python").engine == "python"
    monkeypatch.setenv("SOFTSWITCH_ENGINE", "nonsense")
    with pytest.raises(Exception, match="SOFTSWITCH_ENGINE"):
        Switch(prog)


def test_default_engine_is_native_else_python_with_a_notice(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Unnamed, the engine is native where a C compiler is found; a program native refuses
    runs on python with a notice naming the construct (named, it is refused); without a C
    compiler every program runs on python, said once."""
    from softswitch.engine import switch as switch_module
    from softswitch.engine.native import cbuild

    monkeypatch.setattr(switch_module, "_noticed", set())
    monkeypatch.delenv("SOFTSWITCH_ENGINE", raising=False)
    router = compile_file(str(BENCH / "l3_router.p4"))
    refused = compile_source(REFUSED, filename="refused.p4")
    assert Switch(router).engine == "native"
    with caplog.at_level("WARNING", logger="softswitch.engine"):
        sw = Switch(refused)
    assert sw.engine == "python" and sw._native is None
    assert "python engine runs this program" in caplog.text and "refused.p4:4:" in caplog.text
    monkeypatch.setenv("SOFTSWITCH_ENGINE", "native")
    with pytest.raises(CompileError, match="wider than 128 bits"):
        Switch(refused)
    monkeypatch.delenv("SOFTSWITCH_ENGINE")
    monkeypatch.setenv("CC", "no-such-c-compiler")
    cbuild.compiler_version.cache_clear()
    try:
        caplog.clear()
        with caplog.at_level("WARNING", logger="softswitch.engine"):
            engines = [Switch(router).engine for _ in range(2)]
        assert engines == ["python", "python"]
        assert caplog.text.count("no C compiler found") == 1
    finally:
        monkeypatch.undo()
        cbuild.compiler_version.cache_clear()


@pytest.mark.skipif(os.environ.get("SOFTSWITCH_NATIVE_SANITIZE") in (None, "", "0"),
                    reason="only in the sanitizer run")
def test_sanitizer_run_is_instrumented() -> None:
    """In the sanitizer run, the program loaded is the instrumented build and ASan is live."""
    sw = Switch(compile_file(str(BENCH / "l3_router.p4")), engine="native")
    so = Path(sw._native.mod.__file__)
    assert "-fsanitize" in " ".join(__import__("softswitch.engine.native.cbuild",
                                                fromlist=["x"]).SANITIZE_FLAGS)
    maps = Path("/proc/self/maps").read_text()
    assert "libasan" in maps and str(so) in maps


def _libasan() -> str | None:
    cc = shutil.which("gcc")
    if cc is None:
        return None
    out = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=False)
    path = out.stdout.strip()
    return path if path and Path(path).is_file() else None


@pytest.mark.skipif(os.environ.get("SOFTSWITCH_NATIVE_SANITIZE") not in (None, "", "0"),
                    reason="already the sanitizer run")
@pytest.mark.skipif(_libasan() is None, reason="gcc's libasan not found")
def test_fuzz_and_stf_under_address_and_undefined_behavior_sanitizers(tmp_path: Path) -> None:
    """Every other test of this file again (STF corpus, fuzzing, truncations, P4Runtime),
    the generated C built with -fsanitize=address,undefined (UB aborts:
    -fno-sanitize-recover); any report fails the run."""
    env = dict(os.environ, SOFTSWITCH_NATIVE_SANITIZE="1", LD_PRELOAD=str(_libasan()),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               SOFTSWITCH_NATIVE_CACHE=os.environ.get("SOFTSWITCH_NATIVE_CACHE", "")
               or str(Path.home() / ".cache" / "softswitch" / "native"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", "not sanitizers", "-x"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000, check=False)
    text = run.stdout + run.stderr
    assert run.returncode == 0, text[-4000:]
    assert "AddressSanitizer" not in text and "runtime error" not in text, text[-4000:]
    assert " passed" in text


@pytest.mark.parametrize("engine", ["python", "native"])
def test_p4runtime_writes_and_reads_sglb_the_same_on_both_engines(engine: str, monkeypatch) -> None:
    """The P4Runtime server drives a native switch through the same Table objects: an
    ipv4_route entry written over gRPC forwards a packet, and the port_rx counter read
    over gRPC counts it, identically on both engines."""
    from finsy.proto import p4r
    from p4rt_client import Client

    from softswitch.p4info import p4info_from_program
    from softswitch.p4runtime.device import Device
    from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
    from softswitch.p4runtime.server import P4RuntimeServer

    monkeypatch.setenv("SOFTSWITCH_ENGINE", engine)
    device_config = device_config_from_file(ROOT / "p4src" / "sglb.p4")
    p4info = p4info_from_program(load_program(device_config))
    device = Device(device_id=1, cpu_port=255)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    srv = P4RuntimeServer(device, "127.0.0.1:0").start()
    client = Client(srv.address)
    try:
        assert client.connect().arbitration.status.code == 0
        client.set_pipeline(p4info, device_config)
        assert device.pipeline.switch.engine == engine
        table = next(t for t in p4info.tables if t.preamble.alias == "ipv4_route")
        action = next(a for a in p4info.actions if a.preamble.alias == "to_host").preamble.id
        entry = p4r.Entity(table_entry=p4r.TableEntry(
            table_id=table.preamble.id,
            match=[p4r.FieldMatch(field_id=1, lpm=p4r.FieldMatch.LPM(value=b"\x0a\x00\x00\x05", prefix_len=32))],
            action=p4r.TableAction(action=p4r.Action(action_id=action, params=[
                p4r.Action.Param(param_id=1, value=b"\x00\x0a"),
                p4r.Action.Param(param_id=2, value=b"\x02\x00\x00\x00\x00\x05")]))))
        client.write(p4r.Update(type=p4r.Update.INSERT, entity=entry))
        eth = b"\x02\x00\x00\x00\x00\xf0" + b"\x02\x00\x00\x00\x01\x01" + b"\x08\x00"
        ip = bytearray([0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0]) + b"\x0a\x00\x00\x01\x0a\x00\x00\x05"
        from softswitch.engine.hashes import csum16
        ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
        device.process(10, eth + bytes(ip) + b"\x00\x35\x00\x35\x00\x08\x00\x00")
        assert [p for p, _ in sent] == [10]
        assert sent[0][1][5] == 0x05 and sent[0][1][22] == 63  # host MAC written, ttl - 1
        counter = next(c for c in p4info.counters if c.preamble.alias.endswith("port_rx")).preamble.id
        got = client.read(p4r.Entity(counter_entry=p4r.CounterEntry(
            counter_id=counter, index=p4r.Index(index=10))))
        assert got[0].counter_entry.data.packet_count == 1
    finally:
        client.close()
        srv.stop(0)


def test_multicast_groups_empty_missing_and_changed_agree() -> None:
    """An empty group sends nothing and drops nothing, a missing one drops, a changed or
    deleted one takes effect at the next packet: on both engines alike."""
    prog = compile_file(str(STF_DIR / "multicast.p4"))
    sws = [Switch(prog, engine=e) for e in ("python", "native")]
    frames = [bytes([g, 0, 0, 0, 0]) + b"\xca\xfe" for g in (1, 3, 9)]
    results = []
    for sw in sws:
        sw.mc_group_set(1, [(2, 10), (3, 10)])
        sw.mc_group_set(3, [])
        got = [sw.process_packet(0, f) for f in frames]
        sw.mc_group_set(1, [(4, 20)])
        sw.mc_group_delete(3)
        got += [sw.process_packet(0, f) for f in frames]
        results.append((got, sw.stats))
    assert results[0] == results[1]
    got, stats = results[1]
    assert [len(g) for g in got] == [2, 0, 0, 1, 0, 0] and stats["dropped"] == {0: 3}


@pytest.mark.parametrize("program", ["l3", "sglb"])
def test_every_truncation_of_a_frame_agrees(program: str) -> None:
    """Each prefix of a routed frame (0 bytes up to the whole frame; for sglb a tagged one
    from a spine port and a notice) is a parser error or a forwarded packet, never a read
    past the buffer, and both engines say the same about it."""
    from native_fuzz import ipv4, sglb_header

    rng_frames = random.Random(5)
    clock = FuzzClock()
    if program == "l3":
        make, port_list = _l3, [1]
        eth = b"\x02" * 12 + b"\x08\x00"
        frames = [eth + ipv4(rng_frames, DSTS) for _ in range(3)]
    else:
        make, port_list = _sglb_maker("leaf"), [1, 10, 255]
        eth = b"\x02" * 12 + b"\x88\xb6"
        frames = [eth + sglb_header(rng_frames) + ipv4(rng_frames, _sglb_dsts()) for _ in range(3)]
        frames.append(b"\x00\x00\x00\x00" + b"\x02" * 12 + b"\x08\x00" + ipv4(rng_frames, _sglb_dsts()))
    py, nat = make("python", clock), make("native", clock)
    for frame in frames:
        for cut in range(len(frame) + 1):
            for port in port_list:
                clock.now += 3
                assert py.process_packet(port, frame[:cut]) == nat.process_packet(port, frame[:cut]), (
                    f"{program}: port {port}, first {cut} bytes of {frame.hex()}")
    assert py.stats == nat.stats


def test_reconfigured_custom_crcs_agree() -> None:
    """crc16_custom and crc32_custom follow the switch's HashEngine.set_custom on both
    engines (reflected and unreflected parameters, set before and between packets)."""
    from softswitch.engine import hashes

    mpeg2 = hashes.CrcParams(32, 0x04C11DB7, 0xFFFFFFFF, 0, False, False)  # CRC-32/MPEG-2
    prog = compile_file(str(STF_DIR / "hash.p4"))
    frames = [bytes.fromhex(h) + b"\x99" for h in ("0A0000010050AB07", "DEADBEEF12345678", "FFFFFFFFFFFFFFFF")]
    results = []
    for engine in ("python", "native"):
        sw = Switch(prog, engine=engine)
        got = [sw.process_packet(0, f) for f in frames]
        sw.hashes.set_custom("crc16_custom", hashes.CRC_CCITT)
        got += [sw.process_packet(0, f) for f in frames]
        sw.hashes.set_custom("crc32_custom", mpeg2)
        got += [sw.process_packet(0, f) for f in frames]
        results.append(got)
    assert results[0] == results[1]
    default, ccitt, both = (results[1][i:i + 3] for i in (0, 3, 6))
    assert default != ccitt != both  # each reconfiguration changed the results
    # CRC-16/CCITT-FALSE of the 8 input bytes, then CRC-32/MPEG-2, at their offsets
    data = frames[1][:8]
    assert ccitt[1][0][1][14:16] == hashes.Crc(hashes.CRC_CCITT)(data).to_bytes(2, "big")
    assert both[1][0][1][16:20] == hashes.Crc(mpeg2)(data).to_bytes(4, "big")


# two instances of a sub-parser (a reject in it; an aliased out header, a copied inout
# scalar) and of a sub-control with its own table, action data, variable and exit, one
# instance applied twice
SUB_BLOCKS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header t_t { bit<8> x; }
struct hs { h_t h; t_t t; t_t u; }
struct m { bit<8> seen; }

parser Tail(packet_in pkt, out t_t t, inout bit<8> seen) {
    state start {
        seen = seen + 1;
        pkt.extract(t);
        transition select(t.x) { 0xEE: reject; default: accept; }
    }
}

parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    Tail() tail;
    Tail() tail2;
    state start {
        pkt.extract(h.h);
        tail.apply(pkt, h.t, meta.seen);
        transition select(h.h.b) { 1: more; default: accept; }
    }
    state more {
        tail2.apply(pkt, h.u, meta.seen);
        transition accept;
    }
}

control Stage(inout h_t h, out bit<8> got, in bit<8> k) {
    bit<8> calls = 0;
    action put(bit<8> v) { h.b = h.b + v; got = v; calls = calls + 1; }
    action stop() { got = 0xAA; exit; }
    table t { key = { k: exact; } actions = { put; stop; NoAction; } default_action = NoAction(); }
    apply {
        got = 7;
        t.apply();
        if (calls > 1) { h.a = 0xFF; }
    }
}

control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    Stage() one;
    Stage() two;
    apply {
        bit<8> r1; bit<8> r2;
        sm.egress_spec = 2;
        one.apply(h.h, r1, h.h.a);
        two.apply(h.h, r2, h.h.a + 1);
        one.apply(h.h, r1, r2);
        h.t.x = r1;
        h.u.x = r2;
        h.u.setValid();
        h.t.setValid();
    }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.h); p.emit(h.t); p.emit(h.u); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def _differential(src: str, name: str, setup, frames: list[tuple[int, bytes]]) -> list:
    """Each frame through both engines; the native results (equal to the python ones)."""
    prog = compile_source(src, filename=name)
    results = []
    for engine in ("python", "native"):
        sw = Switch(prog, engine=engine)
        setup(sw)
        results.append(([sw.process_packet(port, f) for port, f in frames], sw.stats))
    assert results[0] == results[1]
    return results[1][0]


def test_sub_controls_and_sub_parsers_agree() -> None:
    def setup(sw: Switch) -> None:
        sw.table_add("I.one.t", [Exact(1)], "I.one.put", [5])
        sw.table_add("I.one.t", [Exact(3)], "I.one.stop", [])
        sw.table_add("I.one.t", [Exact(0x10)], "I.one.put", [1])
        sw.table_add("I.two.t", [Exact(2)], "I.two.put", [0x10])
        sw.table_add("I.two.t", [Exact(7)], "I.two.stop", [])

    rng = random.Random(11)
    frames = [(0, bytes([a, b, x, y])) for a, b, x, y in
              [(1, 1, 9, 8), (1, 0, 9, 8), (3, 1, 1, 2), (6, 1, 0xEE, 1), (1, 1, 1, 0xEE), (0x0F, 0, 0, 0)]]
    frames += [(0, bytes([1, 1, 5])), (0, bytes([1, 1])), (0, b"\x01")]
    frames += [(0, bytes(rng.choice([0, 1, 2, 3, 6, 0xEE, 0x10]) for _ in range(rng.randint(0, 5))))
               for _ in range(200)]
    got = _differential(SUB_BLOCKS, "sub_blocks.p4", setup, frames)
    # one: put 5 (b 1 -> 6), two (key 2): put 0x10, one again with key r2 = 0x10: put 1;
    # `calls` starts at 0 at each apply, so h.a stays
    assert got[0] == [(2, bytes([1, 0x17, 1, 0x10]))]
    assert got[2] == [(2, bytes([3, 1, 1, 2]))]  # one.stop exits the ingress
    # the sub-parser rejected after extracting h.t (by reference: it stays), the rest is
    # payload; the ingress runs, two.stop (key 7) exits it
    assert got[3] == [(2, bytes([6, 1, 0xEE, 1]))]


# values of 65..128 bits: every operator (shifts by the width and more, by a 128-bit
# amount), signed ones, casts, slices and slice assignment, concatenation, hashing,
# 128-bit lpm / ternary keys, a 72-bit exact key and wide action data
WIDE = """
#include <core.p4>
#include <v1model.p4>
header in_t { bit<128> a; bit<128> b; bit<8> s; int<96> c; bit<72> d; }
header out_t {
    bit<128> shl; bit<128> shr; int<96> sshr; bit<128> sum; bit<128> prod; bit<128> neg;
    bit<128> inv; bit<128> quo; bit<128> rem; bit<96> cat; bit<64> sl; bit<128> ext;
    bit<128> sat; bit<128> satd; bit<8> cmp; bit<16> h; bit<72> dd; bit<128> act;
    bit<128> shbig; bit<32> shnarrow;
}
struct hs { in_t i; out_t o; }
struct m { }
parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.i); transition accept; }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    action set(bit<128> v, bit<8> port) { h.o.act = v; sm.egress_spec = (bit<9>)port; }
    action add_c(bit<96> v) { h.o.act = h.o.act + (bit<128>)v; }
    table wide { key = { h.i.a: lpm; h.i.s: exact; } actions = { set; NoAction; } default_action = set(128w0x1234, 8w3); }
    table tern { key = { h.i.b: ternary; h.i.d: exact; } actions = { add_c; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 2;
        bit<128> a = h.i.a;
        bit<128> b = h.i.b;
        h.o.setValid();
        h.o.shl = a << h.i.s;
        h.o.shr = a >> h.i.s;
        h.o.sshr = h.i.c >> h.i.s;
        h.o.sum = a + b;
        h.o.prod = a * b;
        h.o.neg = -a;
        h.o.inv = ~b;
        h.o.quo = a / b;
        h.o.rem = a % b;
        h.o.cat = h.i.s ++ h.i.d[63:0] ++ h.i.s ++ h.i.s[7:0] ++ h.i.s;
        h.o.sl = a[100:37];
        h.o.ext = (bit<128>)(int<128>)h.i.c;
        h.o.sat = a |+| b;
        h.o.satd = a |-| b;
        h.o.cmp = (bit<7>)(bit<1>)(a < b) ++ (bit<1>)(h.i.c < 96s0);
        hash(h.o.h, HashAlgorithm.crc16, 16w0, { h.i.a, h.i.d, h.i.c }, 32w65536);
        h.o.dd = h.i.d;
        h.o.dd[70:3] = h.i.a[67:0];
        h.o.shbig = b << a;
        h.o.shnarrow = (bit<32>)h.i.s >> b;
        wide.apply();
        tern.apply();
    }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.i); p.emit(h.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_values_of_65_to_128_bits_agree() -> None:
    from softswitch import Ternary

    rng = random.Random(128)
    edges = [0, 1, 2, (1 << 64) - 1, 1 << 64, (1 << 127), (1 << 128) - 1, 0x8000000000000000]

    def val(bits: int) -> int:
        return rng.choice(edges + [rng.getrandbits(bits)] * 4) & ((1 << bits) - 1)

    def setup(sw: Switch) -> None:
        rng_t = random.Random(3)
        for plen in (0, 1, 37, 64, 65, 100, 128):
            v = rng_t.getrandbits(128) & ~((1 << (128 - plen)) - 1)
            for s_ in (0, 64, 127):
                sw.table_add("I.wide", [Lpm(v, plen), Exact(s_)], "I.set", [rng_t.getrandbits(128), 1 + plen % 7])
        for i in range(6):
            mask = rng_t.choice([(1 << 128) - 1, 1 << 127, (1 << 64) - 1, rng_t.getrandbits(128)])
            sw.table_add("I.tern", [Ternary(rng_t.getrandbits(128) & mask, mask), Exact(i)],
                         "I.add_c", [rng_t.getrandbits(96)], priority=10 + i)
        sw.table_add("I.tern", [Ternary(0, 0), Exact(1 << 71)], "I.add_c", [5], priority=1)

    frames = []
    for _ in range(300):
        a, b = val(128), val(128)
        if rng.random() < 0.3:
            a = (a & ~((1 << 60) - 1))
        s_ = rng.choice([0, 1, 63, 64, 65, 95, 96, 127, 128, 129, 200, 255, rng.randrange(256)])
        c, d = val(96), rng.choice([val(72), rng.randrange(6), 1 << 71])
        raw = a.to_bytes(16, "big") + b.to_bytes(16, "big") + bytes([s_]) + c.to_bytes(12, "big") + d.to_bytes(9, "big")
        frames.append((0, raw if rng.random() > 0.05 else raw[:rng.randrange(len(raw))]))
    got = _differential(WIDE, "wide.p4", setup, frames)
    assert sum(1 for g in got if g and g[0][0] not in (2, 3)) > 10  # the lpm table hit


# a varbit at an odd bit offset: extract with a run-time length (each of BMv2's errors),
# emit, header copy, setInvalid, in a hash and a checksum
VARBIT = """
#include <core.p4>
#include <v1model.p4>
header pre_t { bit<4> n; bit<4> k; bit<8> len; }
header vb_t { bit<4> x; varbit<56> data; bit<4> y; }
header res_t { bit<16> h; bit<16> c; bit<8> err; }
struct hs { pre_t pre; vb_t v; vb_t copy; res_t res; }
struct m { }
parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.pre);
        pkt.extract(h.v, (bit<32>)h.pre.len);
        transition accept;
    }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        h.res.setValid();
        if (sm.parser_error == error.NoError) { h.res.err = 0; }
        else if (sm.parser_error == error.PacketTooShort) { h.res.err = 1; }
        else if (sm.parser_error == error.HeaderTooShort) { h.res.err = 2; }
        else if (sm.parser_error == error.ParserInvalidArgument) { h.res.err = 3; }
        else { h.res.err = 9; }
        if (h.pre.k == 1) { h.copy = h.v; }
        if (h.pre.k == 2) { h.v.setInvalid(); }
        hash(h.res.h, HashAlgorithm.crc16, 16w0, { h.pre.n, h.v.data, h.v.y }, 32w65536);
    }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) {
    apply { update_checksum(true, { h.v.x, h.v.data, h.pre.len }, h.res.c, HashAlgorithm.csum16); }
}
control D(packet_out p, in hs h) { apply { p.emit(h.pre); p.emit(h.v); p.emit(h.copy); p.emit(h.res); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_varbit_fields_agree() -> None:
    rng = random.Random(7)
    frames = []
    for _ in range(300):
        n_k = rng.randrange(16) << 4 | rng.choice([0, 1, 2, 3])
        length = rng.choice([0, 8, 16, 24, 56, 64, 4, 9, 255, rng.randrange(64)])
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(10)))
        frames.append((0, bytes([n_k, length]) + body))
    frames += [(0, b""), (0, b"\x01"), (0, bytes([0x11, 16, 0xAB, 0xCD, 0xEF]))]
    got = _differential(VARBIT, "varbit.p4", lambda sw: None, frames)
    # x = 0xA, data = BC DE (16 bits), y = 0xF; the copy follows, then crc16, csum16, no error
    assert got[-1][0][1][:8] == bytes([0x11, 16, 0xAB, 0xCD, 0xEF, 0xAB, 0xCD, 0xEF])
    errors = {g[0][1][-1] for g in got if g}
    assert errors >= {0, 1, 2, 3}  # each parser error was met


# parser value sets: one key (plain and masked members), three keys (tuple members)
VALUE_SETS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> path; }
struct hs { h_t h; }
struct keys_t { bit<8> a; bit<8> b; bit<8> c; }
struct m { }
parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) one;
    value_set<keys_t>(4) three;
    state start {
        pkt.extract(h.h);
        transition select(h.h.a) { one: first; default: next; }
    }
    state first { h.h.path = 1; transition accept; }
    state next {
        transition select(h.h.a, h.h.b, h.h.path) { three: second; (_, 0xFF, _): reject; default: accept; }
    }
    state second { h.h.path = 2; transition accept; }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { sm.egress_spec = 2; } }
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_parser_value_sets_agree() -> None:
    prog = compile_source(VALUE_SETS, filename="value_sets.p4")
    frames = [bytes([a, b, 0]) for a in (0, 1, 5, 0x15, 0x25, 0xF5, 7) for b in (0, 3, 0xFF)]
    results = []
    for engine in ("python", "native"):
        sw = Switch(prog, engine=engine)
        got = [sw.process_packet(0, f) for f in frames]
        sw.value_set_set("P.one", [5, (0x05, 0x0F), 1 << 70, (7, 1 << 80 | 0xFF)])
        sw.value_set_set("P.three", [(0x25, 3, 0), (0, 0xFF, 0), (1, 2)])
        got += [sw.process_packet(0, f) for f in frames]
        sw.value_set_remove("P.one", 0x05, 0x0F)
        sw.value_set_add("P.three", (0x15, 0, 0))
        got += [sw.process_packet(0, f) for f in frames]
        results.append((got, sw.stats))
    assert results[0] == results[1]
    paths = [g[0][1][2] for g in results[1][0]]
    assert paths.count(1) > 6 and paths.count(2) > 2  # members matched (plain, masked, tuples)


# header unions: extract into a member (twice: the second invalidates the first),
# setValid / setInvalid of members, isValid of the union, copies, emit, a hash over them
UNIONS = """
#include <core.p4>
#include <v1model.p4>
header sel_t { bit<8> kind; bit<8> ops; bit<8> result; bit<16> h; }
header a_t { bit<8> tag; bit<16> x; }
header b_t { bit<32> y; }
header_union u_t { a_t a; b_t b; }
struct hs { sel_t sel; u_t u; u_t w; }
struct m { }
parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.sel);
        transition select(h.sel.kind) { 1: pa; 2: pb; 3: both; default: accept; }
    }
    state pa { pkt.extract(h.u.a); transition accept; }
    state pb { pkt.extract(h.u.b); transition accept; }
    state both { pkt.extract(h.u.a); pkt.extract(h.u.b); transition accept; }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (h.sel.ops & 1 == 1) { h.u.b.setValid(); h.u.b.y = 0xB0B0B0B0; }
        if (h.sel.ops & 2 == 2) { h.u.a.setInvalid(); }
        if (h.sel.ops & 4 == 4) { h.w = h.u; }
        if (h.sel.ops & 8 == 8) { h.w.a = h.u.a; }
        if (h.sel.ops & 16 == 16) { h.u.a.setValid(); h.u.a.tag = 0xAA; }
        bit<8> r = 0;
        if (h.u.a.isValid()) { r = r | 1; }
        if (h.u.b.isValid()) { r = r | 2; }
        if (h.u.isValid()) { r = r | 4; }
        if (h.w.isValid()) { r = r | 8; }
        h.sel.result = r;
        hash(h.sel.h, HashAlgorithm.crc16, 16w0, { h.u, h.w }, 32w65536);
    }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.sel); p.emit(h.u); p.emit(h.w); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_header_unions_agree() -> None:
    rng = random.Random(19)
    frames = [(0, bytes([kind, ops, 0, 0, 0]) + bytes(rng.randrange(256) for _ in range(rng.randrange(8))))
              for kind in (0, 1, 2, 3) for ops in range(32)]
    frames.append((0, bytes([3, 0, 0, 0, 0, 0xA1, 0xA2, 0xA3, 0xB1, 0xB2, 0xB3, 0xB4])))
    got = _differential(UNIONS, "unions.p4", lambda sw: None, frames)
    results = {g[0][1][2] for g in got if g}
    assert {0, 1 | 4, 2 | 4, 1 | 4 | 8, 2 | 4 | 8} <= results
    # a then b extracted: a invalid, b emitted alone after sel
    assert got[-1][0][1][2] == 2 | 4 and got[-1][0][1][5:] == bytes([0xB1, 0xB2, 0xB3, 0xB4])


# loops: continue (the updates run), break inside a switch, signed and full-range ranges,
# a stack copied before the loop, a list, a loop in an action
LOOPS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> n; bit<8> k; int<8> lo; int<8> hi; bit<8> r0; bit<8> r1; bit<8> r2; bit<8> r3; }
header e_t { bit<8> v; }
struct hs { h_t h; e_t[3] st; }
struct m { }
parser P(packet_in pkt, out hs h, inout m meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); pkt.extract(h.st.next); pkt.extract(h.st.next); transition accept; }
}
control V(inout hs h, inout m meta) { apply { } }
control I(inout hs h, inout m meta, inout standard_metadata_t sm) {
    action count_up(inout bit<8> x) { for (bit<8> j in 1 .. 3) { x = x + j; } }
    apply {
        sm.egress_spec = 2;
        for (bit<8> i = 0; i < h.h.n; i = i + 1) {
            if (i == 2) { continue; }
            switch (i) {
                5: { break; }
                default: { h.h.r0 = h.h.r0 + 1; }
            }
            if (i == h.h.k) { break; }
        }
        for (int<8> s in h.h.lo .. h.h.hi) { h.h.r1 = h.h.r1 + 1; h.h.r2 = h.h.r2 ^ (bit<8>)s; }
        for (e_t e in h.st) { if (e.isValid()) { h.h.r3 = h.h.r3 + e.v; h.st[0].v = 0; } }
        for (bit<8> x in { h.h.n, h.h.k, 8w255 }) { if (x == 255) { break; } h.h.r3 = h.h.r3 + x; }
        for (bit<8> b in 250 .. 255) { h.h.r2 = h.h.r2 + 1; }
        count_up(h.h.r0);
    }
}
control E(inout hs h, inout m meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs h, inout m meta) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.h); p.emit(h.st); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_loops_agree() -> None:
    rng = random.Random(23)
    frames = [(0, bytes([rng.randrange(12), rng.randrange(12), rng.randrange(256), rng.randrange(256)])
               + bytes(4) + bytes(rng.randrange(256) for _ in range(2))) for _ in range(150)]
    frames.append((0, bytes([9, 3, 0xFE, 0x01, 0, 0, 0, 0, 5, 6])))
    got = _differential(LOOPS, "loops.p4", lambda sw: None, frames)
    # i = 0, 1, 3 counted then break at k = 3; +1+2+3 in the action; -2..1: 4 rounds, xor 2;
    # 250..255: 6 more; stack 5 + 6, list 9 + 3
    assert got[-1][0][1][:8] == bytes([9, 3, 0xFE, 0x01, 3 + 6, 4, (0xFE ^ 0xFF ^ 0 ^ 1) + 6, 11 + 12])

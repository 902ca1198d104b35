"""P4Info generated from programs: IDs as published by p4c, aliases, annotations, text output."""

import subprocess
import sys
from pathlib import Path

import pytest
from finsy.proto import p4i
from google.protobuf import text_format

from softswitch.frontend import compile_source
from softswitch.p4info import p4info_from_program_info, p4info_text

# The P4 tutorials' basic router (exercises/basic): same control-plane names, written here.
BASIC = r"""
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct metadata { }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}
control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(65536, CounterType.packets_and_bytes) ingressTunnelCounter;
    action drop() { mark_to_drop(standard_metadata); }
    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            ingressTunnelCounter.count((bit<32>)standard_metadata.ingress_port);
            ipv4_lpm.apply();
        }
    }
}
control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); }
}
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
"""


def p4info_of(source: str) -> p4i.P4Info:
    return p4info_from_program_info(compile_source(source, filename="t.p4").info)


def test_basic_router_ids_match_the_published_p4info():
    info = p4info_of(BASIC)
    [table] = info.tables
    assert (table.preamble.id, table.preamble.name, table.preamble.alias) == (
        37375156, "MyIngress.ipv4_lpm", "ipv4_lpm")
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in table.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, p4i.MatchField.LPM)]
    assert [r.id for r in table.action_refs] == [28792405, 25652968, 21257015]
    assert table.size == 1024
    actions = {a.preamble.name: a for a in info.actions}
    assert {n: a.preamble.id for n, a in actions.items()} == {
        "NoAction": 21257015, "MyIngress.drop": 25652968, "MyIngress.ipv4_forward": 28792405}
    assert list(actions["NoAction"].preamble.annotations) == ['@noWarn("unused")']
    assert [(p.id, p.name, p.bitwidth) for p in actions["MyIngress.ipv4_forward"].params] == [
        (1, "dstAddr", 48), (2, "port", 9)]
    [c] = info.counters
    assert (c.preamble.id, c.spec.unit, c.size) == (315557958, p4i.CounterSpec.BOTH, 65536)


def test_controller_headers_digests_annotations_and_explicit_ids():
    source = BASIC.replace(
        "struct metadata { }",
        """struct metadata { }
        @controller_header("packet_in") header packet_in_header_t { bit<9> ingress_port; bit<7> _pad; }
        struct learn_t { bit<48> mac; bit<9> port; }""",
    ).replace(
        "action drop() {", '@id(0x1000001) @brief("drop it") @my_note("x") action drop() {'
    ).replace(
        "ipv4_lpm.apply();", "ipv4_lpm.apply(); digest<learn_t>(1, {hdr.ethernet.srcAddr, standard_metadata.ingress_port});"
    ).replace(
        "struct headers { ethernet_t ethernet;", "struct headers { packet_in_header_t packet_in; ethernet_t ethernet;"
    )
    info = p4info_of(source)
    [cpm] = info.controller_packet_metadata
    # p4c hashes the header type's name; the P4Info name is the annotation's argument
    assert (cpm.preamble.id, cpm.preamble.name, cpm.preamble.alias) == (81826293, "packet_in", "packet_in")
    assert list(cpm.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]
    [d] = info.digests
    assert (d.preamble.name, d.preamble.id >> 24, d.type_spec.struct.name) == ("learn_t", 0x17, "learn_t")
    assert [m.name for m in info.type_info.structs["learn_t"].members] == ["mac", "port"]
    drop = next(a for a in info.actions if a.preamble.name == "MyIngress.drop")
    assert drop.preamble.id == 0x01000001
    assert drop.preamble.doc.brief == "drop it"
    assert list(drop.preamble.annotations) == ['@my_note("x")']
    assert 0x01000001 in [r.id for r in info.tables[0].action_refs]


def test_text_format_round_trips():
    info = p4info_of(BASIC)
    assert text_format.Parse(p4info_text(info), p4i.P4Info()) == info


def test_compile_command_writes_p4info_and_device_config(tmp_path):
    prog = tmp_path / "basic.p4"
    prog.write_text(BASIC)
    out, cfg = tmp_path / "basic.p4info.txtpb", tmp_path / "basic.p4cfg"
    r = subprocess.run([sys.executable, "-m", "softswitch.cli", "compile", str(prog), "--p4info", str(out),
                        "--device-config", str(cfg)], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr
    info = text_format.Parse(out.read_text(), p4i.P4Info())
    assert info.tables[0].preamble.id == 37375156
    # the device config is self-contained: it compiles without any include path
    assert p4info_from_program_info(compile_source(cfg.read_text(), filename="cfg").info) == info


@pytest.mark.parametrize(
    ("text", "message"),
    [("control x {", "t.p4:1:"), ("#include <nosuch.p4>\n", "nosuch.p4")],
)
def test_compile_command_reports_errors_with_location(tmp_path, text, message):
    prog = tmp_path / "t.p4"
    prog.write_text(text)
    r = subprocess.run([sys.executable, "-m", "softswitch.cli", "compile", str(prog), "--p4info",
                        str(tmp_path / "o")], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()

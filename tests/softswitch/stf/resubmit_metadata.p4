// standard_metadata seen by resubmitted and recirculated packets.  simple_switch
// gives them fresh metadata (reset_metadata) plus the preserved field list,
// instance_type and packet_length; standard_metadata.ingress_port is only set
// for packets that arrive from a port, so it reads 0 here.  Egress sees
// instance_type NORMAL for them: simple_switch sets it before enqueueing any
// unicast packet.
// h.op: 1 resubmit, 2 recirculate.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> iport;
    bit<8> plen;
    bit<8> inst;
    bit<8> eg_inst;
}

struct headers_t { h_t h; }

struct meta_t {
    @field_list(1)
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.iport = (bit<8>)sm.ingress_port;
        hdr.h.plen = (bit<8>)sm.packet_length;
        hdr.h.inst = (bit<8>)sm.instance_type;
        if (hdr.h.op == 1 && sm.instance_type == 0) {
            resubmit_preserving_field_list(1);
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.eg_inst = (bit<8>)sm.instance_type;
        // inst is what ingress saw: 0 only on the first pass
        if (hdr.h.op == 2 && hdr.h.inst == 0) {
            recirculate_preserving_field_list(1);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;

// Table features driven by test_packets_tables.py through the Switch API:
// range and optional keys with priorities, ternary priorities, an action
// profile, an action selector, a direct counter, a direct meter and a parser
// value set, @tableonly / @defaultonly action scopes, and a ternary table
// with an lpm field (priority, not prefix length, decides).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  kind;
    bit<8>  k_range;
    bit<8>  k_opt;
    bit<8>  k_tern;
    bit<8>  sel;
    bit<32> flow;
    bit<8>  r_range;
    bit<8>  r_tern;
    bit<8>  r_prof;
    bit<8>  color;
    bit<8>  vs_hit;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> vs; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) kinds;

    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            kinds: in_set;
            default: accept;
        }
    }
    state in_set {
        m.vs = 1;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) { apply { } }

control Ing(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action_profile(32w16) prof;
    action_selector(HashAlgorithm.identity, 32w16, 32w16) ecmp_sel;

    action set_range(bit<8> v) { hdr.h.r_range = v; }
    action set_tern(bit<8> v) { hdr.h.r_tern = v; }
    action set_prof(bit<8> v, bit<9> port) {
        hdr.h.r_prof = v;
        sm.egress_spec = port;
    }
    action counted() { dc.count(); }
    action metered() { dm.read(hdr.h.color); }

    table t_range {
        key = {
            hdr.h.k_range : range;
            hdr.h.k_opt   : optional;
        }
        actions = { set_range; NoAction; }
        default_action = NoAction();
    }
    table t_tern {
        key = { hdr.h.k_tern : ternary; }
        actions = { set_tern; NoAction; }
        default_action = NoAction();
    }
    table t_prof {
        key = { hdr.h.sel : exact; }
        actions = { set_prof; }
        implementation = prof;
    }
    table t_selector {
        key = {
            hdr.h.sel  : exact;
            hdr.h.flow : selector;
        }
        actions = { set_prof; }
        implementation = ecmp_sel;
    }
    table t_scoped {
        key = { hdr.h.kind : exact; }
        actions = {
            @tableonly set_tern;
            @defaultonly NoAction;
        }
        default_action = NoAction();
    }
    action set_vs(bit<8> v) { hdr.h.vs_hit = v; }
    table t_mixed {
        key = {
            hdr.h.kind : ternary;
            hdr.h.flow : lpm;
        }
        actions = { set_vs; NoAction; }
        default_action = NoAction();
    }
    table t_counted {
        key = { hdr.h.k_tern : exact; }
        actions = { counted; NoAction; }
        counters = dc;
        default_action = NoAction();
    }
    table t_metered {
        key = { hdr.h.k_opt : exact; }
        actions = { metered; NoAction; }
        meters = dm;
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        hdr.h.vs_hit = m.vs;
        t_range.apply();
        t_tern.apply();
        if (hdr.h.sel < 0x80) {
            t_prof.apply();
        } else {
            t_selector.apply();
        }
        t_counted.apply();
        t_metered.apply();
        t_scoped.apply();
        t_mixed.apply();
    }
}

control Eg(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;

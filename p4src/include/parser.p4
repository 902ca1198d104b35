/* parser.p4: parser, deparser and IPv4 checksum blocks of the SGLB program.
 * The parser never rejects: malformed packets reach ingress with
 * standard_metadata.parser_error set (BMv2 behaviour) and are counted there. */

#ifndef SGLB_PARSER_P4
#define SGLB_PARSER_P4

#include "headers.p4"
#include "metadata.p4"

parser SglbParser(packet_in packet,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_PORT_STATUS: parse_port_status;
            ETHERTYPE_SGLB: parse_sglb;
            default: accept;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4w5, IPPROTO_TCP): parse_l4;
            (4w5, IPPROTO_UDP): parse_l4;
            default: accept;
        }
    }

    state parse_l4 {
        packet.extract(hdr.l4);
        transition accept;
    }

    state parse_port_status {
        packet.extract(hdr.port_status);
        transition accept;
    }

    /* Notice, probe, probe reply and tag share the EtherType and start with
     * version, kind. An unknown kind is parsed as a notice, which ingress
     * then rejects. */
    state parse_sglb {
        transition select(packet.lookahead<bit<16>>()) {
            16w0x0003 &&& 16w0x00FF: parse_probe;
            16w0x0004 &&& 16w0x00FF: parse_probe;
            16w0x0005 &&& 16w0x00FF: parse_tag;
            default: parse_notice;
        }
    }

    state parse_tag {
        packet.extract(hdr.tag);
        transition select(hdr.tag.next_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_notice {
        packet.extract(hdr.notice);
        transition accept;
    }

    state parse_probe {
        packet.extract(hdr.probe);
        transition accept;
    }
}

control SglbVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control SglbComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control SglbDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tag);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.l4);
        packet.emit(hdr.port_status);
        packet.emit(hdr.notice);
        packet.emit(hdr.probe);
    }
}

#endif

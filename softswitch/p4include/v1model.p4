/* v1model.p4 for the softswitch target: the v1model architecture
 * (BMv2 simple_switch) declarations. Written for this project; names and
 * signatures are those of the v1model architecture so that a program compiles
 * unchanged with p4c --arch v1model. */

#ifndef SOFTSWITCH_V1MODEL_P4
#define SOFTSWITCH_V1MODEL_P4

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20200408
#endif
#ifndef __V1MODEL_VERSION
#define __V1MODEL_VERSION V1MODEL_VERSION
#endif

/* Extra match kinds of v1model. */
match_kind {
    range,     /* lo <= key <= hi */
    optional,  /* exact or wildcard */
    selector   /* fields hashed by an action selector */
}

/* Intrinsic metadata of a packet (see the simple_switch documentation). */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>  ingress_port;
    bit<9>  egress_spec;                    /* set by ingress: output port */
    bit<9>  egress_port;                    /* read in egress: actual port */
    bit<32> instance_type;                  /* normal, clone, resubmit, ... */
    bit<32> packet_length;                  /* bytes */
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;       /* microseconds */
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;        /* microseconds */
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;                      /* multicast group, 0 = none */
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;                     /* replication id in egress */
    bit<1>  checksum_error;                 /* set by verify_checksum */
    error   parser_error;                   /* error of the parser, NoError if none */
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* Array of counters indexed from the data plane. */
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}

/* One counter per entry of the table it is attached to. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Array of two-rate three-colour meters (RFC 2698). */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}

/* One meter per entry of the table it is attached to. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Array of `size` values of type T, readable and writable by the data plane. */
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}

/* A pool of action invocations shared by the entries of a table. */
extern action_profile {
    action_profile(bit<32> size);
}

/* Write a random value in [lo, hi] to `result`. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send `data` to the control plane as a digest of the given receiver. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* Drop the packet at the end of the current pipeline (egress_spec = 511). */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash of data) mod max; when max == 0, result = base. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* A group of action profile members, one picked by a hash of the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

/* Set standard_metadata.checksum_error when the checksum of `data` is not `checksum`. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* Write the checksum of `data` into `checksum` when `condition` holds. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the packet payload appended to `data`. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the packet payload appended to `data`. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Re-run ingress on the original packet, keeping the user metadata fields
 * annotated @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

/* Send the deparsed packet back to the parser after egress, keeping the
 * user metadata fields annotated @field_list(index). */
extern void recirculate_preserving_field_list(bit<8> index);

/* Clone the packet to the given clone session. */
extern void clone(in CloneType type, in bit<32> session);

/* Clone, keeping the user metadata fields annotated @field_list(index). */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Truncate the outgoing packet to `length` bytes. */
extern void truncate(in bit<32> length);

/* Stop the switch with an error when `check` is false. */
extern void assert(in bool check);

/* Tell formal tools to assume `check`; stops the switch when false. */
extern void assume(in bool check);

/* Print a message (with `{}` replaced by the fields of `data`) to the log. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the v1model pipeline. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif

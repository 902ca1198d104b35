/* v1model.p4 for the softswitch target: the v1model architecture
 * (BMv2 simple_switch) declarations. Written for this project; the names,
 * signatures, annotations, include guard and version logic are those of
 * p4c's v1model.p4, so that a program compiles the same way with either.
 *
 * Versions: a program may `#define V1MODEL_VERSION N` before including this
 * file; without it the version is 20180101, the first one, as with p4c.
 * From 20200408 on, counter, meter and register take their index type as a
 * type parameter (`register<T, I>`); before, indexes are bit<32>. The
 * compiler checks __v1model_version: 20180101 <= N <= 20200408. */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Extra match kinds of v1model. */
match_kind {
    range,     /* lo <= key <= hi */
    optional,  /* exact or wildcard */
    selector   /* fields hashed by an action selector */
}

/* The version the program was compiled for, checked by the compiler. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9>  PortId_t;
#endif

/* Intrinsic metadata of a packet (see the simple_switch documentation). */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;                   /* set by ingress: output port */
    PortId_t egress_port;                   /* read in egress: actual port */
#else
    bit<9>  ingress_port;
    bit<9>  egress_spec;
    bit<9>  egress_port;
#endif
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

/* Array of counters indexed from the data plane; an index >= size counts nothing. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
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

extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
    /* result: 0 green, 1 yellow, 2 red */
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table it is attached to. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Array of `size` values of type T, readable and writable by the data plane. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
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

/* Old form of mark_to_drop, on the standard metadata of the running block. */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

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

/* The checksum extern of early P4_16 programs: the 16-bit one's complement
 * checksum of `data`. */
@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
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

/* Clone the packet to the given clone session. */
extern void clone(in CloneType type, in bit<32> session);

/* Old form of resubmit: `data` names the metadata fields to keep. */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/* Re-run ingress on the original packet, keeping the user metadata fields
 * annotated @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

/* Old form of recirculate: `data` names the metadata fields to keep. */
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/* Send the deparsed packet back to the parser after egress, keeping the
 * user metadata fields annotated @field_list(index). */
extern void recirculate_preserving_field_list(bit<8> index);

/* Old form of clone with metadata: `data` names the fields to keep. */
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

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

#endif  /* _V1_MODEL_P4_ */

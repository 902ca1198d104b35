/* core.p4 for the softswitch target: the P4_16 core library (P4_16
 * specification, appendix "P4 core library"). Written for this project; the
 * declarations, their order and the include guard are those of p4c's core.p4,
 * so that a program compiles the same way with either. */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors every target knows about (spec 7.1.2). */
error {
    NoError,               /* nothing went wrong */
    PacketTooShort,        /* extract ran past the end of the packet */
    NoMatch,               /* select had no matching case */
    StackOutOfBounds,      /* header stack index out of range */
    HeaderTooShort,        /* varbit extract larger than the field */
    ParserTimeout,         /* parser ran for too long */
    ParserInvalidArgument  /* parser operation got a bad argument */
}

/* The incoming packet, read by a parser (spec 12.8). */
extern packet_in {
    /* Read a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Read a header with one varbit field of `variableFieldSizeInBits` bits. */
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /* Read bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes (not available on every target). */
    bit<32> length();
}

/* The outgoing packet, written by a deparser (spec 15). */
extern packet_out {
    /* Append a header (if valid), or every valid header of a struct/stack/union. */
    void emit<T>(in T hdr);
}

/* Reject the packet with error `toSignal` unless `check` holds (spec 12.7). */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target supports (spec 14.2.1.1). */
match_kind {
    exact,    /* equality */
    ternary,  /* value and mask */
    lpm       /* longest prefix */
}

/* Evaluated by the compiler: stops compilation with `message` when `check`
 * is false, else returns true, so it can initialise a constant:
 *   const bool ok = static_assert(V1MODEL_VERSION >= 20200408, "too old"); */
extern bool static_assert(bool check, string message);
/* The same with a message of the compiler's choosing. */
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */

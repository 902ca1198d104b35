/* core.p4 for the softswitch target: the P4_16 core library declarations
 * (P4_16 specification, appendix "core library"). Written for this project;
 * names and signatures follow the specification so programs stay portable. */

#ifndef SOFTSWITCH_CORE_P4
#define SOFTSWITCH_CORE_P4

/* Errors every target knows about. */
error {
    NoError,               /* nothing went wrong */
    PacketTooShort,        /* extract ran past the end of the packet */
    NoMatch,               /* select had no matching case */
    StackOutOfBounds,      /* header stack index out of range */
    HeaderTooShort,        /* varbit extract larger than the field */
    ParserTimeout,         /* parser ran for too long */
    ParserInvalidArgument  /* parser operation got a bad argument */
}

/* The incoming packet, read by a parser. */
extern packet_in {
    /* Read a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Read a header with one varbit field of `variableFieldSizeInBits` bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes (not available on every target). */
    bit<32> length();
}

/* The outgoing packet, written by a deparser. */
extern packet_out {
    /* Append a header (if valid), or every valid header of a struct/stack/union. */
    void emit<T>(in T hdr);
}

/* Reject the packet with error `toSignal` unless `check` holds. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target supports. */
match_kind {
    exact,    /* equality */
    ternary,  /* value and mask */
    lpm       /* longest prefix */
}

#endif

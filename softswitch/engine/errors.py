"""Errors of the execution engine, with gRPC status names so the P4Runtime server maps them."""

from __future__ import annotations

GRPC_CODES = frozenset(
    {
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "INVALID_ARGUMENT",
        "OUT_OF_RANGE",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "PERMISSION_DENIED",
        "UNIMPLEMENTED",
        "INTERNAL",
    }
)


class SwitchError(Exception):
    """A control-plane request the switch refused; `code` is a gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in GRPC_CODES:
            raise ValueError(f"unknown status code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def is_not_found(self) -> bool:
        """True when the named object or entry does not exist."""
        return self.code == "NOT_FOUND"

    def is_already_exists(self) -> bool:
        """True when an identical entry or object exists already."""
        return self.code == "ALREADY_EXISTS"

    def is_invalid_argument(self) -> bool:
        """True when the request itself was malformed."""
        return self.code == "INVALID_ARGUMENT"


class PacketTooShort(Exception):
    """The parser read past the end of the packet (error.PacketTooShort)."""


class ParserReject(Exception):
    """The parser transitioned to reject or hit a select without a match."""

    def __init__(self, error_name: str) -> None:
        super().__init__(error_name)
        self.error_name = error_name


class PacketDropped(Exception):
    """An assert/assume failed or a loop bound was exceeded: the packet is dropped."""


class InternalError(RuntimeError):
    """An unexpected exception while a packet was processed: a bug in the engine or in the
    code it generated, never a property of the packet or the program. In strict mode the
    switch raises it (chained to the original exception); otherwise it counts a drop."""


class CompileError(Exception):
    """A construct the engine cannot execute; names it and its source location."""

    def __init__(self, loc: object, message: str) -> None:
        super().__init__(f"{loc}: error: {message}")
        self.loc = loc
        self.message = message

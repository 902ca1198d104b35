"""Status codes and bytestring rules of the P4Runtime server.

Bytestrings (P4Runtime spec 8.3): values are unsigned big-endian. The server accepts the
canonical (shortest) form and the form padded with leading zero bytes up to the
field's byte width, as BMv2 does; it refuses empty strings, strings longer than the byte
width and values that do not fit the bitwidth (INVALID_ARGUMENT), and always answers
with the canonical form.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc


class P4RuntimeError(Exception):
    """A request the server refuses, with the gRPC status code the spec prescribes."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RuntimeError:
    """Shorthand for INVALID_ARGUMENT."""
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    """Shorthand for NOT_FOUND."""
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def status_code(name: str) -> grpc.StatusCode:
    """The grpc.StatusCode called `name` (a SwitchError.code); UNKNOWN when unknown."""
    return getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)


def from_switch_error(exc: Exception) -> P4RuntimeError:
    """Wrap a softswitch SwitchError (its .code is a gRPC status name) once, here."""
    code = status_code(str(getattr(exc, "code", "UNKNOWN")))
    return P4RuntimeError(code, str(exc))


def decode_uint(data: bytes, bitwidth: int, what: str | Callable[[], str]) -> int:
    """Decode a P4Runtime bytestring for a `bitwidth`-bit field (spec 8.3).

    `what` names the field in error messages; it may be a callable, evaluated only then.
    """
    width_bytes = (bitwidth + 7) // 8
    value = int.from_bytes(data, "big")
    if data and len(data) <= width_bytes and not value >> bitwidth:
        return value
    name = what() if callable(what) else what
    if not data:
        raise invalid(f"{name}: empty bytestring")
    if len(data) > width_bytes:
        raise invalid(
            f"{name}: bytestring of {len(data)} bytes is too long for {bitwidth} bits "
            f"(at most {width_bytes})"
        )
    raise invalid(f"{name}: value {value:#x} does not fit in {bitwidth} bits")


def encode_uint(value: int) -> bytes:
    """Canonical (shortest, at least one byte) bytestring of a non-negative integer."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def code_number(code: grpc.StatusCode) -> int:
    """The google.rpc.Code number of a grpc.StatusCode."""
    return code.value[0]

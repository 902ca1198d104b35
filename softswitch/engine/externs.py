"""Stateful v1model externs: counters, registers, meters, and the packet replication engine."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SwitchError

GREEN, YELLOW, RED = 0, 1, 2  # v1model / BMv2 meter colours


class CounterArray:
    """An indexed `counter` (or the per-entry cells of a `direct_counter`)."""

    def __init__(self, name: str, size: int, unit: str) -> None:
        self.name = name
        self.size = size
        self.unit = unit  # "packets", "bytes" or "packets_and_bytes"
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        """counter.count(index): out-of-range indexes are ignored, as BMv2 logs and skips."""
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def check_index(self, index: int) -> None:
        """OUT_OF_RANGE unless 0 <= index < size."""
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")

    def read(self, index: int) -> tuple[int, int]:
        """(packets, bytes) of one cell."""
        self.check_index(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        """Set one cell."""
        self.check_index(index)
        if packets < 0 or nbytes < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: negative counter value")
        self.packets[index] = packets
        self.bytes[index] = nbytes


class RegisterArray:
    """A `register<T>(size)`: values wrapped to T's width (two's complement for int<W>)."""

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        self.name = name
        self.size = size
        self.width = width
        self.signed = signed
        self.values = [0] * size

    def read(self, index: int) -> int:
        """register.read: out-of-range reads give 0 (BMv2 leaves the result unspecified)."""
        if 0 <= index < self.size:
            return self.values[index]
        return 0

    def write(self, index: int, value: int) -> None:
        """register.write: out-of-range writes are ignored."""
        if 0 <= index < self.size:
            self.values[index] = value

    def cp_read(self, index: int) -> int:
        """Control-plane read with a range check."""
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")
        return self.values[index]

    def cp_write(self, index: int, value: int) -> None:
        """Control-plane write with range checks on index and value."""
        self.cp_read(index)
        lo, hi = (-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1) if self.signed else (0, (1 << self.width) - 1)
        if not isinstance(value, int) or not lo <= value <= hi:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: value {value} does not fit in {self.width} bits")
        self.values[index] = value


class MeterCell:
    """A two-rate three-colour marker (RFC 2698, colour-blind) as BMv2 runs it."""

    __slots__ = ("cir", "cburst", "pir", "pburst", "tc", "tp", "last_us", "configured")

    def __init__(self) -> None:
        self.configured = False
        self.cir = self.cburst = self.pir = self.pburst = 0
        self.tc = self.tp = 0.0
        self.last_us = None

    def configure(self, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Set rates (units per second) and bursts; both buckets start full."""
        self.cir, self.cburst, self.pir, self.pburst = cir, cburst, pir, pburst
        self.tc, self.tp = float(cburst), float(pburst)
        self.last_us = None
        self.configured = True

    def execute(self, amount: int, now_us: int) -> int:
        """Colour one packet of `amount` units (1 for packet meters, bytes otherwise), RFC 2698 3.2."""
        if not self.configured:
            return GREEN
        if self.last_us is not None and now_us > self.last_us:
            dt = (now_us - self.last_us) / 1e6
            self.tc = min(float(self.cburst), self.tc + self.cir * dt)
            self.tp = min(float(self.pburst), self.tp + self.pir * dt)
        self.last_us = now_us
        if self.tp < amount:
            return RED
        if self.tc < amount:
            self.tp -= amount
            return YELLOW
        self.tp -= amount
        self.tc -= amount
        return GREEN


def check_meter_config(name: str, cir: int, cburst: int, pir: int, pburst: int) -> None:
    """INVALID_ARGUMENT unless rates and bursts are non-negative and cir <= pir (RFC 2698 2)."""
    for what, v in (("cir", cir), ("cburst", cburst), ("pir", pir), ("pburst", pburst)):
        if not isinstance(v, int) or v < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{name}: {what} must be a non-negative integer")
    if cir > pir:
        raise SwitchError("INVALID_ARGUMENT", f"{name}: cir {cir} exceeds pir {pir}")


class MeterArray:
    """An indexed `meter(size, type)`."""

    def __init__(self, name: str, size: int, unit: str) -> None:
        self.name = name
        self.size = size
        self.unit = unit  # "packets" or "bytes"
        self.cells = [MeterCell() for _ in range(size)]

    def execute(self, index: int, nbytes: int, now_us: int) -> int:
        """meter.execute_meter: colour for cell `index` (GREEN when out of range)."""
        if 0 <= index < self.size:
            return self.cells[index].execute(1 if self.unit == "packets" else nbytes, now_us)
        return GREEN

    def set(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure one cell."""
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")
        check_meter_config(self.name, cir, cburst, pir, pburst)
        self.cells[index].configure(cir, cburst, pir, pburst)

    def get(self, index: int) -> tuple[int, int, int, int] | None:
        """(cir, cburst, pir, pburst) of a cell, None when unconfigured."""
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")
        c = self.cells[index]
        return (c.cir, c.cburst, c.pir, c.pburst) if c.configured else None


@dataclass(frozen=True)
class CloneSession:
    """A clone (mirror) session: replicas and the length clones are truncated to (0 = whole)."""

    session_id: int
    replicas: tuple[tuple[int, int], ...]
    truncate: int = 0


class ReplicationEngine:
    """Multicast groups with (port, rid) replicas and clone sessions (BMv2's PRE + mirroring)."""

    def __init__(self, port_width: int = 9) -> None:
        self.port_limit = 1 << port_width
        self.groups: dict[int, tuple[tuple[int, int], ...]] = {}
        self.sessions: dict[int, CloneSession] = {}
        self.version = 0  # bumped by every change of groups and sessions (the native engine reloads them)

    def _check_replicas(self, what: str, replicas) -> tuple[tuple[int, int], ...]:
        out = []
        for r in replicas:
            try:
                port, rid = r
            except (TypeError, ValueError):
                raise SwitchError("INVALID_ARGUMENT", f"{what}: replica {r!r} is not (port, rid)") from None
            if not isinstance(port, int) or not 0 <= port < self.port_limit:
                raise SwitchError("INVALID_ARGUMENT", f"{what}: port {port!r} out of range")
            if not isinstance(rid, int) or not 0 <= rid < 1 << 16:
                raise SwitchError("INVALID_ARGUMENT", f"{what}: rid {rid!r} out of range")
            out.append((port, rid))
        if len(set(out)) != len(out):
            raise SwitchError("INVALID_ARGUMENT", f"{what}: duplicate replica")
        return tuple(out)

    def mc_group_set(self, group_id: int, replicas) -> None:
        """Create or replace a multicast group."""
        self.version += 1
        if not isinstance(group_id, int) or not 0 < group_id < 1 << 16:
            raise SwitchError("INVALID_ARGUMENT", f"multicast group id {group_id!r} not in 1..65535")
        self.groups[group_id] = self._check_replicas(f"multicast group {group_id}", replicas)

    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        self.version += 1
        if group_id not in self.groups:
            raise SwitchError("NOT_FOUND", f"no multicast group {group_id}")
        del self.groups[group_id]

    def clone_session_set(self, session_id: int, replicas, truncate: int = 0) -> None:
        """Create or replace a clone session."""
        self.version += 1
        if not isinstance(session_id, int) or not 0 <= session_id < 1 << 32:
            raise SwitchError("INVALID_ARGUMENT", f"clone session id {session_id!r} out of range")
        if not isinstance(truncate, int) or truncate < 0:
            raise SwitchError("INVALID_ARGUMENT", f"clone session {session_id}: bad truncate length")
        reps = self._check_replicas(f"clone session {session_id}", replicas)
        self.sessions[session_id] = CloneSession(session_id, reps, truncate)

    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session."""
        self.version += 1
        if session_id not in self.sessions:
            raise SwitchError("NOT_FOUND", f"no clone session {session_id}")
        del self.sessions[session_id]

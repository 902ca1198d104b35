"""The native engine behind a `Switch`: C state kept in step with the control plane.

The Python objects of `Switch` stay the control plane's truth: `Table` validates
and stores entries (the P4Runtime server, the STF runner and SyncMesh write them
as before), and each table carries a `version` its writers bump. Before a packet
runs, every table whose version moved is loaded into its C structure again, and
the multicast groups likewise (`ReplicationEngine.version`). Registers and
counters live only in C; `Switch.registers` / `Switch.counters` hold views with
the interface of `RegisterArray` / `CounterArray` over that memory.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from ..errors import SwitchError
from ..runtime import ValueSet
from ..tables import Table
from . import cbuild
from .cbase import CUSTOM_CRCS
from .cprogram import CDEF, Layout, TableLayout, program_source

OUT_SLOTS = 64  # output slots made at first (grown to the largest multicast group + 1)
MAX_DIGESTS = 40  # digests one injected packet can make: one per ingress pass (at most 32)


class CellView:
    """A list-like view of one C array of u64 cells (register values, counter cells)."""

    def __init__(self, ffi: Any, ptr: Any, size: int, width: int = 64, signed: bool = False) -> None:
        self._ptr = ptr
        self._size = size
        self._mask = (1 << width) - 1
        self._width = width
        self._signed = signed
        self._keep = ffi

    def __len__(self) -> int:
        return self._size

    def _get(self, i: int) -> int:
        v = int(self._ptr[i])
        if self._signed and v >> (self._width - 1):
            v -= 1 << self._width
        return v

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(self._size))]
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        return self._get(i)

    def __setitem__(self, i: int, value: int) -> None:
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        self._ptr[i] = value & self._mask

    def __iter__(self) -> Iterator[int]:
        return (self._get(j) for j in range(self._size))

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, list | CellView) else NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))


class NativeRegister:
    """`RegisterArray`'s interface over a C register."""

    def __init__(self, py: Any, view: CellView) -> None:
        self.name, self.size, self.width, self.signed = py.name, py.size, py.width, py.signed
        self.values = view
        view[0:0]  # noqa: B018 (touch: the view is valid)

    def read(self, index: int) -> int:
        return self.values[index] if 0 <= index < self.size else 0

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self.values[index] = value

    def cp_read(self, index: int) -> int:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")
        return self.values[index]

    def cp_write(self, index: int, value: int) -> None:
        self.cp_read(index)
        lo, hi = ((-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1) if self.signed
                  else (0, (1 << self.width) - 1))
        if not isinstance(value, int) or not lo <= value <= hi:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: value {value} does not fit in {self.width} bits")
        self.values[index] = value


class NativeCounter:
    """`CounterArray`'s interface over a C counter."""

    def __init__(self, py: Any, packets: CellView, nbytes: CellView) -> None:
        self.name, self.size, self.unit = py.name, py.size, py.unit
        self.packets = packets
        self.bytes = nbytes

    def check_index(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        self.check_index(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self.check_index(index)
        if packets < 0 or nbytes < 0:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: negative counter value")
        self.packets[index] = packets
        self.bytes[index] = nbytes


class NativeMeter:
    """`MeterArray`'s control-plane interface over a C meter (its cells run in C)."""

    def __init__(self, py: Any, engine: NativeEngine, mid: int) -> None:
        self.name, self.size, self.unit = py.name, py.size, py.unit
        self._engine, self._mid = engine, mid

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise SwitchError("OUT_OF_RANGE", f"{self.name}: index {index} not in 0..{self.size - 1}")

    def set(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure one cell (both buckets full, as MeterCell.configure)."""
        from ..externs import check_meter_config

        self._check(index)
        check_meter_config(self.name, cir, cburst, pir, pburst)
        if max(cir, cburst, pir, pburst) >> 64:
            raise SwitchError("INVALID_ARGUMENT", f"{self.name}: rate or burst above 2^64")
        e = self._engine
        e.lib.ss_meter_set(e.state, self._mid, index, cir, cburst, pir, pburst)

    def get(self, index: int) -> tuple[int, int, int, int] | None:
        """(cir, cburst, pir, pburst) of a cell, None when unconfigured."""
        self._check(index)
        e = self._engine
        out = e.ffi.new("uint64_t[4]")
        if not e.lib.ss_meter_get(e.state, self._mid, index, out):
            return None
        return int(out[0]), int(out[1]), int(out[2]), int(out[3])


class NativeEngine:
    """Runs packets of one `Switch` in its compiled C program."""

    def __init__(self, switch: Any, built: Any) -> None:
        where = getattr(built.gen.program, "source_file", "") or "program"
        source, layout = program_source(built)
        self.source = source
        self.layout: Layout = layout
        self.mod = cbuild.load(source, CDEF, where)
        ffi, lib = self.mod.ffi, self.mod.lib
        self.ffi, self.lib = ffi, lib
        raw = lib.ss_new()
        if raw == ffi.NULL:
            raise MemoryError("native engine: out of memory for the switch state")
        self.state = ffi.gc(raw, lib.ss_free)
        self.switch = switch
        self.tables: list[tuple[TableLayout, Table, int]] = [
            (tl, built.tables[tl.name], i) for i, tl in enumerate(layout.tables)]
        self.versions = [-1] * len(self.tables)
        self.loaded: list[list[Any]] = [[] for _ in self.tables]  # entries in C order
        self.pulled: set[int] = set()  # tables whose direct cells were copied back since the last packet
        self.pre_version = -1
        self.changes_seen = -1
        self.mc_max = 0
        self.loaded_groups: set[int] = set()
        self.value_sets = [built.value_sets[name] for name, _nk in layout.value_sets]
        self.vs_loaded: list[Any] = [None] * len(self.value_sets)  # the member lists loaded
        self.crcs: list[Any] = [None] * len(CUSTOM_CRCS)  # the custom CRCs loaded: the first sync loads them
        self.crc_version = -1  # HashEngine.version and ValueSet.changes when last loaded
        self.vs_changes_seen = -1
        for rid, (name, size, width) in enumerate(layout.registers):
            py = built.registers[name]
            view = CellView(ffi, lib.ss_register(self.state, rid), size, width, py.signed)
            for i, v in enumerate(py.values):  # zero today; kept for programs that initialise
                if v:
                    view[i] = v
            built.registers[name] = NativeRegister(py, view)
        for cid, (name, size) in enumerate(layout.counters):
            py = built.counters[name]
            built.counters[name] = NativeCounter(
                py, CellView(ffi, lib.ss_counter_packets(self.state, cid), size),
                CellView(ffi, lib.ss_counter_bytes(self.state, cid), size))
        for mid, (name, _size, _unit) in enumerate(layout.meters):
            built.meters[name] = NativeMeter(built.meters[name], self, mid)
        self.outs = ffi.new("ss_out_t[]", OUT_SLOTS)
        self.dropped = ffi.new("uint32_t *")
        self.dg_type = ffi.new("uint32_t[]", MAX_DIGESTS)
        self.dg_vals = ffi.new("uint64_t[]", MAX_DIGESTS * layout.digest_width)
        self.ndg = ffi.new("uint32_t *")
        self.buf = ffi.new("uint8_t[]", 1 << 16)
        self.buf_cap = 1 << 16

    # ---------------------------------------------------------------- control-plane state

    def sync(self) -> None:
        """Load tables, multicast groups and custom CRCs changed since the last packet into C."""
        hashes, pre = self.switch.hashes, self.switch.pre
        if (Table.changes == self.changes_seen and pre.version == self.pre_version
                and hashes.version == self.crc_version and ValueSet.changes == self.vs_changes_seen):
            return  # the per-packet case: four reads
        if hashes.version != self.crc_version:
            for i, name in enumerate(CUSTOM_CRCS):
                crc = hashes.algorithms.get(name)
                if crc is not self.crcs[i]:  # HashEngine.set_custom puts a new Crc
                    q = crc.params
                    if self.lib.ss_crc_set(self.state, i, q.width, q.poly, q.init, q.xor_out,
                                           int(q.reflect_in), int(q.reflect_out)):
                        raise ValueError(f"native engine: {name} of width {q.width} (8..64 bits)")
                    self.crcs[i] = crc
            self.crc_version = hashes.version
        if ValueSet.changes != self.vs_changes_seen:
            for i, (_name, nk) in enumerate(self.layout.value_sets):
                vs = self.value_sets[i]
                if vs.members is not self.vs_loaded[i]:  # ValueSet.set puts a new list
                    self._load_value_set(i, nk, vs)
            self.vs_changes_seen = ValueSet.changes
        self.changes_seen = Table.changes
        for i, (tl, table, tid) in enumerate(self.tables):
            if table.version != self.versions[i]:
                self._load_table(tl, table, tid)
                self.versions[i] = table.version
        if pre.version != self.pre_version:
            self._load_groups(pre)
            self.pre_version = pre.version

    def _load_value_set(self, i: int, nk: int, vs: Any) -> None:
        """A value set's members as the C words; a member that can never match a key of
        nk words of 64 bits at most (wider, or of another shape) is left out."""
        vals, masks, has = array("Q"), array("Q"), bytearray()
        for v, m in vs.members:
            words = list(v) if isinstance(v, tuple) and nk > 1 else [v]
            if len(words) != nk or not all(isinstance(w, int) and 0 <= w <= _WORD for w in words):
                continue
            if m is not None:
                if nk != 1 or not isinstance(m, int) or m < 0 or (v & m) >> 64:
                    continue
                m &= _WORD
            vals.extend(int(w) for w in words)
            masks.append(m if m is not None else 0)
            has.append(m is not None)
        ffi = self.ffi
        n = len(masks)
        if self.lib.ss_vs_set(self.state, i, n, nk,
                              ffi.from_buffer("uint64_t[]", vals) if n else ffi.NULL,
                              ffi.from_buffer("uint64_t[]", masks) if n else ffi.NULL,
                              ffi.from_buffer("uint8_t[]", has) if n else ffi.NULL):
            raise MemoryError(f"native engine: out of memory loading {vs.name}")
        self.vs_loaded[i] = vs.members

    def pull_direct(self, tid: int) -> None:
        """Copy the C cells of a table's direct counter / meter back into its Entry objects."""
        tl = self.layout.tables[tid]
        if not (tl.direct_counter or tl.direct_meter) or tid in self.pulled:
            return
        self.pulled.add(tid)  # until the next packet, the entries hold what C holds
        ffi, lib = self.ffi, self.lib
        cells, cfg, buckets = ffi.new("uint64_t[2]"), ffi.new("uint64_t[7]"), ffi.new("double[2]")
        for pos, e in enumerate(self.loaded[tid]):
            if tl.direct_counter and lib.ss_direct_counter(self.state, tid, pos, 0, cells) == 0:
                e.packets, e.bytes = int(cells[0]), int(cells[1])
            if tl.direct_meter and e.meter is not None and \
                    lib.ss_direct_meter(self.state, tid, pos, 0, cfg, buckets) == 0:
                e.meter.tc, e.meter.tp = float(buckets[0]), float(buckets[1])
                e.meter.last_us = int(cfg[6]) if cfg[5] else None

    def push_direct(self, tid: int, entry: Any) -> None:
        """Write an Entry's direct counter / meter into its C cells (when it is loaded)."""
        tl = self.layout.tables[tid]
        try:
            pos = next(i for i, e in enumerate(self.loaded[tid]) if e is entry)
        except StopIteration:
            return  # not loaded yet: the next load pushes it
        ffi, lib = self.ffi, self.lib
        if tl.direct_counter:
            lib.ss_direct_counter(self.state, tid, pos, 1, ffi.new("uint64_t[2]", [entry.packets, entry.bytes]))
        if tl.direct_meter:
            m = entry.meter
            if m is None:
                cfg, b = [0] * 7, [0.0, 0.0]
            else:
                cfg = [int(m.configured), m.cir, m.cburst, m.pir, m.pburst,
                       int(m.last_us is not None), m.last_us or 0]
                b = [m.tc, m.tp]
            lib.ss_direct_meter(self.state, tid, pos, 1, ffi.new("uint64_t[7]", cfg), ffi.new("double[2]", b))

    def table_id(self, table: Table) -> int | None:
        """Index of a table in the C program."""
        return next((tid for _, t, tid in self.tables if t is table), None)

    def _load_table(self, tl: TableLayout, table: Table, tid: int) -> None:
        nk, na = tl.nkeys, tl.nargs
        self.pull_direct(tid)  # the cells counted since the last load stay with their entries
        index = {name: i for i, name in enumerate(tl.actions)}
        if table.mode == "list":
            entries = list(table._list)  # priority order (tables.py keeps it)
        elif table.mode == "lpm":
            entries = sorted(table.entries.values(), key=lambda e: -e.key[table._lpm_index][2])
        else:
            entries = list(table.entries.values())
        a, b = array("Q"), array("Q")
        kind = bytearray()
        act = array("I")
        args = array("Q")
        prof = table.profile
        group_index: dict[int, int] = {}
        for e in entries:
            for (k, x, y) in _tests(table, e):
                kind.append(k)
                a.append(x)
                b.append(y)
            if prof is None:
                name, eargs = str(e.action), e.args
            elif e.member is not None:
                name, eargs, _fn = prof.members[e.member]
            else:  # a selector group: members resolved by ss_table_groups
                name, eargs = "", ()
                gi = group_index.setdefault(int(e.group or 0), len(group_index))
            act.append(index[name] if name else 0x80000000 | gi)
            words = _arg_words(table, name, eargs)
            args.extend(words)
            args.extend([0] * (na - len(words)))
        d_args = _arg_words(table, str(table.default_action), table.default_args)
        d_args += [0] * (na - len(d_args))
        ffi = self.ffi
        rc = self.lib.ss_table_load(
            self.state, tid, 1 if table.mode == "list" else 0, len(entries),
            ffi.from_buffer("uint64_t[]", a) if a else ffi.NULL,
            ffi.from_buffer("uint64_t[]", b) if b else ffi.NULL,
            ffi.from_buffer("uint8_t[]", kind) if kind else ffi.NULL,
            ffi.from_buffer("uint32_t[]", act) if act else ffi.NULL,
            ffi.from_buffer("uint64_t[]", args) if args else ffi.NULL,
            index[table.default_action], ffi.new("uint64_t[]", d_args or [0]))
        if rc != 0:
            raise MemoryError(f"native engine: out of memory loading {table.name}")
        if prof is not None:
            lens, mact, margs = array("I"), array("I"), array("Q")
            for gid in group_index:  # in the order the entries first name them
                members = prof.groups[gid]
                lens.append(len(members))
                for m in members:
                    name, margs_m, _fn = prof.members[m]
                    mact.append(index[name])
                    words = _arg_words(table, name, margs_m)
                    margs.extend(words)
                    margs.extend([0] * (na - len(words)))
            rc = self.lib.ss_table_groups(
                self.state, tid, len(lens), ffi.from_buffer("uint32_t[]", lens) if lens else ffi.NULL,
                len(mact), ffi.from_buffer("uint32_t[]", mact) if mact else ffi.NULL,
                ffi.from_buffer("uint64_t[]", margs) if margs else ffi.NULL)
            if rc != 0:
                raise MemoryError(f"native engine: out of memory loading {table.name}'s groups")
        self.loaded[tid] = entries
        if tl.direct_counter or tl.direct_meter:
            for e in entries:
                self.push_direct(tid, e)
        _ = nk

    def _load_groups(self, pre: Any) -> None:
        ffi, lib = self.ffi, self.lib
        lib.ss_clone_clear(self.state)
        for sid, sess in pre.sessions.items():
            ports = ffi.new("uint16_t[]", [p for p, _ in sess.replicas] or [0])
            rids = ffi.new("uint16_t[]", [r for _, r in sess.replicas] or [0])
            if lib.ss_clone_set(self.state, sid, len(sess.replicas), ports, rids, sess.truncate) != 0:
                raise MemoryError("native engine: out of memory loading clone sessions")
        for gid in self.loaded_groups - set(pre.groups):
            lib.ss_mc_del(self.state, gid)
        self.mc_max = 0
        for gid, replicas in pre.groups.items():
            ports = ffi.new("uint16_t[]", [p for p, _ in replicas] or [0])
            rids = ffi.new("uint16_t[]", [r for _, r in replicas] or [0])
            if lib.ss_mc_set(self.state, gid, len(replicas), ports, rids) != 0:
                raise MemoryError("native engine: out of memory loading multicast groups")
            self.mc_max = max(self.mc_max, len(replicas))
        self.loaded_groups = set(pre.groups)

    # ---------------------------------------------------------------- packets

    def process(self, port: int, data: bytes, now: int) -> tuple[list[tuple[int, bytes]], int]:
        """Run one packet: (outputs as (port, bytes), copies dropped)."""
        self.sync()
        if self.pulled:
            self.pulled.clear()
        ffi = self.ffi
        copies = self.mc_max + 1
        need = copies * (len(data) + self.layout.emit_max)
        if self.layout.uses_passes:  # clones; each of 32 passes may add the program's headers
            copies = max(copies, OUT_SLOTS)
            need = copies * (len(data) + 33 * self.layout.emit_max)
        if need > self.buf_cap:
            self.buf = ffi.new("uint8_t[]", need)
            self.buf_cap = need
        if copies > OUT_SLOTS:
            self.outs = ffi.new("ss_out_t[]", copies)
        n = self.lib.ss_process(self.state, port, data, len(data), now, self.outs,
                                max(copies, OUT_SLOTS), self.buf, self.buf_cap, self.dropped,
                                self.dg_type, self.dg_vals, MAX_DIGESTS, self.ndg)
        if self.ndg[0]:
            self._digests(self.ndg[0])
        if self.layout.log_texts:
            self._logs()
        outs = []
        for i in range(n):
            o = self.outs[i]
            outs.append((o.port, ffi.buffer(self.buf + o.off, o.len)[:]))
        return outs, self.dropped[0]

    def _logs(self) -> None:
        from ..runtime import log_msg
        from .cgen import LOG_VALUES, MAX_LOGS

        ffi = self.ffi
        ids, counts = ffi.new("uint32_t[]", MAX_LOGS), ffi.new("uint32_t[]", MAX_LOGS)
        values = ffi.new("uint64_t[]", MAX_LOGS * LOG_VALUES)
        for i in range(self.lib.ss_logs(self.state, ids, counts, values)):
            vals = tuple(int(values[i * LOG_VALUES + k]) for k in range(counts[i]))
            log_msg(self.layout.log_texts[ids[i]], vals)

    def _digests(self, count: int) -> None:
        self.digests_from(count, self.dg_type, self.dg_vals)

    def digests_from(self, count: int, dg_type: Any, dg_vals: Any) -> None:
        """Hand `count` digests that ss_process wrote into these arrays to the switch."""
        from ..runtime import Digest

        width = self.layout.digest_width
        for i in range(count):
            name, fields = self.layout.digests[dg_type[i]]
            values = [int(dg_vals[i * width + k]) for k in range(len(fields))]
            self.switch._emit_digest(Digest(name, tuple((f, w, v) for (f, w), v in zip(fields, values, strict=True))))

    def batch(self, packets: list[bytes]) -> PacketBatch:
        """Packets laid out for process_batch (one buffer, offsets and lengths)."""
        return PacketBatch(self.ffi, packets)

    def process_batch(self, port: int, batch: PacketBatch, now: int) -> tuple[int, int, int]:
        """Run a batch without returning its packets (benchmarks): (outputs, bytes, dropped)."""
        self.sync()
        self.pulled.clear()
        ffi = self.ffi
        cap = OUT_SLOTS * (batch.max_len + self.layout.emit_max) + 64
        if cap > self.buf_cap:
            self.buf = ffi.new("uint8_t[]", cap)
            self.buf_cap = cap
        ports = batch.ports(port)
        out_bytes = ffi.new("uint64_t *")
        dropped = ffi.new("uint32_t *")
        n = self.lib.ss_process_batch(self.state, batch.count, ports, batch.data, batch.offs,
                                      batch.lens, now, self.buf, self.buf_cap, out_bytes, dropped)
        if self.layout.log_texts:
            self._logs()  # those the batch left (at most the last 64)
        return int(n), int(out_bytes[0]), int(dropped[0])


class PacketBatch:
    """Packets in one C buffer with their offsets and lengths, made once and reusable."""

    def __init__(self, ffi: Any, packets: list[bytes]) -> None:
        offs, lens = array("I"), array("I")
        off = 0
        for p in packets:
            offs.append(off)
            lens.append(len(p))
            off += len(p)
        self.count = len(packets)
        self.max_len = max(lens, default=0)
        self._ffi = ffi
        self._blob = b"".join(packets)
        self._offs, self._lens = offs, lens
        self.data = ffi.from_buffer("uint8_t[]", self._blob)
        self.offs = ffi.from_buffer("uint32_t[]", offs)
        self.lens = ffi.from_buffer("uint32_t[]", lens)
        self._ports: dict[int, Any] = {}

    def ports(self, port: int) -> Any:
        arr = self._ports.get(port)
        if arr is None:
            arr = self._ports[port] = array("I", [port] * self.count)
        return self._ffi.from_buffer("uint32_t[]", arr)


def _tests(table: Table, entry: Any) -> list[tuple[int, int, int]]:
    """Per key word (kind, a, b) as the C lookup reads them (tables.py `_tests`); a field of
    65..128 bits is two words, high first (cprogram.py refuses such range fields)."""
    if table.mode == "list":
        tests = [(k, a, b) for k, a, b in (entry.tests or table._tests(entry.key))]
    else:
        tests = []
        for spec, mv in zip(table.match_keys, entry.key, strict=True):
            full = (1 << spec.width) - 1
            if mv[0] == "lpm":
                m = full ^ ((1 << (spec.width - mv[2])) - 1)
                tests.append((0, m, mv[1]))
            else:
                tests.append((0, full, mv[1]))
    out = []
    for spec, (k, a, b) in zip(table.match_keys, tests, strict=True):
        if spec.width > 64:
            out += [(k, a >> 64, b >> 64), (k, a & _WORD, b & _WORD)]
        else:
            out.append((k, a, b))
    return out


_WORD = (1 << 64) - 1


def _arg_words(table: Table, action: str, values: Any) -> list[int]:
    """An action's data as the C words: a value of 65..128 bits is two, high first."""
    spec = table.action_specs.get(action)
    out: list[int] = []
    for i, v in enumerate(values):
        w = spec.params[i][1] if spec is not None and i < len(spec.params) else 64
        out += [v >> 64, v & _WORD] if w > 64 else [v]
    return out

"""Switch ports on TPACKET_V3 mmap rings, forwarded in C by the native engine.

`RingPortSet` has `PortSet`'s interface (open, start, send, close, link events,
counters) and keeps its link watching, but moves the packets through `rings.c`:
each port's socket has an RX ring of blocks and a TX ring of frames. One thread
loops: while the committed pipeline runs the native engine, `rio_forward` takes
the frames of the ready blocks straight from the ring into the engine's
`ss_process` and puts their outputs on the TX rings, a batch at a time, without
Python per packet; Python then only delivers what the batch left for the
control plane (packet-ins to the CPU port, digests, log_msg records) and adds
the batch's per-port figures to `Switch.stats`. With the Python engine (or
before a pipeline exists) the frames are copied out and run through
`on_packet` as with sockets. Frames the control plane sends (packet-out,
port-status) go through `send`, onto the same TX rings.

A V3 block that is not full is handed over only when its timeout expires (1 ms
at least), which a lone packet waits at each hop; `version=2` in
$SOFTSWITCH_RINGS uses TPACKET_V2 RX frames instead, each seen at once.

Whatever cannot make rings (an old kernel, no C compiler, a geometry the kernel
refuses) raises `RingError` naming why; `softswitch run` then uses the sockets
of ports.py and says so in one line.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .ports import PortError, PortSet

log = logging.getLogger("softswitch.rings")

RINGS_ENV = "SOFTSWITCH_RINGS"
BUDGET = 1024  # frames per rio_forward call: the device lock is held for one batch
MAX_DIGESTS = 1024  # digests one batch can leave (a batch ends before it could overflow)
DIGESTS_PER_PACKET = 40  # what one injected packet can make (native engine's MAX_DIGESTS)
PIN_BYTES = 4 << 20  # packet-ins one batch can leave, bytes
MAX_PIN = 4096  # and frames
RX_COPY = 256  # frames copied out per call for the Python engine

CDEF = """
typedef struct rio rio_t;
typedef struct {
    uint32_t packets, npin, pin_lost, ndg, nstat;
    uint32_t stat_port[512];
    uint32_t stat_in[512], stat_out[512], stat_drop[512];
} rio_result_t;
typedef struct {
    uintptr_t fn, sw;
    uint64_t now;
    int64_t mono_base_ns;
    uint32_t mc_max, emit_max, passes;
    uintptr_t dg_type, dg_vals;
    uint32_t max_dg, dg_width, dg_per_packet;
    uintptr_t pin;
    uint32_t pin_cap, max_pin;
    uintptr_t pin_off, pin_len;
} rio_engine_t;
rio_t *rio_new(uint32_t nports, uint32_t cpu_port);
void rio_free(rio_t *r);
int rio_port_open(rio_t *r, uint32_t idx, uint32_t number, int ifindex, uint32_t version,
                  uint32_t block_size, uint32_t block_nr, uint32_t tx_frame, uint32_t tx_nr,
                  uint32_t tov_ms, char *err, uint32_t errlen);
int64_t rio_kernel_drops(rio_t *r, uint32_t idx);
void rio_counters(rio_t *r, uint32_t idx, uint64_t *out);
int rio_send(rio_t *r, uint32_t number, const uint8_t *data, uint32_t len);
uint32_t rio_rx(rio_t *r, uint8_t *buf, uint32_t cap, uint32_t *ports, uint32_t *offs,
                uint32_t *lens, uint32_t max);
uint32_t rio_forward(rio_t *r, const rio_engine_t *e, uint32_t budget, rio_result_t *res);
int rio_wait(rio_t *r, int timeout_ms, int fd_a, int fd_b);
"""
COUNTERS = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_drops", "rx_truncated",
            "rx_malformed", "tx_oversize")


class RingError(PortError):
    """The ports cannot run on mmap rings here (the reason names the step that failed)."""


@dataclass(frozen=True)
class RingOptions:
    """Geometry of every port's rings ($SOFTSWITCH_RINGS="block=131072,blocks=16,...")."""

    version: int = 3
    """TPACKET_V3 (RX blocks handed over when full or after timeout_ms) or 2 (RX frames of
    `frame` bytes, each seen at once: no added latency, frames above a frame are truncated)."""
    block: int = 1 << 17
    """Bytes of an RX block (a page multiple); a frame larger than a block is counted as
    rx_truncated and dropped."""
    blocks: int = 16
    """RX blocks per port."""
    frame: int = 2048
    """Bytes of a TX frame (48 of them the frame's header); larger outputs are sent with
    one send() each (tx_oversize)."""
    frames: int = 512
    """TX frames per port."""
    timeout_ms: int = 1
    """How long the kernel keeps a block that is not full before handing it over: the
    latency a lone packet can wait."""

    @classmethod
    def from_env(cls, text: str | None = None) -> RingOptions:
        """Options from `key=value,...` (default: $SOFTSWITCH_RINGS); RingError when bad."""
        text = os.environ.get(RINGS_ENV, "") if text is None else text
        known = {f.name for f in fields(cls)}
        given: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key not in known or not value.isdigit():
                raise RingError(f"{RINGS_ENV}: bad item {part!r} (expected one of "
                                f"{', '.join(sorted(known))} = a number)")
            given[key] = int(value)
        opts = cls(**given)
        for f in fields(cls):
            if not 0 < getattr(opts, f.name) < 1 << 31:
                raise RingError(f"{RINGS_ENV}: {f.name} must be between 1 and 2^31 - 1")
        if opts.version not in (2, 3):
            raise RingError(f"{RINGS_ENV}: version must be 2 or 3 (TPACKET_V2, TPACKET_V3)")
        return opts


_lib: Any = None


def _load() -> Any:
    """The compiled rings.c (cffi module), built once per machine like a native program."""
    global _lib
    if _lib is None:
        from .engine.errors import CompileError
        from .engine.native import cbuild

        source = (Path(__file__).with_name("rings.c")).read_text()
        try:
            _lib = cbuild.load(source, CDEF, "rings.c")
        except CompileError as exc:
            raise RingError(f"cannot build the ring I/O: {exc}") from exc
        except OSError as exc:
            raise RingError(f"cannot build the ring I/O: {exc}") from exc
    return _lib


class RingPortSet(PortSet):
    """The ports of a switch on TPACKET_V3 rings (see the module docstring)."""

    io = "rings"

    def __init__(
        self,
        mapping: dict[int, str],
        device: Any,
        on_link: Callable[[int, bool], None] = lambda port, up: None,
        options: RingOptions | None = None,
    ) -> None:
        super().__init__(mapping, device.process, on_link)
        self.device = device
        self.options = options or RingOptions()
        self._mod: Any = None
        self._rio: Any = None
        self._slot: dict[int, int] = {}
        self._send_lock = threading.Lock()  # send() against close() freeing the rings
        self._engine_for: Any = None  # the NativeEngine whose buffers _engine describes
        self._engine: Any = None
        self.pin_lost = 0

    # ---- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        """Make every port's rings and read the link state; RingError naming what failed."""
        from rtnetlink import LinkWatch

        mod = _load()
        ffi, lib = mod.ffi, mod.lib
        o = self.options
        try:
            rio = lib.rio_new(len(self.ports), self.device.cpu_port)
            if rio == ffi.NULL:
                raise RingError(f"cannot make rings for {len(self.ports)} ports")
            self._mod, self._rio = mod, rio
            err = ffi.new("char[]", 256)
            for idx, port in enumerate(self.ports.values()):
                try:
                    port.ifindex = socket.if_nametoindex(port.ifname)
                except OSError as exc:
                    raise PortError(f"port {port.number}: no interface {port.ifname!r}") from exc
                if lib.rio_port_open(rio, idx, port.number, port.ifindex, o.version, o.block,
                                     o.blocks, o.frame, o.frames, o.timeout_ms, err, 256) != 0:
                    why = ffi.string(err).decode(errors="replace")
                    raise RingError(f"port {port.number} ({port.ifname}): {why}")
                self._slot[port.number] = idx
                self._by_ifindex[port.ifindex] = port
            self._links = LinkWatch()
            for link in self._links.links.values():
                known = self._by_ifindex.get(link.index)
                if known is not None:
                    known.up = link.carrier
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """Start the ring thread (packets and link state)."""
        t = threading.Thread(target=self._loop, name="ports-rings", daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        """Stop the thread, then free the rings and their sockets (the counters stay)."""
        threads = list(self._threads)
        super().close()
        if any(t.is_alive() for t in threads):
            # still inside a batch: freeing the rings would pull them from under it
            log.warning("ring thread did not stop; its rings are left to the process's end")
            return
        with self._send_lock:
            if self._rio is not None:
                self.sync_counters()
                self._mod.lib.rio_free(self._rio)
                self._rio = None

    # ---- data path -------------------------------------------------------------------

    def send(self, number: int, data: bytes) -> None:
        """Queue a frame on a port's TX ring and flush it (the control plane's frames)."""
        with self._send_lock:
            if self._rio is not None:
                self._mod.lib.rio_send(self._rio, number, data, len(data))

    def _loop(self) -> None:
        ffi, lib = self._mod.ffi, self._mod.lib
        rio = self._rio
        res = ffi.new("rio_result_t *")
        copy = (ffi.new("uint8_t[]", RX_COPY * 2048 + self.options.block),
                ffi.new("uint32_t[]", RX_COPY), ffi.new("uint32_t[]", RX_COPY),
                ffi.new("uint32_t[]", RX_COPY))
        link_fd = self._links.fileno() if self._links is not None else -1
        wake_fd = self._wake_r.fileno()
        busy = False
        while not self._stop.is_set():
            flags = lib.rio_wait(rio, 0 if busy else 200, link_fd, wake_fd)
            if flags & 2:
                self._read_netlink()
            if flags & 4 or self._stop.is_set():
                return
            try:
                busy = self._forward(res, copy) > 0
            except Exception:
                log.exception("ring_forward_failed")
                busy = False

    def _forward(self, res: Any, copy: Any) -> int:
        """One batch: native engine in C, otherwise frames copied out to on_packet."""
        dev = self.device
        p = dev.pipeline
        native = getattr(p.switch, "_native", None) if p is not None else None
        if native is None:
            return self._copy_out(copy)
        lib = self._mod.lib
        with dev.lock:
            if dev.pipeline is not p:
                return 1  # changed meanwhile: look again
            native.sync()
            native.pulled.clear()
            e = self._engine_of(native)
            e.now = p.switch.clock()
            base = getattr(p.switch.clock, "base_ns", None)  # the default clock: C reads it per packet
            e.mono_base_ns = base if isinstance(base, int) else -1
            e.mc_max = native.mc_max
            n = lib.rio_forward(self._rio, e, BUDGET, res)
            if n == 0:
                return 0
            sw = p.switch
            st_in, st_out, st_drop = sw.stats["in"], sw.stats["out"], sw.stats["dropped"]
            for i in range(res.nstat):
                port = res.stat_port[i]
                if res.stat_in[i]:
                    st_in[port] = st_in.get(port, 0) + res.stat_in[i]
                if res.stat_out[i]:
                    st_out[port] = st_out.get(port, 0) + res.stat_out[i]
                if res.stat_drop[i]:
                    st_drop[port] = st_drop.get(port, 0) + res.stat_drop[i]
            if res.ndg:
                native.digests_from(res.ndg, self._dg_type, self._dg_vals)
            if native.layout.log_texts:
                native._logs()  # the batch's last 64 records
        if res.pin_lost:
            self.pin_lost += res.pin_lost
            log.warning("packet_in_lost=%d (more than %d bytes or %d packets in one batch)",
                        res.pin_lost, PIN_BYTES, MAX_PIN)
        if res.npin:
            buf = self._mod.ffi.buffer(self._pin)
            for i in range(res.npin):
                off, ln = self._pin_off[i], self._pin_len[i]
                try:
                    dev.packet_in_from(p, bytes(buf[off:off + ln]))
                except Exception:
                    log.exception("packet_in_failed")
        return n

    def _engine_of(self, native: Any) -> Any:
        """The rio_engine_t of a native engine (made once per engine)."""
        if self._engine_for is native:
            return self._engine
        ffi = self._mod.ffi
        nffi = native.ffi
        width = native.layout.digest_width
        # digest buffers in the engine's own memory: native.digests_from reads them
        self._dg_type = nffi.new("uint32_t[]", MAX_DIGESTS)
        self._dg_vals = nffi.new("uint64_t[]", MAX_DIGESTS * width)
        self._pin = ffi.new("uint8_t[]", PIN_BYTES)
        self._pin_off = ffi.new("uint32_t[]", MAX_PIN)
        self._pin_len = ffi.new("uint32_t[]", MAX_PIN)
        e = ffi.new("rio_engine_t *")

        def addr(f: Any, ptr: Any) -> int:
            return int(f.cast("uintptr_t", ptr))

        e.fn = addr(nffi, nffi.addressof(native.lib, "ss_process"))
        e.sw = addr(nffi, native.state)
        e.emit_max = native.layout.emit_max
        e.passes = int(native.layout.uses_passes)
        e.dg_type, e.dg_vals = addr(nffi, self._dg_type), addr(nffi, self._dg_vals)
        e.max_dg, e.dg_width, e.dg_per_packet = MAX_DIGESTS, width, DIGESTS_PER_PACKET
        e.pin, e.pin_cap, e.max_pin = addr(ffi, self._pin), PIN_BYTES, MAX_PIN
        e.pin_off, e.pin_len = addr(ffi, self._pin_off), addr(ffi, self._pin_len)
        self._engine, self._engine_for = e, native
        return e

    def _copy_out(self, copy: Any) -> int:
        """Frames for the Python engine (or no pipeline): copied out, run one by one."""
        buf, ports, offs, lens = copy
        lib, ffi = self._mod.lib, self._mod.ffi
        n = lib.rio_rx(self._rio, buf, len(buf), ports, offs, lens, RX_COPY)
        if n:
            view = ffi.buffer(buf)
            for i in range(n):
                try:
                    self.on_packet(ports[i], bytes(view[offs[i]:offs[i] + lens[i]]))
                except Exception:
                    log.exception("port=%d packet_handler_failed", ports[i])
        return int(n)

    # ---- counters --------------------------------------------------------------------

    def ring_counters(self) -> dict[int, dict[str, int]]:
        """Every port's counters as rings.c keeps them (also truncated and malformed)."""
        if self._rio is None:
            return {}
        ffi, lib = self._mod.ffi, self._mod.lib
        out = {}
        cells = ffi.new("uint64_t[]", len(COUNTERS))
        for number, idx in self._slot.items():
            lib.rio_counters(self._rio, idx, cells)
            out[number] = {name: int(cells[i]) for i, name in enumerate(COUNTERS)}
        return out

    def sync_counters(self) -> None:
        """Copy the C counters into each Port's PortCounters."""
        for number, c in self.ring_counters().items():
            pc = self.ports[number].counters
            pc.rx_packets, pc.rx_bytes = c["rx_packets"], c["rx_bytes"]
            pc.tx_packets, pc.tx_bytes, pc.tx_drops = c["tx_packets"], c["tx_bytes"], c["tx_drops"]
            pc.rx_truncated = c["rx_truncated"]

    def kernel_drops(self) -> dict[int, int]:
        """Refresh and return rx drops the kernel counted per port (PACKET_STATISTICS)."""
        if self._rio is not None:
            for number, idx in self._slot.items():
                drops = self._mod.lib.rio_kernel_drops(self._rio, idx)
                if drops > 0:
                    self.ports[number].counters.rx_kernel_drops += drops
        return {n: p.counters.rx_kernel_drops for n, p in self.ports.items()}

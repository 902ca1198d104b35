"""A minimal gNMI service for port state, served next to P4Runtime on the same address.

Only the OpenConfig leaves that controllers use to follow ports are served:
`/interfaces/interface[name=*]/state/ifindex` (the data-plane port number),
`.../state/oper-status` ("UP"/"DOWN") and `.../state/counters/{in-pkts, in-octets,
out-pkts, out-octets, in-discards, out-discards}`, with Get and a STREAM Subscribe to
oper-status (ON_CHANGE: the current values, `sync_response`, then every change).
finsy's Switch follows port state through exactly these. Everything else is
UNIMPLEMENTED. The methods run in the P4Runtime server's threads; a subscription holds
one while it is open, so subscriptions are bounded per peer host and in all (the
server's stream limits), and its queue is bounded (a subscriber that never reads loses
the oldest changes, counted in `dropped`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import grpc
from finsy.proto import gnmi, gnmi_grpc

from softswitch.p4runtime.streams import Admission, peer_host

_LEAVES = ("ifindex", "oper-status")
_QUEUED = 1024  # port changes waiting for one subscriber
COUNTER_LEAVES = ("in-pkts", "in-octets", "out-pkts", "out-octets", "in-discards", "out-discards")


def _iface_path(name: str, leaf: str) -> gnmi.Path:
    return gnmi.Path(elem=[
        gnmi.PathElem(name="interfaces"),
        gnmi.PathElem(name="interface", key={"name": name}),
        gnmi.PathElem(name="state"),
        *[gnmi.PathElem(name=part) for part in leaf.split("/")],
    ])


def _parse(prefix: gnmi.Path, path: gnmi.Path) -> tuple[str, str] | None:
    """(interface name or '*', leaf) for interfaces/interface/state/<leaf>; leaf may be counters/x."""
    elems = list(prefix.elem) + list(path.elem)
    names = [e.name for e in elems]
    if names[:3] != ["interfaces", "interface", "state"]:
        return None
    leaf = "/".join(names[3:])
    if leaf not in _LEAVES and not (
        leaf.startswith("counters/") and leaf.split("/", 1)[1] in COUNTER_LEAVES
    ):
        return None
    return elems[1].key.get("name", "*"), leaf


class GnmiService(gnmi_grpc.gNMIServicer):
    """Port state over gNMI."""

    def __init__(self, admission: Admission | None = None) -> None:
        self._admission = admission or Admission(256, 128, "gNMI subscriptions")
        self._ports: dict[int, str] = {}
        self._is_up: Callable[[int], bool] = lambda n: False
        self._counters: Callable[[int], dict[str, int]] = lambda n: {}
        self._subs: list[_Subscriber] = []
        self._lock = threading.Lock()
        self.dropped = 0

    def set_ports(
        self,
        ports: dict[int, str],
        is_up: Callable[[int], bool],
        counters: Callable[[int], dict[str, int]] | None = None,
    ) -> None:
        """The switch's ports (number -> interface name), their state and counters."""
        self._ports = dict(ports)
        self._is_up = is_up
        if counters is not None:
            self._counters = counters

    def _value(self, number: int, leaf: str) -> gnmi.TypedValue:
        if leaf == "ifindex":
            return gnmi.TypedValue(uint_val=number)
        if leaf.startswith("counters/"):
            return gnmi.TypedValue(uint_val=self._counters(number).get(leaf.split("/", 1)[1], 0))
        return gnmi.TypedValue(string_val="UP" if self._is_up(number) else "DOWN")

    def _select(self, name: str) -> list[int]:
        return [n for n, ifname in self._ports.items() if name in ("*", ifname)]

    def port_changed(self, number: int, up: bool) -> None:
        """Publish a port's new oper-status to the subscribers of that port."""
        name = self._ports.get(number)
        if name is None:
            return
        note = gnmi.Notification(timestamp=time.time_ns(), update=[gnmi.Update(
            path=_iface_path(name, "oper-status"),
            val=gnmi.TypedValue(string_val="UP" if up else "DOWN"))])
        with self._lock:
            subs = [sub for sub in self._subs if name in sub.names]
        for sub in subs:
            if not sub.push(gnmi.SubscribeResponse(update=note)):
                self.dropped += 1

    def Capabilities(self, request, context):
        """gNMI Capabilities."""
        return gnmi.CapabilityResponse(supported_encodings=[gnmi.Encoding.PROTO], gNMI_version="0.7.0")

    def Get(self, request, context):
        """gNMI Get of ifindex / oper-status leaves."""
        note = gnmi.Notification(timestamp=time.time_ns())
        for path in request.path:
            parsed = _parse(request.prefix, path)
            if parsed is None:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, "only interfaces/interface/"
                              "state/{ifindex,oper-status,counters/*} are served")
            name, leaf = parsed
            found = self._select(name)
            if not found and name != "*":
                context.abort(grpc.StatusCode.NOT_FOUND, f"no interface {name!r}")
            for n in found:
                note.update.add(path=_iface_path(self._ports[n], leaf), val=self._value(n, leaf))
        return gnmi.GetResponse(notification=[note])

    def Set(self, request, context):
        """Not served."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "gNMI Set is not supported")

    def Subscribe(self, request_iterator, context):
        """STREAM/ON_CHANGE subscription to oper-status."""
        first = next(request_iterator, None)
        if first is None:
            return
        sl = first.subscribe
        if sl.mode != gnmi.SubscriptionList.STREAM:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "only STREAM subscriptions are supported")
        names: set[str] = set()
        initial = gnmi.Notification(timestamp=time.time_ns())
        for sub in sl.subscription:
            parsed = _parse(sl.prefix, sub.path)
            if parsed is None or parsed[1] != "oper-status":
                context.abort(grpc.StatusCode.UNIMPLEMENTED,
                              "only interface oper-status can be subscribed")
            name, leaf = parsed
            for n in self._select(name):
                names.add(self._ports[n])
                initial.update.add(path=_iface_path(self._ports[n], leaf), val=self._value(n, leaf))
        host = peer_host(context.peer())
        refusal = self._admission.admit(host)
        if refusal is not None:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
        sub = _Subscriber(names)
        with self._lock:
            self._subs.append(sub)
        try:
            if not context.add_callback(sub.close):  # the RPC ends: stop waiting for changes
                return
            yield gnmi.SubscribeResponse(update=initial)
            yield gnmi.SubscribeResponse(sync_response=True)
            while (msg := sub.next()) is not None:
                yield msg
        finally:
            with self._lock:
                self._subs.remove(sub)
            self._admission.release(host)


class _Subscriber:
    """One subscription: port changes queued from any thread, written by its RPC's thread."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self._queue: deque = deque()
        self._ready = threading.Condition(threading.Lock())
        self._closed = False

    def push(self, msg) -> bool:
        """Queue a change; when full the oldest is dropped (False)."""
        with self._ready:
            full = len(self._queue) >= _QUEUED
            if full:
                self._queue.popleft()
            self._queue.append(msg)
            self._ready.notify()
        return not full

    def close(self) -> None:
        """The subscription ended: `next` returns None from now on."""
        with self._ready:
            self._closed = True
            self._ready.notify()

    def next(self):
        """The next change (waits for one), or None once the subscription is closed."""
        with self._ready:
            while not self._queue and not self._closed:
                self._ready.wait()
            return None if self._closed else self._queue.popleft()

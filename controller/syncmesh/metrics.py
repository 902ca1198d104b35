"""Metrics in the Prometheus text exposition format (version 0.0.4), served over HTTP."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .admission import REASONS
from .core import SyncMeshCore
from .peers import PeerStatus
from .switchops import RemoteCongestion

REJECT_REASONS = ("unauthenticated", "not_a_peer", "malformed", *REASONS)

CONVERGENCE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass
class TransportStats:
    """What the daemon's gRPC side counted, by message type."""

    sent: Counter = field(default_factory=Counter)
    sent_bytes: Counter = field(default_factory=Counter)
    received: Counter = field(default_factory=Counter)
    received_bytes: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    """By reason (``REJECT_REASONS``)."""
    rejected_by_peer: Counter = field(default_factory=Counter)
    """By (peer or client, reason)."""
    sessions: Counter = field(default_factory=Counter)
    """Session streams opened, by peer."""
    dropped: int = 0
    """Messages not queued because a peer's send queue was full (the session then ends)."""


@dataclass(frozen=True)
class SwitchSnapshot:
    """What the daemon's switch side shows on the page, as the daemon hands it over (the
    page reads nothing of the daemon itself)."""

    ready: bool
    """The switch session is up and its entries reconciled."""
    writes: int
    """P4Runtime write batches so far."""
    remote_written: Mapping[tuple[int, int], tuple[int, float]] = field(default_factory=dict)
    """(dst leaf, path) -> (level, when the switch write holding it completed)."""
    congested_since: Mapping[tuple[int, int], float] = field(default_factory=dict)
    """(dst leaf, path) written with a level in the top two, since when."""


def _labels(**labels: object) -> str:
    if not labels:
        return ""
    body = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
    return "{" + body + "}"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Writer:
    def __init__(self, switch: str):
        self.switch = switch
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: object) -> None:
        self.lines.append(f"{name}{_labels(switch=self.switch, **labels)} {_number(value)}")


def _number(v: float) -> str:
    if v == float("inf"):
        return "+Inf"
    if float(v).is_integer():
        return str(int(v))
    return repr(float(v))


def render(core: SyncMeshCore, transport: TransportStats,
           switch: SwitchSnapshot | None = None) -> str:
    """The metrics page of one daemon (``switch``: its switch side, if it has one)."""
    w = _Writer(core.me)
    w.family("syncmesh_info", "gauge", "Static facts about this daemon (value is always 1).")
    w.sample("syncmesh_info", 1, role=core.switch.role.value, incarnation=core.incarnation)

    w.family("syncmesh_port_utilisation", "gauge",
             "Transmit utilisation of a switch port, as a fraction of its line rate.")
    for port in sorted(core.utilisation):
        w.sample("syncmesh_port_utilisation", core.utilisation[port], port=port,
                 peer=core.ports[port].peer)
    w.family("syncmesh_port_carrier", "gauge",
             "1 if the switch reports carrier on the port (ports it has reported on).")
    for port in sorted(core.local_port_up):
        w.sample("syncmesh_port_carrier", int(core.local_port_up[port]), port=port)
    w.family("syncmesh_port_rate_mbps", "gauge", "Transmit rate of a switch port in Mbit/s.")
    for port in sorted(core.rate_mbps):
        w.sample("syncmesh_port_rate_mbps", core.rate_mbps[port], port=port)

    w.family("syncmesh_profile_version", "gauge",
             "Sequence number of the newest congestion profile per origin spine.")
    w.family("syncmesh_profile_incarnation", "gauge",
             "Incarnation of the newest congestion profile per origin spine.")
    profiles = list(core.store.all())
    latest = core.publisher.latest() if core.publisher is not None else None
    if latest is not None:
        profiles.append(latest)
    for prof in sorted(profiles, key=lambda p: p.origin):
        w.sample("syncmesh_profile_version", prof.version.seq, origin=prof.origin)
        w.sample("syncmesh_profile_incarnation", prof.version.incarnation, origin=prof.origin)

    w.family("syncmesh_peer_up", "gauge", "1 if the peer session is up.")
    for peer in core.peers.peers.values():
        w.sample("syncmesh_peer_up", int(peer.status is PeerStatus.UP), peer=peer.name)
    w.family("syncmesh_peers_up", "gauge", "Number of peer sessions up.")
    w.sample("syncmesh_peers_up", len(core.peers.up()))
    w.family("syncmesh_peer_joins_total", "counter",
             "Times a peer (re)joined (first contact, back from down, or restarted).")
    for peer in core.peers.peers.values():
        w.sample("syncmesh_peer_joins_total", peer.joins, peer=peer.name)

    w.family("syncmesh_link_up", "gauge", "1 if this daemon believes the link is up.")
    for name, up in core.link_view().items():
        w.sample("syncmesh_link_up", int(up), link=name)
    w.family("syncmesh_link_changed_seconds", "gauge",
             "When (Unix time, this daemon's clock) its belief about the link last changed.")
    for name, at in sorted(core.view_changed_at.items()):
        w.sample("syncmesh_link_changed_seconds", at, link=name)

    if core.is_leaf:
        w.family("syncmesh_remote_level", "gauge",
                 "Remote congestion level this leaf uses per destination leaf and path "
                 "(the spine's profile, aged when stale; the top level when unknown).")
        w.family("syncmesh_remote_level_written_seconds", "gauge",
                 "When (Unix time) the switch write carrying that level completed.")
        w.family("syncmesh_remote_congested_since_seconds", "gauge",
                 "For paths written with a level in the top two: when (Unix time) the write "
                 "that brought them there completed.")
        written = switch.remote_written if switch is not None else {}
        since = switch.congested_since if switch is not None else {}
        for op in sorted((op for op in core.programmed.values()
                          if isinstance(op, RemoteCongestion)), key=lambda o: o.key):
            w.sample("syncmesh_remote_level", op.level, dst_leaf=op.dst_leaf, path=op.index)
            level_at = written.get((op.dst_leaf, op.index))
            if level_at is not None and level_at[0] == op.level:
                w.sample("syncmesh_remote_level_written_seconds", level_at[1],
                         dst_leaf=op.dst_leaf, path=op.index)
            if (op.dst_leaf, op.index) in since:
                w.sample("syncmesh_remote_congested_since_seconds",
                         since[op.dst_leaf, op.index], dst_leaf=op.dst_leaf, path=op.index)
    pub = core.publisher
    sent = pub.last_sent if pub is not None else None
    if pub is not None and sent is not None:
        w.family("syncmesh_profile_level", "gauge",
                 "This spine's published congestion level toward each destination leaf.")
        w.family("syncmesh_profile_level_changed_seconds", "gauge",
                 "When (Unix time) that published level last changed.")
        w.family("syncmesh_profile_congested_since_seconds", "gauge",
                 "For destinations published with a level in the top two: since when.")
        for dst, level in sorted(sent.items()):
            w.sample("syncmesh_profile_level", level, dst_leaf=dst)
            if dst in pub.changed_at:
                w.sample("syncmesh_profile_level_changed_seconds", pub.changed_at[dst],
                         dst_leaf=dst)
            if dst in pub.congested_since:
                w.sample("syncmesh_profile_congested_since_seconds", pub.congested_since[dst],
                         dst_leaf=dst)
    if switch is not None:
        w.family("syncmesh_switch_ready", "gauge",
                 "1 while the switch session is up and its entries reconciled.")
        w.sample("syncmesh_switch_ready", int(switch.ready))
        w.family("syncmesh_switch_writes_total", "counter",
                 "P4Runtime write batches (one per change, what piled up merged).")
        w.sample("syncmesh_switch_writes_total", switch.writes)

    st = core.stats
    w.family("syncmesh_failovers_total", "counter", "Paths of this switch that went from live to dead.")
    w.sample("syncmesh_failovers_total", st.failovers)
    w.family("syncmesh_notices_total", "counter", "Link-end states received, by result.")
    w.sample("syncmesh_notices_total", st.notices_accepted, result="accepted")
    w.sample("syncmesh_notices_total", st.notices_stale, result="stale")
    w.family("syncmesh_profiles_total", "counter", "Profiles received, by result.")
    w.sample("syncmesh_profiles_total", st.profiles_accepted, result="accepted")
    w.sample("syncmesh_profiles_total", st.profiles_stale, result="stale")
    w.sample("syncmesh_profiles_total", st.profiles_gap, result="gap")
    w.family("syncmesh_resyncs_total", "counter", "Peer (re)joins that triggered a full resync.")
    w.sample("syncmesh_resyncs_total", st.resyncs)
    w.family("syncmesh_resync_chunks_total", "counter", "Resync chunks received and merged.")
    w.sample("syncmesh_resync_chunks_total", st.resync_chunks)
    w.family("syncmesh_stalls_total", "counter",
             "Times this daemon found it had not run for more than a keepalive interval "
             "(that time is not held against the peers).")
    w.sample("syncmesh_stalls_total", st.stalls)

    w.family("syncmesh_convergence_seconds", "histogram",
             "Time from a remote switch seeing a link change to this daemon accepting it "
             "(the last 1024 changes).")
    samples = list(st.convergence)
    for bound in CONVERGENCE_BUCKETS:
        w.sample("syncmesh_convergence_seconds_bucket", sum(1 for s in samples if s <= bound),
                 le=bound)
    w.sample("syncmesh_convergence_seconds_bucket", len(samples), le="+Inf")
    w.sample("syncmesh_convergence_seconds_sum", sum(samples))
    w.sample("syncmesh_convergence_seconds_count", len(samples))

    for name, counter, help_text in (
            ("syncmesh_messages_sent_total", transport.sent, "Messages sent, by type."),
            ("syncmesh_bytes_sent_total", transport.sent_bytes,
             "Payload bytes sent (requests, and replies as <type>_reply), by type."),
            ("syncmesh_messages_received_total", transport.received,
             "Messages received and accepted for processing, by type."),
            ("syncmesh_bytes_received_total", transport.received_bytes,
             "Payload bytes received (requests, and replies as <type>_reply), by type.")):
        w.family(name, "counter", help_text)
        for kind in sorted(counter):
            w.sample(name, counter[kind], type=kind)
    w.family("syncmesh_rejected_total", "counter",
             "Streams and messages refused, by reason; the state is unchanged.")
    for reason in REJECT_REASONS:
        w.sample("syncmesh_rejected_total", transport.rejected[reason], reason=reason)
    w.family("syncmesh_rejected_by_peer_total", "counter",
             "Streams and messages refused, by peer (or client address) and reason.")
    for (who, reason), n in sorted(transport.rejected_by_peer.items()):
        w.sample("syncmesh_rejected_by_peer_total", n, peer=who, reason=reason)
    w.family("syncmesh_sessions_total", "counter", "Session streams opened, by peer.")
    for peer in sorted(transport.sessions):
        w.sample("syncmesh_sessions_total", transport.sessions[peer], peer=peer)
    w.family("syncmesh_dropped_total", "counter",
             "Messages not queued on a full peer queue (that session was ended).")
    w.sample("syncmesh_dropped_total", transport.dropped)
    return "\n".join(w.lines) + "\n"


_SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    """Samples of a metrics page keyed by (name, frozenset of (label, value))."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE_RE.match(line)
        if not m:
            raise ValueError(f"not a metrics sample: {line!r}")
        labels = frozenset(_LABEL_RE.findall(m[3] or ""))
        out[m[1], labels] = float(m[4])
    return out


class MetricsServer:
    """A minimal HTTP/1.1 server for ``GET /metrics`` on a loopback address."""

    def __init__(self, host: str, port: int, page: Callable[[], str]):
        self.host = host
        self.port = port
        self.page = page
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (useful with port 0)."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):  # not wait_for: it can swallow a cancellation
                request = await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            parts = request.decode("latin-1").split()
            if len(parts) >= 2 and parts[0] == "GET" and parts[1].split("?")[0] == "/metrics":
                status, body = "200 OK", self.page().encode()
                ctype = "text/plain; version=0.0.4; charset=utf-8"
            else:
                status, body, ctype = "404 Not Found", b"try /metrics\n", "text/plain"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                         + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

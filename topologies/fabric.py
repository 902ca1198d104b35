"""Fabric description: one file that drives Mininet, the SyncMesh daemons and the simulator.

A fabric is a two-tier leaf-spine network: leaves (ToR switches) carry hosts,
spines connect leaves; links run only between a leaf and a spine and may be
parallel (a bundle). Hosts have several NICs (rails), each on a leaf port.

File format (YAML, or JSON with a ``.json`` suffix)::

    name: small
    cpu_port: 255                  # optional, the switches' CPU port
    control:                       # optional, where each switch's services listen
      address: 127.0.0.1
      p4runtime_base: 50000        # P4Runtime port = base + switch id
      syncmesh_base: 52000         # SyncMesh gRPC port = base + switch id
      metrics_base: 54000          # SyncMesh metrics (HTTP) port = base + switch id
    switches:
      - {name: l1, role: leaf, id: 1, subnet: 10.0.1.0/24}
      - {name: s1, role: spine, id: 101}
    links:
      - {a: {switch: l1, port: 3}, b: {switch: s1, port: 1}, capacity: 100Mbit}
      - {a: {switch: l1, port: 4}, b: {switch: s1, port: 2}, capacity: 50Mbit, status: down}
    hosts:
      - name: h1
        nics:
          - {name: eth0, leaf: l1, port: 1, mac: "02:00:00:01:00:01", ip: 10.0.1.10,
             capacity: 100Mbit}

Capacities are written with a unit (``Gbit``, ``Mbit``, ``Kbit``; ``bps``
spellings and a ``/s`` suffix accepted) and kept in Mbit/s. Names are at most
8 characters so that Mininet's interface names (``<node>-eth<port>``) fit the
kernel's 15-character limit. Every problem is reported as a ``FabricError``
naming the file, the key path and, for YAML, the line.
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MAX_PORT = 511  # BMv2 and the v1model standard metadata use 9-bit ports
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,7}$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
CAPACITY_RE = re.compile(
    r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[GMK])(?:bit|bps)(?:/s)?\s*$", re.IGNORECASE
)
UNIT_MBPS = {"G": 1000.0, "M": 1.0, "K": 0.001}


class FabricError(ValueError):
    """A fabric description that cannot be used; names the file, key path and line."""

    def __init__(self, message: str, file: str = "<fabric>", path: str = "", line: int | None = None):
        self.file = file
        self.path = path
        self.line = line
        self.message = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {path}: {message}" if path else f"{where}: {message}")


class Role(enum.StrEnum):
    """The tier a switch sits in."""

    LEAF = "leaf"
    SPINE = "spine"


@dataclass(frozen=True)
class Endpoint:
    """One end of a link: a switch and its data-plane port."""

    switch: str
    port: int


@dataclass(frozen=True)
class Link:
    """A leaf-spine link; ``leaf`` is always the leaf end, ``spine`` the spine end."""

    leaf: Endpoint
    spine: Endpoint
    capacity_mbps: float
    """Line rate in Mbit/s (a reduced link is written with its reduced rate)."""
    up: bool = True
    """False for a link that starts failed (``status: down``)."""

    @property
    def name(self) -> str:
        """Stable name, e.g. ``l1:3-s1:1``."""
        return f"{self.leaf.switch}:{self.leaf.port}-{self.spine.switch}:{self.spine.port}"


@dataclass(frozen=True)
class Switch:
    """A leaf or spine switch."""

    name: str
    role: Role
    id: int
    """Fabric-wide unique id; also the P4Runtime device id."""
    subnet: ipaddress.IPv4Network | None = None
    """Leaves only: the subnet of the hosts' NICs attached to this leaf."""
    p4runtime: str = ""
    """host:port of the switch's P4Runtime server."""
    syncmesh: str = ""
    """host:port of the switch's SyncMesh daemon."""
    metrics: str = ""
    """host:port of the SyncMesh daemon's metrics endpoint."""

    @property
    def is_leaf(self) -> bool:
        """True for a leaf (ToR) switch."""
        return self.role is Role.LEAF


@dataclass(frozen=True)
class Nic:
    """A host NIC (one rail) attached to a leaf port."""

    name: str
    leaf: str
    port: int
    mac: str
    """Lower-case colon-separated MAC address."""
    ip: ipaddress.IPv4Address
    capacity_mbps: float


@dataclass(frozen=True)
class Host:
    """A host (training node) with one NIC per rail."""

    name: str
    nics: tuple[Nic, ...]


@dataclass(frozen=True)
class Control:
    """Where each switch's control services listen by default."""

    address: str = "127.0.0.1"
    p4runtime_base: int = 50000
    """P4Runtime port of a switch = this + switch id."""
    syncmesh_base: int = 52000
    """SyncMesh port of a switch = this + switch id."""
    metrics_base: int = 54000
    """Metrics (HTTP) port of a switch's daemon = this + switch id."""


@dataclass(frozen=True)
class PortInfo:
    """What sits behind one switch port."""

    switch: str
    port: int
    kind: str
    """``"fabric"`` (a leaf-spine link) or ``"host"`` (a host NIC)."""
    peer: str
    """The switch (fabric) or host (host) at the other end."""
    peer_port: int | str
    """The peer's port number (fabric) or NIC name (host)."""
    capacity_mbps: float
    up: bool = True


@dataclass(frozen=True)
class Fabric:
    """A validated leaf-spine fabric. Build it with ``load``, ``parse`` or ``leaf_spine``."""

    name: str
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    hosts: tuple[Host, ...] = ()
    cpu_port: int = 255
    control: Control = field(default_factory=Control)

    def __post_init__(self) -> None:
        _check_fabric(self, "<fabric>", {})

    # -- lookups -------------------------------------------------------------
    def switch(self, name: str) -> Switch:
        """The switch called ``name`` (KeyError if none)."""
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(f"no switch {name!r} in fabric {self.name!r}")

    def host(self, name: str) -> Host:
        """The host called ``name`` (KeyError if none)."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no host {name!r} in fabric {self.name!r}")

    @property
    def leaves(self) -> tuple[Switch, ...]:
        """Leaf switches in file order."""
        return tuple(s for s in self.switches if s.role is Role.LEAF)

    @property
    def spines(self) -> tuple[Switch, ...]:
        """Spine switches in file order."""
        return tuple(s for s in self.switches if s.role is Role.SPINE)

    def links_of(self, switch: str) -> tuple[Link, ...]:
        """Links with one end on ``switch``."""
        return tuple(lk for lk in self.links if switch in (lk.leaf.switch, lk.spine.switch))

    def links_between(self, leaf: str, spine: str) -> tuple[Link, ...]:
        """The bundle of parallel links between a leaf and a spine, in file order."""
        return tuple(lk for lk in self.links if lk.leaf.switch == leaf and lk.spine.switch == spine)

    def ports(self, switch: str) -> dict[int, PortInfo]:
        """Every used port of ``switch`` with what is behind it."""
        out: dict[int, PortInfo] = {}
        for lk in self.links:
            if lk.leaf.switch == switch:
                out[lk.leaf.port] = PortInfo(switch, lk.leaf.port, "fabric", lk.spine.switch,
                                             lk.spine.port, lk.capacity_mbps, lk.up)
            if lk.spine.switch == switch:
                out[lk.spine.port] = PortInfo(switch, lk.spine.port, "fabric", lk.leaf.switch,
                                              lk.leaf.port, lk.capacity_mbps, lk.up)
        for h in self.hosts:
            for nic in h.nics:
                if nic.leaf == switch:
                    out[nic.port] = PortInfo(switch, nic.port, "host", h.name, nic.name,
                                             nic.capacity_mbps)
        return dict(sorted(out.items()))

    def leaf_of_ip(self, ip: str | ipaddress.IPv4Address) -> Switch | None:
        """The leaf whose subnet holds ``ip``, or None."""
        addr = ipaddress.IPv4Address(ip)
        for leaf in self.leaves:
            if leaf.subnet is not None and addr in leaf.subnet:
                return leaf
        return None

    def nic_interface(self, nic: Nic) -> ipaddress.IPv4Interface:
        """The NIC's address with its leaf's prefix length (e.g. ``10.0.1.10/24``)."""
        subnet = self.switch(nic.leaf).subnet
        assert subnet is not None
        return ipaddress.IPv4Interface(f"{nic.ip}/{subnet.prefixlen}")

    def with_link(self, link: Link, *, capacity_mbps: float | None = None,
                  up: bool | None = None) -> Fabric:
        """A copy with one link's capacity and/or status changed."""
        if link not in self.links:
            raise KeyError(f"link {link.name} not in fabric {self.name!r}")
        new = dataclasses.replace(
            link,
            capacity_mbps=link.capacity_mbps if capacity_mbps is None else float(capacity_mbps),
            up=link.up if up is None else up,
        )
        return dataclasses.replace(self, links=tuple(new if lk == link else lk for lk in self.links))


# -- parsing ---------------------------------------------------------------


def parse_capacity(value: Any, file: str = "<fabric>", path: str = "capacity",
                   line: int | None = None) -> float:
    """Capacity with a unit (``"100Mbit"``, ``"10 Gbit/s"``, ``"1.5Gbps"``) in Mbit/s."""
    if isinstance(value, str):
        m = CAPACITY_RE.match(value)
        if m:
            mbps = float(m["num"]) * UNIT_MBPS[m["unit"].upper()]
            if mbps > 0:
                return mbps
            raise FabricError(f"capacity must be positive, got {value!r}", file, path, line)
    raise FabricError(
        f"capacity needs a unit, e.g. '100Mbit' or '10Gbit', got {value!r}", file, path, line)


def format_capacity(mbps: float) -> str:
    """Capacity in the file's notation, the largest unit that keeps it whole."""
    if mbps >= 1000 and (mbps / 1000).is_integer():
        return f"{int(mbps // 1000)}Gbit"
    if float(mbps).is_integer():
        return f"{int(mbps)}Mbit"
    if (mbps * 1000).is_integer():
        return f"{int(mbps * 1000)}Kbit"
    return f"{mbps!r}Mbit"


class _Source:
    """A parsed document plus the line of every key path (YAML only)."""

    def __init__(self, file: str, data: Any, lines: dict[str, int]):
        self.file = file
        self.data = data
        self.lines = lines

    def error(self, path: str, message: str) -> FabricError:
        return FabricError(message, self.file, path, self.lines.get(path))


def _yaml_to_python(node: yaml.Node, path: str, lines: dict[str, int], file: str) -> Any:
    """Convert a composed YAML node, recording lines and refusing duplicate keys."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise FabricError("keys must be plain names", file, path or "<top>",
                                  key_node.start_mark.line + 1)
            key = key_node.value
            sub = f"{path}.{key}" if path else str(key)
            if key in out:
                raise FabricError(f"duplicate key {key!r}", file, sub, key_node.start_mark.line + 1)
            out[key] = _yaml_to_python(value_node, sub, lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_yaml_to_python(v, f"{path}[{i}]", lines, file) for i, v in enumerate(node.value)]
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _read(path: Path) -> _Source:
    file = str(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise FabricError(f"cannot read: {e.strerror or e}", file) from None
    return _parse_text(text, file, json_syntax=path.suffix.lower() == ".json")


def _parse_text(text: str, file: str, json_syntax: bool) -> _Source:
    if json_syntax:
        try:
            return _Source(file, json.loads(text), {})
        except json.JSONDecodeError as e:
            raise FabricError(f"invalid JSON: {e.msg} (column {e.colno})", file, line=e.lineno) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        raise FabricError(f"invalid YAML: {problem}", file,
                          line=None if mark is None else mark.line + 1) from None
    if node is None:
        raise FabricError("empty fabric description", file)
    lines: dict[str, int] = {}
    return _Source(file, _yaml_to_python(node, "", lines, file), lines)


def load(path: str | Path) -> Fabric:
    """Read and validate a fabric description file (YAML, or JSON by suffix)."""
    return _build(_read(Path(path)))


def parse(text: str, file: str = "<string>", json_syntax: bool = False) -> Fabric:
    """Validate a fabric description given as text."""
    return _build(_parse_text(text, file, json_syntax))


def from_dict(data: Mapping[str, Any], file: str = "<dict>") -> Fabric:
    """Validate a fabric description already loaded into Python objects."""
    return _build(_Source(file, data, {}))


def _mapping(src: _Source, value: Any, path: str, required: Iterable[str],
             optional: Iterable[str]) -> dict[str, Any]:
    """Check a mapping has exactly the allowed keys; return it."""
    if not isinstance(value, dict):
        raise src.error(path, f"expected a mapping, got {type(value).__name__}")
    required = tuple(required)
    allowed = set(required) | set(optional)
    for key in value:
        if key not in allowed:
            sub = f"{path}.{key}" if path else str(key)
            raise src.error(sub, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")
    for key in required:
        if key not in value:
            raise src.error(path or "<top>", f"missing key {key!r}")
    return value


def _typed(src: _Source, value: Any, path: str, kind: type, what: str) -> Any:
    # bool is an int in Python; a YAML 'yes' must not pass as a port number
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise src.error(path, f"expected {what}, got {value!r}")
    return value


def _name(src: _Source, value: Any, path: str) -> str:
    _typed(src, value, path, str, "a name")
    if not NAME_RE.match(value):
        raise src.error(path, f"bad name {value!r}: a letter then letters/digits/_, "
                              "at most 8 characters")
    return value


def _port(src: _Source, value: Any, path: str, cpu_port: int) -> int:
    _typed(src, value, path, int, "a port number")
    if not 1 <= value <= MAX_PORT:
        raise src.error(path, f"port {value} out of range 1..{MAX_PORT}")
    if value == cpu_port:
        raise src.error(path, f"port {value} is the CPU port")
    return value


def _build(src: _Source) -> Fabric:
    top = _mapping(src, src.data, "", ("name", "switches", "links"),
                   ("cpu_port", "control", "hosts"))
    name = _typed(src, top["name"], "name", str, "a string")
    cpu_port = _typed(src, top.get("cpu_port", 255), "cpu_port", int, "a port number")
    if not 1 <= cpu_port <= MAX_PORT:
        raise src.error("cpu_port", f"port {cpu_port} out of range 1..{MAX_PORT}")

    control = Control()
    if "control" in top:
        c = _mapping(src, top["control"], "control", (), ("address", "p4runtime_base",
                                                           "syncmesh_base", "metrics_base"))
        control = Control(
            address=_typed(src, c.get("address", control.address), "control.address", str,
                           "an address"),
            p4runtime_base=_typed(src, c.get("p4runtime_base", control.p4runtime_base),
                                  "control.p4runtime_base", int, "a TCP port"),
            syncmesh_base=_typed(src, c.get("syncmesh_base", control.syncmesh_base),
                                 "control.syncmesh_base", int, "a TCP port"),
            metrics_base=_typed(src, c.get("metrics_base", control.metrics_base),
                                "control.metrics_base", int, "a TCP port"),
        )

    switches = []
    for i, raw in enumerate(_typed(src, top["switches"], "switches", list, "a list")):
        p = f"switches[{i}]"
        s = _mapping(src, raw, p, ("name", "role", "id"),
                     ("subnet", "p4runtime", "syncmesh", "metrics"))
        role_txt = _typed(src, s["role"], f"{p}.role", str, "'leaf' or 'spine'")
        if role_txt not in ("leaf", "spine"):
            raise src.error(f"{p}.role", f"role must be 'leaf' or 'spine', got {role_txt!r}")
        subnet = None
        if "subnet" in s:
            txt = _typed(src, s["subnet"], f"{p}.subnet", str, "a subnet like 10.0.1.0/24")
            try:
                subnet = ipaddress.IPv4Network(txt)
            except ValueError as e:
                raise src.error(f"{p}.subnet", f"bad subnet {txt!r}: {e}") from None
        sid = _typed(src, s["id"], f"{p}.id", int, "an integer id")
        if any(sw.name == s["name"] for sw in switches):
            raise src.error(f"{p}.name", f"name {s['name']!r} already used by another switch")
        switches.append(Switch(
            name=_name(src, s["name"], f"{p}.name"),
            role=Role(role_txt),
            id=sid,
            subnet=subnet,
            p4runtime=_typed(src, s.get("p4runtime", ""), f"{p}.p4runtime", str, "host:port"),
            syncmesh=_typed(src, s.get("syncmesh", ""), f"{p}.syncmesh", str, "host:port"),
            metrics=_typed(src, s.get("metrics", ""), f"{p}.metrics", str, "host:port"),
        ))

    links = []
    sides: dict[int, tuple[str, str]] = {}  # which file key held the leaf / the spine end
    for i, raw in enumerate(_typed(src, top["links"], "links", list, "a list")):
        p = f"links[{i}]"
        lk = _mapping(src, raw, p, ("a", "b", "capacity"), ("status",))
        ends = []
        for side in ("a", "b"):
            e = _mapping(src, lk[side], f"{p}.{side}", ("switch", "port"), ())
            ends.append(Endpoint(_name(src, e["switch"], f"{p}.{side}.switch"),
                                 _port(src, e["port"], f"{p}.{side}.port", cpu_port)))
        status = lk.get("status", "up")
        if status not in ("up", "down"):
            raise src.error(f"{p}.status", f"status must be 'up' or 'down', got {status!r}")
        roles = {sw.name: sw.role for sw in switches}
        for side, end in zip(("a", "b"), ends, strict=True):
            if end.switch not in roles:
                raise src.error(f"{p}.{side}.switch", f"unknown switch {end.switch!r}")
        a, b = ends
        if roles[a.switch] == roles[b.switch]:
            raise src.error(p, f"links must join a leaf and a spine; {a.switch} and {b.switch} "
                               f"are both {roles[a.switch].value}s")
        leaf, spine = (a, b) if roles[a.switch] is Role.LEAF else (b, a)
        sides[i] = ("a", "b") if leaf is a else ("b", "a")
        links.append(Link(leaf, spine,
                          parse_capacity(lk["capacity"], src.file, f"{p}.capacity",
                                         src.lines.get(f"{p}.capacity")),
                          up=status == "up"))

    hosts = []
    for i, raw in enumerate(_typed(src, top.get("hosts", []), "hosts", list, "a list")):
        p = f"hosts[{i}]"
        h = _mapping(src, raw, p, ("name", "nics"), ())
        nics = []
        raw_nics = _typed(src, h["nics"], f"{p}.nics", list, "a list")
        if not raw_nics:
            raise src.error(f"{p}.nics", "a host needs at least one NIC")
        for j, raw_nic in enumerate(raw_nics):
            q = f"{p}.nics[{j}]"
            n = _mapping(src, raw_nic, q, ("leaf", "port", "mac", "ip", "capacity"), ("name",))
            if isinstance(n["mac"], int) and not isinstance(n["mac"], bool):
                # YAML 1.1 reads an unquoted 12:34:56:... as a base-60 number
                raise src.error(f"{q}.mac", "quote MAC addresses in YAML, e.g. "
                                            "mac: \"12:34:56:78:9a:bc\"")
            mac = _typed(src, n["mac"], f"{q}.mac", str, "a MAC address")
            if not MAC_RE.match(mac):
                raise src.error(f"{q}.mac", f"bad MAC address {mac!r}")
            ip_txt = _typed(src, n["ip"], f"{q}.ip", str, "an IPv4 address")
            try:
                ip = ipaddress.IPv4Address(ip_txt)
            except ValueError:
                raise src.error(f"{q}.ip", f"bad IPv4 address {ip_txt!r}") from None
            nic_name = n.get("name", f"eth{j}")
            _typed(src, nic_name, f"{q}.name", str, "an interface name")
            if not re.match(r"^[A-Za-z][A-Za-z0-9]{0,5}$", nic_name):
                raise src.error(f"{q}.name", f"bad NIC name {nic_name!r}: letters/digits, "
                                             "at most 6 characters")
            nics.append(Nic(nic_name, _name(src, n["leaf"], f"{q}.leaf"),
                            _port(src, n["port"], f"{q}.port", cpu_port), mac.lower(), ip,
                            parse_capacity(n["capacity"], src.file, f"{q}.capacity",
                                           src.lines.get(f"{q}.capacity"))))
        hosts.append(Host(_name(src, h["name"], f"{p}.name"), tuple(nics)))

    switches = [_with_addresses(sw, control) for sw in switches]
    # Build without __post_init__ first so that consistency errors carry file paths/lines.
    fab = object.__new__(Fabric)
    for k, v in dict(name=name, switches=tuple(switches), links=tuple(links),
                     hosts=tuple(hosts), cpu_port=cpu_port, control=control).items():
        object.__setattr__(fab, k, v)
    _check_fabric(fab, src.file, src.lines, sides)
    return fab


def _with_addresses(sw: Switch, control: Control) -> Switch:
    return dataclasses.replace(
        sw,
        p4runtime=sw.p4runtime or f"{control.address}:{control.p4runtime_base + sw.id}",
        syncmesh=sw.syncmesh or f"{control.address}:{control.syncmesh_base + sw.id}",
        metrics=sw.metrics or f"{control.address}:{control.metrics_base + sw.id}",
    )


def _check_fabric(fab: Fabric, file: str, lines: dict[str, int],
                  sides: dict[int, tuple[str, str]] | None = None) -> None:
    """Cross-object consistency: unique names/ids/ports/addresses, leaf-spine reachability."""

    sides = sides or {}

    def err(path: str, message: str) -> FabricError:
        return FabricError(message, file, path, lines.get(path))

    if not fab.switches:
        raise err("switches", "a fabric needs at least one switch")
    names: dict[str, str] = {}
    ids: dict[int, str] = {}
    for i, sw in enumerate(fab.switches):
        p = f"switches[{i}]"
        if sw.name in names:
            raise err(f"{p}.name", f"name {sw.name!r} already used by {names[sw.name]}")
        names[sw.name] = p
        if not 1 <= sw.id <= 0xFFFF:
            raise err(f"{p}.id", f"id {sw.id} out of range 1..65535")
        if sw.id in ids:
            raise err(f"{p}.id", f"id {sw.id} already used by {ids[sw.id]}")
        ids[sw.id] = p
        if sw.role is Role.LEAF and sw.subnet is None:
            raise err(p, f"leaf {sw.name!r} needs a 'subnet' for its hosts")
        if sw.role is Role.SPINE and sw.subnet is not None:
            raise err(f"{p}.subnet", f"spine {sw.name!r} cannot have a subnet")
        for key in ("p4runtime", "syncmesh", "metrics"):
            addr = getattr(sw, key)
            if addr and (not re.match(r"^[^\s:]+:\d{1,5}$", addr)
                         or not 0 < int(addr.rsplit(":", 1)[1]) < 65536):
                raise err(f"{p}.{key}", f"expected host:port with a TCP port, got {addr!r}"
                          + ("" if f"{p}.{key}" in lines else " (derived from 'control')"))
    subnets = [(f"switches[{i}].subnet", s) for i, s in enumerate(fab.switches) if s.subnet]
    for i, (pa, na) in enumerate(subnets):
        for pb, nb in subnets[:i]:
            if na.subnet.overlaps(nb.subnet):
                raise err(pa, f"subnet {na.subnet} of {na.name!r} overlaps {nb.subnet} of "
                              f"{nb.name!r} ({pb})")

    used: dict[tuple[str, int], str] = {}

    def claim(switch: str, port: int, path: str) -> None:
        if (switch, port) in used:
            raise err(path, f"port {port} of {switch!r} already used by {used[switch, port]}")
        used[switch, port] = path.rsplit(".", 1)[0]

    for i, lk in enumerate(fab.links):
        p = f"links[{i}]"
        for end in (lk.leaf, lk.spine):
            if end.switch not in names:
                raise err(p, f"unknown switch {end.switch!r}")
        if fab.switch(lk.leaf.switch).role is not Role.LEAF or \
                fab.switch(lk.spine.switch).role is not Role.SPINE:
            raise err(p, "links must join a leaf and a spine")
        if not lk.capacity_mbps > 0:
            raise err(f"{p}.capacity", "capacity must be positive")
        leaf_key, spine_key = sides.get(i, ("leaf", "spine"))
        claim(lk.leaf.switch, lk.leaf.port, f"{p}.{leaf_key}.port")
        claim(lk.spine.switch, lk.spine.port, f"{p}.{spine_key}.port")

    host_names: dict[str, str] = {}
    macs: dict[str, str] = {}
    ips: dict[ipaddress.IPv4Address, str] = {}
    for i, h in enumerate(fab.hosts):
        p = f"hosts[{i}]"
        if h.name in names or h.name in host_names:
            raise err(f"{p}.name", f"name {h.name!r} already used by "
                                   f"{names.get(h.name) or host_names[h.name]}")
        host_names[h.name] = p
        nic_names: set[str] = set()
        for j, nic in enumerate(h.nics):
            q = f"{p}.nics[{j}]"
            if nic.name in nic_names:
                raise err(f"{q}.name", f"NIC name {nic.name!r} used twice on host {h.name!r}")
            nic_names.add(nic.name)
            if nic.leaf not in names:
                raise err(f"{q}.leaf", f"unknown switch {nic.leaf!r}")
            leaf = fab.switch(nic.leaf)
            if leaf.role is not Role.LEAF:
                raise err(f"{q}.leaf", f"hosts attach to leaves; {nic.leaf!r} is a spine")
            claim(nic.leaf, nic.port, f"{q}.port")
            mac_bytes = bytes.fromhex(nic.mac.replace(":", ""))
            if mac_bytes[0] & 1:
                raise err(f"{q}.mac", f"{nic.mac} is a multicast address")
            if nic.mac in macs:
                raise err(f"{q}.mac", f"MAC {nic.mac} already used by {macs[nic.mac]}")
            macs[nic.mac] = q
            if nic.ip in ips:
                raise err(f"{q}.ip", f"IP {nic.ip} already used by {ips[nic.ip]}")
            ips[nic.ip] = q
            assert leaf.subnet is not None
            if nic.ip not in leaf.subnet:
                raise err(f"{q}.ip", f"{nic.ip} is not in {nic.leaf}'s subnet {leaf.subnet}")
            if leaf.subnet.prefixlen < 31 and nic.ip in (leaf.subnet.network_address,
                                                         leaf.subnet.broadcast_address):
                raise err(f"{q}.ip", f"{nic.ip} is the network or broadcast address of "
                                     f"{leaf.subnet}")
            if not nic.capacity_mbps > 0:
                raise err(f"{q}.capacity", "capacity must be positive")

    # Every leaf must reach every other leaf through some spine (two-tier: one spine hop).
    spines_of: dict[str, set[str]] = {s.name: set() for s in fab.leaves}
    for lk in fab.links:
        spines_of[lk.leaf.switch].add(lk.spine.switch)
    for i, sw in enumerate(fab.switches):
        if sw.role is Role.SPINE and not any(lk.spine.switch == sw.name for lk in fab.links):
            raise err(f"switches[{i}]", f"spine {sw.name!r} has no links")
    leaves = fab.leaves
    if len(leaves) > 1 or fab.spines:
        for i, sw in enumerate(fab.switches):
            if sw.role is Role.LEAF and not spines_of[sw.name]:
                raise err(f"switches[{i}]", f"leaf {sw.name!r} has no uplinks")
    for i, a in enumerate(leaves):
        for b in leaves[:i]:
            if not spines_of[a.name] & spines_of[b.name]:
                raise err("links", f"leaves {b.name!r} and {a.name!r} share no spine, so "
                                   "they cannot reach each other")


# -- dumping ---------------------------------------------------------------


def to_dict(fab: Fabric) -> dict[str, Any]:
    """The fabric as plain data in the file format (addresses written explicitly)."""
    return {
        "name": fab.name,
        "cpu_port": fab.cpu_port,
        "control": dataclasses.asdict(fab.control),
        "switches": [
            {"name": s.name, "role": s.role.value, "id": s.id,
             **({"subnet": str(s.subnet)} if s.subnet else {}),
             "p4runtime": s.p4runtime, "syncmesh": s.syncmesh, "metrics": s.metrics}
            for s in fab.switches
        ],
        "links": [
            {"a": {"switch": lk.leaf.switch, "port": lk.leaf.port},
             "b": {"switch": lk.spine.switch, "port": lk.spine.port},
             "capacity": format_capacity(lk.capacity_mbps),
             **({} if lk.up else {"status": "down"})}
            for lk in fab.links
        ],
        "hosts": [
            {"name": h.name, "nics": [
                {"name": n.name, "leaf": n.leaf, "port": n.port, "mac": n.mac, "ip": str(n.ip),
                 "capacity": format_capacity(n.capacity_mbps)} for n in h.nics]}
            for h in fab.hosts
        ],
    }


def dump(fab: Fabric, path: str | Path | None = None) -> str:
    """The fabric as YAML text (also written to ``path`` when given); ``load`` reads it back."""
    text = yaml.safe_dump(to_dict(fab), sort_keys=False, default_flow_style=None, width=100)
    if path is not None:
        p = Path(path)
        p.write_text(json.dumps(to_dict(fab), indent=2) + "\n" if p.suffix.lower() == ".json"
                     else text)
    return text


# -- generator -------------------------------------------------------------


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, nics_per_host: int = 1, *,
               links_per_pair: int = 1, link_capacity: str = "100Mbit",
               nic_capacity: str = "100Mbit", name: str | None = None,
               cpu_port: int = 255, control: Control | None = None) -> Fabric:
    """A symmetric leaf-spine fabric with rail-optimised multi-NIC hosts.

    Leaves are grouped in pods of ``nics_per_host`` consecutive leaves; a host
    in a pod has NIC k (rail k) on the pod's k-th leaf, so every leaf carries
    ``hosts_per_leaf`` NICs. Leaf ports 1..hosts_per_leaf face hosts, the
    following ports are uplinks (``links_per_pair`` parallel links per spine).
    Leaves get ids 1..L, spines L+1..L+S; leaf i has subnet 10.<i//256>.<i%256>.0/24.
    """
    for label, v, lo in (("leaves", leaves, 1), ("spines", spines, 1),
                         ("hosts_per_leaf", hosts_per_leaf, 0), ("nics_per_host", nics_per_host, 1),
                         ("links_per_pair", links_per_pair, 1)):
        if not isinstance(v, int) or v < lo:
            raise FabricError(f"{label} must be an integer >= {lo}, got {v!r}", "leaf_spine")
    if leaves % nics_per_host:
        raise FabricError(f"leaves ({leaves}) must be a multiple of nics_per_host "
                          f"({nics_per_host}) for rail-optimised hosts", "leaf_spine")
    if hosts_per_leaf + spines * links_per_pair > MAX_PORT - 1 or leaves * links_per_pair > MAX_PORT - 1:
        raise FabricError("too many ports per switch for this fabric", "leaf_spine")
    link_mbps = parse_capacity(link_capacity, "leaf_spine", "link_capacity")
    nic_mbps = parse_capacity(nic_capacity, "leaf_spine", "nic_capacity")
    control = control or Control()

    leaf_sw = [Switch(f"l{i}", Role.LEAF, i,
                      ipaddress.IPv4Network(f"10.{i // 256}.{i % 256}.0/24"))
               for i in range(1, leaves + 1)]
    spine_sw = [Switch(f"s{j}", Role.SPINE, leaves + j) for j in range(1, spines + 1)]
    links = []
    for li, leaf in enumerate(leaf_sw):
        for sj, spine in enumerate(spine_sw):
            for m in range(links_per_pair):
                links.append(Link(
                    Endpoint(leaf.name, hosts_per_leaf + 1 + sj * links_per_pair + m),
                    Endpoint(spine.name, 1 + li * links_per_pair + m),
                    link_mbps))
    hosts = []
    pods = leaves // nics_per_host
    for pod in range(pods):
        for j in range(hosts_per_leaf):
            hnum = pod * hosts_per_leaf + j + 1
            nics = []
            for k in range(nics_per_host):
                leaf = leaf_sw[pod * nics_per_host + k]
                nics.append(Nic(
                    f"eth{k}", leaf.name, j + 1,
                    f"02:00:{leaf.id >> 8:02x}:{leaf.id & 0xFF:02x}:00:{j + 1:02x}",
                    ipaddress.IPv4Address(int(leaf.subnet.network_address) + 10 + j),
                    nic_mbps))
            hosts.append(Host(f"h{hnum}", tuple(nics)))
    return Fabric(
        name=name or f"ls{leaves}x{spines}",
        switches=tuple(_with_addresses(s, control) for s in leaf_sw + spine_sw),
        links=tuple(links), hosts=tuple(hosts), cpu_port=cpu_port, control=control)

"""Fabric description files: one file drives Mininet, the SyncMesh daemons and the simulator.

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
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from .model import (
    MAX_PORT,
    Control,
    Endpoint,
    Fabric,
    FabricError,
    Host,
    Link,
    Nic,
    Role,
    Switch,
    check_fabric,
    with_addresses,
)

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,7}$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
CAPACITY_RE = re.compile(
    r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[GMK])(?:bit|bps)(?:/s)?\s*$", re.IGNORECASE
)
UNIT_MBPS = {"G": 1000.0, "M": 1.0, "K": 0.001}


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
    name: str = _typed(src, value, path, str, "a name")
    if not NAME_RE.match(name):
        raise src.error(path, f"bad name {name!r}: a letter then letters/digits/_, "
                              "at most 8 characters")
    return name


def _port(src: _Source, value: Any, path: str, cpu_port: int) -> int:
    port: int = _typed(src, value, path, int, "a port number")
    if not 1 <= port <= MAX_PORT:
        raise src.error(path, f"port {port} out of range 1..{MAX_PORT}")
    if port == cpu_port:
        raise src.error(path, f"port {port} is the CPU port")
    return port


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

    switches: list[Switch] = []
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
            raw_end = _mapping(src, lk[side], f"{p}.{side}", ("switch", "port"), ())
            ends.append(Endpoint(_name(src, raw_end["switch"], f"{p}.{side}.switch"),
                                 _port(src, raw_end["port"], f"{p}.{side}.port", cpu_port)))
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

    switches = [with_addresses(sw, control) for sw in switches]
    # Build without __post_init__ first so that consistency errors carry file paths/lines.
    fab = object.__new__(Fabric)
    for k, v in dict(name=name, switches=tuple(switches), links=tuple(links),
                     hosts=tuple(hosts), cpu_port=cpu_port, control=control).items():
        object.__setattr__(fab, k, v)
    check_fabric(fab, src.file, src.lines, sides)
    return fab


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

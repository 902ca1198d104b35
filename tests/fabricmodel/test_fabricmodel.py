"""fabricmodel: loading, validation errors with locations, generator, dump round trip."""

import ipaddress
import json
from pathlib import Path

import pytest
import yaml

from fabricmodel import (
    Fabric,
    FabricError,
    Role,
    dump,
    format_capacity,
    leaf_spine,
    load,
    parse,
    parse_capacity,
    to_dict,
)

FABRICS = Path(__file__).resolve().parents[2] / "topologies" / "fabrics"

SMALL = """\
name: small
switches:
  - {name: l1, role: leaf, id: 1, subnet: 10.0.1.0/24}
  - {name: l2, role: leaf, id: 2, subnet: 10.0.2.0/24}
  - {name: s1, role: spine, id: 11}
links:
  - {a: {switch: l1, port: 3}, b: {switch: s1, port: 1}, capacity: 100Mbit}
  - {a: {switch: s1, port: 2}, b: {switch: l2, port: 3}, capacity: 1Gbit}
  - {a: {switch: l1, port: 4}, b: {switch: s1, port: 3}, capacity: 50Mbit, status: down}
hosts:
  - name: h1
    nics:
      - {leaf: l1, port: 1, mac: "02:00:00:00:01:01", ip: 10.0.1.10, capacity: 100Mbit}
      - {leaf: l2, port: 1, mac: "02:00:00:00:02:01", ip: 10.0.2.10, capacity: 100Mbit}
"""


def mutate(edit) -> str:
    """SMALL with one edit applied to its parsed form, as YAML text."""
    data = yaml.safe_load(SMALL)
    edit(data)
    return yaml.safe_dump(data, sort_keys=False)


def test_small_file_loads_with_normalised_links_and_defaults():
    fab = parse(SMALL)
    assert [s.name for s in fab.leaves] == ["l1", "l2"]
    assert [s.name for s in fab.spines] == ["s1"]
    # the second link was written spine-first: it is normalised leaf-first
    lk = fab.links[1]
    assert (lk.leaf.switch, lk.leaf.port, lk.spine.switch, lk.spine.port) == ("l2", 3, "s1", 2)
    assert lk.capacity_mbps == 1000.0
    assert fab.links[2].up is False and fab.links[0].up is True
    assert len(fab.links_between("l1", "s1")) == 2  # a parallel bundle
    assert fab.switch("s1").syncmesh == "127.0.0.1:52011"
    assert fab.switch("s1").metrics == "127.0.0.1:54011"
    assert fab.switch("l2").p4runtime == "127.0.0.1:50002"
    h1 = fab.host("h1")
    assert [n.name for n in h1.nics] == ["eth0", "eth1"]
    assert str(fab.nic_interface(h1.nics[1])) == "10.0.2.10/24"
    assert fab.leaf_of_ip("10.0.2.77").name == "l2"
    assert fab.leaf_of_ip("10.9.9.9") is None
    ports = fab.ports("l1")
    assert sorted(ports) == [1, 3, 4]
    assert ports[1].kind == "host" and ports[1].peer == "h1"
    assert ports[3].kind == "fabric" and ports[3].peer == "s1" and ports[3].peer_port == 1
    assert ports[4].up is False


@pytest.mark.parametrize("text, path, words", [
    (mutate(lambda d: d.update(extra=1)), "extra", "unknown key 'extra'"),
    (mutate(lambda d: d["switches"][0].update(colour="red")), "switches[0].colour", "unknown key"),
    (mutate(lambda d: d["links"][0]["a"].update(speed=3)), "links[0].a.speed", "unknown key"),
    (mutate(lambda d: d["switches"][2].update(role="core")), "switches[2].role", "leaf' or 'spine"),
    (mutate(lambda d: d["switches"][1].update(name="l1")), "switches[1].name", "already used"),
    (mutate(lambda d: d["switches"][2].update(id=1)), "switches[2].id", "already used"),
    (mutate(lambda d: d["switches"][0].pop("subnet")), "switches[0]", "needs a 'subnet'"),
    (mutate(lambda d: d["switches"][1].update(subnet="10.0.1.128/25")), "switches[1].subnet",
     "overlaps"),
    (mutate(lambda d: d["links"][0]["b"].update(switch="s9")), "links[0].b.switch",
     "unknown switch 's9'"),
    (mutate(lambda d: d["links"][0]["b"].update(switch="l2")), "links[0]", "both leafs"),
    (mutate(lambda d: d["links"][2]["a"].update(port=3)), "links[2].a.port", "already used"),
    # spine end written as 'a' in link 1: the error names the key the file used
    (mutate(lambda d: d["links"][1]["a"].update(port=1)), "links[1].a.port", "already used"),
    (mutate(lambda d: d["links"][0]["a"].update(port=255)), "links[0].a.port", "CPU port"),
    (mutate(lambda d: d["links"][0]["a"].update(port=600)), "links[0].a.port", "out of range"),
    (mutate(lambda d: d["links"][0]["a"].update(port=True)), "links[0].a.port", "port number"),
    (mutate(lambda d: d["links"][0].update(capacity=100)), "links[0].capacity", "needs a unit"),
    (mutate(lambda d: d["links"][0].update(capacity="0Mbit")), "links[0].capacity", "positive"),
    (mutate(lambda d: d["links"][0].update(status="flaky")), "links[0].status", "'up' or 'down'"),
    (mutate(lambda d: d["hosts"][0]["nics"][0].update(port=3)), "hosts[0].nics[0].port",
     "already used by links[0]"),
    (mutate(lambda d: d["hosts"][0]["nics"][0].update(leaf="s1")), "hosts[0].nics[0].leaf",
     "is a spine"),
    (mutate(lambda d: d["hosts"][0]["nics"][0].update(ip="10.0.2.44")), "hosts[0].nics[0].ip",
     "not in l1's subnet"),
    (mutate(lambda d: d["hosts"][0]["nics"][0].update(ip="10.0.1.0")), "hosts[0].nics[0].ip",
     "network or broadcast"),
    (mutate(lambda d: d["hosts"][0]["nics"][0].update(ip="10.0.1.300")), "hosts[0].nics[0].ip",
     "bad IPv4"),
    (mutate(lambda d: d["hosts"][0]["nics"][1].update(mac="02:00:00:00:01:01")),
     "hosts[0].nics[1].mac", "already used"),
    (mutate(lambda d: d["hosts"][0]["nics"][1].update(mac="01:00:5e:00:00:01")),
     "hosts[0].nics[1].mac", "multicast"),
    (mutate(lambda d: d["hosts"][0]["nics"][1].update(mac="02:00:00:00:01")),
     "hosts[0].nics[1].mac", "bad MAC"),
    (mutate(lambda d: d["hosts"][0].update(name="s1")), "hosts[0].name", "already used"),
    (mutate(lambda d: d["hosts"][0].update(nics=[])), "hosts[0].nics", "at least one NIC"),
    (mutate(lambda d: d["hosts"][0].update(name="averyveryverylongname")), "hosts[0].name",
     "at most 8"),
    (mutate(lambda d: d.pop("links")), "<top>", "missing key 'links'"),
    (mutate(lambda d: d["switches"][0].update(syncmesh="localhost")), "switches[0].syncmesh",
     "expected host:port"),
    (mutate(lambda d: d.update(control={"syncmesh_base": 65530})), "switches[2].syncmesh",
     "derived from 'control'"),
    (mutate(lambda d: d.update(control={"colour": 1})), "control.colour", "unknown key"),
])
def test_bad_descriptions_name_the_key_path(text, path, words):
    with pytest.raises(FabricError) as ei:
        parse(text, file="f.yaml")
    err = ei.value
    assert err.file == "f.yaml"
    assert err.path == path, str(err)
    assert words in str(err)
    assert str(err).startswith("f.yaml")


def test_unquoted_mac_gets_a_hint():
    bad = SMALL.replace('mac: "02:00:00:00:02:01"', "mac: 12:00:00:00:02:01")
    with pytest.raises(FabricError, match="quote MAC addresses") as ei:
        parse(bad)
    assert ei.value.path == "hosts[0].nics[1].mac" and ei.value.line == 14


def test_disconnected_leaves_are_refused():
    def split(d):
        d["switches"].append({"name": "s2", "role": "spine", "id": 12})
        d["links"][1]["a"]["switch"] = "s2"
    with pytest.raises(FabricError, match="share no spine"):
        parse(mutate(split))


def test_spine_without_links_is_refused():
    text = mutate(lambda d: d["switches"].append({"name": "s2", "role": "spine", "id": 12}))
    with pytest.raises(FabricError, match="spine 's2' has no links") as ei:
        parse(text)
    assert ei.value.path == "switches[3]"


def test_yaml_errors_carry_the_line():
    bad = SMALL.replace("  - {name: s1, role: spine, id: 11}",
                        "  - {name: s1, role: spine, id: 11, rack: 4}")
    with pytest.raises(FabricError) as ei:
        parse(bad, file="x.yaml")
    assert ei.value.path == "switches[2].rack"
    assert ei.value.line == 5
    assert str(ei.value).startswith("x.yaml:5: switches[2].rack: unknown key")


def test_duplicate_yaml_key_is_refused():
    bad = SMALL.replace("name: small\n", "name: small\nname: again\n")
    with pytest.raises(FabricError, match="duplicate key 'name'") as ei:
        parse(bad)
    assert ei.value.line == 2


def test_syntax_errors_are_fabric_errors(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(FabricError, match="invalid YAML") as ei:
        load(p)
    assert ei.value.file == str(p)
    j = tmp_path / "broken.json"
    j.write_text('{"name": }')
    with pytest.raises(FabricError, match="invalid JSON"):
        load(j)
    with pytest.raises(FabricError, match="cannot read"):
        load(tmp_path / "missing.yaml")
    with pytest.raises(FabricError, match="empty"):
        parse("")
    with pytest.raises(FabricError, match="expected a mapping"):
        parse("- 1\n- 2\n")


def test_json_file_loads_like_yaml(tmp_path):
    p = tmp_path / "small.json"
    p.write_text(json.dumps(yaml.safe_load(SMALL)))
    assert load(p) == parse(SMALL)


@pytest.mark.parametrize("text, mbps", [
    ("100Mbit", 100.0), ("10Gbit", 10000.0), ("1.5 Gbps", 1500.0), ("10 Mbit/s", 10.0),
    ("500Kbit", 0.5), ("2gbit", 2000.0), ("1500Kbit", 1.5), ("0.25Mbit", 0.25),
])
def test_capacity_units(text, mbps):
    assert parse_capacity(text) == mbps
    assert parse_capacity(format_capacity(mbps)) == mbps


@pytest.mark.parametrize("leaves, spines, hpl, nics, lpp", [
    (2, 2, 2, 2, 1), (4, 2, 2, 2, 1), (4, 2, 3, 2, 2), (6, 3, 1, 3, 1), (3, 1, 2, 1, 1),
])
def test_generator_is_consistent_and_rail_optimised(leaves, spines, hpl, nics, lpp):
    fab = leaf_spine(leaves, spines, hpl, nics, links_per_pair=lpp)
    assert len(fab.leaves) == leaves and len(fab.spines) == spines
    assert len(fab.links) == leaves * spines * lpp
    assert len(fab.hosts) == leaves // nics * hpl
    for h in fab.hosts:
        assert len(h.nics) == nics
        assert len({n.leaf for n in h.nics}) == nics  # one NIC per leaf of its pod
    for leaf in fab.leaves:
        host_ports = [p for p in fab.ports(leaf.name).values() if p.kind == "host"]
        assert len(host_ports) == hpl
        for spine in fab.spines:
            assert len(fab.links_between(leaf.name, spine.name)) == lpp


def test_dump_round_trips(tmp_path):
    fab = leaf_spine(4, 2, 2, 2, links_per_pair=2)
    fab = fab.with_link(fab.links[1], up=False).with_link(fab.links[2], capacity_mbps=50)
    assert parse(dump(fab)) == fab
    assert from_file(dump, fab, tmp_path / "f.yaml") == fab
    assert from_file(dump, fab, tmp_path / "f.json") == fab
    small = parse(SMALL)
    assert parse(dump(small)) == small
    assert to_dict(parse(dump(small))) == to_dict(small)


def from_file(dump_fn, fab: Fabric, path: Path) -> Fabric:
    dump_fn(fab, path)
    return load(path)


def test_generator_rejects_bad_arguments():
    with pytest.raises(FabricError, match="multiple of nics_per_host"):
        leaf_spine(3, 2, 1, 2)
    with pytest.raises(FabricError, match="spines must be"):
        leaf_spine(2, 0, 1, 1)
    with pytest.raises(FabricError, match="needs a unit"):
        leaf_spine(2, 2, 1, 1, link_capacity="fast")


def test_direct_construction_is_checked():
    fab = leaf_spine(2, 2, 1, 1)
    with pytest.raises(FabricError, match="already used"):
        Fabric(fab.name, fab.switches + fab.switches[:1], fab.links, fab.hosts)


@pytest.mark.parametrize("name", ["ls2x2", "ls4x2", "ls4x2-asym"])
def test_example_files_load(name):
    fab = load(FABRICS / f"{name}.yaml")
    assert len(fab.spines) == 2
    assert all(len(h.nics) >= 2 for h in fab.hosts)
    assert all(s.role is Role.LEAF or s.subnet is None for s in fab.switches)
    assert all(isinstance(n.ip, ipaddress.IPv4Address) for h in fab.hosts for n in h.nics)


def test_asymmetric_example_has_a_degraded_bundle():
    sym = load(FABRICS / "ls4x2.yaml")
    asym = load(FABRICS / "ls4x2-asym.yaml")
    assert all(lk.up and lk.capacity_mbps == sym.links[0].capacity_mbps for lk in sym.links)
    bundle = asym.links_between("l1", "s1")
    assert len(bundle) == 2 and [lk.up for lk in bundle] == [True, False]
    assert min(lk.capacity_mbps for lk in asym.links) == max(lk.capacity_mbps
                                                             for lk in asym.links) / 2

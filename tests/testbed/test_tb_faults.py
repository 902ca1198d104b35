"""Fault tests of issue 7 in Mininet: daemon kill and restart, link flaps, two cuts, switch restart.

One ls4x2 network with its six daemons serves every test of the module (set-up
is the expensive part); each test leaves the fabric as it found it.
"""

import re
import time
from pathlib import Path

import pytest
from syncmesh.sglb_mapping import TableWrite
from testsupport import wait_until

from fabricmodel import load
from topologies.control import ControlOptions, FabricControl
from topologies.mininet_fabric import FabricNet, NetOptions

pytestmark = [pytest.mark.mininet, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    """(FabricNet, FabricControl) of ls4x2 with node prefix tb, torn down even on failure."""
    work = tmp_path_factory.mktemp("tb-faults")
    fnet = FabricNet(load(REPO / "topologies" / "fabrics" / "ls4x2.yaml"),
                     NetOptions(prefix="tb", log_dir=work / "logs"))
    control = None
    try:
        fnet.start()
        control = FabricControl(fnet.fabric, REPO / "p4src" / "sglb.p4",
                                ControlOptions(keepalive=0.2, dead_interval=1.0, intf_prefix="tb"),
                                work_dir=work / "pipeline")
        control.start()
        control.wait_programmed()
        yield fnet, control
    finally:
        if control is not None:
            control.stop()
        fnet.stop()


def ping(fnet, src_ip, dst_ip, count=5, interval=0.1) -> int:
    """Echo replies received from h1's address ``src_ip``."""
    out = fnet.host("h1").cmd(f"ping -q -c {count} -i {interval} -W 1 -I {src_ip} {dst_ip}")
    m = re.search(r"(\d+) received", out)
    return int(m.group(1)) if m else 0


def entities(control, name):
    return control._call(control.drivers[name].read_entities())


def profiles(control, name) -> dict[int, int]:
    """dst leaf -> live_mask of a leaf's dst_profile entries as the switch holds them."""
    return {dict(e.match)["meta.dst_leaf"]: dict(e.params)["live_mask"]
            for e in entities(control, name)
            if isinstance(e, TableWrite) and e.table == "dst_profile"}


def rx_packets(control, name) -> int:
    import finsy as fy

    async def read():
        sw = control.drivers[name]._sw()
        return sum([c.packet_count async for c in sw.read(fy.P4CounterEntry("SglbIngress.port_rx"))])
    return control._call(read())


def without_congestion(es):
    """Entities with the remote congestion levels (which a new daemon relearns) left out."""
    out = set()
    for e in es:
        if isinstance(e, TableWrite) and e.table == "dst_profile":
            e = TableWrite(e.table, e.match, e.action,
                           tuple(p for p in e.params if not p[0].startswith("rq")))
        out.add(e)
    return out


def test_daemon_killed_and_restarted_during_traffic_resyncs_without_wiping(fabric):
    fnet, control = fabric
    before = without_congestion(entities(control, "l1"))
    rx_before = rx_packets(control, "l1")
    resyncs_before = sum(control.daemons[s].core.stats.resyncs for s in ("s1", "s2"))
    pinger = fnet.host("h1").popen(["ping", "-q", "-c", "40", "-i", "0.05", "-I", "10.0.1.10",
                                    "10.0.3.10"], text=True)
    control.stop_daemon("l1")
    time.sleep(1.0)
    control.restart_daemon("l1")
    wait_until(lambda: control.drivers["l1"].connected and control.drivers["l1"].book.held,
             what="restarted l1 daemon connected")
    out, _ = pinger.communicate(timeout=30)
    received = int(re.search(r"(\d+) received", out).group(1))
    assert received >= 38, out  # the data plane kept forwarding without its daemon
    wait_until(lambda: sum(control.daemons[s].core.stats.resyncs for s in ("s1", "s2"))
             > resyncs_before, what="spines resynced with the new incarnation")
    assert without_congestion(entities(control, "l1")) == before
    assert rx_packets(control, "l1") >= rx_before  # pipeline not pushed again (counters kept)


def test_link_flapping_ends_with_every_daemon_and_switch_back_up(fabric):
    fnet, control = fabric
    link = fnet.find_link("l1", "s1")
    for _ in range(5):
        fnet.set_link(link, up=False)
        time.sleep(0.15)
        fnet.set_link(link, up=True)
        time.sleep(0.15)
    wait_until(lambda: control.agree(link.name, True), what="all daemons see the link up")
    wait_until(lambda: all(m == 0b11 for m in profiles(control, "l1").values()),
             what="l1 profiles with both paths live")
    assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5


def test_two_links_cut_at_once_leave_one_path_per_rail(fabric):
    fnet, control = fabric
    a, b = fnet.find_link("l1", "s1"), fnet.find_link("l2", "s2")
    try:
        fnet.set_link(a, up=False)
        fnet.set_link(b, up=False)
        wait_until(lambda: control.agree(a.name, False) and control.agree(b.name, False),
                 what="all daemons see both links down")
        # l1 reaches l3 only through s2 (path 1), l2 reaches l4 only through s1 (path 0)
        wait_until(lambda: profiles(control, "l1").get(3) == 0b10, what="l1 -> l3 via s2 only")
        wait_until(lambda: profiles(control, "l2").get(4) == 0b01, what="l2 -> l4 via s1 only")
        assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5
        assert ping(fnet, "10.0.2.10", "10.0.4.10") == 5
    finally:
        fnet.set_link(a, up=True)
        fnet.set_link(b, up=True)
    wait_until(lambda: control.agree(a.name, True) and control.agree(b.name, True),
             what="both links back up")


def test_switch_restart_is_reprogrammed_by_its_daemon(fabric):
    fnet, control = fabric
    s2 = fnet.switch("s2")
    s2.stop(deleteIntfs=False)
    s2.start([])  # a fresh process without a pipeline
    driver = control.drivers["s2"]
    want = len(driver.book.held)
    assert want > 0

    def reprogrammed() -> bool:
        return driver.connected and len(entities(control, "s2")) == want
    wait_until(reprogrammed, timeout=40, what="s2 reconnected and reprogrammed")
    a = fnet.find_link("l1", "s1")
    try:  # force l1 -> l3 through the restarted spine
        fnet.set_link(a, up=False)
        wait_until(lambda: profiles(control, "l1").get(3) == 0b10, what="l1 -> l3 via s2 only")
        assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5
    finally:
        fnet.set_link(a, up=True)
    wait_until(lambda: control.agree(a.name, True), what="link back up")


def test_unauthenticated_and_malformed_messages_change_nothing(fabric):
    import grpc
    from syncmesh.service import SERVICE, TOKEN_KEY

    fnet, control = fabric
    daemon = control.daemons["l1"]
    view, entries = daemon.core.link_view(), without_congestion(entities(control, "l1"))
    with grpc.insecure_channel(fnet.fabric.switch("l1").syncmesh) as channel:
        notify = channel.unary_unary(f"/{SERVICE}/Notify")
        with pytest.raises(grpc.RpcError) as e:
            notify(b"\x0a\x02s1", metadata=((TOKEN_KEY, "wrong"),), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as e:
            notify(b"\xff\xff\xff\xff junk", metadata=((TOKEN_KEY, control.token),), timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    time.sleep(0.5)
    assert daemon.core.link_view() == view
    assert without_congestion(entities(control, "l1")) == entries
    assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5

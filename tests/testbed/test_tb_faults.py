"""Fault tests of issue 7 in Mininet: daemon kill and restart, link flaps, two cuts, switch restart.

One ls4x2 network with its six daemon processes (one `syncmesh run` per switch)
serves every test of the module (set-up is the expensive part); each test
leaves the fabric as it found it. The tests read the daemons only from their
metrics pages and the switches only with plain P4Runtime Reads.
"""

import dataclasses
import re
import time
from pathlib import Path

import pytest
from syncmesh.sglb_mapping import MulticastWrite, TableWrite

from fabricmodel import load
from sglb.config import dre_period_shift_for, level_thresholds
from sglb.settings import TESTBED, Feedback
from testsupport import wait_until
from topologies.control import ControlOptions, FabricControl, value
from topologies.mininet_fabric import FabricNet, NetOptions

pytestmark = [pytest.mark.mininet, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


# feedback and notice copies off their defaults, so that the test below sees them arrive
OPTIONS = ControlOptions(keepalive=0.2, dead_interval=1.0, intf_prefix="tb",
                         settings=dataclasses.replace(TESTBED, notice_copies=2, feedback=Feedback(
                             fresh_us=20_000, stale_us=150_000, gap_margin_us=300)))


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
                                OPTIONS,
                                work_dir=work)
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
    return control.readers[name].entities()


def profiles(control, name) -> dict[int, int]:
    """dst leaf -> live_mask of a leaf's dst_profile entries as the switch holds them."""
    return {dict(e.match)["meta.dst_leaf"]: dict(e.params)["live_mask"]
            for e in entities(control, name)
            if isinstance(e, TableWrite) and e.table == "dst_profile"}


def rx_packets(control, name) -> int:
    return sum(p for _, p in control.readers[name].counter("SglbIngress.port_rx").values())


def resyncs(control, names) -> float:
    return sum(value(control.metrics(n), "syncmesh_resyncs_total") or 0 for n in names)


def without_congestion(es):
    """Entities with the remote congestion levels (which a new daemon relearns) left out."""
    out = set()
    for e in es:
        if isinstance(e, TableWrite) and e.table == "dst_profile":
            e = TableWrite(e.table, e.match, e.action,
                           tuple(p for p in e.params if not p[0].startswith("rq")))
        out.add(e)
    return out


def test_each_daemon_process_writes_the_testbeds_settings(fabric):
    """ControlOptions reach the switches through `syncmesh run`'s flags: the leaves'
    feedback settings, the spines' notice copies, the thresholds of the DRE period of
    the fabric's slowest link (the program each daemon compiled has that period)."""
    _, control = fabric
    shift = dre_period_shift_for(min(lk.capacity_mbps for lk in control.fabric.links))
    config = {e.table: dict(e.params) for e in entities(control, "l1")
              if isinstance(e, TableWrite) and e.table == "switch_config"}["switch_config"]
    assert (config["feedback"], config["fb_fresh"], config["fb_stale"], config["gap_margin"]) \
        == (1, 20_000, 150_000, 300)
    spine = entities(control, "s1")
    levels = [e for e in spine if isinstance(e, TableWrite) and e.table == "port_levels"]
    assert len(levels) == 4
    mbps_of = {lk.spine.port: lk.capacity_mbps for lk in control.fabric.links_of("s1")}
    for e in levels:
        mbps = mbps_of[dict(e.match)["standard_metadata.egress_port"]]
        assert [v for _, v in e.params] == level_thresholds(mbps, shift)
    (group,) = [e for e in spine if isinstance(e, MulticastWrite)]
    assert len(group.ports) == 2 * 4        # two copies to each of the four leaves


def test_daemon_killed_and_restarted_during_traffic_resyncs_without_wiping(fabric):
    fnet, control = fabric
    before = without_congestion(entities(control, "l1"))
    rx_before = rx_packets(control, "l1")
    resyncs_before = resyncs(control, ("s1", "s2"))
    pinger = fnet.host("h1").popen(["ping", "-q", "-c", "40", "-i", "0.05", "-I", "10.0.1.10",
                                    "10.0.3.10"], text=True)
    control.stop_daemon("l1")  # SIGKILL
    time.sleep(1.0)
    control.restart_daemon("l1")
    wait_until(lambda: control.ready("l1"), timeout=60, what="restarted l1 daemon reconciled")
    out, _ = pinger.communicate(timeout=30)
    received = int(re.search(r"(\d+) received", out).group(1))
    assert received >= 38, out  # the data plane kept forwarding without its daemon
    wait_until(lambda: resyncs(control, ("s1", "s2")) > resyncs_before,
               what="spines resynced with the new incarnation")
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
    want = len(entities(control, "s2"))
    assert want > 0
    s2 = fnet.switch("s2")
    s2.stop(deleteIntfs=False)
    s2.start([])  # a fresh process without a pipeline

    def reprogrammed() -> bool:
        try:
            return control.ready("s2") and len(entities(control, "s2")) == want
        except Exception:  # noqa: BLE001 - not up, or no pipeline yet
            return False
    wait_until(reprogrammed, timeout=40, what="s2 reconnected and reprogrammed")
    a = fnet.find_link("l1", "s1")
    try:  # force l1 -> l3 through the restarted spine
        fnet.set_link(a, up=False)
        wait_until(lambda: profiles(control, "l1").get(3) == 0b10, what="l1 -> l3 via s2 only")
        assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5
    finally:
        fnet.set_link(a, up=True)
    wait_until(lambda: control.agree(a.name, True), what="link back up")


def test_strangers_and_bad_messages_change_nothing(fabric):
    """Plaintext, a certificate of another CA, and a member's malformed or forged messages:
    refused, counted, and neither the daemon's view nor its switch changes."""
    import asyncio

    import grpc
    from syncmesh import certs, wire
    from syncmesh.certs import TlsFiles
    from syncmesh.linkstate import PortState, Version
    from syncmesh.messages import Hello, LinkNotice
    from syncmesh.service import Insecure, PeerChannel

    fnet, control = fabric
    fab = fnet.fabric
    view, entries = control.link_views()["s1"], without_congestion(entities(control, "s1"))
    strangers = control.work_dir / "stranger-certs"
    certs.generate(fab, strangers)

    async def attempt(creds, messages):
        ch = PeerChannel(fab.switch("s1").syncmesh, "s1", creds, wire.max_message_bytes(fab))
        call = ch.session(wait=False)
        try:
            for m in messages:
                await call.write(m)
            await asyncio.sleep(0.3)
            return None
        except grpc.aio.AioRpcError as e:
            return e.code()
        finally:
            call.cancel()
            await ch.close()

    hello = wire.encode(Hello(int(time.time() * 1000), 1))
    assert asyncio.run(attempt(Insecure("guess", "l1"), [hello])) is not None
    assert asyncio.run(attempt(TlsFiles.in_dir(strangers, "l1"), [hello])) is not None
    before = value(control.metrics("s1"), "syncmesh_rejected_total", reason="forged") or 0
    forged = wire.encode(LinkNotice((PortState("l2", 3, False, Version(1, 2**63), 1.0),)))
    # l1's own key in the wrong hands: its daemon is killed so that it does not take its
    # session back while the impostor talks
    control.stop_daemon("l1")
    try:
        asyncio.run(attempt(TlsFiles.in_dir(control.cert_dir, "l1"),
                            [hello, b"\xff\xff\xff\xff junk", forged]))
        page = control.metrics("s1")
        assert value(page, "syncmesh_rejected_total", reason="malformed") >= 1
        assert value(page, "syncmesh_rejected_total", reason="forged") == before + 1
    finally:
        control.restart_daemon("l1")
    wait_until(lambda: value(control.metrics("s1"), "syncmesh_peer_up", peer="l1") == 1,
               timeout=60, what="the real l1 back in session with s1")
    assert control.link_views()["s1"] == view
    assert without_congestion(entities(control, "s1")) == entries
    assert ping(fnet, "10.0.1.10", "10.0.3.10") == 5

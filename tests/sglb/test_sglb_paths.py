"""MAX_PATHS as a compile-time choice (8, 16, 64), each width driven end to end
through the software target; unequal parallel links split by capacity."""

from __future__ import annotations

import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sglb_harness import (
    CPU_PORT,
    FLOWLET_GAP,
    HOST_PORT,
    LEAF_MAC,
    SPINE_MAC,
    compiled,
    configure_leaf,
    configure_spine,
    longest_kept_idle,
    out_ports,
    sticky_spine_settings,
    udp,
)

from sglb import settings
from sglb.codes import DropReason, Event
from sglb.headers import NOTICE_FAIL, PacketOut, SglbNotice, SglbProbe, SglbTag

# MAX_PATHS = 64 compiles the widest program (seconds): marked slow
WIDTHS = [8, 16, pytest.param(64, marks=pytest.mark.slow)]


@pytest.mark.parametrize("n", WIDTHS)
def test_every_path_of_a_max_paths_leaf_works(n):
    """A leaf with n = MAX_PATHS uplinks: new flowlets reach every one; the last
    path can be excluded by its spine's notice, gets feedback, carries probes."""
    ports = list(range(101, 101 + n))
    spines = list(range(1000, 1000 + n))
    fb = settings.Feedback(tag_frame_max=1534)
    leaf = configure_leaf(compiled(n), paths=n, max_paths=n, uplink_ports=ports,
                          spine_ids=spines, feedback=fb, dre_shift=24)
    everything = (1 << n) - 1
    leaf.set_profile(1, mask=everything, rq=[0] * n, w=[1] * n)
    rng = random.Random(n)
    used = set()
    for _ in range(12 * n):
        used.update(out_ports(leaf.send(HOST_PORT, udp(sport=rng.randrange(1024, 65536)))))
    assert used == set(ports)
    (out,) = leaf.send(HOST_PORT, udp(sport=1))
    assert Ether(out.data)[SglbTag].npaths == n
    last = n - 1
    # the last path's spine says leaf 1 is gone: exactly that path stops
    notice = Ether(src=SPINE_MAC) / SglbNotice(kind=NOTICE_FAIL, spine_id=spines[last],
                                                leaf_id=1, epoch=1)
    assert out_ports(leaf.send(ports[last], notice)) == [CPU_PORT]
    used = set()
    for _ in range(8 * n):
        used.update(out_ports(leaf.send(HOST_PORT, udp(sport=rng.randrange(1024, 65536)))))
    assert ports[last] not in used and len(used) > n // 2
    # feedback about the last path is stored in its own register
    reply = (Ether(src=SPINE_MAC, dst=LEAF_MAC)
             / SglbTag(npaths=n, src_leaf=1, path=last, fb_path=last, fb_level=5)
             / IP(src="10.1.0.7", dst="10.0.0.1") / UDP())
    assert out_ports(leaf.send(ports[0], reply)) == [HOST_PORT]
    assert leaf.sw.register_read(f"fb_{last}", 1) >> 28 == 0b1101     # valid, level 5
    # a probe names the last path: it leaves there, although excluded
    probe = Ether(src=LEAF_MAC) / SglbProbe(path=last, dst_leaf=1)
    assert out_ports(leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(probe))) == \
        [ports[last]]
    probe = Ether(src=LEAF_MAC) / SglbProbe(path=n, dst_leaf=1)
    assert leaf.sw.process_packet(CPU_PORT, bytes(PacketOut()) + bytes(probe)) == []
    assert leaf.drops(DropReason.BAD_PROBE) == 1


@pytest.mark.parametrize("n", WIDTHS)
def test_resource_model_prints_the_chosen_max_paths(n, capsys):
    from sglb import resources
    assert resources.main(["--max-paths", str(n)]) in (0, 1)
    assert f"MAX_PATHS = {n}" in capsys.readouterr().out



def test_spine_splits_unequal_parallel_links_by_capacity(program):
    """Leaf 2 hangs off spine 101 by a 5 and a 10 Mbit/s member: flows split
    1:2, so both run at the same utilisation and the profile (load over
    summed capacity) is the real bottleneck's, not 1.5x optimistic."""
    caps = {4: 5.0, 5: 10.0}
    spine = configure_spine(program, capacities=caps)
    rng = random.Random(2)
    count = {4: 0, 5: 0}
    for _ in range(1500):
        frame = udp(dst="10.2.0.5", src="10.1.0.1", sport=rng.randrange(1024, 65536),
                    dport=rng.randrange(1024, 65536), payload=b"d" * 958)
        (out,) = spine.send(3, frame)
        count[out.port] += 1
    share = count[4] / 1500
    assert abs(share - 1 / 3) < 0.04, count
    # bytes in the DRE of each member (no time passed): utilisation alike
    util = {p: spine.sw.register_read("dre_bytes", p) / caps[p] for p in caps}
    assert 0.85 < util[4] / util[5] < 1.15, util
    # one member down: everything on the other, no notice (the leaf is reachable)
    spine.port_event(4, up=False, seq=1)
    assert {out_ports(spine.send(3, udp(dst="10.2.0.5", sport=s)))[0] for s in range(40)} == {5}
    assert spine.event(Event.NOTICE_SENT) == 0


@pytest.mark.parametrize("flows", [4, 16, 50])
def test_sglb_spine_splits_few_flows_by_capacity_and_keeps_each_on_its_member(program, flows):
    """Two equal members: the members get flows/2 each, give or take one, however few
    the flows (a hash of the 5-tuple once put 80% of 16 bulk connections' bytes on one
    member); each flow stays on its member while it sends, also across idle times
    longer than the flowlet gap (the spine does not know its members' delays, so a
    move could reorder: it waits gap_unknown), and is drawn again after that."""
    settings = sticky_spine_settings()
    spine = configure_spine(program, settings=settings)
    gap_unknown = settings.feedback.gap_unknown_us
    assert gap_unknown > 10 * FLOWLET_GAP
    datas = [udp(dst="10.2.0.5", src="10.1.0.1", sport=1000 + i, payload=b"d" * 1000)
             for i in range(flows)]
    member = []
    for data in datas:
        spine.clock.now += 1
        member += out_ports(spine.send(3, data))
    assert abs(member.count(4) - flows / 2) <= 1, member
    for idle in (1, 10 * FLOWLET_GAP, longest_kept_idle(gap_unknown, flows)):
        spine.clock.now += idle
        for data, port in zip(datas, member, strict=True):
            spine.clock.now += 1
            assert out_ports(spine.send(3, data)) == [port]
    spine.clock.now += gap_unknown
    draws = [out_ports(spine.send(3, data))[0] for data in datas]
    assert abs(draws.count(4) - flows / 2) <= 1, draws
    # the new draws continue the destination's sequence: not the first split again
    if flows >= 2:
        assert draws != member


def test_spine_raises_the_tag_to_its_egress_level(program):
    spine = configure_spine(program, spine_id=100, leaves=((0, (1,)), (1, (2,))),
                            capacities={1: 10.0, 2: 10.0})
    tagged = bytes(Ether() / SglbTag(src_leaf=0, npaths=2, ce=2)
                   / IP(src="10.0.0.1", dst="10.1.0.1") / UDP() / (b"z" * 10))
    (out,) = spine.send(1, tagged)          # 76 bytes of 16 per level (10 Mbit/s): level 4
    assert Ether(out.data)[SglbTag].ce == 4
    for _ in range(3):
        (out,) = spine.send(1, tagged)
    assert Ether(out.data)[SglbTag].ce == 7
    spine.clock.now += 64 * 20               # 20 DRE periods: idle again; never below the tag's
    quiet = bytes(Ether() / SglbTag(src_leaf=0, npaths=2, ce=5)
                  / IP(src="10.0.0.1", dst="10.1.0.1") / UDP())
    (out,) = spine.send(1, quiet)
    assert Ether(out.data)[SglbTag].ce == 5
    # a port the control plane gave no thresholds reads saturated, never idle
    spine.sw.table_clear("port_levels")
    (out,) = spine.send(1, quiet)
    assert Ether(out.data)[SglbTag].ce == 7

"""The Mininet switch node: starts `softswitch run` on its interfaces, answers P4Runtime, stops cleanly."""

import asyncio
import subprocess

import pytest
from p4rt_client import PROG

pytestmark = pytest.mark.mininet


def test_mininet_hosts_ping_through_p4runtime_switch(tmp_path):
    import finsy as fy

    # isort: off
    import topologies.mininet_import  # noqa: F401  (before any other mininet import)
    from mininet.net import Mininet
    # isort: on

    from softswitch.p4info import p4info_from_program, p4info_text
    from softswitch.p4runtime.pipeline_loader import (
        device_config_from_file,
        load_program,
    )
    from topologies.p4switch import P4RuntimeSwitch, p4runtime_ready

    blob = device_config_from_file(PROG)
    (tmp_path / "p.txtpb").write_text(p4info_text(p4info_from_program(load_program(blob))))
    (tmp_path / "p.cfg").write_bytes(blob)
    net = Mininet(controller=None, build=False)
    h1 = net.addHost("sspm1", ip="10.81.0.1/24", mac="02:00:00:81:00:01")
    h2 = net.addHost("sspm2", ip="10.81.0.2/24", mac="02:00:00:81:00:02")
    # no program: the switch starts with --no-p4 and finsy sends the pipeline
    s1 = net.addSwitch("sspms1", cls=P4RuntimeSwitch, grpc_port=50391, device_id=7,
                       log_dir=str(tmp_path))
    net.addLink(h1, s1, port2=1)
    net.addLink(h2, s1, port2=2)
    try:
        net.build()
        net.start()  # returns once the switch answers P4Runtime
        assert p4runtime_ready(s1.grpc_address)
        for h, other in ((h1, h2), (h2, h1)):
            h.cmd(f"ethtool -K {h.defaultIntf().name} tx off")
            h.cmd(f"ip neigh replace {other.IP()} lladdr {other.MAC()} dev {h.defaultIntf().name}")

        async def program():
            opts = fy.SwitchOptions(p4info=tmp_path / "p.txtpb", p4blob=tmp_path / "p.cfg", device_id=7)
            async with fy.Switch("sspms1", s1.grpc_address, opts) as sw:
                await sw.insert([
                    fy.P4TableEntry("ipv4_lpm", match=fy.Match({"hdr.ipv4.dst": f"{h.IP()}/32"}),
                                    action=fy.Action("set_nhop", dmac=h.MAC(), port=port))
                    for h, port in ((h1, 1), (h2, 2))])

        asyncio.run(asyncio.wait_for(program(), 60))
        assert net.ping([h1, h2], timeout="2") == 0.0
        proc = s1.proc
    finally:
        net.stop()
    assert proc.poll() == 0  # SIGTERM: clean exit
    assert subprocess.run(["ip", "link", "show", "sspms1-eth1"], capture_output=True).returncode != 0
    assert "stopping" in (tmp_path / "sspms1.softswitch.log").read_text()


def test_bmv2_target_without_simple_switch_grpc_is_a_clear_error(monkeypatch):
    import shutil

    from topologies.p4switch import P4RuntimeSwitch, TargetError

    if shutil.which("simple_switch_grpc"):
        pytest.skip("BMv2 is installed here")
    monkeypatch.setenv("TARGET", "bmv2")
    s = P4RuntimeSwitch("sspms9", program=None)
    try:
        with pytest.raises(TargetError, match="TARGET=bmv2 needs simple_switch_grpc, not found"):
            s.command()
    finally:
        s.stop(deleteIntfs=True)

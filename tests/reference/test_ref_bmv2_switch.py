"""``bmv2.switch.Bmv2Switch``: a real simple_switch_grpc driven through softswitch's calls
(needs BMv2 and p4c; skipped otherwise). ``pytest --target bmv2`` runs the whole STF
corpus and the SGLB packet tests this way; these tests run whatever the target."""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch import Exact, Lpm, SwitchError

pytestmark = pytest.mark.bmv2
STF = Path(__file__).resolve().parents[1] / "softswitch" / "stf"


@pytest.fixture
def router():
    from bmv2.compiler import compile_program
    from bmv2.switch import Bmv2Switch

    sw = Bmv2Switch(compile_program(STF / "router.p4"))
    yield sw
    sw.close()


def ipv4(dst: str, ttl: int = 64) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="00:00:00:00:00:01") / IP(dst=dst, ttl=ttl) / UDP() / (b"x" * 20))


@pytest.mark.parametrize("name", ["externs", "multicast", "clone", "tables", "truncate_copies"])
def test_stf_on_bmv2(name):
    """Registers (Thrift), counters, direct counters, multicast groups and clone sessions
    (P4Runtime), every copy a packet makes (the data-plane stream's end is the barrier)."""
    from bmv2.compiler import compile_program
    from bmv2.switch import Bmv2Switch
    from softswitch.stf import run_switch

    with Bmv2Switch(compile_program(STF / f"{name}.p4")) as sw:
        result = run_switch(sw, (STF / f"{name}.stf").read_text(), f"{name}.stf")
    assert result.ok, result.report


def test_entries_modify_delete_and_refusals(router):
    handle = router.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop",
                              {"dmac": 0x0200000000AA, "port": 3})
    (out,) = router.process_packet(0, ipv4("10.1.2.3"))
    assert out.port == 3 and out.data[:6] == bytes.fromhex("0200000000aa")
    router.table_modify("ipv4_lpm", handle, "set_nhop", {"dmac": 0x0200000000BB, "port": 5})
    (out,) = router.process_packet(0, ipv4("10.1.2.3"))
    assert out.port == 5 and out.data[:6] == bytes.fromhex("0200000000bb")
    with pytest.raises(SwitchError) as e:  # BMv2's own refusal, as softswitch's SwitchError
        router.table_add("ipv4_lpm", [Lpm(0x0A000000, 8)], "set_nhop", [1, 2])
    assert e.value.code == "ALREADY_EXISTS"
    with pytest.raises(SwitchError, match="no table named nope"):
        router.table_add("nope", [Exact(1)], "set_nhop", [1, 2])
    with pytest.raises(SwitchError, match="takes 2 argument"):
        router.table_add("ipv4_lpm", [Lpm(0x0B000000, 8)], "set_nhop", [1])
    router.table_delete("ipv4_lpm", handle)
    assert router.process_packet(0, ipv4("10.1.2.3")) == []  # the default: drop


def test_close_stops_the_process():
    from bmv2.compiler import compile_program
    from bmv2.switch import Bmv2Switch

    sw = Bmv2Switch(compile_program(STF / "router.p4"))
    proc = sw.process.proc
    assert proc is not None and proc.poll() is None
    sw.close()
    assert proc.poll() is not None and not sw.process.alive()

"""p4runtime-shell drives the server unchanged, from an environment of its own.

p4runtime-shell pins protobuf < 3.21 and p4runtime 1.4.1, so it gets a virtualenv
built once per test session (pip, about 15 s). Without network access to the
package registry the test is skipped and says so.
"""

import subprocess
import sys
import time

import pytest
from p4rt_client import PROG

from softswitch.p4info import p4info_from_program, p4info_text
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.pipeline_loader import device_config_from_file, load_program
from softswitch.p4runtime.server import P4RuntimeServer

pytestmark = pytest.mark.slow

SCRIPT = r'''
import sys
import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

addr, p4info, cfg = sys.argv[1:4]
sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info, cfg))
te = sh.TableEntry("TestIngress.ipv4_lpm")(action="TestIngress.set_nhop")
te.match["hdr.ipv4.dst"] = "10.0.1.0/24"
te.action["dmac"] = "02:00:00:00:00:02"
te.action["port"] = "2"
te.insert()
got = list(sh.TableEntry("TestIngress.ipv4_lpm").read())
print("READ", len(got), got[0].match["hdr.ipv4.dst"].lpm.prefix_len, flush=True)
try:
    te.insert()
except P4RuntimeWriteException as e:
    print("DUP", str(e).replace("\n", " "), flush=True)
p = sh.PacketOut()
p.payload = b"\x02" * 12 + b"\x88\x99" + b"s" * 46
p.metadata["egress_port"] = "3"
p.send()
c = sh.CounterEntry("TestIngress.port_rx")
c.index = 3
print("CTR", [x.data.packet_count for x in c.read()], flush=True)
sh.teardown()
print("DONE", flush=True)
'''


@pytest.fixture(scope="session")
def shell_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("ssp-p4runtime-shell") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "p4runtime-shell"],
                         capture_output=True, text=True, timeout=600)
    if pip.returncode != 0:
        pytest.skip(f"p4runtime-shell could not be installed: {pip.stderr.strip()[-300:]}")
    return venv / "bin" / "python"


def test_p4runtime_shell_programs_the_switch(shell_python, tmp_path):
    blob = device_config_from_file(PROG)
    (tmp_path / "p.txtpb").write_text(p4info_text(p4info_from_program(load_program(blob))))
    (tmp_path / "p.cfg").write_bytes(blob)
    device = Device(device_id=1)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    server = P4RuntimeServer(device, "127.0.0.1:0").start()
    try:
        r = subprocess.run([str(shell_python), "-c", SCRIPT, server.address, str(tmp_path / "p.txtpb"),
                            str(tmp_path / "p.cfg")], capture_output=True, text=True, timeout=120)
        out = [line for line in r.stdout.splitlines() if line.split(" ")[0] in ("READ", "DUP", "CTR", "DONE")]
        assert r.returncode == 0, r.stderr[-2000:]
        assert out[0] == "READ 1 24"
        assert out[1].startswith("DUP") and "ALREADY_EXISTS" in out[1] and "entry already exists" in out[1]
        assert out[2] == "CTR [0]" and out[3] == "DONE"
        for _ in range(100):
            if sent:
                break
            time.sleep(0.02)
        assert sent == [(3, b"\x02" * 12 + b"\x88\x99" + b"s" * 46)]
    finally:
        server.stop(0)

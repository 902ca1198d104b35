"""ReCCL with PyTorch: tensors through the Communicator, the torch.distributed backend
against gloo (every collective; DDP parameters after N steps), and a torchrun DDP job
whose loss curve does not change when a NIC is cut."""

import json
import os
import secrets
import socket
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (pip install torch==2.13.0)")

from reccl.ops import reference_ring  # noqa: E402
from reccl.spawn import loopback_layout, run_ranks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "reccl_ddp_train.py")
JOB = os.path.join(HERE, "torch_collectives_job.py")


def tensor_job(comm):
    torch.manual_seed(comm.rank)
    x = torch.randn(1000, dtype=torch.float32)
    keep = x.clone()
    same = comm.all_reduce(x)  # in place, as torch.distributed does
    b = torch.randn(6, 3).to(torch.bfloat16)
    gathered = comm.all_gather(b)
    i64 = comm.all_reduce(torch.arange(10, dtype=torch.int64) * (comm.rank + 1), "max")
    bcast = comm.broadcast(torch.full((4,), float(comm.rank)), root=1)
    try:
        comm.all_reduce(b)
        bf16_err = None
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        bf16_err = str(e)
    return (keep.numpy(), x.numpy(), same is x, gathered.view(torch.int16).numpy(),
            b.view(torch.int16).numpy(), gathered.dtype, i64.numpy(), bcast.numpy(), bf16_err)


def test_tensor_collectives_in_place_and_bit_exact():
    res = run_ranks(tensor_job, loopback_layout(2, 1, 2), timeout=120)
    ref = reference_ring([res[r][0] for r in range(2)], "sum")
    for r in range(2):
        keep, x, same, gathered, b, gdtype, i64, bcast, bf16_err = res[r]
        assert same and x.tobytes() == ref.tobytes()
        assert gdtype == torch.bfloat16
        assert gathered.tobytes() == np.stack([res[0][4], res[1][4]]).tobytes()
        assert i64.tolist() == [2 * i for i in range(10)]
        assert bcast.tolist() == [1.0] * 4
        assert "bfloat16" in bf16_err


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script, args, nproc, tmp_path, extra_env=None):
    """torchrun with env:// as users run it; every local rank a pretend host with 2 NICs."""
    env = dict(os.environ, RECCL_SECRET=secrets.token_hex(16), OMP_NUM_THREADS="1",
               RECCL_NICS="127.1.{local_rank}.1,127.2.{local_rank}.1",
               RECCL_HOST="h{local_rank}", **(extra_env or {}))
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run",
                        f"--nproc-per-node={nproc}", f"--master-port={free_port()}",
                        script, *args], env=env, capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout


def test_every_collective_gives_what_gloo_gives(tmp_path):
    got = {}
    for backend in ("gloo", "reccl"):
        torchrun(JOB, [backend, str(tmp_path / backend)], 3, tmp_path)
        got[backend] = [json.loads((tmp_path / f"{backend}.{r}.json").read_text())
                        for r in range(3)]
    assert got["reccl"] == got["gloo"]
    assert got["reccl"][0]["all_reduce"] == [0.0, 6.0, 12.0, 18.0, 24.0, 30.0]
    assert got["reccl"][1]["recv"] == [42.0, 43.0]


def test_ddp_equals_gloo_and_a_nic_cut_changes_nothing(tmp_path):
    runs = {}
    for name, args in (("gloo", ["--backend", "gloo"]), ("reccl", ["--backend", "reccl"]),
                       ("reccl-cut", ["--backend", "reccl", "--cut-at", "4", "--cut-rail", "1"])):
        out = tmp_path / f"{name}.json"
        stdout = torchrun(EXAMPLE, ["--steps", "10", "--out", str(out), *args], 2, tmp_path)
        runs[name] = json.loads(out.read_text())
        if name == "reccl-cut":
            assert "rank 0: cut the link of nic1" in stdout
    # DDP over reccl ends with exactly gloo's parameters and losses (2 ranks: a sum of
    # two floats is the same in any order)
    assert runs["reccl"]["params"] == runs["gloo"]["params"]
    assert runs["reccl"]["losses"] == runs["gloo"]["losses"]
    # and a NIC cut during training changes nothing at all
    assert runs["reccl-cut"]["failures"] >= 1
    assert runs["reccl-cut"]["losses"] == runs["reccl"]["losses"]
    assert runs["reccl-cut"]["params"] == runs["reccl"]["params"]


@pytest.mark.root
@pytest.mark.slow
def test_ddp_across_namespaces_survives_a_real_nic_cut():
    """torchrun per pretend host in its own namespace (two nodes, real veths); rank 0's nic1
    goes down mid-training: the loss curve and final parameters are unchanged."""
    p = subprocess.run([sys.executable, EXAMPLE, "--compare", "--netns", "--steps", "8",
                        "--cut-at", "3"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "rank 0: cut the link of nic1" in p.stdout
    assert "link cut: 8 steps" in p.stdout and "channel failures 1" in p.stdout
    assert "loss curves identical: True" in p.stdout
    assert "final parameters identical: True" in p.stdout

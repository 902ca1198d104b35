"""ReCCL with CPU PyTorch tensors, and the data-parallel training example.
Skipped when PyTorch is not installed (it is an optional extra: pip install torch==2.13.0)."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (optional extra 'torch')")

from reccl.ops import reference_ring  # noqa: E402
from reccl.spawn import loopback_layout, run_ranks  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "reccl_ddp_train.py")


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


def test_training_survives_a_link_cut_with_the_same_loss_curve():
    p = subprocess.run([sys.executable, EXAMPLE, "--compare", "--steps", "8", "--cut-at", "3"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "loss curves identical: True" in p.stdout
    assert "link cut: 8 steps" in p.stdout and "channel failures 1" in p.stdout

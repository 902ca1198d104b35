"""Data-parallel training of a small PyTorch model over ReCCL on CPU, surviving a link cut.

Every rank holds the same model, trains on its own shard of each global batch,
and averages gradients with `comm.all_reduce(grad, "avg")`. Because ReCCL's
results are bit-identical with or without failures, a run in which a NIC dies
mid-training ends with exactly the same loss curve as a fault-free run.

One run (under reccl-run, which sets the RECCL_* variables):

    reccl-run --host h0:127.1.0.1,127.2.0.1 --host h1:127.1.1.1,127.2.1.1 -- \\
        python examples/reccl_ddp_train.py --steps 40 --cut-at 15 --out /tmp/cut.json

Both runs and the comparison (loopback, or --netns as root for real veths):

    python examples/reccl_ddp_train.py --compare [--netns]

Needs `pip install torch==2.13.0` (CPU build; see docs/reccl.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def train(a: argparse.Namespace) -> list[float]:
    """One rank's training loop; returns the global loss of every step."""
    import torch

    from reccl import Communicator

    torch.set_num_threads(1)
    comm = Communicator.from_env()
    r, p = comm.rank, comm.size
    torch.manual_seed(0)  # same initial model on every rank
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1234)  # same data stream everywhere
    true_w = torch.randn(32, 1, generator=gen)
    params = list(model.parameters())
    losses = []
    for step in range(a.steps):
        if step == a.cut_at and r == 0 and a.cut_rail is not None:
            cut(comm, a.cut_rail, a.netns)
        x = torch.randn(a.batch, 32, generator=gen)
        y = torch.sin(x @ true_w) + 0.1 * torch.randn(a.batch, 1, generator=gen)
        shard = slice(r * a.batch // p, (r + 1) * a.batch // p)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[shard]), y[shard])
        loss.backward()
        flat = torch.cat([q.grad.reshape(-1) for q in params])
        comm.all_reduce(flat, "avg")  # in place on the tensor
        off = 0
        for q in params:
            n = q.numel()
            q.grad.copy_(flat[off:off + n].view_as(q))
            off += n
        opt.step()
        glob = comm.all_reduce(loss.detach().reshape(1), "avg")
        losses.append(float(glob[0]))
        if r == 0 and step % 10 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.6f}", flush=True)
    downs = [e for e in comm.events() if e.kind == "channel_down"]
    if r == 0:
        print(f"rank 0: {len(downs)} channel failures survived", flush=True)
    if a.out and r == 0:
        with open(a.out, "w") as f:
            json.dump({"losses": losses, "failures": len(downs)}, f)
    comm.close()
    return losses


def cut(comm, rail: int, netns: bool) -> None:
    """Take this rank's NIC `rail` down: for real in a namespace, else by injection."""
    if netns:
        from reccl.linkstate import interface_of, set_link

        set_link(str(interface_of(comm.endpoint.nic_socks[rail].getsockname()[0])), False)
    else:
        comm.set_link(rail, False)
    print(f"rank {comm.rank}: cut the link of nic{rail}", flush=True)


def compare(a: argparse.Namespace) -> int:
    """Run fault-free and with a cut; report whether the loss curves are identical."""
    from reccl.launch import HostSpec, launch

    tb = None
    if a.netns:
        import secrets

        from reccl.netns import Testbed

        tb = Testbed(f"rc{secrets.token_hex(2)}", 2, 2).create()
        hosts = [HostSpec(f"h{h}", tuple(tb.nics(h)), tb.ns(h)) for h in range(2)]
    else:
        hosts = [HostSpec(f"h{h}", (f"127.1.{h}.1", f"127.2.{h}.1")) for h in range(2)]
    curves = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for name, extra in (("fault-free", []),
                                ("link cut", ["--cut-at", str(a.cut_at), "--cut-rail", "1"])):
                out = os.path.join(d, f"{name}.json")
                cmd = [sys.executable, os.path.abspath(__file__), "--steps", str(a.steps),
                       "--out", out, *extra] + (["--netns"] if a.netns else [])
                t = time.monotonic()
                codes = launch(hosts, 1, cmd, timeout=600)
                if any(codes):
                    print(f"{name}: ranks exited with {codes}")
                    return 1
                with open(out) as f:
                    curves[name] = json.load(f)
                print(f"{name}: {a.steps} steps in {time.monotonic() - t:.1f} s, final loss "
                      f"{curves[name]['losses'][-1]:.6f}, channel failures "
                      f"{curves[name]['failures']}")
    finally:
        if tb:
            tb.destroy()
    same = curves["fault-free"]["losses"] == curves["link cut"]["losses"]
    print("loss curves identical:", same)
    return 0 if same else 1


def main(argv: list[str] | None = None) -> int:
    """Train (under reccl-run) or --compare two runs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--cut-at", type=int, default=15, help="step at which rank 0 cuts a NIC")
    ap.add_argument("--cut-rail", type=int, help="NIC to cut (default: none)")
    ap.add_argument("--out", help="rank 0 writes the loss curve here (JSON)")
    ap.add_argument("--netns", action="store_true", help="real namespaces and veths (root)")
    ap.add_argument("--compare", action="store_true",
                    help="launch a fault-free and a link-cut run and compare their curves")
    a = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("this example needs PyTorch: pip install torch==2.13.0 (CPU build)")
        return 2
    if a.compare:
        return compare(a)
    train(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())

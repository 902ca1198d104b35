"""Data-parallel training with torch DDP over the ReCCL backend, surviving a NIC cut.

Launched by torchrun like any DDP script; `import reccl.torch` registers the backend:

    export RECCL_SECRET=$(python -c 'import secrets; print(secrets.token_hex(16))')
    RECCL_NICS=127.1.{local_rank}.1,127.2.{local_rank}.1 RECCL_HOST=h{local_rank} \\
        torchrun --nproc-per-node 2 examples/reccl_ddp_train.py --steps 40 --cut-at 15

(RECCL_NICS / RECCL_HOST give every local rank its own pretend host with two NICs on
loopback; on real machines leave them out or list the NIC addresses.) `--backend gloo`
runs the same script on gloo for comparison. Rank 0 prints the loss every 10 steps and
writes the curve and the final parameters to --out.

Both runs and the comparison (fault-free, then with rank 0's nic1 cut at step
--cut-at), over loopback, or with --netns (root) in network namespaces with real veths:

    python examples/reccl_ddp_train.py --compare [--netns]

Because ReCCL's results are bit-identical with or without failures, the two loss
curves are identical. Needs PyTorch (CPU build: pip install torch==2.13.0).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time


def train(a: argparse.Namespace) -> int:
    """One rank of the DDP job (under torchrun)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import reccl.torch  # noqa: F401  (registers the backend)

    torch.set_num_threads(1)
    dist.init_process_group(backend=a.backend)
    r, p = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1234)  # same data stream everywhere
    true_w = torch.randn(32, 1, generator=gen)
    losses = []
    for step in range(a.steps):
        if step == a.cut_at and r == 0 and a.cut_rail is not None:
            cut(a.cut_rail, a.netns)
        x = torch.randn(a.batch, 32, generator=gen)
        y = torch.sin(x @ true_w) + 0.1 * torch.randn(a.batch, 1, generator=gen)
        shard = slice(r * a.batch // p, (r + 1) * a.batch // p)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x[shard]), y[shard])
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        total = loss.detach().reshape(1).clone()
        dist.all_reduce(total)
        losses.append(float(total[0]) / p)
        if r == 0 and step % 10 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.6f}", flush=True)
    failures = 0
    if a.backend == "reccl":
        failures = sum(1 for e in dist.group.WORLD.comm.events() if e.kind == "channel_down")
        if r == 0:
            print(f"rank 0: {failures} channel failures survived", flush=True)
    params = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    if a.out and r == 0:
        with open(a.out, "w") as f:
            json.dump({"losses": losses, "failures": failures,
                       "params": params.numpy().tobytes().hex()}, f)
    # every rank is done before any closes its links: gloo aborts a rank whose peer
    # closed a connection under it (std::terminate in its I/O thread)
    dist.barrier()
    # DDP holds the process group, in reference cycles that only the collector breaks.
    # Left to the interpreter's exit, gloo's worker threads outlive Python and abort
    # (std::terminate) when they free a tensor. Freeing DDP here lets
    # destroy_process_group drop the last reference, which joins those threads.
    del ddp, opt
    gc.collect()
    dist.destroy_process_group()
    return 0


def cut(rail: int, netns: bool) -> None:
    """Take rank 0's NIC `rail` down: for real in a namespace, else by injection."""
    import torch.distributed as dist

    comm = dist.group.WORLD.comm
    if netns:
        from reccl.linkstate import interface_of, set_link

        set_link(str(interface_of(comm.topology.ranks[comm.rank].nics[rail][0])), False)
    else:
        comm.set_link(rail, False)
    print(f"rank {comm.rank}: cut the link of nic{rail}", flush=True)


def torchrun(args: list[str], env: dict[str, str], nproc: int, netns: str | None = None,
             node: tuple[int, int, str] | None = None) -> subprocess.Popen:
    """Start torchrun (in a namespace / as one node of several when asked)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
    if node:
        rank, nodes, master = node
        cmd += [f"--nnodes={nodes}", f"--node-rank={rank}", f"--master-addr={master}",
                f"--master-port={env['MASTER_PORT_CHOICE']}"]
    else:
        cmd += [f"--master-port={env['MASTER_PORT_CHOICE']}"]
    cmd += [os.path.abspath(__file__), *args]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    return subprocess.Popen(cmd, env=env)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_job(a: argparse.Namespace, extra: list[str], out: str, tb: object = None) -> int:
    env = dict(os.environ, RECCL_SECRET=secrets.token_hex(16),
               MASTER_PORT_CHOICE=str(free_port()), OMP_NUM_THREADS="1")
    args = ["--steps", str(a.steps), "--out", out, "--backend", a.backend, *extra]
    if tb is None:
        env.update(RECCL_NICS="127.1.{local_rank}.1,127.2.{local_rank}.1",
                   RECCL_HOST="h{local_rank}")
        procs = [torchrun(args, env, 2)]
    else:
        procs = []
        for h in range(2):
            e = dict(env, RECCL_NICS=",".join(tb.nics(h)), RECCL_HOST=f"h{h}")  # type: ignore
            procs.append(torchrun(args + ["--netns"], e, 1, tb.ns(h),  # type: ignore
                                  (h, 2, tb.ip(0, 0))))  # type: ignore
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=600))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(-9)
    return max(abs(c) for c in codes)


def compare(a: argparse.Namespace) -> int:
    """Run fault-free and with a cut; report whether the loss curves are identical."""
    tb = None
    if a.netns:
        from reccl.netns import Testbed

        tb = Testbed(f"rc{secrets.token_hex(2)}", 2, 2).create()
    curves = {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for name, extra in (("fault-free", []),
                                ("link cut", ["--cut-at", str(a.cut_at), "--cut-rail", "1"])):
                out = os.path.join(d, f"{name}.json")
                t = time.monotonic()
                code = run_job(a, extra, out, tb)
                if code:
                    print(f"{name}: torchrun exited with {code}")
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
    same_params = curves["fault-free"]["params"] == curves["link cut"]["params"]
    print("final parameters identical:", same_params)
    return 0 if same and same_params else 1


def main(argv: list[str] | None = None) -> int:
    """Train (under torchrun) or --compare two runs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--backend", default="reccl", choices=["reccl", "gloo"])
    ap.add_argument("--cut-at", type=int, default=15, help="step at which rank 0 cuts a NIC")
    ap.add_argument("--cut-rail", type=int, help="NIC to cut (default: none)")
    ap.add_argument("--out", help="rank 0 writes the loss curve and parameters here (JSON)")
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
    return train(a)


if __name__ == "__main__":
    sys.exit(main())

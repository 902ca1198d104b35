"""Every collective the reccl backend implements, through torch.distributed's public API;
run under torchrun with --backend reccl or gloo, each rank writes its results as JSON.
Values are small integers in float32, so every summation order gives the same bits."""

import json
import sys

import torch
import torch.distributed as dist

import reccl.torch  # noqa: F401

backend, out = sys.argv[1], sys.argv[2]
dist.init_process_group(backend=backend)
r, p = dist.get_rank(), dist.get_world_size()
res = {}
t = torch.arange(6, dtype=torch.float32) * (r + 1)
dist.all_reduce(t)
res["all_reduce"] = t.tolist()
t = torch.arange(6, dtype=torch.float32) + r
dist.all_reduce(t, op=dist.ReduceOp.MAX)
res["all_reduce_max"] = t.tolist()
works = [dist.all_reduce(torch.full((4,), float(r + i)), async_op=True) for i in range(3)]
res["async"] = [w.wait() for w in works] and [w.is_completed() for w in works]
fut = dist.all_reduce(torch.ones(2) * r, async_op=True).get_future()
res["future"] = fut.wait()[0].tolist()
b = torch.arange(5, dtype=torch.float32) * 7 if r == 1 else torch.zeros(5)
dist.broadcast(b, src=1)
res["broadcast"] = b.tolist()
outs = [torch.zeros(3) for _ in range(p)]
dist.all_gather(outs, torch.full((3,), float(r)))
res["all_gather"] = [o.tolist() for o in outs]
o = torch.zeros(3 * p)
dist.all_gather_into_tensor(o, torch.full((3,), float(r)))
res["all_gather_into_tensor"] = o.tolist()
o = torch.zeros(2)
dist.reduce_scatter(o, [torch.full((2,), float(10 * i + r)) for i in range(p)])
res["reduce_scatter"] = o.tolist()
o = torch.zeros(2)
dist.reduce_scatter_tensor(o, torch.arange(2.0 * p) + r)
res["reduce_scatter_tensor"] = o.tolist()
o = torch.zeros(p)
dist.all_to_all_single(o, torch.arange(float(p)) + 10 * r)
res["all_to_all_single"] = o.tolist()
outs = [torch.zeros(2) for _ in range(p)]
dist.all_to_all(outs, [torch.full((2,), float(10 * r + j)) for j in range(p)])
res["all_to_all"] = [x.tolist() for x in outs]
dist.barrier()
if r == 0:
    dist.send(torch.tensor([42.0, 43.0]), 1, tag=5)
elif r == 1:
    x = torch.zeros(2)
    dist.recv(x, 0, tag=5)
    res["recv"] = x.tolist()
t = torch.full((3,), float(r + 1))
dist.reduce(t, dst=0)
res["reduce_at_root"] = t.tolist() if r == 0 else None
with open(f"{out}.{r}.json", "w") as f:
    json.dump(res, f)
# every rank is done before any closes its links: gloo aborts a rank whose peer
# closed a connection under it (std::terminate in its I/O thread)
dist.barrier()
dist.destroy_process_group()

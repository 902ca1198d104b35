"""ReCCL as a torch.distributed backend: `import reccl.torch`, then
`torch.distributed.init_process_group(backend="reccl")`.

The import registers the backend "reccl" for CPU tensors with
`torch.distributed.Backend.register_backend`. `init_process_group` with
`env://` (as torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
LOCAL_RANK) hands us torch's store; ReCCL's rendezvous runs on it. Settings:

* `RECCL_NICS`: this rank's NIC addresses, comma-separated (default: the local
  address that reaches MASTER_ADDR). `{local_rank}` and `{rank}` are replaced,
  so one torchrun line can give every local rank its own NICs.
* `RECCL_HOST`: the host name ranks on one machine share (default: the
  hostname; placeholders as above, e.g. to pretend hosts on one machine).
* `RECCL_SECRET`: the job secret (export it before torchrun, which passes the
  environment on). Without it rank 0 makes one and shares it through torch's
  store, which is only as private as that store (torch's TCPStore has no
  authentication), and a warning says so.

Every collective runs on one worker thread per process group, in the order the
calls were made (all ranks make them in the same order), so `async_op=True`
returns at once with a `Work` whose `wait()` and `get_future()` behave as
torch documents; DDP uses the future of its gradient all_reduce.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.futures import Future

from . import auth
from .communicator import CommOptions, Communicator
from .errors import ReCCLError

log = logging.getLogger("reccl.torch")
BACKEND = "reccl"


class TorchStore:
    """ReCCL's rendezvous on a torch.distributed store (set/get/add/check)."""

    def __init__(self, store: dist.Store, timeout: float) -> None:
        self.store = store
        self.timeout = timeout

    def set(self, key: str, value: bytes) -> None:
        self.store.set(key, value)  # type: ignore[arg-type]  # c10d stores bytes as they are

    def get(self, key: str, timeout: float | None = None) -> bytes:
        t = self.timeout if timeout is None else timeout
        self.store.wait([key], timedelta(seconds=t))
        return bytes(self.store.get(key))

    def add(self, key: str, amount: int = 1) -> int:
        return int(self.store.add(key, amount))

    def check(self, key: str) -> bool:
        return bool(self.store.check([key]))


def _expand(text: str, rank: int) -> str:
    local = os.environ.get("LOCAL_RANK", "0")
    return text.replace("{local_rank}", local).replace("{rank}", str(rank))


def default_nic() -> str:
    """The local address the kernel would use to reach MASTER_ADDR (no packet is sent)."""
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.get("MASTER_PORT", "29500"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(addr), port))
        return str(s.getsockname()[0])


_OPS = {"SUM": "sum", "PRODUCT": "prod", "MIN": "min", "MAX": "max", "AVG": "avg"}


def _op(reduce_op: Any) -> str:
    for name, ours in _OPS.items():
        if reduce_op == getattr(dist.ReduceOp, name):
            return ours
    raise ReCCLError(f"reduction {reduce_op} is not supported by reccl "
                     f"(supported: {', '.join(_OPS)})")


class ReCCLWork(dist.Work):
    """An operation queued on the group's worker; completes its future when done."""

    def __init__(self, result: list[torch.Tensor]) -> None:
        super().__init__()
        self._result = result
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._future: Future = Future()

    def _finish(self, error: BaseException | None) -> None:
        self._error = error
        if error is None:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(error)
        self._done.set()

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until done; raises the operation's error."""
        secs = None if not timeout or timeout == timedelta(0) else timeout.total_seconds()
        if not self._done.wait(secs):
            raise ReCCLError(f"reccl: operation not done within {secs} s")
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self) -> bool:
        return self._done.is_set()

    def is_success(self) -> bool:
        return self._done.is_set() and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def get_future(self) -> Future:
        return self._future

    def result(self) -> list[torch.Tensor]:
        self.wait()
        return self._result


class ProcessGroupReCCL(dist.ProcessGroup):
    """The c10d process group; see the module docstring."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]  # the Python-subclass form
        secs = timeout.total_seconds()
        kv = TorchStore(store, secs)
        secret = os.environ.get(auth.ENV)
        if not secret:
            if rank == 0:
                kv.set("reccl/secret", auth.new_secret().encode())
            secret = kv.get("reccl/secret").decode()
            if rank == 0:
                log.warning("reccl: no RECCL_SECRET in the environment; rank 0 made one and "
                            "shared it through torch's store, which does not authenticate "
                            "its clients: export RECCL_SECRET before torchrun for a private "
                            "job secret")
        nics = [_expand(n, rank) for n in os.environ.get("RECCL_NICS", "").split(",") if n] \
            or [default_nic()]
        host = _expand(os.environ["RECCL_HOST"], rank) if os.environ.get("RECCL_HOST") \
            else None
        self.comm = Communicator(rank, size, kv, host=host, nics=nics, secret=secret,
                                 options=CommOptions(timeout=secs, store_timeout=secs))
        self._jobs: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._serve, name=f"reccl-torch-{rank}",
                                        daemon=True)
        self._worker.start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, work = job
            try:
                fn()
            except BaseException as e:  # handed to the caller through wait() / the future
                work._finish(e)
            else:
                work._finish(None)

    def _submit(self, fn: Callable[[], None], result: list[torch.Tensor]) -> ReCCLWork:
        work = ReCCLWork(result)
        self._jobs.put((fn, work))
        return work

    def getBackendName(self) -> str:  # noqa: N802 (c10d's name)
        return BACKEND

    def name(self) -> str:
        return BACKEND

    # --------------------------------------------------------- collectives

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> ReCCLWork:  # type: ignore[override]  # c10d calls (tensors, opts)
        op = _op(opts.reduceOp) if opts is not None else "sum"

        def run() -> None:
            for t in tensors:
                self.comm.all_reduce(t, op)
        return self._submit(run, tensors)

    def broadcast(self, tensors: list[torch.Tensor], opts: Any) -> ReCCLWork:  # type: ignore[override]  # c10d calls (tensors, opts)
        def run() -> None:
            for t in tensors:
                self.comm.broadcast(t, root=opts.rootRank)
        return self._submit(run, tensors)

    def reduce(self, tensors: list[torch.Tensor], opts: Any) -> ReCCLWork:  # type: ignore[override]  # c10d calls (tensors, opts)
        op = _op(opts.reduceOp)

        def run() -> None:
            for t in tensors:
                self.comm.reduce(t, op, root=opts.rootRank)
        return self._submit(run, tensors)

    def allgather(  # type: ignore[override]  # c10d calls (tensors, opts)
            self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
            opts: Any = None) -> ReCCLWork:
        def run() -> None:
            for outs, t in zip(output_lists, inputs, strict=True):
                gathered = self.comm.all_gather(t.contiguous())
                for i, o in enumerate(outs):
                    o.copy_(gathered[i].reshape(o.shape))
        return self._submit(run, [o for outs in output_lists for o in outs])

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor,
                        opts: Any = None) -> ReCCLWork:
        def run() -> None:
            output.copy_(self.comm.all_gather(input.contiguous()).reshape(output.shape))
        return self._submit(run, [output])

    all_gather_single = _allgather_base  # torch 2.13's name

    def reduce_scatter(  # type: ignore[override]  # c10d calls (tensors, opts)
            self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]],
            opts: Any) -> ReCCLWork:
        op = _op(opts.reduceOp)

        def run() -> None:
            for out, ins in zip(outputs, input_lists, strict=True):
                stacked = torch.stack([x.reshape(-1) for x in ins])
                out.copy_(self.comm.reduce_scatter(stacked, op).reshape(out.shape))
        return self._submit(run, outputs)

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor,
                             opts: Any) -> ReCCLWork:
        op = _op(opts.reduceOp)

        def run() -> None:
            rows = input.contiguous().reshape(self.size(), -1)
            output.copy_(self.comm.reduce_scatter(rows, op).reshape(output.shape))
        return self._submit(run, [output])

    reduce_scatter_single = _reduce_scatter_base  # type: ignore[assignment]  # torch 2.13's name

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor,
                      output_split_sizes: list[int], input_split_sizes: list[int],
                      opts: Any = None) -> ReCCLWork:
        def run() -> None:
            splits = list(input_split_sizes) or None
            got, counts = self.comm.all_to_all(input.contiguous(), send_splits=splits,
                                               return_splits=True)
            if output_split_sizes and list(output_split_sizes) != counts:
                raise ReCCLError(f"alltoall_base: received row counts {counts}, "
                                 f"output_split_sizes says {list(output_split_sizes)}")
            output.copy_(got.reshape(output.shape))
        return self._submit(run, [output])

    all_to_all_single = alltoall_base  # type: ignore[assignment]  # torch 2.13's name

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                 opts: Any = None) -> ReCCLWork:
        def run() -> None:
            flat = torch.cat([x.reshape(-1) for x in inputs])
            got, counts = self.comm.all_to_all(flat, send_splits=[x.numel() for x in inputs],
                                               return_splits=True)
            off = 0
            for o, n in zip(outputs, counts, strict=True):
                if n != o.numel():
                    raise ReCCLError(f"alltoall: received {n} elements for an output of "
                                     f"{o.numel()}")
                o.copy_(got[off:off + n].reshape(o.shape))
                off += n
        return self._submit(run, outputs)

    def barrier(self, opts: Any = None) -> ReCCLWork:
        return self._submit(self.comm.barrier, [])

    def send(self, tensors: list[torch.Tensor], dst: int, tag: int) -> ReCCLWork:
        def run() -> None:
            for t in tensors:
                self.comm.send_array(t, dst, tag)
        return self._submit(run, tensors)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int) -> ReCCLWork:
        def run() -> None:
            for t in tensors:
                self.comm.recv_array(src, tag, out=t)
        return self._submit(run, tensors)

    def shutdown(self) -> None:
        """Release the links (called by destroy_process_group on recent torch)."""
        self._jobs.put(None)
        self._worker.join(timeout=30)
        self.comm.close()


def _create(store: dist.Store, rank: int, size: int, timeout: timedelta) -> ProcessGroupReCCL:
    return ProcessGroupReCCL(store, rank, size, timeout)


if BACKEND not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])

"""reccl-run: start N ranks per host across hosts or network namespaces (like torchrun).

    reccl-run --host h0:10.77.0.1,10.78.0.1@rcns0 --host h1:10.77.0.2,10.78.0.2@rcns1 \\
              --nproc-per-host 2 -- python train.py

Each --host is NAME:NIC,NIC[@NETNS]; ranks are numbered host by host. The
launcher makes the job secret (or takes $RECCL_SECRET), serves the rendezvous
store with it (a Unix socket when namespaces are used, since it crosses them;
else TCP), sets RECCL_RANK, RECCL_LOCAL_RANK, RECCL_WORLD_SIZE, RECCL_STORE,
RECCL_HOST, RECCL_NICS and RECCL_SECRET for every rank, and stops all ranks
when one fails. Ranks on other machines: run one launcher per machine with
--world-size, --rank-offset, --store pointing at the first, and the first
launcher's secret exported as RECCL_SECRET.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from . import auth
from .store import StoreServer


@dataclass(frozen=True)
class HostSpec:
    """One host: name, NIC addresses, optional network namespace."""

    name: str
    nics: tuple[str, ...]
    netns: str | None = None


def parse_host(text: str) -> HostSpec:
    """Parse NAME:NIC,NIC[@NETNS]."""
    body, _, netns = text.partition("@")
    name, sep, nics = body.partition(":")
    if not name or not sep or not nics:
        raise ValueError(f"--host {text!r}: expected NAME:NIC[,NIC...][@NETNS]")
    return HostSpec(name, tuple(n for n in nics.split(",") if n), netns or None)


def launch(hosts: list[HostSpec], nproc_per_host: int, argv: list[str],
           env: dict[str, str] | None = None, timeout: float | None = None,
           world_size: int | None = None, rank_offset: int = 0, store: str | None = None,
           ) -> list[int]:
    """Run `argv` once per rank; returns the exit codes (rank order). The first failure
    stops the others."""
    if not argv:
        raise ValueError("nothing to run: give the command after --")
    world = world_size or len(hosts) * nproc_per_host
    tmp = None
    server = None
    # The job secret: given (several launchers of one job share it) or made here.
    secret = (env or {}).get(auth.ENV) or os.environ.get(auth.ENV) or auth.new_secret()
    if store is None:
        if any(h.netns for h in hosts):
            tmp = tempfile.mkdtemp(prefix="reccl-")
            server = StoreServer(f"unix:{tmp}/store.sock", secret=secret.encode())
        else:
            server = StoreServer("127.0.0.1:0", secret=secret.encode())
        store = server.address
    procs: list[subprocess.Popen] = []
    try:
        rank = rank_offset
        seen: dict[str, int] = {}
        for h in hosts:
            for _ in range(nproc_per_host):
                # Several specs may name one host (a rank slot each): count across them.
                local = seen.get(h.name, 0)
                seen[h.name] = local + 1
                e = dict(os.environ)
                e.update(env or {})
                e.update(RECCL_RANK=str(rank), RECCL_LOCAL_RANK=str(local),
                         RECCL_WORLD_SIZE=str(world), RECCL_STORE=store, RECCL_HOST=h.name,
                         RECCL_NICS=",".join(h.nics), RECCL_SECRET=secret)
                cmd = (["ip", "netns", "exec", h.netns] if h.netns else []) + list(argv)
                _check_sigterm()
                procs.append(subprocess.Popen(cmd, env=e, start_new_session=True))
                rank += 1
        return _wait(procs, timeout)
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)
        if server:
            server.close()
        if tmp:
            try:
                os.rmdir(tmp)
            except OSError:
                pass


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=3)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def _wait(procs: list[subprocess.Popen], timeout: float | None) -> list[int]:
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        _check_sigterm()
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            return [int(c) for c in codes]  # type: ignore[arg-type]
        if any(c not in (None, 0) for c in codes):
            bad = next(i for i, c in enumerate(codes) if c not in (None, 0))
            print(f"reccl-run: rank {bad} exited with {codes[bad]}; stopping the others",
                  file=sys.stderr)
            for p in procs:
                if p.poll() is None:
                    _kill(p)
            return [int(p.returncode) for p in procs]
        if end is not None and time.monotonic() > end:
            print("reccl-run: timeout; stopping all ranks", file=sys.stderr)
            for p in procs:
                if p.poll() is None:
                    _kill(p)
            return [int(p.returncode) for p in procs]
        time.sleep(0.02)


class _Terminated(Exception):
    """The launcher got SIGTERM."""


class _SigTerm:
    received = False
    """Set by the handler; the launcher acts on it at its own checkpoints."""


def _on_sigterm(*_: object) -> None:
    # Only a flag: an exception raised from here lands wherever the main thread is, and
    # inside Popen.poll() (between its waitpid lock's acquire and the try that releases
    # it) it left the lock held, so the clean-up's wait() blocked for ever on a rank.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the clean-up
    _SigTerm.received = True


def _check_sigterm() -> None:
    """Raise _Terminated if SIGTERM came: called where no lock is held and every rank
    started so far is in the list the clean-up stops."""
    if _SigTerm.received:
        raise _Terminated


def main(argv: list[str] | None = None) -> int:
    """Entry point of reccl-run."""
    args = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, cmd = args[:i], args[i + 1:]
    ap = argparse.ArgumentParser(prog="reccl-run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", action="append", default=[],
                    help="NAME:NIC[,NIC...][@NETNS]; repeat per host (default: one local host "
                         "on 127.0.0.1)")
    ap.add_argument("--nproc-per-host", type=int, default=1)
    ap.add_argument("--world-size", type=int, help="total ranks when several launchers run")
    ap.add_argument("--rank-offset", type=int, default=0)
    ap.add_argument("--store", help="use this store instead of serving one (HOST:PORT)")
    ap.add_argument("--timeout", type=float)
    ns = ap.parse_args(args)
    # SIGTERM unwinds launch() at its next checkpoint (within 20 ms), and its clean-up
    # stops every rank (the default action would leave them running: they are in sessions
    # of their own)
    _SigTerm.received = False
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        hosts = [parse_host(h) for h in ns.host] or [HostSpec("localhost", ("127.0.0.1",))]
        codes = launch(hosts, ns.nproc_per_host, cmd, timeout=ns.timeout,
                       world_size=ns.world_size, rank_offset=ns.rank_offset, store=ns.store)
        _check_sigterm()  # it may have come while the ranks were being stopped anyway
    except ValueError as e:
        print(f"reccl-run: {e}", file=sys.stderr)
        return 2
    except _Terminated:
        print("reccl-run: SIGTERM: every rank stopped", file=sys.stderr)
        return 128 + signal.SIGTERM
    # The first rank's own failure, not the SIGTERM the others then received.
    failed = [c for c in codes if c > 0] or [128 - c for c in codes if c < 0]
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())

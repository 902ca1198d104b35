"""Helpers shared by the tests and the benchmarks: free loopback ports, waiting for a
condition, stopping processes.

A module at the top of the checkout, not in tests/: tests and benchmarks both
import it as ``testsupport`` with the checkout on ``sys.path`` (``python -m
pytest`` from the checkout; the benchmarks put it there), so that no
benchmark reaches into the tests. It imports nothing of the project, so any
test layer can use it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports that were free on loopback a moment ago.

    All sockets stay bound until every port is known, so the ports differ;
    another process may still take one before the caller binds it.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One TCP port that was free on loopback a moment ago."""
    return free_ports(1)[0]


def wait_until(cond: Callable[[], T], what: str = "condition", timeout: float = 15.0,
               interval: float = 0.05, check: Callable[[], object] | None = None) -> T:
    """Poll ``cond`` until it returns something true, and return that.

    ``check`` runs before every poll and may raise to give up early (e.g. the
    process being waited for died). Fails with an AssertionError naming
    ``what`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        got = cond()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}")
        time.sleep(interval)


async def async_wait_until(cond: Callable[[], T], what: str = "condition",
                           timeout: float = 15.0, interval: float = 0.02) -> T:
    """``wait_until`` for coroutines: the event loop keeps running between polls."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = cond()
        if got:
            return got
        if loop.time() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {what}")
        await asyncio.sleep(interval)


def stop_processes(procs: Iterable[subprocess.Popen[Any]], sig: int = signal.SIGTERM,
                   timeout: float = 10.0) -> list[int]:
    """Send ``sig`` to every process still running, wait up to ``timeout`` seconds
    for each, kill those that did not stop; return the exit codes."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    codes = []
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        codes.append(p.returncode)
    return codes


def stop_process(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM,
                 timeout: float = 10.0) -> int:
    """``stop_processes`` for one process; its exit code."""
    return stop_processes([proc], sig, timeout)[0]


class CpuHogs:
    """A busy process per core (``yes`` into /dev/null, at the caller's nice level) while
    the ``with`` block runs: the machine as loaded as a shared CI runner."""

    def __init__(self, count: int | None = None) -> None:
        self.count = count or os.cpu_count() or 1
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuHogs:
        # setpriv --pdeathsig: a hog dies with the thread that started it, so a test process
        # killed inside the block (a suite stopped by SIGTERM) leaves no busy cores behind
        cmd = ["setpriv", "--pdeathsig", "KILL", "yes"] if shutil.which("setpriv") else ["yes"]
        try:
            for _ in range(self.count):
                self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        stop_processes(self.procs, signal.SIGKILL)


def terminate(proc: subprocess.Popen[Any], ceiling: float = 30.0) -> int:
    """SIGTERM ``proc`` and wait for it to exit by itself; its exit status.

    ``ceiling`` only stops a hung process from hanging the test: one still
    running then is killed and the test fails, so it asserts that the process
    ends on its own, not how fast (how fast is the program's own grace period).
    """
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(ceiling)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        args = proc.args if isinstance(proc.args, list | tuple) else [proc.args]
        raise AssertionError(f"pid {proc.pid} ({' '.join(map(str, args))[:120]}) still "
                             f"running {ceiling:g} s after SIGTERM: killed") from None

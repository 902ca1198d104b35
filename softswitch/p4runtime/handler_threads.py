"""The P4Runtime server's handler threads: made on demand, reused, and daemon threads.

gRPC's thread-pool server only calls ``submit`` on its executor. The standard
``ThreadPoolExecutor`` makes non-daemon threads and joins them when the
interpreter exits, so a handler still running when the switch stops (a
SetForwardingPipelineConfig compiling a large program takes tens of seconds on
a loaded machine) kept the stopped process alive until it had finished. Here
the threads are daemon threads: once the server has stopped and cancelled its
calls, what a handler still computes is abandoned with the process.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

_Work = tuple[futures.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HandlerThreads(futures.Executor):
    """At most ``max_threads`` daemon threads; one is made when work comes and none is idle."""

    def __init__(self, max_threads: int, name: str = "p4rt") -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {max_threads}")
        self._max = max_threads
        self._name = name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count()
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        """Run ``fn(*args, **kwargs)`` in a handler thread."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new work after shutdown")
            fut: futures.Future[Any] = futures.Future()
            self._work.put((fut, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                t = threading.Thread(target=self._run, daemon=True,
                                     name=f"{self._name}_{next(self._numbers)}")
                self._threads.append(t)
                t.start()
            return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more work; idle threads end. ``wait`` joins the threads (and so waits for the
        work in progress); ``cancel_futures`` cancels the work not started yet."""
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            threads = list(self._threads)
            for _ in threads:
                self._work.put(None)
        if wait:
            for t in threads:
                t.join()

    def _run(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            fut, fn, args, kwargs = item
            if fut.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # handed to the caller through the future
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
            del item, fut  # no reference to the last call's objects while idle
            self._idle.release()

"""Ending asyncio tasks without losing the caller's own cancellation.

Two common idioms can swallow a cancellation on Python 3.11, and a task that
swallows the one ``Daemon.stop`` sends runs on, so the process never exits
after SIGTERM:

* ``await asyncio.wait_for(fut, t)`` returns ``fut``'s result when the caller is
  cancelled in the same loop iteration in which ``fut`` completes (fixed in
  Python 3.12; a process resumed after SIGSTOP has many such iterations);
* ``task.cancel()`` then ``with suppress(CancelledError): await task`` also
  suppresses a cancellation of the caller that arrives while it waits.

``asyncio.wait`` does neither: it never raises what the awaited tasks raise,
never cancels them, and raises the caller's own cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def wait_at_most(fut: asyncio.Future[Any], timeout: float) -> bool:
    """Wait until ``fut`` is done, ``timeout`` seconds at most; True if it is. ``fut`` is
    neither cancelled nor awaited for its result, and a cancellation of the caller is raised."""
    done, _ = await asyncio.wait([fut], timeout=timeout)
    return bool(done)


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]],
                          timeout: float | None = None) -> set[asyncio.Future[Any]]:
    """Cancel ``tasks`` and wait until they have ended (``timeout`` seconds at most);
    returns those still running. Their exceptions are retrieved (they ended anyway);
    a cancellation of the caller is raised, the tasks stay cancelled."""
    tasks = list(tasks)
    pending = [t for t in tasks if not t.done()]
    for t in pending:
        t.cancel()
    still: set[asyncio.Future[Any]] = set()
    if pending:
        _, still = await asyncio.wait(pending, timeout=timeout)
    for t in tasks:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: no "exception was never retrieved" at collection
    return still

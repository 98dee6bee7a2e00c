"""What follows an index commit, off the writer's way: tantivy's merges, and the memory
its threads freed.

**Merges.**  A commit may start merges of older segments, which tantivy runs on its own
threads; `wait_merging_threads()` returns when they end (and releases the GIL meanwhile).
A batch that waited for them before it returned would make every commit that started
one pay for the whole merge (a turn's index step: short at the median, long on average;
`benchmarks/bench_pipeline.py` times it).  So a
live-index batch hands its committed writer, and the writer lock it holds, to
`MergesInFlight`: one thread waits for the merges, then releases the lock.  What the batch
wrote is durable and visible when it returns; merges only rewrite segments of
what is already committed, and a process killed during one loses that merge alone
(tantivy never committed it; the next writer collects its files).

Tantivy allows one writer per index, so nobody writes until the merges end: another
process waits on the lock as it always did, and this process's next lock (a batch, a
compaction, a rebuild's swap) first waits for the thread (`settle`).  The thread is not a
daemon: the interpreter waits for it at exit.  A merge that failed (the disk refused a
write) is raised by the next `settle`: nothing committed is lost by it, but the index's
disk is failing and the next writer should say so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["TRIM_EVERY", "MergesInFlight", "release_freed_memory"]


class MergesInFlight:
    """The merges of this index's last commit, waited for on their own thread."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def hand_over(self, writer: Any, release: Callable[[], None]) -> None:
        """Wait for `writer`'s merges on a thread, then call `release` (the writer lock's
        exit) there.  The caller has settled the previous thread (it held the lock)."""

        def finish() -> None:
            try:
                writer.wait_merging_threads()
            except BaseException as exc:  # kept for the next settle; the lock goes anyway
                self._error = exc
            finally:
                release()

        self._thread = threading.Thread(target=finish, name="pandafs-index-merges")
        self._thread.start()

    def settle(self) -> None:
        """Wait until the last commit's merges have ended and its lock is released; raise
        the error a merge ended with, if one did."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes  # only writers get here: a search never loads it

    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]  # the loaded libc's
    except (OSError, AttributeError, TypeError):
        return None  # not glibc: nothing to do


TRIM_EVERY = 1_000
"""Documents an index writes between two hand-backs of freed memory (`release_freed_memory`).

`malloc_trim(0)` walks the whole heap, and after a turn's one-document commit it would
hand back the pages tantivy's writer heap had just used, so the next commit faulted them
all in again, slowing each turn's index step (and raw tantivy's own commit in the same
process too)."""


def release_freed_memory() -> None:
    """Hand back to the system the memory tantivy's threads (and ours) have freed.

    glibc keeps what another thread freed in that thread's arena, so a process that
    indexed keeps its high-water mark: after a 100k-document rebuild, 118 MiB anonymous
    resident with 35 MiB in use, and the learning fold that follows it stacked its own
    peak on top; an import grew by ~8 MiB per 1,000 turns.  Called after a rebuild's
    spills and commit, and every `TRIM_EVERY` documents any other writer commits."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

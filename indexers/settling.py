"""What follows an index commit, off the writer's way: tantivy's merges, and the memory its
threads freed.  A live-index batch hands its committed writer and its lock to
`MergesInFlight`, whose thread (not a daemon) waits for the merges and then releases the
lock: what the batch wrote is durable and visible when it returns, a killed merge loses
only itself.  This process's next lock first waits for it (`settle`), which raises a
merge's failure: the index's disk is failing."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from .behind import WrittenBehind

__all__ = ["TRIM_EVERY", "MergesInFlight", "release_freed_memory"]


class MergesInFlight:
    """The merges of this index's last commit, waited for on their own thread."""

    def __init__(self) -> None:
        self._job = WrittenBehind("pandafs-index-merges")
        self._error: BaseException | None = None

    def hand_over(self, writer: Any, release: Callable[[], None]) -> None:
        """Wait for `writer`'s merges on a thread, then call `release` (the writer lock's exit)
        there: a merge's error is kept for the next `settle`, the lock goes anyway."""

        def then(error: BaseException | None) -> None:
            self._error = self._error or error
            release()

        self._job.start(writer.wait_merging_threads, then)

    def settle(self) -> None:
        """Wait until the last commit's merges have ended and its lock is released; raise
        the error a merge ended with, if one did."""
        self._job.settle()
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
"""Documents an index writes between two hand-backs of freed memory: `malloc_trim(0)` walks
the whole heap, and after each small commit it would hand back pages the next commit uses."""


def release_freed_memory() -> None:
    """Hand back to the system the memory tantivy's threads (and ours) have freed: glibc
    keeps it in each thread's arena, so an indexing process keeps its high-water mark.
    Called after a rebuild and every `TRIM_EVERY` documents committed."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

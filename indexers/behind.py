"""Index work done behind its caller, each job on a thread of its own (not a daemon).

A turn's index commit changes nothing the person reads, so the pipeline returns the answer
while it commits (`FullTextIndex.batch_behind`).  One job at a time per index folder and
process (`of`), in order; every read and write of the index in this process waits for the
job in flight first, so the process never reads the index without what it wrote.  A
process killed meanwhile loses the commit, never what it was indexing: the caller marks
that first (the turn's `.indexing` file).

A live-index batch hands its committed writer and its lock to a job that waits for
tantivy's merges and then releases the lock (`IndexFolder.merges`): what the batch wrote is
durable and visible when it returns, a killed merge loses only itself.  This process's next
lock first waits for it, which raises a merge's failure: the index's disk is failing."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import ClassVar

__all__ = ["TRIM_EVERY", "WrittenBehind", "release_freed_memory"]


class WrittenBehind:
    """The job in flight on its own thread, if any, for one index folder."""

    _of: ClassVar[dict[str, WrittenBehind]] = {}
    _making: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str = "pandafs-index-behind") -> None:
        self._name = name  # its thread's
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None  # of a job started without `then`

    @classmethod
    def of(cls, folder: Path) -> WrittenBehind:
        """The one of this process for the index at `folder` (however it is spelled)."""
        key = os.path.realpath(folder)
        with cls._making:
            found = cls._of.get(key)
            if found is None:
                found = cls._of[key] = cls()
            return found

    def start(
        self, job: Callable[[], None], then: Callable[[BaseException | None], None] | None = None
    ) -> None:
        """Run `job` on a thread (after the job before it has ended), then `then(error)` there
        (the caller's to release what it handed over and report the error); without `then`,
        the error is kept for the next `settle` to raise."""
        self._join()

        def run() -> None:
            error: BaseException | None = None
            try:
                job()
            except BaseException as exc:
                error = exc
            if then is not None:
                then(error)
            else:
                self._error = self._error or error

        self._thread = threading.Thread(target=run, name=self._name)
        self._thread.start()

    def settle(self) -> None:
        """Wait for the job in flight to end (at once from the job's own thread); raise the
        error a job started without `then` ended with, once."""
        self._join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _join(self) -> None:
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        if self._thread is thread:
            self._thread = None


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

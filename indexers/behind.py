"""A batch written behind its caller: filled and committed on a thread of its own.

A turn's answer is ready once its events are fsynced and its files written; its index
commit (a new segment and its meta, each fdatasynced by tantivy: a large share of a
turn) changes nothing the person reads.  So the pipeline hands
that batch to `WrittenBehind` and returns the answer while it commits.

One job at a time per index folder, in order: a new one first waits for the one before.
Every read and write of the index in this process waits for the job in flight first
(`FullTextIndex.settle_behind`), through whichever `IndexFolder` of that folder (one
`WrittenBehind` per folder and process: `of`), so this process never reads the index
without what it wrote.  Other processes see the commit when it lands, as they see any
writer's.  The thread is not a daemon: the interpreter waits for it at exit.  A job's outcome (None, or
the error it ended with) goes to the job's own `then`, on its thread: what was handed
over (a turn's lock, its marker file) is the job's to release, whatever happened; an
error is the caller's to report, since whoever settles later (a search) did not ask for
that batch.  A process killed meanwhile loses the commit, never what the job was
indexing: the caller marks that before it hands the job over (the turn's `.indexing`
file, `pandafs.pipeline.recovery`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

__all__ = ["WrittenBehind"]


class WrittenBehind:
    """The index job in flight on its own thread, if any, for one index folder."""

    _of: ClassVar[dict[str, WrittenBehind]] = {}
    _making: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    @classmethod
    def of(cls, folder: Path) -> WrittenBehind:
        """The one of this process for the index at `folder` (however it is spelled)."""
        key = os.path.realpath(folder)
        with cls._making:
            found = cls._of.get(key)
            if found is None:
                found = cls._of[key] = cls()
            return found

    def start(self, job: Callable[[], None], then: Callable[[BaseException | None], None]) -> None:
        """Run `job` on a thread (after the job before it has ended), then `then(error)`."""
        self.settle()

        def run() -> None:
            error: BaseException | None = None
            try:
                job()
            except BaseException as exc:  # handed to `then`: the caller's to report
                error = exc
            then(error)

        self._thread = threading.Thread(target=run, name="pandafs-index-behind")
        self._thread.start()

    def settle(self) -> None:
        """Wait for the job in flight to end (at once from the job's own thread)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        if self._thread is thread:
            self._thread = None

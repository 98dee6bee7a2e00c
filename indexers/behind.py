"""A batch written behind its caller: filled and committed on a thread of its own.

A turn's index commit changes nothing the person reads, so the pipeline returns the answer
while it commits.  One job at a time per index folder and process (`of`), in order; every
read and write of the index in this process waits for the job in flight first, so the
process never reads the index without what it wrote.  A job's outcome goes to its `then`,
on its thread (not a daemon), which releases what was handed over and reports the error.
A process killed meanwhile loses the commit, never what it was indexing: the caller marks
that first (the turn's `.indexing` file)."""

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

    def __init__(self, name: str = "pandafs-index-behind") -> None:
        self._name = name  # its thread's
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

        self._thread = threading.Thread(target=run, name=self._name)
        self._thread.start()

    def settle(self) -> None:
        """Wait for the job in flight to end (at once from the job's own thread)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        if self._thread is thread:
            self._thread = None

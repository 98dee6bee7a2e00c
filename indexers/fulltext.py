"""The tantivy full-text index over every document of a vault: one class, `FullTextIndex`,
holding its parts: the folder (layout, lock, tantivy index), the state log (which files
are indexed at which checksum), the writer and the searcher.  A search waits only for a
batch its own process writes behind, and reopens the index if a rebuild swapped it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import Any

import tantivy

from .errors import CANNOT_WRITE, IndexingError
from .folder import IndexFolder
from .request import Ranking, SearchRequest
from .search import IndexReader
from .state import StateEntry, StateLog
from .writer import CatchUp, IndexBatch, IndexWriter, Learned

__all__ = ["FullTextIndex"]


class FullTextIndex:
    """One vault's full-text index: a folder, its state log, a writer and a reader (tantivy opened lazily)."""

    def __init__(self, folder: IndexFolder, log: StateLog, writer: IndexWriter, reader: IndexReader) -> None:
        self.folder = folder
        self.log = log
        self.writer = writer
        self.reader = reader

    @classmethod
    def at(
        cls,
        indexes_dir: Path,
        *,
        wait_s: float = 30.0,
        heap_mb: int = 128,
        learned: Learned = Learned(),  # noqa: B008 - frozen, never changed
        read_only: bool = False,
    ) -> FullTextIndex:
        """The index under a vault's `indexes/` folder (`read_only`: opened for searching only,
        as a vault that cannot be written is: `IndexFolder`)."""
        folder = IndexFolder(indexes_dir, wait_s=wait_s, read_only=read_only)
        log = StateLog(folder)
        writer = IndexWriter(folder, log, heap_mb=heap_mb, learned=learned)
        return cls(folder, log, writer, IndexReader(folder))

    # --- reading --------------------------------------------------------------------

    def exists(self) -> bool:
        return self.folder.exists()

    def searcher(self) -> tantivy.Searcher:
        return self.reader.searcher()

    def search(self, req: SearchRequest, ranking: Ranking) -> list[dict[str, Any]]:
        return self.reader.search(req, ranking)

    def lookup(self, path: str) -> dict[str, Any] | None:
        return self.reader.lookup(path)

    def count(self) -> int:
        return self.reader.count()

    def state(self) -> dict[str, StateEntry]:
        return self.log.state()

    def counts(self) -> tuple[int, int]:
        """(documents tantivy holds, documents the state records), read under the writer lock.
        They differ when tantivy kept a document no path names (a lost delete, which no
        reconcile finds), or a writer died between its commit and its state line."""
        self.folder.open()  # (made under the lock if missing: before taking it here)
        if not self.folder.read_only:
            try:
                with self.folder.lock():
                    return self._counts_now()
            except OSError as exc:  # the lock cannot be taken where nothing can be written
                if exc.errno not in CANNOT_WRITE:  # (read-only, full): and nothing can commit there
                    raise
        return self._counts_now()

    def _counts_now(self) -> tuple[int, int]:
        recorded = sum(1 for entry in self.log.state().values() if not entry.skipped)
        return self.reader.count(), recorded

    # --- writing --------------------------------------------------------------------

    def batch(self) -> AbstractContextManager[IndexBatch]:
        return self.writer.batch()

    def rebuild(self, catch_up: CatchUp | None = None) -> AbstractContextManager[IndexBatch]:
        return self.writer.rebuild(catch_up)

    def compact_state(self, *, force: bool = False) -> bool:
        return self.log.compact(force=force)

    def batch_behind(
        self, fill: Callable[[IndexBatch], None], then: Callable[[BaseException | None], None]
    ) -> None:
        """`fill` a batch and commit it on a thread of its own, then `then(error)` there; returns
        at once.  Every later read or write of this index in this process waits for it first."""

        def job() -> None:
            with self.writer.batch() as batch:
                fill(batch)
            with suppress(IndexingError):  # the next search says what is wrong, as it would have
                self.reader.searcher()  # reloaded here, not by the next search

        self.folder.behind.start(job, then)

    def settle_behind(self) -> None:
        """Wait until the batch written behind, if one is in flight, has ended."""
        self.folder.behind.settle()

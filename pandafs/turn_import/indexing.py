"""Hand placed turns' index documents to the indexer in a background thread, one batch at
a time, and mark each ledger `indexed` once its batch is committed.  At most one batch
waits; a crash before a mark only means the next import indexes that batch again."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from indexers.documents import IndexDoc, Skipped, load_index_doc

from ..vault import Vault
from .ledger import Ledger

__all__ = ["AfterBatch", "BackgroundIndexer"]

AfterBatch = Callable[[list[IndexDoc | Skipped]], None]


class BackgroundIndexer:
    """Run `after_batch` off the caller's thread; ledger marks are written on the caller's."""

    def __init__(self, vault: Vault, after_batch: AfterBatch | None) -> None:
        self.vault = vault
        self.after_batch = after_batch
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pandafs-import-index") if after_batch else None
        self._pending: tuple[Future[None], list[tuple[Ledger, int]]] | None = None
        # "index": time in `after_batch` (its thread); "index wait": the caller blocked on it
        self.seconds = {"index": 0.0, "index wait": 0.0}

    def _index(self, docs: list[IndexDoc | Skipped]) -> None:
        start = time.perf_counter()
        try:
            self.after_batch(docs)  # type: ignore[misc]
        finally:
            self.seconds["index"] += time.perf_counter() - start

    def submit(self, docs: list[IndexDoc | Skipped], marks: list[tuple[Ledger, int]]) -> None:
        """Index `docs`, then mark each `(ledger, turn number)`: after the previous batch is done."""
        self.drain()
        if self._pool is None or self.after_batch is None or not docs:
            self._mark(marks)
            return
        self._pending = (self._pool.submit(self._index, docs), marks)

    def drain(self) -> None:
        """Wait for the batch in flight; write its marks (re-raises its failure)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            future, marks = pending
            start = time.perf_counter()
            future.result()
            self.seconds["index wait"] += time.perf_counter() - start
            self._mark(marks)

    def recovered(self, ledger: Ledger, names: list[str]) -> None:
        """Index again the turns a killed import placed (read back from disk), then mark."""
        if self.after_batch is not None and names:
            root = self.vault.root
            max_bytes = self.vault.config.index.max_file_bytes
            size = self.vault.config.index.batch_size
            for start in range(0, len(names), size):
                docs = []
                for name in names[start : start + size]:
                    loaded = load_index_doc(
                        root, f"users/{ledger.user}/turns/{name}/context.md", max_bytes=max_bytes
                    )
                    if loaded is not None:
                        docs.append(loaded)
                self.submit(docs, [])
        if names or not ledger.marked:
            self.submit([], [(ledger, ledger.scanned)])

    def close(self, *, failed: bool) -> None:
        """Finish the batch in flight and stop the thread.  Its marks are written if it
        was committed; its failure is raised unless the caller is already failing."""
        try:
            pending, self._pending = self._pending, None
            if pending is not None:
                future, marks = pending
                error = future.exception()
                if error is None:
                    self._mark(marks)
                elif not failed:
                    raise error
        finally:
            if self._pool is not None:
                self._pool.shutdown()

    @staticmethod
    def _mark(marks: list[tuple[Ledger, int]]) -> None:
        for ledger, upto in marks:
            ledger.mark_indexed(upto)

"""The tantivy full-text index over every document of a vault: one class, `FullTextIndex`,
holding its parts (the folder: layout, lock, tantivy index; the searcher) and keeping its
state log (which files are indexed at which checksum).  It writes batches on the live index
(holding the folder's lock, committed when they close) and rebuilds beside it, swapped in
when complete.  A search waits only for a batch its own process writes behind, and
reopens the index if a rebuild swapped it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import tantivy

from events.errors import NotInVault
from events.fsio import append_file, atomic_write, open_vault_file, remove_tree_in_vault, swap_in

from .behind import TRIM_EVERY, release_freed_memory
from .errors import CANNOT_WRITE, IndexBusy, IndexingError
from .folder import IndexFolder
from .search import IndexReader
from .state import StateEntry, fold_state, state_lines
from .writer import CatchUp, IndexBatch, Learned

__all__ = ["FullTextIndex"]


def _give_up(writer: Any) -> None:
    """Drop what `writer` holds uncommitted and release it now, not when a traceback naming it
    is freed (a writer tantivy already consumed has nothing left to give up)."""
    with suppress(ValueError, RuntimeError):
        writer.rollback()
    with suppress(ValueError, RuntimeError):
        writer.wait_merging_threads()


def _merged(writer: Any, release: Callable[[], None]) -> None:
    """Wait for `writer`'s merges, then release the writer lock (`release`) whatever they end with."""
    try:
        writer.wait_merging_threads()
    finally:
        release()


class FullTextIndex:
    """One vault's full-text index: a folder, its state log and a reader (tantivy opened lazily)."""

    def __init__(
        self,
        indexes_dir: Path,
        *,
        wait_s: float = 30.0,
        heap_mb: int = 128,
        learned: Learned = Learned(),  # noqa: B008 - frozen, never changed
        read_only: bool = False,
    ) -> None:
        """The index under a vault's `indexes/` folder (`read_only`: opened for searching only,
        as a vault that cannot be written is: `IndexFolder`)."""
        self.folder = IndexFolder(indexes_dir, wait_s=wait_s, read_only=read_only)
        self._state_cache: tuple[int, int, dict[str, StateEntry]] | None = None  # (inode, offset read, fold)
        self.reader = IndexReader(self.folder)
        self.heap_mb = heap_mb
        # what the learning loop derived and recorded: trust of turns, sharing of research
        self.learned = learned
        self._untrimmed = 0  # documents committed since freed memory was handed back

    # --- reading --------------------------------------------------------------------

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
        recorded = sum(1 for entry in self.state().values() if not entry.skipped)
        return self.reader.count(), recorded

    # --- the state log: which files are indexed, at which checksum -----------------------

    def read_state_log(self, path: Path, offset: int = 0) -> bytes:
        """A state log (this index's, or a rebuild's beside it) from `offset` on, read as every
        vault file is: a link to it, or to a folder on its way, raises `NotInVault`."""
        root = self.folder.root
        with open_vault_file(root, path.relative_to(root).as_posix()) as handle:
            handle.seek(offset)
            return handle.read()

    def _append_state(self, path: Path, changes: dict[str, StateEntry | None]) -> None:
        """Append a line per change to the state log at `path` (this one, or a rebuild's)."""
        if changes:
            append_file(path, state_lines(changes), root=self.folder.root)

    def state(self) -> dict[str, StateEntry]:
        """What has been indexed: path → (checksum, mtime, size).  The fold is cached and only
        lines appended since are read; callers must not modify the mapping."""
        self.folder.behind.settle()  # (at once on the job's own thread)
        try:
            st = os.stat(self.folder.state_path)
        except FileNotFoundError:
            self._state_cache = None
            return {}
        cache = self._state_cache
        if cache is None or cache[0] != st.st_ino or st.st_size < cache[1]:
            cache = (st.st_ino, 0, {})
        ino, offset, state = cache
        if st.st_size > offset:
            chunk = self.read_state_log(self.folder.state_path, offset)
            end = chunk.rfind(b"\n") + 1  # a torn last line is left for the next call
            fold_state(state, chunk[:end])
            offset += end
        self._state_cache = (ino, offset, state)
        return state

    def _read_state(self, path: Path) -> dict[str, StateEntry]:
        """The fold of the log at `path` (a rebuild's), read whole and not cached."""
        state: dict[str, StateEntry] = {}
        with suppress(FileNotFoundError):
            fold_state(state, self.read_state_log(path))
        return state

    def compact_state(self, *, force: bool = False) -> bool:
        """Rewrite the state log with one line per indexed path, when it has grown to
        several times that (or `force`).  Returns whether it rewrote it."""
        with self.folder.lock():
            state = self.state()
            try:
                size = self.folder.state_path.stat().st_size
            except FileNotFoundError:
                return False
            if not force and size < max(1_000_000, 4 * 120 * len(state)):
                return False
            data = state_lines(dict(sorted(state.items())))
            atomic_write(self.folder.state_path, bytes(data), root=self.folder.root)
            return True

    # --- writing --------------------------------------------------------------------

    def batch_behind(
        self, fill: Callable[[IndexBatch], None], then: Callable[[BaseException | None], None]
    ) -> None:
        """`fill` a batch and commit it on a thread of its own, then `then(error)` there; returns
        at once.  Every later read or write of this index in this process waits for it first."""

        def job() -> None:
            with self.batch() as batch:
                fill(batch)
            with suppress(IndexingError):  # the next search says what is wrong, as it would have
                self.reader.searcher()  # reloaded here, not by the next search

        self.folder.behind.start(job, then)

    def _tantivy_writer(self, index: tantivy.Index) -> Any:
        """A writer of `index` whose first operation is a no-op delete.

        Tantivy stamps a new writer's first operation with the last commit's opstamp, and a merge
        started before may count it as already applied: a real delete there would be lost and
        leave two versions of a path indexed.  The no-op takes that opstamp."""
        try:
            writer = index.writer(heap_size=self.heap_mb * 1_000_000, num_threads=1)
            writer.delete_documents_by_term("path", "")  # no document has an empty path
            return writer
        except ValueError as exc:
            if "LockBusy" in str(exc):  # tantivy's own lock: a writer we do not know about
                raise IndexBusy(f"index is busy ({exc}); try again") from exc
            # damage (a corrupt meta.json…) or the disk: not "busy", or `watch` would
            # retry a damaged index every second for good
            raise self.folder.tantivy_error(exc, writing=True) from exc

    @contextmanager
    def _batch_on(
        self,
        index: tantivy.Index,
        state_path: Path,
        *,
        fresh: bool = False,
        committed: list[Any] | None = None,
    ) -> Iterator[IndexBatch]:
        """One batch on `index`, committed when the block ends; its merges are waited for here,
        or by the caller the committed writer is handed to (`committed`).  `fresh`: a new
        index, which no one reads before the swap."""
        writer = self._tantivy_writer(index)

        def spill(changes: dict[str, StateEntry | None]) -> None:
            self._append_state(state_path, changes)
            release_freed_memory()

        spilled = spill if fresh else None
        batch = IndexBatch(writer, self.folder.schema, self.learned, fresh=fresh, spill=spilled)
        try:
            yield batch  # (an add can fail too: tantivy writes a segment when its heap fills)
        except BaseException as exc:
            _give_up(writer)
            self.folder.raise_io_error(exc)
            raise
        writer = self._commit(index, writer, batch)
        if committed is not None:
            committed.append(writer)
        else:
            try:
                writer.wait_merging_threads()
            except ValueError as exc:
                self.folder.raise_io_error(exc)
                raise
        self._append_state(state_path, batch.changes)
        self._untrimmed += TRIM_EVERY if fresh else len(batch.changes)
        if self._untrimmed >= TRIM_EVERY:
            self._untrimmed = 0
            release_freed_memory()

    def _commit(self, index: tantivy.Index, writer: Any, batch: IndexBatch) -> Any:
        """Commit `batch` on `writer`; the writer that committed it.  A failed commit gives up its
        writer first, so the next batch is not refused as busy."""
        try:
            try:
                writer.commit()
            except ValueError as exc:
                # A writer killed mid-commit left `{segment}.{opstamp}.del`; redoing the same
                # operations reaches the same opstamp and tantivy refuses to overwrite it.  An
                # empty commit moves the opstamp on (tantivy's GC then removes the file).
                if "FileAlreadyExists" not in str(exc):
                    raise
                _give_up(writer)
                writer = empty = self._tantivy_writer(index)
                empty.commit()
                empty.wait_merging_threads()
                writer = self._tantivy_writer(index)
                batch.redo_on(writer)
                writer.commit()
        except BaseException as exc:
            _give_up(writer)
            self.folder.raise_io_error(exc)
            raise
        return writer

    @contextmanager
    def batch(self) -> Iterator[IndexBatch]:
        """Hold the writer lock for one batch of upserts/deletes, then commit.  The merges
        the commit started end on a thread that holds the lock until then (`_merged`)."""
        folder = self.folder
        folder.open()
        committed: list[Any] = []
        held = ExitStack()
        held.enter_context(folder.lock())
        try:
            with self._batch_on(folder.open(), folder.state_path, committed=committed) as batch:
                yield batch
        finally:
            if committed:
                folder.merges.start(partial(_merged, committed[0], held.pop_all().close))
            held.close()

    @contextmanager
    def rebuild(self, catch_up: CatchUp | None = None) -> Iterator[IndexBatch]:
        """Build a fresh index beside the live one (which keeps serving) and swap it in when the
        block ends; just before, under the lock, `catch_up(open_batch, built)` brings it up to date."""
        folder = self.folder
        root = folder.root
        new = folder.dir.with_name(folder.dir.name + ".new")
        remove_tree_in_vault(root, new)
        state_path = new / "state.jsonl"
        try:
            index = folder.create(new)
            with self._batch_on(index, state_path, fresh=True) as batch:
                yield batch
            with folder.lock():
                if catch_up is not None:
                    catch_up(lambda: self._batch_on(index, state_path), lambda: self._read_state(state_path))
                atomic_write(new / "complete", b"", root=root)
                swap_in(new, folder.dir, root=root)
        except BaseException:
            with suppress(NotInVault):  # (a link there: the first error is the one to tell)
                remove_tree_in_vault(root, new)
            raise
        folder.index = None  # the next `open` opens the folder swapped in

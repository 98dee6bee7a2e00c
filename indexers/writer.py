"""Writing the full-text index: batches on the live index (holding the folder's lock,
committed when they close), and rebuilds beside it, swapped in when complete; each document
with what the learning loop knows of it (`Learned`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import tantivy

from events.errors import NotInVault
from events.fsio import atomic_write, remove_tree_in_vault, swap_in

from .behind import TRIM_EVERY, release_freed_memory
from .errors import IndexBusy, IndexingError
from .schema import _to_document
from .state import StateEntry

if TYPE_CHECKING:  # a search builds no IndexDoc
    from .documents import IndexDoc
    from .folder import IndexFolder
    from .state import StateLog

CatchUp = Callable[[Callable[[], Any], Callable[[], dict[str, StateEntry]]], None]

SPILL_EVERY = 10_000
"""A fresh index's batch writes its state lines every this many changes (not all at the
end): a rebuild then holds no per-document state, whatever the vault's size."""


class Learned(NamedTuple):
    """What the index holds about a document beyond its file, from the learning loop (handed
    in: this layer cannot read it).  `trust(doc_id)`: derived trust for a document whose
    file carries none.  `shared(doc_id)`: whether a recorded scope change made a user's
    document `global`; a `scope: global` written by hand shares nothing."""

    trust: Callable[[str], float | None] | None = None
    shared: Callable[[str], bool] | None = None

    def apply(self, doc: IndexDoc) -> IndexDoc:
        if doc.trust is None and self.trust is not None:
            trust = self.trust(doc.doc_id)
            if trust is not None:
                doc = doc._replace(trust=trust)
        if doc.user is not None and doc.scope == "global" and not (self.shared and self.shared(doc.doc_id)):
            doc = doc._replace(scope="user")
        return doc


class IndexBatch:
    """Upserts and deletes by path, committed together when the batch closes."""

    def __init__(
        self,
        writer: Any,
        schema: tantivy.Schema,
        learned: Learned = Learned(),  # noqa: B008 - frozen, never changed
        *,
        redoable: bool = True,
        fresh: bool = False,
        spill: Callable[[dict[str, StateEntry | None]], None] | None = None,
    ) -> None:
        self._writer = writer
        self._schema = schema
        self._learned = learned
        # an empty index (a rebuild's first batch) holds no older version of any path,
        # so an upsert is a plain add: no delete-by-term per document
        self._fresh = fresh
        self.changes: dict[str, StateEntry | None] = {}
        # where `changes` go before the commit, SPILL_EVERY at a time: only for an index
        # no one reads yet (a rebuild's), whose state may name what is not committed
        self._spill = spill
        # kept so a failed commit can be redone; a fresh index (rebuild) has nothing to
        # fail on and must not hold every document of the vault in memory
        self._ops: list[tuple[str, Any]] | None = [] if redoable else None

    def _apply(self, op: str, arg: Any) -> None:
        if op == "upsert":
            if not self._fresh:
                self._writer.delete_documents_by_term("path", arg.path)
            self._writer.add_document(_to_document(arg, self._schema))
        else:
            self._writer.delete_documents_by_term("path", arg)

    def _do(self, op: str, arg: Any) -> None:
        if self._ops is not None:
            self._ops.append((op, arg))
        self._apply(op, arg)

    def redo_on(self, writer: Any) -> None:
        if self._ops is None:
            raise IndexingError("this batch cannot be redone (it did not keep its operations)")
        self._writer = writer
        for op, arg in self._ops:
            self._apply(op, arg)

    def _changed(self, path: str, entry: StateEntry | None) -> None:
        self.changes[path] = entry
        if self._spill is not None and len(self.changes) >= SPILL_EVERY:
            self._spill(self.changes)
            self.changes = {}

    def upsert(self, doc: IndexDoc) -> None:
        doc = self._learned.apply(doc)
        self._do("upsert", doc)
        self._changed(doc.path, StateEntry(doc.checksum, doc.mtime_ns, doc.size))

    def delete(self, path: str) -> None:
        self._do("delete", path)
        self._changed(path, None)

    def touch(self, path: str, entry: StateEntry) -> None:
        """Record a new mtime for a file whose content (checksum) did not change."""
        self._changed(path, entry)


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


class IndexWriter:
    """Writes one index folder: batches on the live index, and rebuilds beside it."""

    def __init__(
        self,
        folder: IndexFolder,
        log: StateLog,
        *,
        heap_mb: int = 128,
        learned: Learned = Learned(),  # noqa: B008 - frozen, never changed
    ) -> None:
        self.folder = folder
        self.log = log
        self.heap_mb = heap_mb
        # what the learning loop derived and recorded: trust of turns, sharing of research
        self.learned = learned
        self._untrimmed = 0  # documents committed since freed memory was handed back

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
        redoable: bool = True,
        committed: list[Any] | None = None,
    ) -> Iterator[IndexBatch]:
        """One batch on `index`, committed when the block ends; its merges are waited for here,
        or by the caller the committed writer is handed to (`committed`)."""
        writer = self._tantivy_writer(index)
        fresh = not redoable  # a new index, no one reads it before the swap

        def spill(changes: dict[str, StateEntry | None]) -> None:
            self.log.append(state_path, changes)
            release_freed_memory()

        spilled = spill if fresh else None
        batch = IndexBatch(
            writer, self.folder.schema, self.learned, redoable=redoable, fresh=fresh, spill=spilled
        )
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
        self.log.append(state_path, batch.changes)
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
            with self._batch_on(index, state_path, redoable=False) as batch:
                yield batch
            with folder.lock():
                if catch_up is not None:
                    catch_up(lambda: self._batch_on(index, state_path), lambda: self.log.read(state_path))
                atomic_write(new / "complete", b"", root=root)
                swap_in(new, folder.dir, root=root)
        except BaseException:
            with suppress(NotInVault):  # (a link there: the first error is the one to tell)
                remove_tree_in_vault(root, new)
            raise
        folder.forget()

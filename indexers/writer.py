"""Writing the full-text index: its folder, the writer lock, batches, rebuild and swap.

Writers hold `fulltext.lock` only for one batch (and its commit's merges,
which end on their own thread: `settling`); a second writer waits up to
`wait_s` and then gets `IndexBusy` naming the holder's pid.  A rebuild builds
`fulltext.new/` beside the live index and swaps it in when complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import tantivy

from events.errors import NotInVault
from events.fsio import (
    atomic_write,
    check_folders,
    checked_folders,
    held_lock,
    read_vault_file,
    remove_tree_in_vault,
    swap_in,
    vault_folder,
)

from .errors import (
    REBUILD,
    IndexBusy,
    IndexDamaged,
    IndexIncompatible,
    IndexingError,
    IndexIOError,
    tantivy_error,
)
from .learned import Learned
from .schema import READABLE_VERSIONS, SCHEMA_VERSION, _to_document
from .settling import TRIM_EVERY, release_freed_memory
from .state import StateEntry

if TYPE_CHECKING:  # a search builds no IndexDoc
    from .documents import IndexDoc

CatchUp = Callable[[Callable[[], Any], Callable[[], dict[str, StateEntry]]], None]

SPILL_EVERY = 10_000
"""A fresh index's batch writes its state lines every this many changes (not all at the
end): a rebuild then holds no per-document state, whatever the vault's size."""


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
        elif op == "delete":
            self._writer.delete_documents_by_term("path", arg)
        else:
            self._writer.delete_documents_by_term(*arg)

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

    def delete_where(self, field_name: str, value: str) -> None:
        """Delete every document whose raw `field_name` equals `value` (e.g. owner)."""
        self._do("delete_where", (field_name, value))

    def touch(self, path: str, entry: StateEntry) -> None:
        """Record a new mtime for a file whose content (checksum) did not change."""
        self._changed(path, entry)


def _give_up(writer: Any) -> None:
    """Drop what `writer` holds uncommitted and release it now, not when a traceback that
    names it is freed; a writer tantivy already consumed (a commit that failed half-way,
    a rollback that did) has nothing left to give up."""
    with suppress(ValueError, RuntimeError):
        writer.rollback()
    with suppress(ValueError, RuntimeError):
        writer.wait_merging_threads()


class _Busy(Exception):
    """The index lock is held by someone else."""


class _Writing:
    """The opening and writing part of `FullTextIndex` (a mixin: its attributes are set there)."""

    # --- opening ------------------------------------------------------------------

    def exists(self, *, locked: bool = False) -> bool:
        self._behind.settle()  # what this process wrote behind is there once it has ended
        if self._index is not None and self._same_folder():  # one stat on every search
            return True
        self._recover_swap(locked=locked)
        return (self.dir / "schema.json").is_file()

    def _same_folder(self) -> bool:
        """The live folder is still the one this object opened (no rebuild swapped it
        since; a swap's leftovers were cleared when it was opened)."""
        try:
            return os.stat(self.dir).st_ino == self._ino
        except FileNotFoundError:
            return False

    def _recover_swap(self, *, locked: bool = False) -> None:
        """Finish a rebuild swap interrupted between its two renames (a killed rebuild).

        Only under the index lock: a rebuild swaps holding it, so a swap seen half done
        while the lock is held is in progress and not ours to finish (a search that
        finished it made the rebuild's own rename fail)."""
        new, old = (
            self.dir.with_name(self.dir.name + ".new"),
            self.dir.with_name(self.dir.name + ".old"),
        )
        live = self.dir.exists()
        if not ((not live and (new / "complete").exists()) or (live and old.exists())):
            return
        if not locked:
            try:
                with held_lock(self.lock_path, wait_s=0.0, on_busy=_Busy, root=self.indexes_dir.parent):
                    self._recover_swap(locked=True)
            except _Busy:
                pass  # a writer holds the index: the swap is its own, in progress
            return
        with checked_folders(self.indexes_dir.parent) as folders:  # by name, never through a link
            if not live and (new / "complete").exists():
                folders.rename(new, self.dir)
            if self.dir.exists() and old.exists():
                folders.remove_tree(old)

    def _create(self, directory: Path) -> tantivy.Index:
        vault_folder(self.indexes_dir.parent, directory / "tantivy")
        index = tantivy.Index(self._schema, path=str(directory / "tantivy"))
        atomic_write(
            directory / "schema.json",
            orjson.dumps({"schema_version": SCHEMA_VERSION}),
            root=self.indexes_dir.parent,
        )
        return index

    def _open(self) -> tantivy.Index:
        """The live tantivy index, reopened if a rebuild replaced the folder."""
        if self._index is not None and self._same_folder():
            return self._index
        if not self.exists():
            self.indexes_dir.mkdir(parents=True, exist_ok=True)
            with self._lock():
                if not self.exists(locked=True):
                    self._create(self.dir)
        ino = os.stat(self.dir).st_ino
        if self._index is None or ino != self._ino:
            root = self.indexes_dir.parent  # tantivy opens its folder by path: none of them a link
            check_folders(root, self.indexes_dir, self.dir, self.tantivy_dir)
            schema = (self.dir / "schema.json").relative_to(self.indexes_dir.parent).as_posix()
            try:
                info = orjson.loads(read_vault_file(root, schema)[0])
            except orjson.JSONDecodeError:
                info = None
            if not isinstance(info, dict):
                raise IndexDamaged(
                    f"the index {self._where()} cannot be read ({schema} is not a JSON object); {REBUILD}"
                )
            if info.get("schema_version") not in READABLE_VERSIONS:
                raise IndexIncompatible(
                    f"the index {self._where()} was built by another PandaFS version; {REBUILD}"
                )
            try:
                self._index = tantivy.Index.open(str(self.tantivy_dir))
            except ValueError as exc:  # a corrupt or missing file of it, or the disk's refusal
                raise self._tantivy_error(exc, writing=False) from exc
            self._ino = ino
        return self._index

    def _where(self) -> str:
        """The index's folder as the vault names it (`indexes/fulltext`), for messages."""
        return self.dir.relative_to(self.indexes_dir.parent).as_posix()

    def _tantivy_error(self, exc: ValueError, *, writing: bool) -> IndexingError:
        """`tantivy_error` for this index."""
        return tantivy_error(exc, self._where(), writing=writing, root=str(self.indexes_dir.parent))

    # --- writing ------------------------------------------------------------------

    @contextmanager
    def _lock(self) -> Iterator[None]:
        def busy(holder: str) -> Exception:
            return IndexBusy(
                f"index is busy, held by pid {holder} for more than {self.wait_s:g} s; "
                "try again when it finishes"
            )

        self._behind.settle()  # (at once on the job's own thread: it is taking this lock)
        try:
            self._merges.settle()  # this process's last commit holds the lock until its merges end
        except ValueError as exc:
            self._raise_io_error(exc)
            raise
        vault_folder(self.indexes_dir.parent, self.indexes_dir)  # the vault's own `indexes/`, not a link
        check_folders(self.indexes_dir.parent, self.dir)
        with held_lock(self.lock_path, wait_s=self.wait_s, on_busy=busy, root=self.indexes_dir.parent):
            yield

    def _tantivy_writer(self, index: tantivy.Index) -> Any:
        """A writer of `index` whose first operation is a no-op delete.

        Tantivy stamps a new writer's first operation with the opstamp of the last
        commit.  A merge started before this writer's commit (≥ 8 committed segments: a
        writer killed before its merges ended left them) counts that operation as already
        applied to a segment whose deletes were written at that opstamp, and skips it: the
        delete of a path's old version in that segment was lost, leaving two versions
        indexed (seen 2026-11-25: a restored turn's stub stayed searchable).  The no-op
        takes that opstamp; every operation of the batch comes after it."""
        try:
            writer = index.writer(heap_size=self.heap_mb * 1_000_000, num_threads=1)
            writer.delete_documents_by_term("path", "")  # no document has an empty path
            return writer
        except ValueError as exc:
            if "LockBusy" in str(exc):  # tantivy's own lock: a writer we do not know about
                raise IndexBusy(f"index is busy ({exc}); try again") from exc
            # damage (a corrupt meta.json…) or the disk: until 2026-11-24 "busy" too, so
            # `watch` retried a damaged index every second for good
            raise self._tantivy_error(exc, writing=True) from exc

    @contextmanager
    def _batch_on(
        self,
        index: tantivy.Index,
        state_path: Path,
        *,
        redoable: bool = True,
        committed: list[Any] | None = None,
    ) -> Iterator[IndexBatch]:
        """One batch on `index`, committed when the block ends.  With `committed`, the
        committed writer goes there for the caller to wait for its merges (`settling`);
        without, they are waited for here."""
        writer = self._tantivy_writer(index)
        fresh = not redoable  # a new index, no one reads it before the swap
        spill = self._spiller(state_path) if fresh else None
        batch = IndexBatch(writer, self._schema, self.learned, redoable=redoable, fresh=fresh, spill=spill)
        try:
            yield batch  # (an add can fail too: tantivy writes a segment when its heap fills)
        except BaseException as exc:
            _give_up(writer)
            self._raise_io_error(exc)
            raise
        writer = self._commit(index, writer, batch)
        if committed is not None:
            committed.append(writer)
        else:
            try:
                writer.wait_merging_threads()
            except ValueError as exc:
                self._raise_io_error(exc)
                raise
        self._append_state(state_path, batch.changes)
        self._untrimmed += TRIM_EVERY if fresh else len(batch.changes)
        if self._untrimmed >= TRIM_EVERY:
            self._untrimmed = 0
            release_freed_memory()

    def _commit(self, index: tantivy.Index, writer: Any, batch: IndexBatch) -> Any:
        """Commit `batch` (on `writer`); the writer that committed it.  A commit that
        fails gives up its writer before the error goes on (tantivy's lock and threads go
        with it, not when the traceback is freed): the next batch is not refused as busy."""
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
            self._raise_io_error(exc)
            raise
        return writer

    def _raise_io_error(self, exc: BaseException) -> None:
        """Raise the `IndexIOError` of tantivy's I/O failure `exc`, if it is one (any
        other error is ours, or tantivy's refusal of what we asked: it goes on as it is)."""
        if isinstance(exc, ValueError):
            error = self._tantivy_error(exc, writing=True)
            if isinstance(error, IndexIOError):
                raise error from exc

    def _spiller(self, state_path: Path) -> Callable[[dict[str, StateEntry | None]], None]:
        def spill(changes: dict[str, StateEntry | None]) -> None:
            self._append_state(state_path, changes)
            release_freed_memory()

        return spill

    @contextmanager
    def batch(self) -> Iterator[IndexBatch]:
        """Hold the writer lock for one batch of upserts/deletes, then commit.  The merges
        the commit started end on a thread that holds the lock until then (`settling`)."""
        self._open()
        committed: list[Any] = []
        held = ExitStack()
        held.enter_context(self._lock())
        try:
            with self._batch_on(self._open(), self.state_path, committed=committed) as batch:
                yield batch
        finally:
            if committed:
                self._merges.hand_over(committed[0], held.pop_all().close)
            held.close()

    @contextmanager
    def rebuild(self, catch_up: CatchUp | None = None) -> Iterator[IndexBatch]:
        """Build a fresh index beside the live one and swap it in when the block ends.

        The live index keeps serving searches and other writers meanwhile.  Just before
        the swap, under the writer lock, `catch_up(open_batch, built)` may bring the new
        index up to date with files that changed while it was being built (`built()`
        reads the new index's state: only then, it holds an entry per document).
        """
        root = self.indexes_dir.parent
        new = self.dir.with_name(self.dir.name + ".new")
        remove_tree_in_vault(root, new)
        index = self._create(new)
        state_path = new / "state.jsonl"
        try:
            with self._batch_on(index, state_path, redoable=False) as batch:
                yield batch
            with self._lock():
                if catch_up is not None:
                    catch_up(lambda: self._batch_on(index, state_path), lambda: self._read_state(state_path))
                atomic_write(new / "complete", b"", root=root)
                swap_in(new, self.dir, root=root)
        except BaseException:
            with suppress(NotInVault):  # (a link there: the first error is the one to tell)
                remove_tree_in_vault(root, new)
            raise
        self._index = None

"""A batch of the full-text index (`IndexBatch`: upserts and deletes by path, committed
together by `FullTextIndex`), each document with what the learning loop knows of it
(`Learned`)."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import tantivy

from .errors import IndexingError
from .schema import _to_document
from .state import StateEntry

if TYPE_CHECKING:  # a search builds no IndexDoc
    from .documents import IndexDoc

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

    def apply(self, doc: "IndexDoc") -> "IndexDoc":
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
        fresh: bool = False,
        spill: Callable[[dict[str, StateEntry | None]], None] | None = None,
    ) -> None:
        self._writer = writer
        self._schema = schema
        self._learned = learned
        # an empty index (a rebuild's first batch) holds no older version of any path,
        # so an upsert is a plain add: no delete-by-term per document; and it has nothing
        # to fail on, so its operations are not kept to redo (every document of the vault)
        self._fresh = fresh
        self.changes: dict[str, StateEntry | None] = {}
        # where `changes` go before the commit, SPILL_EVERY at a time: only for an index
        # no one reads yet (a rebuild's), whose state may name what is not committed
        self._spill = spill
        self._ops: list[tuple[str, Any]] | None = None if fresh else []  # to redo a failed commit

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

    def upsert(self, doc: "IndexDoc") -> None:
        doc = self._learned.apply(doc)
        self._do("upsert", doc)
        self._changed(doc.path, StateEntry(doc.checksum, doc.mtime_ns, doc.size))

    def delete(self, path: str) -> None:
        self._do("delete", path)
        self._changed(path, None)

    def touch(self, path: str, entry: StateEntry) -> None:
        """Record a new mtime for a file whose content (checksum) did not change."""
        self._changed(path, entry)

"""`Learned`: what the index holds about a document beyond its file (its own module:
a search builds no document, and the front doors hand one over at start-up)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .documents import IndexDoc

__all__ = ["Learned"]


@dataclass(frozen=True)
class Learned:
    """What the index holds about a document beyond its file: what the learning loop
    derived and recorded (the hooks `Memory` is handed; this layer cannot read them).

    `trust(doc_id)`: the derived trust of a document whose file carries none (turns).
    `shared(doc_id)`: whether a recorded scope change (a `scope_changed` event of its
    owner's) made a user's document `global`.  The path allows `global` under
    `users/{u}/` only for documents about the world (`events.layout.effective_scope`);
    the record is what makes it so: a `scope: global` someone wrote into such a file
    by hand shares nothing, and without `shared` no user's document is indexed global.
    """

    trust: Callable[[str], float | None] | None = None
    shared: Callable[[str], bool] | None = None

    def apply(self, doc: IndexDoc) -> IndexDoc:
        if doc.trust is None and self.trust is not None:
            trust = self.trust(doc.doc_id)
            if trust is not None:
                doc = replace(doc, trust=trust)
        if doc.user is not None and doc.scope == "global" and not (self.shared and self.shared(doc.doc_id)):
            doc = replace(doc, scope="user")
        return doc

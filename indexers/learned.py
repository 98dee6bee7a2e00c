"""`Learned`: what the index holds about a document beyond its file (its own module:
a search builds no document, and the front doors hand one over at start-up)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .documents import IndexDoc

__all__ = ["Learned"]


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

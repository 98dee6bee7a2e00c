"""The filters of a search (user visibility, topic, content types, kinds, scope, quality,
expiry, dates): constant-score clauses that never change BM25."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import tantivy
from tantivy import FieldType, Occur, Query

from .request import SearchRequest
from .schema import GLOBAL_OWNER, _epoch, _facet


def any_of(schema: tantivy.Schema, field_name: str, values: Iterable[Any]) -> Query:
    """Documents whose `field_name` is one of `values`: a boolean of term queries (tantivy's
    `term_set_query` costs more per search on a large index)."""
    terms = [Query.term_query(schema, field_name, v) for v in dict.fromkeys(values)]
    if len(terms) == 1:
        return terms[0]
    return Query.boolean_query([(Occur.Should, t) for t in terms])


def visible_to(schema: tantivy.Schema, user: str) -> Query:
    """What `user` may see: their own documents and the global ones."""
    return Query.boolean_query(
        [
            (Occur.Should, any_of(schema, "owner", [user, GLOBAL_OWNER])),
            (Occur.Should, Query.term_query(schema, "scope", "global")),
        ]
    )


def search_filters(schema: tantivy.Schema, req: SearchRequest, now: datetime) -> list[Query]:
    """Constant-score clauses a hit must match: visibility, topic, types, scope, quality, expiry, dates."""
    filters: list[Query] = []
    if req.user is not None:
        filters.append(visible_to(schema, req.user))
    if req.topic_filter:
        filters.append(Query.term_query(schema, "topic", _facet(req.topic_filter)))
    if req.content_types:
        filters.append(any_of(schema, "ctype", req.content_types))
    if req.kinds:
        filters.append(any_of(schema, "kind", req.kinds))
    if req.scope:
        filters.append(Query.term_query(schema, "scope", req.scope))
    if req.min_quality is not None:
        filters.append(Query.range_query(schema, "quality", FieldType.Float, float(req.min_quality), None))
    if not req.include_expired:
        filters.append(Query.range_query(schema, "expires", FieldType.Integer, _epoch(now) + 1, None))
    if req.after is not None or req.before is not None:
        lo = _epoch(req.after) if req.after is not None else None
        hi = _epoch(req.before) - 1 if req.before is not None else None
        filters.append(Query.range_query(schema, "created", FieldType.Integer, lo, hi))
    return filters

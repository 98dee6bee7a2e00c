"""The tantivy schema of the full-text index, derived from `IndexDoc`, and how an
`IndexDoc` fills it: stemmed text, raw terms for ids, owner, scope and types, a topic
facet, fast fields for ranking, and the stored payload and snippet prose."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import orjson
import tantivy
from tantivy import Facet

from events.layout import turn_number
from events.stamps import format_ts

from .errors import REBUILD, IndexDamaged
from .snippets import conversation_prose, prose_of

if TYPE_CHECKING:  # a search builds no IndexDoc
    from .documents import IndexDoc

SCHEMA_VERSION = 6
"""The fields below (text fields with term frequencies, no positions: no query reads them)."""
READABLE_VERSIONS = frozenset({5, SCHEMA_VERSION})
"""Versions this code opens: a version-5 index differs only by the positions it keeps,
which no query reads, so it serves on until the next rebuild makes it version 6."""
GLOBAL_OWNER = "_global"
NEVER = 2**62
TEXT_FIELDS = ["title", "keywords", "body"]


@lru_cache(maxsize=4096)  # owners, topics and sessions repeat across documents
def _h64(text: str) -> int:
    import hashlib  # not at module level: loading OpenSSL is a cost every search would pay

    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


@lru_cache(maxsize=1024)
def _facet(topic: str) -> Facet:
    parts = [p.strip().replace("/", "_") for p in topic.split(".") if p.strip()]
    return Facet.from_string("/" + "/".join(parts or ["general"]))


def _parent(topic: str) -> str:
    return topic.rsplit(".", 1)[0] if "." in topic else ""


def _epoch(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp())


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    for name in ("path", "doc_id", "owner", "scope", "ctype", "kind", "external_id"):
        sb.add_text_field(name, stored=name == "path", tokenizer_name="raw", index_option="basic")
    for name in TEXT_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="en_stem", index_option="freq")
    sb.add_facet_field("topic")
    sb.add_float_field("quality", fast=True, indexed=True)
    sb.add_float_field("trust", fast=True, indexed=False)
    sb.add_integer_field("created", fast=True, indexed=True)
    sb.add_integer_field("expires", fast=True, indexed=True)
    sb.add_integer_field("day", fast=True, indexed=True)
    sb.add_unsigned_field("episode", fast=True, indexed=True)
    sb.add_unsigned_field("turn", fast=True, indexed=True)
    sb.add_unsigned_field("unit", fast=True, indexed=False)
    sb.add_unsigned_field("owner_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_ph", fast=True, indexed=False)
    sb.add_bytes_field("payload", stored=True, indexed=False)
    sb.add_bytes_field("prose", stored=True, indexed=False)
    return sb.build()


def _to_document(doc: IndexDoc, schema: tantivy.Schema) -> tantivy.Document:
    """The tantivy document of `doc`, built by one `Document.from_dict` call (not one
    `add_*` per field); the schema gives each value its type."""
    created = _epoch(doc.created_at)
    session = doc.session if doc.is_turn else None
    episode = _h64(f"{doc.user}\x00{session}") if session else 0
    payload = {  # what every hit returns
        "doc_id": doc.doc_id,
        "doc_path": doc.path,
        "kind": doc.kind,
        "user": doc.user,
        "title": doc.title,
        "primary_topic": doc.primary_topic,
        "content_types": list(doc.content_types),
        "scope": doc.scope,
        "quality": doc.quality,
        "trust": doc.trust,
        "created_at": format_ts(doc.created_at),
        "expires_at": format_ts(doc.expires_at) if doc.expires_at else None,
        "archived": doc.archived,
        "meta": doc.meta,
        "external_id": doc.external_id,
    }
    fields = {
        "path": doc.path,
        "doc_id": doc.doc_id,
        "owner": doc.user or GLOBAL_OWNER,
        "scope": doc.scope,
        "kind": doc.kind,
        "ctype": list(doc.content_types),
        "title": doc.title,
        "keywords": " ".join(doc.keywords),
        "body": doc.body,
        "topic": _facet(doc.primary_topic),
        "quality": doc.quality,
        "trust": -1.0 if doc.trust is None else float(doc.trust),
        "created": created,
        "expires": NEVER if doc.expires_at is None else _epoch(doc.expires_at),
        "day": created // 86400 if doc.is_turn else -1,
        "episode": episode,
        "turn": turn_number(doc.doc_id.rpartition("/")[2]) if doc.is_turn else 0,  # (`{user}/{turn}`)
        # what `spread` counts: conversations (the session, else the calendar day)
        "unit": episode or (_h64(f"{doc.user}\x00{created // 86400}") if doc.is_turn else 0),
        "owner_h": _h64(doc.user or GLOBAL_OWNER),
        "topic_h": _h64(doc.primary_topic),
        "topic_ph": _h64(_parent(doc.primary_topic)),
        "payload": orjson.dumps(payload),
        "prose": (conversation_prose(doc.body) if doc.is_turn else prose_of(doc.body)).encode(),
    }
    if doc.external_id is not None:
        fields["external_id"] = doc.external_id
    return tantivy.Document.from_dict(fields, schema)


def stored_payload(doc: tantivy.Document) -> dict[str, Any]:
    """The payload a document of the index was stored with (every document has one)."""
    raw = doc.get_first("payload")
    if raw is None:
        raise IndexDamaged(f"a document of the index has no stored payload; {REBUILD}")
    payload: dict[str, Any] = orjson.loads(raw)
    return payload

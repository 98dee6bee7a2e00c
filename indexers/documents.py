"""A markdown file in the vault → an `IndexDoc`, or a reason why it is skipped.

What a path is comes from `events.layout.classify`, what it says from its frontmatter
(with defaults by kind for hand-written files).  Broken frontmatter, binary content and
oversized files are skipped with a one-line reason; nothing is ever rewritten."""

import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from events.doctypes import SESSION_KEYS
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.layout import TURN_KINDS, DocRef, classify, effective_scope

if TYPE_CHECKING:
    from pydantic import ValidationError

    from events.documents import DocumentMetadata, ParsedDocument

__all__ = [
    "IndexDoc",
    "Loaded",
    "Skipped",
    "index_doc_from_parts",
    "load_index_doc",
    "parse_index_doc",
    "read_checked",
    "read_document",
    "sha256_bytes",
]

DEFAULT_TYPES = {
    "turn": ["context"],
    "archived_turn": ["context"],
    "research": ["research"],
    "preferences": ["preference"],
    "facts": ["fact"],
    "memory": ["memory"],
    "knowledge": ["knowledge"],
    "site": ["site_pattern"],
    "note": ["note"],
}
DEFAULT_MAX_BYTES = 5_000_000  # the default of [index] max_file_bytes


@cache
def _reading() -> (
    "tuple[Callable[[str, str], ParsedDocument], type[DocumentMetadata], type[ValidationError]]"
):
    """The parser, the metadata schema and its error: YAML and pydantic are imported when the
    first document is read, not by a search, and once (an import statement in a function
    looks its module up again at every call)."""
    from pydantic import ValidationError

    from events.documents import DocumentMetadata, parse_document

    return parse_document, DocumentMetadata, ValidationError


def sha256_bytes(data: bytes) -> str:
    import hashlib  # not at module level: loading OpenSSL is a cost every search would pay

    return hashlib.sha256(data).hexdigest()


class Skipped(NamedTuple):
    path: str
    reason: str
    refused: bool = False
    """True for a path the vault boundary refuses (a symlink, a linked folder): it is
    not a document at all, so nothing about it is remembered in the index state."""


class IndexDoc(NamedTuple):
    """What the full-text index stores about one file (and where it came from)."""

    path: str
    doc_id: str
    kind: str
    user: str | None
    title: str
    body: str
    keywords: tuple[str, ...]
    content_types: tuple[str, ...]
    scope: str
    quality: float
    trust: float | None
    primary_topic: str
    created_at: datetime
    expires_at: datetime | None
    archived: bool
    meta: dict[str, Any] | None
    external_id: str | None
    checksum: str
    size: int
    mtime_ns: int

    @property
    def is_turn(self) -> bool:
        return self.kind in TURN_KINDS

    @property
    def session(self) -> str | None:
        """The conversation an imported turn came from (`meta.session`, or a common alias)."""
        for key in SESSION_KEYS:
            value = (self.meta or {}).get(key)
            if isinstance(value, str | int) and str(value):
                return str(value)
        return None


def _title(title: str | None, body: str, path: str) -> str:
    if title:
        return str(title)
    heading = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), None)
    return Path(path).stem.replace("_", " ").replace("-", " ") if heading is None else heading


def _too_large(rel_path: str, size: int, max_bytes: int) -> Skipped | None:
    if size > max_bytes:
        return Skipped(rel_path, f"too large ({size:,} bytes > {max_bytes:,})")
    return None


def _text_of(rel_path: str, data: bytes, max_bytes: int) -> str | Skipped:
    """The text of a document's bytes, or why it is not indexed (the one rule, above)."""
    too_large = _too_large(rel_path, len(data), max_bytes)
    if too_large is not None:
        return too_large
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(rel_path, f"binary: not UTF-8 text (byte {exc.start})")


def load_index_doc(root: Path, rel_path: str, *, max_bytes: int) -> IndexDoc | Skipped | None:
    """Read `root/rel_path` into an IndexDoc; None if the path is not a document or gone."""
    ref = classify(rel_path)
    if ref is None:
        return None
    read = read_document(root, rel_path, max_bytes=max_bytes)
    if read is None or isinstance(read, Skipped):
        return read
    return parse_index_doc(rel_path, *read, max_bytes=max_bytes, ref=ref)


Loaded = tuple[bytes, os.stat_result] | Skipped | None
"""A document's bytes and stat, or why it is not read (None: it is not there)."""


def read_document(root: Path, rel_path: str, *, max_bytes: int) -> Loaded:
    """The bytes and stat of a document (through the vault's safe reader), or why not."""
    return read_checked(rel_path, partial(read_vault_file, root, rel_path), max_bytes)


def read_checked(rel_path: str, read: Callable[..., tuple[bytes, os.stat_result]], max_bytes: int) -> Loaded:
    """What `read(limit=max_bytes)` (a safe reader of `events.fsio`) gives for the
    document at `rel_path`: its bytes and stat, or why it is not read."""
    try:
        data, stat = read(limit=max_bytes)
    except FileNotFoundError:
        return None
    except NotInVault as exc:
        return Skipped(rel_path, exc.reason, refused=True)
    except OSError as exc:
        return Skipped(rel_path, f"unreadable: {exc.strerror or exc}")
    too_large = _too_large(rel_path, max(stat.st_size, len(data)), max_bytes)
    if too_large is not None:
        return too_large
    return data, stat


def parse_index_doc(
    rel_path: str, data: bytes, stat: os.stat_result, *, max_bytes: int, ref: DocRef | None = None
) -> IndexDoc | Skipped:
    """The IndexDoc of a document's bytes (from `read_document`), or why it is skipped."""
    text = _text_of(rel_path, data, max_bytes)
    if isinstance(text, Skipped):
        return text
    parse_document = _reading()[0]
    try:
        frontmatter, body, _ = parse_document(text, rel_path)
    except FrontmatterError as exc:
        return Skipped(rel_path, str(exc))
    return _index_doc_of(rel_path, data, frontmatter, body, stat.st_mtime_ns, stat.st_mtime, ref)


def index_doc_from_parts(
    rel_path: str,
    data: bytes,
    frontmatter: dict[str, Any],
    body: str,
    mtime_ns: int,
    mtime: float | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ref: DocRef | None = None,
) -> IndexDoc | Skipped:
    """The IndexDoc of a file whose bytes, frontmatter and body are already known (writers
    that just rendered it skip a re-parse); the same rule, so a rebuild gives the same index."""
    text = _text_of(rel_path, data, max_bytes)
    if isinstance(text, Skipped):
        return text
    return _index_doc_of(rel_path, data, frontmatter, body, mtime_ns, mtime, ref)


def _index_doc_of(
    rel_path: str,
    data: bytes,
    frontmatter: dict[str, Any],
    body: str,
    mtime_ns: int,
    mtime: float | None,
    ref: DocRef | None,
) -> IndexDoc | Skipped:
    """`index_doc_from_parts` for bytes already checked by `_text_of` (by `parse_index_doc`)."""
    ref = ref or classify(rel_path)
    if ref is None:
        raise ValueError(f"not a document path: {rel_path}")
    if b"\x00" in data:  # (the body is text of `data`: its bytes are searched much faster)
        body = body.replace("\x00", "")
    front = dict(frontmatter)
    front["id"] = ref.doc_id
    front["user"] = front.get("user") if ref.user is None else ref.user
    front.setdefault("content_types", DEFAULT_TYPES.get(ref.kind, ["note"]))
    front["scope"] = effective_scope(ref, front.get("scope"))
    if front.get("created_at") is None:
        front["created_at"] = datetime.fromtimestamp(mtime if mtime is not None else mtime_ns / 1e9, UTC)
    if ref.kind == "archived_turn":
        front["archived"] = True
    _, metadata, invalid = _reading()
    try:
        meta, extra = metadata.fields_of(front)
    except invalid as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return Skipped(rel_path, f"invalid property {where}: {err['msg']}")
    raw_meta = extra.get("meta")
    external = extra.get("external_id")
    return IndexDoc(
        path=rel_path,
        doc_id=ref.doc_id,
        kind=ref.kind,
        user=ref.user,
        title=_title(meta["title"], body, rel_path).replace("\x00", ""),
        body=body,
        keywords=tuple(str(k) for k in meta["keywords"]),
        content_types=tuple(str(c) for c in meta["content_types"]) or tuple(DEFAULT_TYPES["note"]),
        scope=meta["scope"],
        quality=float(meta["quality"]),
        trust=meta["trust"],
        primary_topic=meta["primary_topic"] or "general",
        created_at=meta["created_at"],
        expires_at=meta["expires_at"],
        archived=bool(meta["archived"]),
        meta=raw_meta if isinstance(raw_meta, dict) else None,
        external_id=str(external) if external is not None else None,
        checksum=sha256_bytes(data),
        size=len(data),
        mtime_ns=mtime_ns,
    )

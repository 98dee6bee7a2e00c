"""The memory documents a user owns: preferences.md, facts.md and memories/*.md.

preferences.md and facts.md are lists a person can edit, one entry per line:

    - **laptop_brand:** Lenovo _(from [[users/alice/turns/turn_000001/context|turn 1]], 2026-11-21)_
    - Prefers window seats _(saved 2026-11-21)_

`append_entry` adds one unless the same statement is there (a replayed commit never
duplicates); they are scope `user` and never expire.  Other memories are one file each
under `memories/`, scope `new` with an `expires_at` unless promoted."""

import itertools
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import orjson

from events.clock import aware
from events.documents import shorten
from events.errors import NotInVault
from events.fsio import append_file, atomic_write, json_lines, read_vault_file, rewrite_file, vault_folder
from events.stamps import format_ts

from ..checks import Problem
from ..errors import BadInput
from ..vault import Vault

__all__ = [
    "Entry",
    "SavedDoc",
    "append_entry",
    "check_published",
    "parse_entries",
    "norm_statement",
    "publish",
    "write_memory",
    "slug",
]

SHARING_LOG = "observability/sharing.jsonl"

_ENTRY = re.compile(r"^- (?:\*\*(?P<key>[^*]+?):\*\* )?(?P<value>.*?)(?: _\((?P<note>.*)\)_)?\s*$")

KIND_FILES = {
    "preference": ("preferences.md", "Preferences", "user.preference"),
    "fact": ("facts.md", "Facts", "user.fact"),
}


class Entry(NamedTuple):
    key: str | None
    value: str
    note: str | None
    line: int

    @property
    def text(self) -> str:
        return f"{self.key}: {self.value}" if self.key else self.value


class SavedDoc(NamedTuple):
    doc_id: str
    doc_path: str
    created: bool = True
    renewed: bool = False  # held already, but expired: its expiry is the new save's

    def as_json(self) -> dict[str, object]:
        """What every door that saves answers with (CLI `save --json`, MCP's save tool)."""
        return self._asdict()


def parse_entries(body: str) -> list[Entry]:
    entries = []
    for number, line in enumerate(body.splitlines(), 1):
        match = _ENTRY.match(line)
        if match and match.group("value").strip():
            key, value, note = match.group("key", "value", "note")
            entries.append(Entry(key.strip() if key else None, value.strip(), note, number))
    return entries


_STATEMENT_WORD = re.compile(r"(?:[^\W_]|[$£.]|€)+")  # € apart: a class with it is a 64k-entry table


def norm_statement(text: str) -> str:
    """A statement as `append_entry` compares it: its words (letters and digits of any
    script, currency signs, dots), case-folded.  Any script, or every Russian statement
    would be "" and so "the same" as any other."""
    return " ".join(_STATEMENT_WORD.findall(text.casefold()))


def default_title(content: str) -> str:
    """A memory's title when none is given: its first ten words, shortened to a title's length
    (it is written twice, in the frontmatter and as the heading)."""
    return shorten(" ".join(content.split()[:10]))


def fitting(vault: Vault, rel: str, text: str) -> bytes:
    """`text` as bytes if the index takes a document of that size; else BadInput, so a save
    is refused before anything is written instead of acknowledged and never found."""
    data = text.encode("utf-8")
    limit = vault.config.index.max_file_bytes
    if len(data) > limit:
        raise BadInput(
            f"too large to save: {rel} would be {len(data):,} bytes, more than the index takes "
            f"([index] max_file_bytes = {limit:,}); save it in smaller parts"
        )
    return data


def slug(text: str, limit: int = 6) -> str:
    import hashlib  # not at module level: loading OpenSSL is a cost every search would pay

    words = re.findall(r"[a-z0-9]+", text.lower())[:limit] or ["memory"]
    digest = hashlib.sha1(text.encode()).hexdigest()[:6]
    return "-".join(words)[:60] + "-" + digest


def _name_for(vault: Vault, folder: Path, doc_type: str, content: str) -> tuple[str, Path, bool]:
    """The name and path `content` is saved under in `folder`, and whether that file holds it
    already: its `slug`, unless a file there holds another text (same first words and 24-bit
    hash), then the slug with `-2`, `-3`…: a different text is never reported "already saved".
    Called under the memory lock."""
    wanted, name = f"\n\n{content.strip()}\n", slug(f"{doc_type} {content}")
    for number in itertools.count(1):
        candidate = name if number == 1 else f"{name}-{number}"
        path = folder / f"{candidate}.md"
        if not os.path.lexists(path):
            return candidate, path, False
        try:  # never through a link; unreadable or not UTF-8: not this text
            held = read_vault_file(vault.root, vault.rel(path))[0].decode("utf-8")
        except (OSError, NotInVault, UnicodeDecodeError):
            continue
        if wanted in held:
            return candidate, path, True
    raise AssertionError("unreachable")


def append_entry(
    vault: Vault,
    user: str,
    kind: str,
    value: str,
    *,
    key: str | None,
    source_turn: str | None,
    now: datetime,
    keywords: list[str] | None = None,
) -> SavedDoc:
    """Add one statement to preferences.md or facts.md (idempotent on the same statement)."""
    from events.documents import (  # YAML, pydantic: when writing
        DocumentMetadata,
        parse_document,
        render_document,
        wikilink,
    )

    filename, heading, topic = KIND_FILES[kind]
    rel = f"users/{user}/{filename}"
    doc_id = f"{user}/{filename[:-3]}"

    def change(data: bytes | None, _st: os.stat_result | None) -> tuple[bytes | None, bool]:
        if data is not None:
            try:
                parsed = parse_document(data.decode("utf-8"), rel)
            except UnicodeDecodeError:  # an editor's doing: the user fixes it, nothing is lost
                raise BadInput(f"cannot save to {rel}: it is not UTF-8 text") from None
            front, body = dict(parsed.frontmatter), parsed.body
        else:
            meta = DocumentMetadata(
                id=doc_id,
                user=user,
                title=f"{heading} of {user}",
                primary_topic=topic,
                content_types=[kind],
                scope="user",
                quality=0.8,
                created_at=now,
                tags=[f"pandafs/{filename[:-3]}"],
            )
            front, body = meta.to_frontmatter(), f"# {heading} of {user}\n\n"
        wanted = norm_statement(f"{key}: {value}" if key else value)
        for entry in parse_entries(body):
            if norm_statement(entry.text) == wanted or (
                key and entry.key == key and norm_statement(entry.value) == norm_statement(value)
            ):
                return None, False
        if source_turn:
            link = wikilink(f"users/{user}/turns/{source_turn}/context.md", source_turn)
            note = f"from {link}, {now.date().isoformat()}"
        else:
            note = f"saved {now.date().isoformat()}"
        line = f"- **{key}:** {value} _({note})_" if key else f"- {value} _({note})_"
        if not body.endswith("\n"):
            body += "\n"
        body += line + "\n"
        merged = list(dict.fromkeys([*(front.get("keywords") or []), *(keywords or [])]))
        if merged:
            front["keywords"] = merged
        front["updated_at"] = now
        return fitting(vault, rel, render_document(front, body)), True

    with vault.memory_lock(user):  # a link (to another user's file, or out): NotInVault
        created = rewrite_file(vault.root, rel, change)
    return SavedDoc(doc_id, rel, created=created)


def write_memory(
    vault: Vault,
    user: str,
    content: str,
    *,
    doc_type: str,
    topic: str,
    keywords: list[str],
    scope: str,
    ttl_hours: float | None,
    title: str | None,
    source_turn: str | None,
    now: datetime,
) -> SavedDoc:
    """One memory document under users/{user}/memories/ (the same content saved again:
    the same file, nothing written)."""
    from events.documents import DocumentMetadata, render_document, wikilink  # YAML, pydantic: when writing

    folder = vault.layout.memories_dir(user)
    with vault.memory_lock(user):
        name, path, held = _name_for(vault, folder, doc_type, content)
        doc_id = f"{user}/memories/{name}"
        expires = now + timedelta(hours=ttl_hours) if scope == "new" and ttl_hours else None
        if held:
            renewed = _renew_expired(vault, vault.rel(path), scope, expires, now)
            return SavedDoc(doc_id, vault.rel(path), created=False, renewed=renewed)
        extra = {"source_turn": f"{user}/{source_turn}"} if source_turn else {}
        meta = DocumentMetadata(
            id=doc_id,
            user=user,
            title=title or default_title(content),
            primary_topic=topic,
            keywords=keywords,
            content_types=[doc_type],
            scope=scope,  # type: ignore[arg-type]
            quality=0.6,
            created_at=now,
            expires_at=expires,
            tags=["pandafs/memory"],
            **extra,
        )
        body = f"# {meta.title}\n\n{content.strip()}\n"
        if source_turn:
            body += f"\nSource: {wikilink(f'users/{user}/turns/{source_turn}/context.md', source_turn)}\n"
        atomic_write(path, fitting(vault, vault.rel(path), render_document(meta, body)), root=vault.root)
    return SavedDoc(doc_id, vault.rel(path))


def _renew_expired(vault: Vault, rel: str, scope: str, expires: datetime | None, now: datetime) -> bool:
    """Saving again a memory whose `expires_at` has passed gives it the new save's scope and
    expiry; one not expired is left as it is (it may have been promoted).  Under the memory lock."""
    from pydantic import ValidationError

    from events.documents import DocumentMetadata, parse_document, render_document
    from events.errors import FrontmatterError

    def change(data: bytes | None, _st: os.stat_result | None) -> tuple[bytes | None, bool]:
        if data is None:  # removed since: the next save writes it anew
            return None, False
        try:  # a file its person broke since: theirs to mend, left as it is
            parsed = parse_document(data.decode("utf-8"), rel)
            meta, _extra = DocumentMetadata.fields_of(dict(parsed.frontmatter))
        except (UnicodeDecodeError, FrontmatterError, ValidationError):
            return None, False
        if meta["scope"] != "new" or meta["expires_at"] is None or aware(meta["expires_at"]) > now:
            return None, False
        front = dict(parsed.frontmatter)
        front["scope"] = scope
        if expires is None:
            front.pop("expires_at", None)
        else:
            front["expires_at"] = expires
        front["updated_at"] = now
        return render_document(front, parsed.body).encode("utf-8"), True

    try:
        return rewrite_file(vault.root, rel, change)
    except NotInVault:  # a link: never read, never written through
        return False


def publish(
    vault: Vault,
    by: str,
    content: str,
    *,
    doc_type: str,
    topic: str,
    keywords: list[str],
    title: str | None,
    now: datetime,
) -> SavedDoc:
    """Publish a document to every user: `knowledge/published/…`, with who and when.
    The caller has checked `by` is a publisher; the act is appended (fsynced) to
    `observability/sharing.jsonl` before the document exists, so every shared document can
    be traced to who published it."""
    from events.documents import DocumentMetadata, render_document  # YAML, pydantic: when writing

    folder = vault.layout.knowledge / "published"
    with vault.memory_lock(None):
        name, path, held = _name_for(vault, folder, doc_type, content)
        rel = f"knowledge/published/{name}.md"
        doc_id = rel[: -len(".md")]
        if held:
            return SavedDoc(doc_id, rel, created=False)
        meta = DocumentMetadata(
            id=doc_id,
            title=title or default_title(content),
            primary_topic=topic,
            keywords=keywords,
            content_types=[doc_type],
            scope="global",
            quality=0.6,
            created_at=now,
            tags=["pandafs/published"],
            published_by=by,
            published_at=now,
        )
        body = f"# {meta.title}\n\n{content.strip()}\n\n_Published by {by} on {now.date().isoformat()}._\n"
        record = {"ts": format_ts(now), "act": "publish", "by": by, "doc_id": doc_id, "doc_path": rel}
        log = vault.root / SHARING_LOG
        append_file(
            vault_folder(vault.root, log.parent) / log.name, orjson.dumps(record) + b"\n", root=vault.root
        )
        atomic_write(path, fitting(vault, vault.rel(path), render_document(meta, body)), root=vault.root)
    return SavedDoc(doc_id, rel)


def check_published(vault: Vault, repair: bool) -> list[Problem]:
    """Documents in `knowledge/published/` no `publish` record names (`unrecorded_share`),
    such as a file copied there by hand.  `--repair` changes nothing: move it back, or
    publish it with `pandafs save --scope global`."""
    from indexers.sync import scan_documents

    found = scan_documents(vault.root, "knowledge/published")
    if not found:
        return []
    try:
        data, _ = read_vault_file(vault.root, SHARING_LOG)
    except FileNotFoundError:
        data = b""
    except (OSError, NotInVault) as exc:
        return [Problem(SHARING_LOG, "unreadable", f"cannot be read ({exc.__class__.__name__})")]
    recorded = {str(record.get("doc_path")) for record in json_lines(data) if record.get("act") == "publish"}
    why = f"is global, but {SHARING_LOG} has no record of anyone publishing it"
    return [Problem(rel, "unrecorded_share", why) for rel in sorted(found) if rel not in recorded]

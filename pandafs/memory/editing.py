"""Edit and delete the memory documents a person owns: a line of `preferences.md` /
`facts.md`, a memory, or a document in `knowledge/published/` (publishers only).

Ownership comes from the path; another user's document is refused like a missing one,
and a refused call changes nothing.  A deleted document or entry goes to
`archive/expired/`, where no search shows it; `pandafs forget` removes text everywhere."""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from events.clock import utcnow
from events.errors import NotInVault
from events.fsio import atomic_write, read_vault_file, rename_in_vault, rewrite_file, vault_folder
from events.layout import DocRef, candidate_paths, classify

from ..errors import BadInput
from ..vault import Vault
from .store import Entry, parse_entries

__all__ = ["EXPIRED", "delete_document", "edit_document", "expired_path", "pick_entry"]

EXPIRED = "archive/expired"
"""Where deleted and expired documents go, under their own vault-relative path."""


@dataclass
class Changed:
    """What an edit or delete did (`--json` of `edit` / `delete`, MCP's answer)."""

    doc_id: str
    doc_path: str
    action: str  # edited | deleted
    entry: int | None = None
    moved_to: str | None = None
    fields: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def owned_document(vault: Vault, id_or_path: str, user: str) -> tuple[str, DocRef]:
    """The vault-relative path and identity of a memory document `user` may change.
    Refused (`BadInput`): turns and research (use `forget`), another user's document, a link,
    a published document unless `user` is a publisher."""
    vault.require_user(user)
    text = id_or_path.strip().removeprefix("./")
    paths = [text] if text.endswith(".md") else candidate_paths(text)
    missing = BadInput(f"no memory document {id_or_path!r} of {user} (try `pandafs search --user {user}`)")
    for rel in paths:
        ref = classify(rel)
        if ref is None:
            continue
        if ref.kind == "knowledge" and rel.startswith("knowledge/published/"):
            if user not in vault.config.memory.publishers:
                raise BadInput(f"{user} may not change published documents: only [memory] publishers may")
        elif ref.user != user or ref.kind not in ("preferences", "facts", "memory"):
            if ref.user == user and ref.kind in ("turn", "research", "archived_turn"):
                raise BadInput(f"{ref.doc_id} is a turn: its text goes with `pandafs forget`")
            raise missing
        try:
            st = os.lstat(vault.root / rel)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise BadInput(f"{rel} is not a plain file: PandaFS never writes through links")
        return rel, ref
    raise missing


def expired_path(vault: Vault, rel: str) -> Path:
    """Where a deleted or expired document goes: `archive/expired/{rel}`, never over another file."""
    base = vault.root / EXPIRED / rel
    target, n = base, 1
    while os.path.lexists(target):
        n += 1
        target = base.with_name(f"{base.stem}-{n}{base.suffix}")
    return target


def pick_entry(entries: list[Entry], entry: str | None, rel: str) -> Entry:
    """The entry named by its number in the list (from 1) or its key; `BadInput` if none."""
    if entry is None:
        raise BadInput(f"{rel} is a list: say which entry (--entry N or --entry KEY)")
    if entry.isdigit():
        number = int(entry)
        if not 1 <= number <= len(entries):
            raise BadInput(f"{rel} has {len(entries)} entries; there is no entry {number}")
        return entries[number - 1]
    keyed = [e for e in entries if e.key == entry]
    if len(keyed) != 1:
        raise BadInput(f"{rel} has {len(keyed) or 'no'} entries with the key {entry!r}")
    return keyed[0]


def edit_document(
    vault: Vault,
    id_or_path: str,
    user: str,
    *,
    text: str | None = None,
    entry: str | None = None,
    title: str | None = None,
    topic: str | None = None,
    keywords: list[str] | None = None,
    now: datetime | None = None,
) -> Changed:
    """Change a memory document: an entry's value (`entry` + `text`), or a memory's body
    (`text`), title, topic or keywords.  The file is rewritten atomically and reindexed."""
    from events.documents import parse_document, render_document

    from .api import Memory, check_topic
    from .store import default_title

    rel, ref = owned_document(vault, id_or_path, user)
    if text is not None and not text.strip():
        raise BadInput("the new text is empty: to remove it, use `pandafs delete`")
    if topic is not None:
        check_topic(topic)
    if text is None and title is None and topic is None and keywords is None:
        raise BadInput("nothing to change: give --text, --title, --topic or --keywords")
    now = now or utcnow()
    is_list = ref.kind in ("preferences", "facts")
    if is_list and (title is not None or topic is not None):
        raise BadInput(f"{rel} is a list of entries: only an entry's --text can change")
    changed = Changed(ref.doc_id, rel, "edited")

    def change(data: bytes | None, _st: os.stat_result | None) -> tuple[bytes | None, None]:
        if data is None:
            raise BadInput(f"{rel} is gone")
        try:
            parsed = parse_document(data.decode("utf-8"), rel)
        except UnicodeDecodeError:
            raise BadInput(f"{rel} is not UTF-8 text") from None
        front, body = dict(parsed.frontmatter), parsed.body
        changed.fields = []
        if is_list:
            if text is not None:
                entries = parse_entries(body)
                picked = pick_entry(entries, entry, rel)
                lines = body.split("\n")
                old = lines[picked.line - 1]
                value = " ".join(text.split())
                note = f" _({picked.note})_" if picked.note else ""
                new = f"- **{picked.key}:** {value}{note}" if picked.key else f"- {value}{note}"
                lines[picked.line - 1] = new
                body = "\n".join(lines)
                changed.entry = entries.index(picked) + 1
                if old != new:
                    changed.fields.append("text")
        else:
            if entry is not None:
                raise BadInput(f"{rel} is one memory: --entry names a line of preferences or facts")
            new_title = title
            if text is not None:
                head, sep, rest = body.partition("\n\n")
                keep_head = head.startswith("# ")
                body = f"{head}\n\n{text.strip()}\n" if keep_head and sep else f"{text.strip()}\n"
                changed.fields.append("text")
                old_text = rest if keep_head and sep else parsed.body
                if title is None and front.get("title") == default_title(old_text):
                    new_title = default_title(text)  # made from the old text: it follows the new one
            if new_title is not None:
                front["title"] = " ".join(new_title.split())
                if body.startswith("# "):
                    body = f"# {front['title']}" + body[body.index("\n") :] if "\n" in body else ""
                changed.fields.append("title")
            if topic is not None:
                front["primary_topic"] = topic
                changed.fields.append("topic")
        if keywords is not None:
            front["keywords"] = [k.strip() for k in keywords if k.strip()]
            changed.fields.append("keywords")
        front["updated_at"] = now
        return render_document(front, body).encode("utf-8"), None

    with vault.memory_lock(ref.user):
        rewrite_file(vault.root, rel, change)
    Memory(vault).index_paths([rel])
    return changed


def delete_document(
    vault: Vault,
    id_or_path: str,
    user: str,
    *,
    entry: str | None = None,
    now: datetime | None = None,
) -> Changed:
    """Delete a memory (moved to `archive/expired/…`, out of the index) or one entry of
    preferences / facts (the line moves to `archive/expired/users/{u}/….md`)."""
    from .api import Memory

    rel, ref = owned_document(vault, id_or_path, user)
    now = now or utcnow()
    is_list = ref.kind in ("preferences", "facts")  # its entries gather in one file there
    target = f"{EXPIRED}/{rel}" if is_list else vault.rel(expired_path(vault, rel))
    changed = Changed(ref.doc_id, rel, "deleted", moved_to=target)
    if is_list:
        removed: list[str] = []

        def change(data: bytes | None, _st: os.stat_result | None) -> tuple[bytes | None, None]:
            if data is None:
                raise BadInput(f"{rel} is gone")
            body = data.decode("utf-8", errors="strict")
            entries = parse_entries(body[_body_start(body) :])
            picked = pick_entry(entries, entry, rel)
            lines = body.split("\n")
            at = body[: _body_start(body)].count("\n") + picked.line - 1
            removed[:] = [lines[at]]
            changed.entry = entries.index(picked) + 1
            del lines[at]
            return "\n".join(lines).encode("utf-8"), None

        with vault.memory_lock(ref.user):
            try:
                rewrite_file(vault.root, rel, change)
            except UnicodeDecodeError:
                raise BadInput(f"{rel} is not UTF-8 text") from None
            _append_expired(vault, target, removed[0], now)
    else:
        if entry is not None:
            raise BadInput(f"{rel} is one memory: --entry names a line of preferences or facts")
        vault_folder(vault.root, (vault.root / target).parent)
        with vault.memory_lock(ref.user):
            rename_in_vault(vault.root, vault.root / rel, vault.root / target)
    Memory(vault).index_paths([rel])
    return changed


def _body_start(text: str) -> int:
    """Where the body of a document with frontmatter starts (0 without frontmatter)."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return end + len("\n---\n")
    return 0


def _append_expired(vault: Vault, target: str, line: str, now: datetime) -> None:
    """Keep a deleted entry's line in `archive/expired/…` (owner-readable, never indexed)."""
    try:
        held = read_vault_file(vault.root, target)[0].decode("utf-8")
    except FileNotFoundError:
        held = "# Deleted entries\n\n"
    except (OSError, NotInVault, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot keep the deleted entry in {target}: {exc}") from None
    from events.stamps import format_ts

    held += f"{line}  <!-- deleted {format_ts(now)} -->\n"
    atomic_write(vault.root / target, held, root=vault.root)

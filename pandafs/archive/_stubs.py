"""Summary stubs: what stays in the vault (and the index) for an archived turn."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from events.documents import DocumentMetadata, parse_document, render_document, shorten, split_sections
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.layout import classify
from indexers.errors import ArchiveError
from indexers.turn_folder import TurnFiles

from ..memory.turn_records import parse_time, parse_turn_context
from ..vault import Vault
from ._common import CLAIM_CHARS, CLAIMS, TurnKey, as_utc, stub_relpath

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WIKILINK = re.compile(r"!?\[\[([^\]\n]+)\]\]")
LINKS = 20  # at most this many of the turn's links are kept on its stub


def key_claims(body: str) -> list[str]:
    """The first `CLAIMS` distinct statements of §4 (tool results), else of §5 (the answer)."""
    sections = split_sections(body)
    for number in (4, 5):
        claims: list[str] = []
        fenced = False
        for raw in sections.get(number, "").splitlines():
            line = raw.strip()
            if line.startswith("```"):
                fenced = not fenced
                continue
            if fenced or not line or line.startswith(("#", "|", "**Args:**", "_(")):
                continue
            for sentence in _SENTENCE.split(line):
                text = shorten(" ".join(sentence.split()).strip("-* "), CLAIM_CHARS)
                if len(text) >= 12 and text not in claims:
                    claims.append(text)
                if len(claims) == CLAIMS:
                    return claims
        if claims:
            return claims
    return []


def linked_from(body: str, user: str, turn: str) -> list[str]:
    """The wikilinks of the turn's context.md other than into the turn itself, so the stub
    keeps the archived turn's place in Obsidian's graph."""
    own = (f"users/{user}/turns/{turn}/", f"archive/stubs/{user}/{turn}")
    found: list[str] = []
    targets: set[str] = set()
    for match in _WIKILINK.finditer(body):
        target = match.group(1).split("|", 1)[0].split("#", 1)[0].strip()
        if not target or target.startswith(own) or target in targets:
            continue
        targets.add(target)
        found.append(match.group(0).lstrip("!"))
        if len(found) == LINKS:
            break
    return found


def render_stub(turn: TurnFiles, *, archived_at: datetime, batch: str, archive_file: str) -> str:
    """The summary stub of an archived turn (pure: same inputs, same text)."""
    front: dict[str, Any] = {}
    body = ""
    raw = turn.file("context.md")
    if raw is not None:
        try:
            parsed = parse_document(raw.decode("utf-8"), f"{turn.doc_id}/context.md")
            front, body = dict(parsed.frontmatter), parsed.body
        except (UnicodeDecodeError, FrontmatterError):
            pass
    info: dict[str, Any] = {}
    try:
        loaded = orjson.loads(turn.file("metadata.json") or b"{}")
        info = loaded if isinstance(loaded, dict) else {}
    except orjson.JSONDecodeError:
        pass
    record = parse_turn_context(turn.user, turn.turn, raw.decode("utf-8", "replace")) if raw else None
    query = str(info.get("query") or (record.query if record else "") or front.get("title") or "").strip()
    outcome = str(info.get("outcome") or front.get("outcome") or "UNKNOWN")
    revisions = info.get("revision_count") if isinstance(info.get("revision_count"), int) else 0
    claims = key_claims(body)
    title = str(front.get("title") or shorten(query) or turn.doc_id)
    tags = front["tags"] if isinstance(front.get("tags"), list) else []
    archive_extra = {
        "outcome": outcome,
        "revision_count": revisions,
        "archived_at": as_utc(archived_at),
        "archive_file": archive_file,
        "archive_batch": batch,
        "archived_files": len(turn.files),
        "archived_bytes": turn.size,
    }
    fields = {k: v for k, v in front.items() if k not in ("id", "user", "archived", "tags")}
    fields.update(id=turn.doc_id, user=turn.user, archived=True, title=title)
    fields.setdefault("created_at", turn.created_at)
    fields.setdefault("content_types", ["context"])
    fields["tags"] = list(dict.fromkeys([*map(str, tags), "pandafs/archived"]))
    fields.update(archive_extra)
    try:
        meta = DocumentMetadata.model_validate(fields)
    except ValidationError:
        meta = DocumentMetadata(
            id=turn.doc_id,
            user=turn.user,
            title=title,
            content_types=["context"],
            created_at=turn.created_at,
            archived=True,
            tags=["pandafs/turn", "pandafs/archived"],
            **archive_extra,
        )
    lines = [
        f"# Turn {turn.turn.removeprefix('turn_')} — {title} (archived)",
        "",
        f"**Query:** {shorten(query, 600) or '_(unknown)_'}",
        "",
        f"**Outcome:** {outcome} · **Revisions:** {revisions}",
    ]
    summary = str(info.get("summary") or front.get("summary") or "").strip()
    if summary and not shorten(query, 10_000).startswith(shorten(summary, 10_000).rstrip("…")):
        lines += ["", f"**Summary:** {shorten(summary, 500)}"]
    if claims:
        lines += ["", "## Key claims", "", *(f"- {c}" for c in claims)]
    related = linked_from(body, turn.user, turn.turn)
    if related:
        lines += ["", "## Linked from the turn", "", *(f"- {link}" for link in related)]
    lines += [
        "",
        "## Original",
        "",
        f"Archived {as_utc(archived_at):%Y-%m-%d}: {len(turn.files)} files, {turn.size:,} bytes "
        "in the Parquet file named by `archive_file`. "
        f"`pandafs retrieve {turn.doc_id}` shows the full original, "
        f"`pandafs restore {turn.doc_id}` puts it back.",
    ]
    return render_document(meta, "\n".join(lines) + "\n")


@dataclass(frozen=True)
class StubInfo:
    """Where a stub is, the Parquet file it names and when its turn was archived."""

    path: Path
    archive_file: str
    archived_at: datetime | None


def _valid_archive_file(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    parts = value.split("/")
    if parts[:2] != ["archive", "turns"] or ".." in parts or not value.endswith(".parquet"):
        return None
    return value


def read_stub(vault: Vault, user: str, turn: str) -> StubInfo:
    """What a stub says about where its turn is; `FileNotFoundError` if there is none."""
    path = vault.layout.archive_stub(user, turn)
    rel = stub_relpath((user, turn))
    try:
        front = parse_document(read_vault_file(vault.root, rel)[0].decode("utf-8"), rel).frontmatter
    except (FrontmatterError, NotInVault) as exc:  # a linked stub is not read
        raise ArchiveError(str(exc)) from None
    except UnicodeDecodeError:
        raise ArchiveError(f"{rel}: not UTF-8 text") from None
    archive_file = _valid_archive_file(front.get("archive_file"))
    if archive_file is None:
        raise ArchiveError(f"{rel}: no valid archive_file property (archive/turns/...parquet)")
    return StubInfo(path, archive_file, parse_time(front.get("archived_at")))


def stub_or_none(vault: Vault, key: TurnKey) -> StubInfo | None:
    try:
        return read_stub(vault, *key)
    except (FileNotFoundError, ArchiveError):
        return None


def all_stubs(vault: Vault) -> list[TurnKey]:
    found: list[TurnKey] = []
    for path in sorted(vault.layout.archive.glob("stubs/*/turn_*.md")):
        ref = classify(vault.rel(path))
        if ref is not None and ref.kind == "archived_turn" and ref.user and ref.turn:
            found.append((ref.user, ref.turn))
    return found

"""Which turns to archive: age, recent uses (a fold over turn events) and expansions."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from events.fsio import append_file, json_lines, read_vault_bytes, vault_folder
from events.layout import turn_number, validate_user_id
from events.stamps import format_ts
from indexers.turn_folder import folder_signature

from ..checks import frontmatter_of
from ..memory.turn_records import parse_time
from ..turns import EVENTS_FILE, first_event, read_metadata
from ..vault import Vault
from ._common import EXPANSIONS_FILE, USED_MARK, TurnKey, as_utc


def turn_created_at(vault: Vault, folder: Path, metadata: dict[str, Any] | None = None) -> datetime | None:
    """`created_at` of a turn from metadata.json (fast; `metadata` when read already), else
    from context.md's frontmatter (a file that is a link is not read: as if it were missing)."""
    data = metadata if metadata is not None else read_metadata(vault.root, folder)
    if data is not None and (found := parse_time(data.get("created_at"))):
        return found
    front = frontmatter_of(vault, vault.rel(folder / "context.md"))
    return None if front is None else parse_time(front.get("created_at"))


def entered_at(vault: Vault, folder: Path, metadata: dict[str, Any] | None) -> datetime | None:
    """When a turn dated before it entered the vault came in (its first event's stamp: an
    `import`ed conversation, or a question asked `--now` in the past), so what a user just
    brought in is not archived at once; None for any other turn (`import-turns` keeps dates)."""
    imported = metadata is not None and metadata.get("source") == "import"
    if imported:
        meta = metadata.get("meta") if metadata is not None else None
        if not isinstance(meta, dict) or not meta.get("conversation_id"):
            return None
    first = first_event(vault.root, folder / EVENTS_FILE)
    if first is None:
        return None
    data = first.get("data")
    if not imported and not (isinstance(data, dict) and data.get("asked_at")):
        return None
    return parse_time(first.get("ts"))


def recent_uses(vault: Vault, user: str, *, since: datetime, until: datetime) -> Counter[str]:
    """doc id → number of `documents_used` events of `user`'s turns stamped in [since, until].
    A log older than `since` is not opened; an opened one is parsed only on the lines that
    mention `documents_used`."""
    since, until = as_utc(since), as_utc(until)
    since_ns = int(since.timestamp() * 1e9)
    counts: Counter[str] = Counter()
    for folder in vault.layout.turn_dirs(user):
        log = folder / EVENTS_FILE
        try:
            if os.lstat(log).st_mtime_ns < since_ns:
                continue
            raw = read_vault_bytes(vault.root, log)
        except OSError:
            continue
        if raw is None or USED_MARK not in raw:  # gone, or a link: no uses read through it
            continue
        for record in json_lines(raw, USED_MARK):
            if record.get("type") != "documents_used":
                continue
            ts = parse_time(record.get("ts"))
            if ts is None or not since <= ts <= until:
                continue
            data = record.get("data") or {}
            for doc_id in set(data.get("doc_ids") or []):
                counts[str(doc_id)] += 1
    return counts


def record_expansion(vault: Vault, doc_id: str, when: datetime) -> None:
    """Append one expansion of an archived turn to `archive/expansions.jsonl` (fsynced)."""
    path = vault_folder(vault.root, vault.layout.archive) / EXPANSIONS_FILE
    append_file(path, orjson.dumps({"id": doc_id, "ts": format_ts(as_utc(when))}) + b"\n", root=vault.root)


def expansion_counts(
    vault: Vault, *, since: datetime, until: datetime | None = None, doc_id: str | None = None
) -> Counter[str]:
    """doc id → expansions recorded in [since, until] (only `doc_id`'s, if given); a torn
    last line is ignored."""
    since = as_utc(since)
    until = as_utc(until) if until is not None else datetime.max.replace(tzinfo=UTC)
    counts: Counter[str] = Counter()
    raw = read_vault_bytes(vault.root, vault.layout.archive / EXPANSIONS_FILE)
    if raw is None:  # none recorded (a link there is not ours: nothing read through it)
        return counts
    for entry in json_lines(raw, orjson.dumps(doc_id) if doc_id is not None else b""):
        ts = parse_time(entry.get("ts"))
        if ts is not None and since <= ts <= until and doc_id in (None, entry.get("id")):
            counts[str(entry.get("id"))] += 1
    return counts


@dataclass(frozen=True)
class Candidate:
    """A live turn old enough to be considered, with why it goes (or stays)."""

    user: str
    turn: str
    path: Path
    created_at: datetime
    age_days: float
    uses: int
    reason: str
    bytes: int

    @property
    def key(self) -> TurnKey:
        return (self.user, self.turn)

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "created_at": format_ts(self.created_at),
            "age_days": round(self.age_days, 1),
            "uses": self.uses,
            "reason": self.reason,
            "bytes": self.bytes,
        }


def find_candidates(
    vault: Vault,
    *,
    age_days: int | None = None,
    user: str | None = None,
    now: datetime | None = None,
) -> tuple[list[Candidate], list[Candidate], list[dict[str, str]]]:
    """(eligible turns, turns old enough but kept for their use, turns skipped and why)."""
    cfg = vault.config.archive
    now = as_utc(now)
    min_age = cfg.age_days if age_days is None else age_days
    window_start = now - timedelta(days=cfg.recent_window_days)
    expansions = expansion_counts(vault, since=window_start, until=now)
    users = [validate_user_id(user)] if user is not None else vault.layout.users()
    eligible: list[Candidate] = []
    kept: list[Candidate] = []
    skipped: list[dict[str, str]] = []
    for name in users:
        uses: Counter[str] | None = None
        for folder in vault.layout.turn_dirs(name):
            key = (name, folder.name)
            doc_id = f"{name}/{folder.name}"
            metadata = read_metadata(vault.root, folder)
            created = turn_created_at(vault, folder, metadata)
            if created is None:
                skipped.append({"doc_id": doc_id, "reason": "no created_at (metadata.json)"})
                continue
            age = (now - created).total_seconds() / 86400.0
            if age > min_age and (entered := entered_at(vault, folder, metadata)) is not None:
                age = min(age, (now - entered).total_seconds() / 86400.0)
            if age <= min_age:
                continue
            if vault.layout.archive_stub(*key).exists():
                skipped.append({"doc_id": doc_id, "reason": "both live and archived; run `pandafs verify`"})
                continue
            if uses is None:
                uses = recent_uses(vault, name, since=window_start, until=now)
            count = uses[doc_id] + expansions[doc_id]
            window = cfg.recent_window_days
            if age > cfg.force_age_days:
                reason = f"{age:.0f} days old > {cfg.force_age_days} (forced; {count} uses in {window} days)"
            elif count <= cfg.max_recent_uses:
                reason = (
                    f"{age:.0f} days old > {min_age}; {count} uses in {window} days <= {cfg.max_recent_uses}"
                )
            else:
                reason = f"{count} uses in {window} days > {cfg.max_recent_uses}: stays live"
                kept.append(Candidate(name, folder.name, folder, created, age, count, reason, 0))
                continue
            size = sum(size for size, _ in folder_signature(folder, vault.root).values())
            eligible.append(Candidate(name, folder.name, folder, created, age, count, reason, size))
    eligible.sort(key=lambda c: (c.created_at.strftime("%Y-%m"), c.user, turn_number(c.turn)))
    return eligible, kept, skipped

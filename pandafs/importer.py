"""`pandafs import-turns FILE.jsonl`: bulk-load past conversations as completed turns.

Each line `{"user", "external_id"?, "timestamp", "query", "response", "meta"?}`
becomes one turn folder numbered like any other, holding three events
(turn_started, response_synthesized, turn_completed) and their projections.

Idempotence: `(user, external_id)` pairs already imported are skipped.  The map of
imported ids is a ledger per user (`users/{u}/turns/.external_ids.jsonl`) that also
records how far it has scanned; turns written after that point (by a crashed import
or by the pipeline) are scanned once on the next import, so a crash between writing
a turn and recording it never leads to a duplicate.

Speed: files are written without fsync and the batch is made durable with one
`sync_all()`; `after_batch` (the indexer, wired by the caller) receives the index
documents built from the bytes just rendered, so nothing is read back or re-parsed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from events import (
    EventWriter,
    project_turn,
    read_log,
    render_turn,
    sync_all,
    turn_number,
    validate_user_id,
)
from events.errors import InvalidUserId
from events.fsio import atomic_write
from events.render import context_parts
from events.schema import ResponseSynthesized, TurnCompleted, TurnStarted
from indexers.documents import IndexDoc, Skipped, index_doc_from_parts

from .errors import BadInput
from .turns import EVENTS_FILE
from .vault import Vault, file_lock

__all__ = ["ImportLine", "ImportReport", "import_turns"]

LEDGER = ".external_ids.jsonl"


class ImportLine(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)
    user: str
    external_id: str | None = None
    timestamp: datetime
    query: str
    response: str = ""
    meta: dict[str, Any] | None = None

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        try:
            return validate_user_id(value)
        except InvalidUserId as exc:
            raise ValueError(str(exc)) from None

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty")
        return value


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    turns: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        rate = self.imported / self.seconds if self.seconds else 0.0
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "turns_per_s": round(rate, 1),
        }


def _error_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "line"
        parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def parse_lines(
    lines: Iterable[bytes],
) -> tuple[list[tuple[int, ImportLine]], list[dict[str, Any]]]:
    good: list[tuple[int, ImportLine]] = []
    failed: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            failed.append({"line": number, "error": f"not valid JSON: {exc}"})
            continue
        if not isinstance(data, dict):
            failed.append({"line": number, "error": "not a JSON object"})
            continue
        try:
            good.append((number, ImportLine.model_validate(data)))
        except ValidationError as exc:
            failed.append({"line": number, "error": _error_text(exc)})
    return good, failed


class _Ledger:
    """external_id → turn for one user, with a high-water mark of scanned turns."""

    def __init__(self, vault: Vault, user: str) -> None:
        self.path = vault.layout.turns_dir(user) / LEDGER
        self.ids: dict[str, str] = {}
        self.scanned = 0
        for line in self.path.read_bytes().splitlines() if self.path.exists() else []:
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line: the scan below recovers what it recorded
            if "e" in entry:
                self.ids[entry["e"]] = entry["t"]
                self.scanned = max(self.scanned, turn_number(entry["t"]))
            else:
                self.scanned = max(self.scanned, int(entry.get("scanned", 0)))
        self._catch_up(vault, user)

    def _catch_up(self, vault: Vault, user: str) -> None:
        """Read turn_started of turns newer than the mark (crash leftovers, pipeline turns)."""
        newest = self.scanned
        found: list[dict[str, Any]] = []
        for path in vault.layout.turn_dirs(user):
            number = turn_number(path.name)
            if number <= self.scanned:
                continue
            newest = max(newest, number)
            log = read_log(path / EVENTS_FILE)
            if not log.records:
                continue
            data = log.records[0].get("data", {})
            external = data.get("external_id")
            if log.records[0].get("type") == "turn_started" and external is not None:
                self.ids.setdefault(external, path.name)
                found.append({"e": external, "t": path.name})
        if newest > self.scanned:
            self.scanned = newest
            self.append([*found, {"scanned": newest}])

    def append(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        with open(self.path, "ab") as handle:
            handle.write(b"".join(orjson.dumps(e) + b"\n" for e in entries))


def _write_turn(vault: Vault, user: str, turn: str, line: ImportLine) -> IndexDoc | Skipped:
    folder = vault.layout.turn_dir(user, turn)
    started = TurnStarted(
        query=line.query,
        source="import",
        occurred_at=line.timestamp,
        external_id=line.external_id,
        meta=line.meta,
    )
    words = line.query.split()
    completed = TurnCompleted(
        outcome="IMPORTED", summary=" ".join(words[:24]), query_type="imported", quality=0.5
    )
    with EventWriter(folder / EVENTS_FILE, user=user, turn=turn, durable=False, new=True) as writer:
        events = writer.append_many([started, ResponseSynthesized(answer=line.response), completed])
    view = project_turn(events)
    front, body = context_parts(view)
    files = render_turn(view, parts=(front, body))
    for name, data in files.items():
        atomic_write(folder / name, data, durable=False, make_parents=False)
    context = folder / "context.md"
    rel = f"users/{user}/turns/{turn}/context.md"  # the folder was just allocated: no resolve()
    return index_doc_from_parts(
        rel,
        files["context.md"],
        front,
        body,
        os.stat(context).st_mtime_ns,
        max_bytes=vault.config.index.max_file_bytes,  # the rule rebuild applies too
    )


def import_turns(
    vault: Vault,
    source: Path,
    *,
    batch_size: int | None = None,
    after_batch: Callable[[list[IndexDoc | Skipped]], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import every valid line of `source`; bad lines are reported, the rest go in."""
    started = time.perf_counter()
    try:
        raw_lines = source.read_bytes().splitlines()
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror or exc}") from None
    good, failed = parse_lines(raw_lines)
    report = ImportReport(failed=failed)
    batch_size = batch_size or vault.config.index.batch_size
    by_user: dict[str, list[ImportLine]] = {}
    for _, line in good:
        by_user.setdefault(line.user, []).append(line)
    for user, lines in by_user.items():
        vault.layout.turns_dir(user).mkdir(parents=True, exist_ok=True)
        with file_lock(vault.layout.turns_dir(user) / ".import.lock", what=f"import for {user}"):
            ledger = _Ledger(vault, user)
            fresh: list[ImportLine] = []
            for line in lines:
                key = line.external_id
                if key is not None and key in ledger.ids:
                    report.skipped += 1
                    continue
                if key is not None:
                    ledger.ids[key] = ""  # reserve: a repeat later in the same file is skipped
                fresh.append(line)
            for start in range(0, len(fresh), batch_size):
                chunk = fresh[start : start + batch_size]
                names = vault.allocate_turns(user, len(chunk))
                docs = [_write_turn(vault, user, name, line) for name, line in zip(names, chunk, strict=True)]
                sync_all()
                ledger.append(
                    [
                        {"e": ln.external_id, "t": n}
                        for n, ln in zip(names, chunk, strict=True)
                        if ln.external_id is not None
                    ]
                    + [{"scanned": turn_number(names[-1])}]
                )
                report.imported += len(chunk)
                report.turns.extend(f"{user}/{n}" for n in names)
                if after_batch is not None:
                    after_batch(docs)
                if progress is not None:
                    progress(len(chunk))
    report.seconds = time.perf_counter() - started
    return report

"""`pandafs import-turns FILE.jsonl`: bulk-load past conversations as completed turns.

Each line `{"user", "external_id"?, "timestamp", "query", "response", "meta"?}`
becomes one turn folder numbered like any other, holding three events
(turn_started, response_synthesized, turn_completed) and their projections.

Streaming: the file is read `batch_size` lines at a time, so memory stays bounded
whatever its size (what grows is one set of external ids per user).

Whole folders or none: each turn is built in `users/{u}/turns/.staging/`, its files
fsynced, then renamed into place (`Vault.place_turns`), so a reader or a crash never
sees an empty or half-written turn folder.  A killed import leaves at most a staging
folder, which the next import removes.

Idempotence: `(user, external_id)` pairs already imported are skipped.  The map of
imported ids is a ledger per user (`users/{u}/turns/.external_ids.jsonl`) that also
records how far it has scanned (`scanned`) and how far the turns it wrote have been
handed to the indexer (`indexed`).  The ledger is only a summary of the folders:
turns newer than `scanned` (placed by a killed import, or written by the pipeline)
are read once on the next import, and import turns newer than `indexed` are indexed
again, so a crash at any point neither duplicates a line nor leaves a turn unindexed.

Speed: per batch, one fsync per file written (in background threads, while the next
turns are rendered), one fsync of the turns folder, one index commit for every user
in the batch; `after_batch` (the indexer, wired by the caller) receives the index
documents built from the bytes just rendered, so nothing is read back or re-parsed.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from events import parse_event, project_turn, render_turn, turn_name, turn_number, validate_user_id
from events.clock import utcnow
from events.errors import InvalidUserId
from events.log import encode_events
from events.render import context_parts
from events.schema import ResponseSynthesized, TurnCompleted, TurnStarted
from indexers.documents import IndexDoc, Skipped, index_doc_from_parts, load_index_doc

from .errors import BadInput
from .turns import EVENTS_FILE, TurnRef, project
from .vault import STAGING_DIR, Vault, file_lock

__all__ = ["ImportLine", "ImportReport", "import_turns"]

LEDGER = ".external_ids.jsonl"
IMPORT_LOCK = ".import.lock"  # under users/: one import at a time per vault
FSYNC_THREADS = 4
FSYNC_IN_FLIGHT = 256  # open descriptors waiting for their fsync


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
    recovered: int = 0  # turns a killed import had placed, indexed (again) by this one

    def as_json(self) -> dict[str, Any]:
        rate = self.imported / self.seconds if self.seconds else 0.0
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "turns_per_s": round(rate, 1),
            "recovered": self.recovered,
        }


def _error_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "line"
        parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _parse_line(number: int, raw: bytes) -> ImportLine | dict[str, Any]:
    """The validated line, or its failure `{line, error}`."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return {"line": number, "error": f"not valid JSON: {exc}"}
    if not isinstance(data, dict):
        return {"line": number, "error": "not a JSON object"}
    try:
        return ImportLine.model_validate(data)
    except ValidationError as exc:
        return {"line": number, "error": _error_text(exc)}


def parse_lines(
    lines: Iterable[bytes],
) -> tuple[list[tuple[int, ImportLine]], list[dict[str, Any]]]:
    good: list[tuple[int, ImportLine]] = []
    failed: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        parsed = _parse_line(number, raw)
        if isinstance(parsed, ImportLine):
            good.append((number, parsed))
        else:
            failed.append(parsed)
    return good, failed


def _chunks(handle: Iterable[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    """Numbered non-blank lines of an open file, `size` at a time, read as a stream."""
    chunk: list[tuple[int, bytes]] = []
    for number, raw in enumerate(handle, 1):
        if raw.strip():
            chunk.append((number, raw))
            if len(chunk) >= size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


class _Syncer:
    """fsync-and-close written files in background threads while the caller renders on.

    At most `FSYNC_IN_FLIGHT` descriptors are open at once; `wait()` returns when
    every file handed over is on disk (and re-raises the first failure).
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="pandafs-fsync")
        self._slots = threading.BoundedSemaphore(FSYNC_IN_FLIGHT)
        self._pending: list[Future[None]] = []

    def _sync(self, fd: int) -> None:
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
            self._slots.release()

    def write(self, path: Path, data: bytes) -> int:
        """Create `path` (must not exist) with `data`; returns its mtime_ns."""
        self._slots.acquire()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except BaseException:
            self._slots.release()
            raise
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            mtime_ns = os.fstat(fd).st_mtime_ns
        except BaseException:
            os.close(fd)
            self._slots.release()
            raise
        self._pending.append(self._pool.submit(self._sync, fd))
        return mtime_ns

    def sync_dir(self, path: Path) -> None:
        self._slots.acquire()
        try:
            fd = os.open(path, os.O_RDONLY)
        except BaseException:
            self._slots.release()
            raise
        self._pending.append(self._pool.submit(self._sync, fd))

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown()


def _first_record(path: Path) -> dict[str, Any] | None:
    """The first event of a log (a turn's `turn_started`), reading one line only."""
    try:
        with open(path, "rb") as handle:
            line = handle.readline()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not line.endswith(b"\n"):
        return None
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


class _Ledger:
    """One user's imported external ids, with the `scanned` and `indexed` marks."""

    def __init__(self, vault: Vault, user: str) -> None:
        self.vault = vault
        self.user = user
        self.path = vault.layout.turns_dir(user) / LEDGER
        self.ids: set[str] = set()
        self.scanned = 0
        indexed: int | None = None
        torn = False
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            handle = None
        if handle is not None:
            with handle:
                for line in handle:
                    torn = not line.endswith(b"\n")
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # a torn last line: its turns are newer than `scanned`
                    if not isinstance(entry, dict):
                        continue
                    if "e" in entry:
                        self.ids.add(entry["e"])
                        self.scanned = max(self.scanned, turn_number(entry["t"]))
                    elif "indexed" in entry:
                        indexed = max(indexed or 0, int(entry["indexed"]))
                    elif "scanned" in entry:
                        self.scanned = max(self.scanned, int(entry["scanned"]))
        # A ledger written before the `indexed` mark existed: its turns were indexed.
        self.indexed = self.scanned if indexed is None else min(indexed, self.scanned)
        self._torn = torn
        self._marked = indexed is not None

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Append entries; no fsync: the folders are durable first, the ledger is a summary."""
        if not entries:
            return
        data = b"".join(orjson.dumps(e) + b"\n" for e in entries)
        with open(self.path, "ab") as handle:
            handle.write((b"\n" if self._torn else b"") + data)
        self._torn = False

    def _numbers_after(self, mark: int) -> Iterator[int]:
        """Turn numbers above `mark` that have a folder, in order."""
        turns = self.vault.layout.turns_dir(self.user)
        try:
            counter = int((turns / ".counter").read_text().strip())
        except (FileNotFoundError, ValueError):
            counter = None
        if counter is None or counter - mark > 100_000:
            for path in self.vault.layout.turn_dirs(self.user):
                number = turn_number(path.name)
                if number > mark:
                    yield number
            return
        for number in range(mark + 1, counter):
            if (turns / turn_name(number)).is_dir():
                yield number

    def recover(self) -> list[str]:
        """Catch up with turns newer than the marks; returns import turns still to index.

        Removes what a killed import left in staging, learns the external ids of turns
        placed after `scanned`, and re-projects an import turn whose projections are
        missing (a folder written by an older version that died mid-turn).
        """
        turns = self.vault.layout.turns_dir(self.user)
        shutil.rmtree(turns / STAGING_DIR, ignore_errors=True)
        found: list[dict[str, Any]] = []
        to_index: list[str] = []
        newest = self.scanned
        for number in self._numbers_after(min(self.scanned, self.indexed)):
            name = turn_name(number)
            first = _first_record(turns / name / EVENTS_FILE)
            if first is None or first.get("type") != "turn_started":
                continue  # empty or torn: not a placed turn (`verify --repair` names it)
            data = first.get("data") or {}
            if number > self.scanned:
                newest = number
                external = data.get("external_id")
                if external is not None:
                    self.ids.add(external)
                    found.append({"e": external, "t": name})
            if number > self.indexed and data.get("source") == "import":
                ref = TurnRef(self.user, name, turns / name)
                if not all((ref.path / f).exists() for f in ("context.md", "metadata.json")):
                    project(ref)
                to_index.append(name)
        if newest > self.scanned or found:
            self.scanned = newest
            self.append([*found, {"scanned": newest}])
        return to_index


def _turn_files(
    user: str, turn: str, line: ImportLine
) -> tuple[bytes, dict[str, bytes], dict[str, Any], str]:
    """The event log and projected files of one imported turn, rendered in memory."""
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
    log, records = encode_events(
        user, turn, [started, ResponseSynthesized(answer=line.response), completed], ts=utcnow()
    )
    view = project_turn([parse_event(r) for r in records])
    front, body = context_parts(view)
    return log, render_turn(view, parts=(front, body)), front, body


class _Importer:
    def __init__(
        self,
        vault: Vault,
        report: ImportReport,
        after_batch: Callable[[list[IndexDoc | Skipped]], None] | None,
        progress: Callable[[int], None] | None,
        keep_turns: bool = True,
    ) -> None:
        self.keep_turns = keep_turns
        self.max_bytes = vault.config.index.max_file_bytes
        self.vault = vault
        self.report = report
        self.after_batch = after_batch
        self.progress = progress
        self.ledgers: dict[str, _Ledger] = {}
        self.syncer = _Syncer()

    def close(self) -> None:
        try:
            self.syncer.close()
        finally:
            for user in self.ledgers:
                try:
                    (self.vault.layout.turns_dir(user) / STAGING_DIR).rmdir()
                except OSError:
                    pass  # absent, or holds what a failed batch left: the next import clears it

    def ledger(self, user: str) -> _Ledger:
        ledger = self.ledgers.get(user)
        if ledger is None:
            self.vault.layout.turns_dir(user).mkdir(parents=True, exist_ok=True)
            ledger = self.ledgers[user] = _Ledger(self.vault, user)
            names = ledger.recover()
            self._index_recovered(ledger, names)
        return ledger

    def _index_recovered(self, ledger: _Ledger, names: list[str]) -> None:
        if self.after_batch is not None and names:
            root = self.vault.root
            max_bytes = self.vault.config.index.max_file_bytes
            batch = self.vault.config.index.batch_size
            for start in range(0, len(names), batch):
                docs = []
                for name in names[start : start + batch]:
                    rel = f"users/{ledger.user}/turns/{name}/context.md"
                    loaded = load_index_doc(root, rel, max_bytes=max_bytes)
                    if loaded is not None:
                        docs.append(loaded)
                self.after_batch(docs)
            self.report.recovered += len(names)
        if names or not ledger._marked:
            ledger.indexed = ledger.scanned
            ledger.append([{"indexed": ledger.indexed}])
            ledger._marked = True

    def run_chunk(self, chunk: list[tuple[int, bytes]]) -> None:
        by_user: dict[str, list[ImportLine]] = {}
        for number, raw in chunk:
            parsed = _parse_line(number, raw)
            if not isinstance(parsed, ImportLine):
                self.report.failed.append(parsed)
                continue
            ledger = self.ledger(parsed.user)
            key = parsed.external_id
            if key is not None:
                if key in ledger.ids:
                    self.report.skipped += 1
                    continue
                ledger.ids.add(key)  # a repeat later in the file is skipped
            by_user.setdefault(parsed.user, []).append(parsed)
        docs: list[IndexDoc | Skipped] = []
        placed: dict[str, list[tuple[str, ImportLine]]] = {}
        for user, lines in by_user.items():
            placed[user] = self._write_user(user, lines, docs)
        for user, done in placed.items():
            ledger = self.ledgers[user]
            last = max(turn_number(name) for name, _ in done)
            ledger.scanned = max(ledger.scanned, last)
            entries = [{"e": ln.external_id, "t": n} for n, ln in done if ln.external_id is not None]
            ledger.append([*entries, {"scanned": ledger.scanned}])
            self.report.imported += len(done)
            if self.keep_turns:
                self.report.turns.extend(f"{user}/{n}" for n, _ in done)
        if self.after_batch is not None and docs:
            self.after_batch(docs)
        for user in placed:
            ledger = self.ledgers[user]
            ledger.indexed = ledger.scanned
            ledger.append([{"indexed": ledger.indexed}])
        if self.progress is not None:
            self.progress(len(chunk))

    def _write_user(
        self, user: str, lines: list[ImportLine], docs: list[IndexDoc | Skipped]
    ) -> list[tuple[str, ImportLine]]:
        """Build, fsync and place the folders of `lines`; returns `(turn, line)` placed."""
        staging = self.vault.layout.turns_dir(user) / STAGING_DIR
        staging.mkdir(exist_ok=True)
        done: list[tuple[str, ImportLine]] = []
        pending = lines
        while pending:
            names = self.vault.reserve_turns(user, len(pending))
            built: dict[str, tuple[ImportLine, IndexDoc | Skipped]] = {}
            for name, line in zip(names, pending, strict=True):
                built[name] = (line, self._build(staging / name, user, name, line))
            self.syncer.wait()
            taken = set(self.vault.place_turns(user, [(name, staging / name) for name in names]))
            for name in names:
                line, doc = built[name]
                if name in taken:
                    shutil.rmtree(staging / name, ignore_errors=True)
                else:
                    done.append((name, line))
                    docs.append(doc)
            pending = [built[name][0] for name in names if name in taken]
        return done

    def _build(self, folder: Path, user: str, turn: str, line: ImportLine) -> IndexDoc | Skipped:
        log, files, front, body = _turn_files(user, turn, line)
        os.mkdir(folder)
        self.syncer.write(folder / EVENTS_FILE, log)
        mtime_ns = 0
        for name, data in files.items():
            stamp = self.syncer.write(folder / name, data)
            if name == "context.md":
                mtime_ns = stamp
        self.syncer.sync_dir(folder)
        rel = f"users/{user}/turns/{turn}/context.md"
        return index_doc_from_parts(
            rel,
            files["context.md"],
            front,
            body,
            mtime_ns,
            max_bytes=self.max_bytes,  # as rebuild
        )


def import_turns(
    vault: Vault,
    source: Path,
    *,
    batch_size: int | None = None,
    after_batch: Callable[[list[IndexDoc | Skipped]], None] | None = None,
    progress: Callable[[int], None] | None = None,
    keep_turns: bool = True,
) -> ImportReport:
    """Import every valid line of `source`; bad lines are reported, the rest go in.

    `progress(n)` is called with the number of lines (good or bad) handled so far
    in each batch.  `keep_turns=False` leaves `report.turns` empty (a million ids
    the CLI never prints).  One import runs at a time per vault (a second one waits).
    """
    started = time.perf_counter()
    report = ImportReport()
    batch_size = batch_size or vault.config.index.batch_size
    try:
        handle = source.open("rb")
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror or exc}") from None
    vault.layout.users_dir.mkdir(parents=True, exist_ok=True)
    with handle, file_lock(vault.layout.users_dir / IMPORT_LOCK, what="import"):
        importer = _Importer(vault, report, after_batch, progress, keep_turns)
        try:
            for chunk in _chunks(handle, batch_size):
                importer.run_chunk(chunk)
        finally:
            importer.close()
    report.seconds = time.perf_counter() - started
    return report

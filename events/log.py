"""The append-only event log of one turn (`events.jsonl`).

`EventWriter` holds an exclusive `flock` while open (a second writer gets `LogBusyError`)
and appends each batch of events as one `write()` on an O_APPEND descriptor, fsynced.
`seq` counts from 0 without gaps; each event carries its predecessor's hash (`prev`) and its
own (`hash`, the sha256 of its canonical bytes), so any edit, reorder or deletion breaks the
chain.  A torn tail left by a crash mid-write is read apart and moved aside by
`repair_torn_tail` to `events.jsonl.torn`."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from .clock import utcnow
from .errors import ChainError, EventLogError, LogBusyError, NotInVault, TornTailError
from .fsio import (
    append_all,
    append_file,
    check_opened,
    make_folder,
    open_created,
    open_no_link,
    open_to_read,
    read_and_close,
)
from .ledger import GENESIS, Anchor, record_turns
from .schema import SCHEMA_VERSION, Event, Payload, parse_event
from .stamps import format_ts

__all__ = [
    "GENESIS",
    "EventWriter",
    "append_events",
    "check_chain",
    "encode_events",
    "event_hash",
    "read_events",
    "read_log",
    "repair_torn_tail",
    "torn_path",
]

COMPLETED = "turn_completed"


def event_hash(record: dict[str, Any]) -> str:
    """sha256 of the canonical bytes of `record` (every key but `hash`, sorted)."""
    body = record.copy()
    body.pop("hash", None)
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def encode_events(
    user: str, turn: str, payloads: Iterable[Payload], *, ts: datetime, seq: int = 0, prev: str = GENESIS
) -> tuple[bytes, list[dict[str, Any]]]:
    """The exact log lines (and records) of `payloads` appended after `seq`/`prev`: what
    `EventWriter` and the importer both write, so both give identical logs."""
    stamp = format_ts(ts)
    chunks: list[bytes] = []
    records: list[dict[str, Any]] = []
    for payload in payloads:
        record: dict[str, Any] = {
            "v": SCHEMA_VERSION,
            "seq": seq,
            "ts": stamp,
            "user": user,
            "turn": turn,
            "phase": payload.PHASE,
            "type": payload.TYPE,
            "data": payload.model_dump(mode="json", exclude_none=True),
            "prev": prev,
        }
        record["hash"] = event_hash(record)
        chunks.append(orjson.dumps(record) + b"\n")
        records.append(record)
        prev = record["hash"]
        seq += 1
    return b"".join(chunks), records


@dataclass(eq=False)
class LogRead:
    """What is on disk: complete records (with their exact line bytes) and any torn tail.
    `path` names it in errors (a string where the reader has no `Path` to hand)."""

    path: Path | str
    records: list[dict[str, Any]] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    bad_line: tuple[int, str] | None = None  # (0-based line index, why) of the first bad line
    torn_tail: bytes | None = None

    @property
    def last_hash(self) -> str:
        return self.records[-1]["hash"] if self.records else GENESIS


def read_log(path: Path, *, root: Path | str | None = None) -> LogRead:
    """Read `path` without judging the chain; a missing file reads as empty.  With `root`,
    the log opened must be `root/<its path>` (`check_opened`), so a turn folder swapped for a
    link never reads another user's log as this one: `NotInVault` instead."""
    try:  # never a link (it could be another user's turn), a FIFO (it would block), a folder
        fd, st = open_to_read(os.fspath(path))
    except FileNotFoundError:
        return LogRead(path)
    except NotInVault as exc:
        raise EventLogError(path, f"{exc.reason}; not read") from None
    if root is not None:
        check_opened(fd, path, root, created=False, action="read")  # (closes fd when it refuses)
    return parse_log(path, read_and_close(fd, st))


def parse_log(path: Path | str, raw: bytes) -> LogRead:
    """A log's bytes (from `path`, or an archived turn's) as records, without judging the chain."""
    result = LogRead(path)
    body, sep, tail = raw.rpartition(b"\n")  # (no newline: all of it is the tail)
    if tail:
        result.torn_tail = tail
    if not body and not sep:
        return result
    for index, line in enumerate(body.split(b"\n")):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            result.bad_line = (index, f"not valid JSON ({exc})")
            break
        if not isinstance(record, dict):
            result.bad_line = (index, "not a JSON object")
            break
        result.records.append(record)
        result.lines.append(line)
    return result


def check_chain(log: LogRead) -> ChainError | None:
    """The first break in `log`'s chain (seq, prev, hash, exact form), or None."""
    prev = GENESIS
    for index, (record, line) in enumerate(zip(log.records, log.lines, strict=True)):
        seq = record.get("seq")
        if seq != index:
            return ChainError(log.path, index, f"expected seq {index}, found {seq!r}")
        if record.get("prev") != prev:
            return ChainError(log.path, index, "prev does not match the hash of the event before")
        if record.get("hash") != event_hash(record):
            return ChainError(log.path, index, "hash does not match the event's content")
        if orjson.dumps(record) != line:
            return ChainError(log.path, index, "line is not in canonical form (edited by hand?)")
        prev = record["hash"]
    if log.bad_line is not None:
        index, why = log.bad_line
        return ChainError(log.path, index, f"line {index + 1} is {why}")
    return None


def read_events(path: Path, *, root: Path | str | None = None) -> list[Event]:
    """Typed events of a log whose chain is intact; raises on a broken chain.  A torn tail
    is ignored (no writer acknowledged it).  `root`: as for `read_log`."""
    return events_of(read_log(path, root=root))


def events_of(log: LogRead) -> list[Event]:
    """`read_events` of a log already read (`read_log`, `parse_log`)."""
    problem = check_chain(log)
    if problem is not None:
        raise problem
    return typed_events(log.path, log.records)


def typed_events(path: Path | str, records: list[dict[str, Any]]) -> list[Event]:
    """`records` as typed events; one that does not match its type's schema (a hand edit
    whose chain was re-hashed) is an `EventLogError` naming it, as a broken chain is."""
    events = []
    for number, record in enumerate(records):
        try:
            events.append(parse_event(record))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            kind = record.get("type", "?")
            message = f"event {number} ({kind}) does not match its schema: {where}: {first['msg']}"
            raise EventLogError(path, message) from None
    return events


def torn_path(path: Path) -> Path:
    """Where `repair_torn_tail` keeps the torn tails it cuts from the log `path`."""
    return path.with_name(path.name + ".torn")


def _lock(fd: int, path: Path) -> None:
    """The log's writer lock on `fd`; `LogBusyError` at once if another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise LogBusyError(path, "another process is writing this turn; try again") from None


def repair_torn_tail(path: Path, *, root: Path | None = None) -> int:
    """Move a torn tail to `events.jsonl.torn` (appending) and cut it off; bytes moved.  Read
    under the log's lock (`LogBusyError` if a writer holds it: its line in progress looks torn
    from outside).  With `root` both files get the writers' after-open check."""
    try:
        fd = open_no_link(path, os.O_RDWR)
    except NotInVault as exc:
        raise EventLogError(path, f"{exc.reason}; not written") from None
    if root is not None:
        check_opened(fd, path, root, created=False)  # (closes fd when it refuses)
    try:
        _lock(fd, path)
        log = read_log(path, root=root)
        if log.torn_tail is None:
            return 0
        torn = torn_path(path)  # (a bare log, no vault: its folder bounds it)
        append_file(torn, log.torn_tail + b"\n", root=path.parent if root is None else root)
        os.ftruncate(fd, os.fstat(fd).st_size - len(log.torn_tail))
        os.fsync(fd)
        return len(log.torn_tail)
    finally:
        os.close(fd)


class EventWriter:
    """Exclusive appender for one turn's log.  Use as a context manager."""

    def __init__(
        self,
        path: Path,
        *,
        user: str,
        turn: str,
        durable: bool = True,
        new: bool = False,
        root: Path | None = None,
    ) -> None:
        """`new=True` creates the log and fails if it exists.  With `root`, the opened log must
        sit at `root/<its path>`: a turn folder swapped for a link gets no event."""
        self.path = path
        self.new = new
        self.root = root
        self.user = user
        self.turn = turn
        self.durable = durable
        self._fd: int | None = None
        self._seq = 0
        self._prev = GENESIS
        self._records: list[dict[str, Any]] = []
        self._completed = False  # the log holds `turn_completed`: its end is recorded in the ledger

    def __enter__(self) -> EventWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        if not self.new:
            make_folder(self.path.parent, self.root)
        flags = os.O_RDWR | os.O_APPEND  # (the history is read from it)
        try:  # never appended to through a link (another turn's log), nor as a FIFO
            if self.new:
                fd, created = open_no_link(self.path, flags | os.O_CREAT | os.O_EXCL), True
            else:
                fd, created = open_created(self.path, flags)
        except NotInVault as exc:
            raise EventLogError(self.path, f"{exc.reason}; not written") from None
        if self.root is not None:
            check_opened(fd, self.path, self.root, created=created)
        try:
            _lock(fd, self.path)
            if self.new:
                self._fd = fd
                return
            # the file just opened (and checked), not the path again
            log = parse_log(self.path, read_and_close(os.dup(fd), os.fstat(fd)))
            problem = check_chain(log)
            if problem is not None:
                raise problem
            if log.torn_tail is not None:
                raise TornTailError(self.path, "ends in a torn line; run `pandafs verify --repair` first")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._seq = len(log.records)
        self._prev = log.last_hash
        self._records = log.records
        self._completed = any(r.get("type") == COMPLETED for r in log.records)

    def history(self) -> list[Event]:
        """The events the log held when this writer opened it, as read under its lock
        (its chain checked there): what a writer decides on, with no second read."""
        return typed_events(self.path, self._records)

    @property
    def next_seq(self) -> int:
        return self._seq

    def append(self, payload: Payload, *, ts: datetime | None = None) -> Event:
        return self.append_many([payload], ts=ts)[0]

    def append_many(self, payloads: Iterable[Payload], *, ts: datetime | None = None) -> list[Event]:
        """Append several events with one write (and at most one fsync)."""
        if self._fd is None:
            raise EventLogError(self.path, "writer is not open")
        data, records = encode_events(
            self.user, self.turn, payloads, ts=ts or utcnow(), seq=self._seq, prev=self._prev
        )
        append_all(self._fd, data, durable=self.durable)  # (refused: cut back, no torn line left)
        if records:
            self._seq, self._prev = records[-1]["seq"] + 1, records[-1]["hash"]
            self._completed = self._completed or any(r["type"] == COMPLETED for r in records)
            if self._completed and self.root is not None and self.durable:
                # the completed log's new end, recorded at once (a kill while the turn
                # is projected would leave it unrecorded), still under the log's lock
                ends = [Anchor(self.turn, self._seq, self._prev)]
                record_turns(self.path.parent.parent, ends, root=self.root)
        return [parse_event(r) for r in records]

    def keep_lock(self) -> int:
        """A descriptor (a duplicate) that keeps the log's lock until the caller closes it."""
        if self._fd is None:
            raise EventLogError(self.path, "writer is not open")
        return os.dup(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def append_events(
    path: Path, user: str, turn: str, payloads: Iterable[Payload], *, root: Path
) -> list[Event]:
    """Open, append `payloads` in one write, close.  `root` (the vault root) is required:
    a completed turn's new end goes to the ledger, or `verify` takes it for a rewrite."""
    with EventWriter(path, user=user, turn=turn, root=root) as writer:
        return writer.append_many(payloads)

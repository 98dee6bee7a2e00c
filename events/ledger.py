"""The turns' ledger: each completed turn's final hash, kept outside the turn.

A hash chain shows a changed line, but not a log rewritten whole with its hashes
recomputed.  `users/{u}/turns/.ledger.jsonl` holds one chained line per completed turn
(and per rightful rewrite of one), `{turn, events, last_hash, prev, hash}`, and `verify`
holds each live turn to its last line: a rewrite is detected unless the ledger is
rewritten too.  Appends take the ledger's own `flock`."""

import errno
import fcntl
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from .fsio import append_all, check_opened, checked_folders, open_created, read_vault_bytes

__all__ = [
    "LEDGER_NAME",
    "Anchor",
    "LedgerRead",
    "ledger_path",
    "read_ledger",
    "record_turns",
]

LEDGER_NAME = ".ledger.jsonl"
GENESIS = "0" * 64
_TAIL = 4096  # a line is ~200 bytes: the last full one is within this much of the end


class Anchor(NamedTuple):
    """What a completed turn's log ends with: its number of events and last hash."""

    turn: str
    events: int
    last_hash: str


@dataclass(eq=False)
class LedgerRead:
    """A user's ledger as read: the last anchor of each turn, and what is wrong with the
    ledger itself (None when its chain holds)."""

    anchors: dict[str, Anchor] = field(default_factory=dict)
    problem: str | None = None
    present: bool = False


def ledger_path(turns_dir: Path) -> Path:
    """The ledger of the user whose `turns/` folder is `turns_dir`."""
    return turns_dir / LEDGER_NAME


def _line_hash(prev: str, anchor: Anchor) -> str:
    return hashlib.sha256(f"{prev}\n{anchor.turn}\n{anchor.events}\n{anchor.last_hash}".encode()).hexdigest()


def record_turns(turns_dir: Path, anchors: Iterable[Anchor], *, root: Path | str) -> None:
    """Record in the user's ledger where each of these turns of one user now ends.  Call it
    after any deliberate rewrite of a completed turn's log (forget, repair), once the new log
    is in place, or `verify` names the turn as changed.  One fsynced append of chained lines,
    under the ledger's lock."""
    anchors = list(anchors)
    if not anchors:
        return
    path = ledger_path(turns_dir)
    fd, created = open_created(path, os.O_RDWR | os.O_APPEND)
    check_opened(fd, path, root, created=created)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        prev = _last_hash(fd)
        lines = []
        for anchor in anchors:
            line_hash = _line_hash(prev, anchor)
            lines.append(orjson.dumps({**anchor._asdict(), "prev": prev, "hash": line_hash}) + b"\n")
            prev = line_hash
        append_all(fd, b"".join(lines), durable=True)
    finally:
        os.close(fd)  # (releases the lock)
    if created:  # its new entry too
        with checked_folders(root) as folders:
            folders.fd(turns_dir, target=path)


def _last_hash(fd: int) -> str:
    """The hash of the ledger's last full line (genesis when none), a torn last line (an
    unacknowledged append) cut away first."""
    size = os.fstat(fd).st_size
    if not size:
        return GENESIS
    start = max(0, size - _TAIL)
    tail = os.pread(fd, size - start, start)
    if not tail.endswith(b"\n"):
        cut = tail.rfind(b"\n")
        if cut < 0 and start > 0:
            raise OSError(errno.EIO, f"the ledger's last line is longer than {_TAIL} bytes")
        os.ftruncate(fd, start + cut + 1)
        tail = tail[: cut + 1]
    last = tail[:-1].rpartition(b"\n")[2]
    if not last:
        return GENESIS
    try:
        value = orjson.loads(last).get("hash")
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, str):  # a damaged ledger: chained on regardless, `verify` names it
        return hashlib.sha256(last).hexdigest()
    return value


def read_ledger(root: Path | str, turns_dir: Path) -> LedgerRead:
    """The user's ledger, its chain checked: the last anchor of each turn, and the first thing
    wrong with it (a bad or moved line, a torn last line, a file the read rule refuses)."""
    read = LedgerRead()
    path = ledger_path(turns_dir)
    data = read_vault_bytes(root, path)
    if data is None:
        if os.path.lexists(path):
            read.problem = "is not a plain file (a link, or a file with other names): not read"
            read.present = True
        return read
    read.present = True
    prev = GENESIS
    lines = data.split(b"\n")
    if lines[-1]:
        read.problem = f"ends in a torn line of {len(lines[-1])} bytes"
    for number, raw in enumerate(lines[:-1], 1):
        try:
            record = orjson.loads(raw)
            anchor = Anchor(str(record["turn"]), int(record["events"]), str(record["last_hash"]))
            ok = record["prev"] == prev and record["hash"] == _line_hash(prev, anchor)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            read.problem = f"line {number} is not a ledger line"
            return read
        if not ok:
            read.problem = f"its chain breaks at line {number}: a line was changed, removed or moved"
            return read
        read.anchors[anchor.turn] = anchor
        prev = record["hash"]
    return read

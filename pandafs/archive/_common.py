"""Shared pieces of the archive jobs: names of things on disk, the lock, the journal."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from events.clock import utcnow
from events.errors import InvalidUserId
from events.fsio import atomic_write, check_folders, unlink_in_vault, vault_folder
from events.layout import classify, turn_number, validate_user_id
from indexers.archive import ArchiveStore

from ..errors import BadInput
from ..memory.api import Memory
from ..turns import EVENTS_FILE
from ..vault import Vault, file_lock

JOURNAL_DIR = ".journal"
LOCK_FILE = ".lock"
EXPANSIONS_FILE = "expansions.jsonl"
TRASH_DIR = ".archive-trash"
STAGING_DIR = ".archive-restore"
LOCK_WAIT_S = 600.0
USED_MARK = b'"documents_used"'
CLAIMS = 3
CLAIM_CHARS = 200
POINT_LOOKUPS = 16  # a restore of at most this many turns of one part reads only their rows

Progress = Callable[[int], None]
TurnKey = tuple[str, str]


def as_utc(value: datetime | None) -> datetime:
    if value is None:
        return utcnow()
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_ts(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, str):
        try:
            return as_utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def chunked(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def new_id() -> str:
    return f"{utcnow():%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def parse_turn_id(text: str) -> TurnKey:
    """`alice/turn_000001`, its stub path or its context.md path → (user, turn)."""
    raw = text.strip().removeprefix("./")
    if raw.endswith(".md"):
        ref = classify(raw)
        if ref is None or ref.kind not in ("turn", "archived_turn") or ref.turn is None:
            raise BadInput(f"not a turn: {text!r} (expected user/turn_NNNNNN)")
        assert ref.user is not None
        return ref.user, ref.turn
    user, _, turn = raw.partition("/")
    try:
        validate_user_id(user)
        turn_number(turn)
    except (InvalidUserId, ValueError):
        raise BadInput(f"not a turn id: {text!r} (expected user/turn_NNNNNN)") from None
    return user, turn


def stub_file(vault: Vault, key: TurnKey) -> Path:
    return vault.layout.archive_stub(*key)


def turn_folder(vault: Vault, key: TurnKey) -> Path:
    return vault.layout.turn_dir(*key)


def trash_folder(vault: Vault, key: TurnKey, batch: str) -> Path:
    """Where a turn folder waits while its batch is archived (its folder made, never a link)."""
    return vault_folder(vault.root, vault.layout.turns_dir(key[0]) / TRASH_DIR) / f"{key[1]}.{batch}"


def staging_folder(vault: Vault, key: TurnKey, job: str) -> Path:
    """Where a restored turn folder is built (its folder made, never a link)."""
    return vault_folder(vault.root, vault.layout.turns_dir(key[0]) / STAGING_DIR) / f"{key[1]}.{job}"


def stub_relpath(key: TurnKey) -> str:
    return f"archive/stubs/{key[0]}/{key[1]}.md"


def document_paths(key: TurnKey, names: Iterable[str]) -> list[str]:
    """Vault-relative paths of a turn folder's documents (context.md, research.md)."""
    base = f"users/{key[0]}/turns/{key[1]}"
    return [f"{base}/{name}" for name in names if classify(f"{base}/{name}") is not None]


def store_of(vault: Vault) -> ArchiveStore:
    return ArchiveStore(
        vault.layout.archive / "turns", zstd_level=vault.config.archive.zstd_level, root=vault.root
    )


@contextmanager
def archive_lock(vault: Vault) -> Iterator[None]:
    """Exclusive lock of the archive: one batch, restore or repair at a time.  Its folders
    are checked first: a linked `archive/`, `turns/`, `stubs/` or `expired/` is refused."""
    archive = vault_folder(vault.root, vault.layout.archive)
    check_folders(vault.root, *(archive / name for name in ("turns", "stubs", "expired")))
    with file_lock(vault.layout.archive / LOCK_FILE, wait_s=LOCK_WAIT_S, what="the archive", root=vault.root):
        yield


@contextmanager
def log_held(folder: Path) -> Iterator[str | None]:
    """Hold the turn's event-log lock while we move it.  Yields None once held, else why the
    turn is left alone now: a writer has the log open, or something not a regular file is there."""
    try:
        fd = os.open(folder / EVENTS_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        yield f"its {EVENTS_FILE} is a symbolic link"
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            yield f"its {EVENTS_FILE} is not a regular file"
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield "a writer has its log open"
            return
        yield None
    finally:
        os.close(fd)


def reindex(vault: Vault, memory: Memory, paths: Iterable[str]) -> None:
    """Bring these paths into the index (deleting the gone ones), if there is an index."""
    wanted = sorted(set(paths))
    if not wanted or not memory.index.exists():
        return
    memory.index_paths(wanted, force=True)  # the index redoes a commit a killed writer broke


def journal_dir(vault: Vault) -> Path:
    return vault.layout.archive / JOURNAL_DIR


def write_journal(vault: Vault, name: str, data: dict[str, Any]) -> Path:
    path = vault_folder(vault.root, journal_dir(vault)) / f"{name}.json"
    atomic_write(path, orjson.dumps(data, option=orjson.OPT_INDENT_2), root=vault.root)
    return path


def drop_journal(vault: Vault, path: Path) -> None:
    """Remove a finished job's journal, in its folder as checked from the vault root."""
    unlink_in_vault(vault.root, path, missing_ok=True)


def pending_journals(vault: Vault) -> list[Path]:
    directory = journal_dir(vault)
    return sorted(directory.glob("*.json")) if directory.is_dir() else []

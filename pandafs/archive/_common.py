"""Shared pieces of the archive jobs: names on disk, the lock, the journal, and keeping
wikilinks to turns resolvable after archive and restore (`pandafs.links`).

After turns move, every markdown file PandaFS writes for their users goes through `relink`
(only turn links change; a turn whose writer holds its log waits for the next pass; memory
documents under the memory lock).  The users are recorded in `archive/.journal/relink.users`
before any turn moves, so the next archive, restore or `verify --repair` finishes a pass."""

from __future__ import annotations

import fcntl
import functools
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any, Literal

import orjson

from events.clock import aware, utcnow
from events.errors import NotInVault
from events.fsio import (
    atomic_write,
    check_folders,
    is_real_dir,
    open_no_link,
    read_vault_bytes,
    sync_all,
    unlink_in_vault,
    vault_folder,
)
from events.layout import TURN_DIR_RE, classify, is_user_id
from indexers.archive import ArchiveStore
from indexers.errors import ArchiveError
from indexers.turn_folder import TurnFiles, collect_turn_files

from ..errors import BadInput
from ..links import relink
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
    return utcnow() if value is None else aware(value).astimezone(UTC)


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
    if not (is_user_id(user) and TURN_DIR_RE.fullmatch(turn)):
        raise BadInput(f"not a turn id: {text!r} (expected user/turn_NNNNNN)")
    return user, turn


def aside(vault: Vault, where: str, key: TurnKey, job: str) -> Path:
    """The folder of `key` for `job` in `where` of its user's turns: `TRASH_DIR`, where it waits
    while its batch is archived, or `STAGING_DIR`, where it is built to be restored (`where`
    made, never through a link)."""
    return vault_folder(vault.root, vault.layout.turns_dir(key[0]) / where) / f"{key[1]}.{job}"


def live_matches(vault: Vault, key: TurnKey, rows: TurnFiles) -> bool:
    """Whether the live folder of `key` holds exactly the archived `rows` (unreadable: no)."""
    try:
        live = collect_turn_files(vault.layout.turn_dir(*key), *key, rows.created_at, root=vault.root)
    except ArchiveError:
        return False
    return live.checksums() == rows.checksums()


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
        fd = open_no_link(folder / EVENTS_FILE, os.O_RDONLY)
    except FileNotFoundError:
        yield None
        return
    except NotInVault as exc:  # a link, a fifo or a device: never opened as the log
        yield f"its {EVENTS_FILE} {exc.reason}"
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield "a writer has its log open"
            return
        yield None
    finally:
        os.close(fd)


def reindex(memory: Memory, paths: Iterable[str]) -> None:
    """Bring these paths into the index (deleting the gone ones), if there is an index."""
    wanted = sorted(set(paths))
    if not wanted or not memory.index.folder.exists():
        return
    memory.index_paths(wanted, force=True)  # the index redoes a commit a killed writer broke


def journal_dir(vault: Vault) -> Path:
    return vault.layout.archive / JOURNAL_DIR


def write_journal(vault: Vault, name: str, data: dict[str, Any]) -> Path:
    path = vault_folder(vault.root, journal_dir(vault)) / f"{name}.json"
    atomic_write(path, orjson.dumps(data, option=orjson.OPT_INDENT_2), root=vault.root)
    return path


def pending_journals(vault: Vault) -> list[Path]:
    directory = journal_dir(vault)
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


RELINK_FILE = "relink.users"


def _pending(vault: Vault) -> Path:
    return journal_dir(vault) / RELINK_FILE


def mark_relink(vault: Vault, users: Iterable[str]) -> None:
    """Record that these users' links must be brought in step (before anything moves)."""
    wanted = set(users) | set(pending_relink(vault))
    if wanted:
        vault_folder(vault.root, _pending(vault).parent)  # archive/.journal: never through a link
        atomic_write(_pending(vault), ("\n".join(sorted(wanted)) + "\n").encode(), root=vault.root)


def pending_relink(vault: Vault) -> list[str]:
    """The users recorded by `mark_relink` (none if the record is missing or a link)."""
    data = read_vault_bytes(vault.root, _pending(vault))
    if data is None:
        return []
    return [u for u in data.decode("utf-8").split() if is_user_id(u)]


def finish_relink(vault: Vault, memory: Memory) -> list[str]:
    """Run the pass for the recorded users, reindex what changed, clear the record; the
    paths rewritten.  Call with the archive lock held."""
    users = pending_relink(vault)
    if not users:
        return []
    changed = relink_users(vault, users)
    reindex(memory, [rel for rel in changed if classify(rel) is not None])
    unlink_in_vault(vault.root, _pending(vault))
    return changed


def _markdown(base: Path) -> Iterator[Path]:
    """Markdown files under `base`, not in hidden folders, no symlink followed (nor read:
    `fixed_text` reads each through `read_vault_bytes`, a file swapped for a link since)."""
    if not is_real_dir(base):
        return
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".md") and not path.is_symlink():
                yield path


def relink_users(vault: Vault, users: Iterable[str]) -> list[str]:
    """Rewrite turn links in the files PandaFS writes for `users`; returns what changed."""

    @functools.cache
    def where(user: str, turn: str) -> Literal["live", "archived"] | None:
        if (vault.layout.turn_dir(user, turn) / "context.md").is_file():
            return "live"
        return "archived" if vault.layout.archive_stub(user, turn).is_file() else None

    changed: list[str] = []

    def fixed_text(path: Path) -> str | None:
        """The file's text with its turn links fixed, or None when nothing changes."""
        try:  # a link (made since the walk saw a file) is not read, so never copied in
            data = read_vault_bytes(vault.root, path)
        except OSError:
            return None
        if data is None or (b"[[users/" not in data and b"[[archive/stubs/" not in data):
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        fixed = relink(text, where)
        return fixed if fixed != text else None

    def rewrite(path: Path) -> None:
        fixed = fixed_text(path)
        if fixed is not None:
            atomic_write(path, fixed.encode("utf-8"), durable=False, root=vault.root)  # one sync for the pass
            changed.append(vault.rel(path))

    root = vault.root
    for user in sorted(set(users)):
        home = vault.layout.user_dir(user)
        turns = vault.layout.turns_dir(user)
        for folder in vault.layout.turn_dirs(user):
            stale = [path for path in _markdown(folder) if fixed_text(path) is not None]
            if stale:  # read again under the turn's log lock: a writer may have just projected
                with log_held(folder) as refused:
                    for path in () if refused else stale:
                        rewrite(path)
        if home.is_dir() and not home.is_symlink():
            with vault.memory_lock(user):
                for path in _markdown(home):
                    if turns not in path.parents:
                        rewrite(path)
        notes = (p for p in _markdown(root / "observability" / "interventions") if f"-{user}-" in p.name)
        for path in chain(_markdown(root / "outbox" / user), _markdown(vault.layout.stubs_dir(user)), notes):
            rewrite(path)
    if changed:
        sync_all()
    return changed

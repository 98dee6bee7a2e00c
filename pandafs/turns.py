"""Turn folders: reading their events, writing their projections, replay and drift.
`project` writes only the files whose bytes differ; `replay(…, check=True)` reports drift
and changes nothing."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from events.errors import EventsError, NotInVault
from events.fsio import (
    TMP_PREFIX,
    atomic_write,
    checked_folders,
    open_vault_file,
    read_vault_bytes,
    read_vault_file,
)
from events.layout import TURN_DIR_RE
from events.log import read_events
from events.projection import TurnView, project_turn
from events.render import render_turn

from .errors import BadInput
from .links import same_but_turn_links
from .vault import Vault

__all__ = [
    "INDEXING",
    "Drift",
    "TurnRef",
    "cut_tail_of",
    "is_abandoned",
    "iter_turns",
    "load_view",
    "project",
    "read_metadata",
    "remove_abandoned",
    "replay",
]

EVENTS_FILE = "events.jsonl"
INDEXING = ".indexing"
"""Marks a turn whose index batch is not yet committed (`pipeline.recovery` indexes it again)."""


@dataclass(frozen=True, eq=False)
class TurnRef:
    """One live turn: its user, its folder's name, and the user's `turns/` folder it is in."""

    user: str
    turn: str
    turns: Path

    @cached_property
    def path(self) -> Path:
        """The turn's folder, made when first asked for (a walk over every turn reads few)."""
        return self.turns / self.turn

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def vault_root(self) -> Path:
        """The vault the turn is in (its folder is `users/{user}/turns/{turn}` there)."""
        return self.path.parents[3]


def iter_turns(
    vault: Vault, target: str | None = None, *, on_total: Callable[[int], None] | None = None
) -> Iterator[TurnRef]:
    """Live turns of `target`: None (all), `user`, or `user/turn_NNNNNN`; `on_total` told first."""
    if on_total is not None:
        on_total(sum(1 for _ in iter_turns(vault, target)))
    if target is None:
        users = vault.layout.users()
    else:
        user, _, turn = target.partition("/")
        vault.require_user(user)
        if turn:
            if not TURN_DIR_RE.fullmatch(turn):
                raise BadInput(f"not a turn id: {target!r} (expected user/turn_NNNNNN)")
            path = vault.layout.turn_dir(user, turn)
            if not path.is_dir():
                raise BadInput(f"no live turn {target} in {vault.root}")
            yield TurnRef(user, turn, path.parent)
            return
        users = [user]
    for user in users:
        turns = vault.layout.turns_dir(user)
        for name in vault.layout.turn_names(user):
            yield TurnRef(user, name, turns)


def read_metadata(root: Path | str, folder: Path | str) -> dict[str, Any] | None:
    """The metadata.json of the turn folder `folder` (under `root`); None when it is missing,
    unreadable, a link (never followed) or not a JSON object."""
    try:
        data = orjson.loads(read_vault_bytes(root, f"{folder}/metadata.json") or b"null")
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def first_event(root: Path, path: Path) -> dict[str, Any] | None:
    """The first record of the log at `path` (one line read); None if absent, torn, not an
    object or not plainly a vault file (an unreadable one raises)."""
    try:
        with open_vault_file(root, path.relative_to(root).as_posix()) as handle:
            line = handle.readline()
        record = orjson.loads(line) if line.endswith(b"\n") else None
    except (FileNotFoundError, NotADirectoryError, NotInVault, orjson.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def load_view(ref: TurnRef) -> TurnView:
    return project_turn(read_events(ref.events_path, root=ref.vault_root))


def project(
    ref: TurnRef, view: TurnView | None = None, *, durable: bool = True, files: dict[str, bytes] | None = None
) -> TurnView:
    """Write the turn's projected files from its events, unchanged ones left alone; metadata.json
    last, so one that records how the turn ended says every other file was written."""
    if view is None:
        view = load_view(ref)
    rendered = files or render_turn(view)
    root = ref.vault_root
    folder = ref.path.relative_to(root).as_posix()
    for name, data in sorted(rendered.items(), key=lambda item: item[0] == "metadata.json"):
        path = ref.path / name
        with suppress(FileNotFoundError, NotInVault):  # a link is not read: the write refuses it
            if same_projection(name, read_vault_file(root, f"{folder}/{name}")[0], data):
                continue  # unchanged, or only its turn links moved, or an older metadata.json
        atomic_write(path, data, durable=durable, root=root)
    return view


@dataclass(frozen=True, eq=False)
class Drift:
    """A projected file that no longer says what its turn's events say."""

    path: str
    kind: str  # missing | modified
    message: str


@dataclass(eq=False)
class ReplayReport:
    """What a replay check compared, rewrote and found drifted."""

    checked: int = 0
    rewritten: list[str] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    errors: list[Drift] = field(default_factory=list)


def same_projection(name: str, on_disk: bytes, rendered: bytes) -> bool:
    """Whether a projected file on disk says what its events say: markdown but for where its turn
    links point; metadata.json as data, keys no longer written ignored (older vaults)."""
    if same_but_turn_links(on_disk, rendered):
        return True
    if name != "metadata.json":
        return False
    try:
        old, new = orjson.loads(on_disk), orjson.loads(rendered)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    query = old.get("query")
    return all(old.get(k) == v for k, v in new.items()) and all(
        k in new or k in ("answer", "query") or v in (None, "", [], {}) or v == query for k, v in old.items()
    )


def drift_of(vault: Vault, ref: TurnRef, view: TurnView) -> list[Drift]:
    found: list[Drift] = []
    for name, data in render_turn(view).items():
        path = ref.path / name
        rel = vault.rel(path)
        try:
            on_disk = read_vault_file(vault.root, rel)[0]
        except FileNotFoundError:
            found.append(Drift(rel, "missing", "projected file is missing"))
            continue
        except NotInVault as exc:  # not read: re-projecting puts the file in the link's place
            found.append(Drift(rel, "modified", exc.reason))
            continue
        if not same_projection(name, on_disk, data):
            found.append(Drift(rel, "modified", "differs from the projection of events.jsonl"))
    return found


def cut_tail_of(vault: Vault, ref: TurnRef, view: TurnView) -> Drift | None:
    """A log whose end was cut (metadata.json recorded more events than it holds, which a hash
    chain cannot see); re-projecting would silently make a finished turn INCOMPLETE."""
    recorded = read_metadata(vault.root, ref.path)  # None: missing or unreadable, drift reports it
    if recorded is None or not isinstance(recorded.get("events"), int):
        return None  # projected before the count was recorded
    count = recorded["events"]
    if count > view.event_count:
        why = (
            f"holds {view.event_count} events but metadata.json recorded {count} "
            f"(last hash {str(recorded.get('last_hash', ''))[:12]}…): events were cut from its end"
        )
    elif count == view.event_count and recorded.get("last_hash") not in (None, view.last_hash):
        why = f"its last event's hash differs from the one metadata.json recorded after {count} events"
    else:
        return None
    return Drift(vault.rel(ref.path) + "/events.jsonl", "cut_tail", why)


def replay(
    vault: Vault,
    target: str | None = None,
    *,
    check: bool = False,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Re-project turns from their events (`check=True`: report drift only)."""
    report = ReplayReport()
    for ref in iter_turns(vault, target, on_total=on_total):
        report.checked += 1
        _replay_turn(vault, ref, check, report)
        if progress is not None:
            progress(1)
    return report


def _replay_turn(vault: Vault, ref: TurnRef, check: bool, report: ReplayReport) -> None:
    try:
        view = load_view(ref)
    except (EventsError, FileNotFoundError) as exc:
        report.errors.append(Drift(vault.rel(ref.events_path), "unreadable", str(exc)))
        return
    cut = cut_tail_of(vault, ref, view)
    if cut is not None:  # never overwrite the only record of the lost events
        report.errors.append(cut)
        return
    drift = drift_of(vault, ref, view)
    report.drift.extend(drift)
    if not check and drift:
        project(ref, view)
        report.rewritten.extend(d.path for d in drift)


def is_abandoned(ref: TurnRef) -> bool:
    """A turn folder that holds no event (nothing, or an empty `events.jsonl` and temporary files)."""
    try:
        entries = list(os.scandir(ref.path))
    except FileNotFoundError:
        return False
    for entry in entries:
        if entry.name == EVENTS_FILE and entry.is_file(follow_symlinks=False):
            if entry.stat(follow_symlinks=False).st_size:
                return False
        elif not (entry.name.startswith(TMP_PREFIX) and entry.is_file(follow_symlinks=False)):
            return False
    return True


def remove_abandoned(vault: Vault, ref: TurnRef) -> bool:
    """Remove an eventless turn folder whose writer is dead, whatever its age: a live allocator
    holds the folder's lock until its turn ends, so one we can lock is abandoned."""
    with vault.held_turn(ref.user, ref.turn) as held, checked_folders(vault.root, durable=False) as checked:
        if not held or not is_abandoned(ref):
            return False
        folder = checked.fd(ref.path)  # emptied by descriptor: a folder swapped for a link is refused
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name == EVENTS_FILE:
                    if not _unlink_unheld_empty_log(folder, entry.name):
                        return False  # a writer took it up meanwhile: its log stays
                elif entry.name.startswith(TMP_PREFIX):
                    os.unlink(entry.name, dir_fd=folder)
                else:
                    return False
        try:
            os.rmdir(ref.path.name, dir_fd=checked.fd(ref.path.parent))
        except OSError:
            return False  # a writer arrived meanwhile: leave it
        return True


def _unlink_unheld_empty_log(folder: int, name: str) -> bool:
    """Remove the empty events.jsonl `name` in `folder` if no writer holds it, under that lock."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_size:
            return False
        os.unlink(name, dir_fd=folder)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the lock

"""Reading a turn's events for the learning fold: its live folder, or its archived Parquet part."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from events.documents import parse_document
from events.errors import EventLogError, EventsError, NotInVault
from events.fsio import is_real_dir, open_folder_at, open_vault_folder, read_in_folder, read_vault_file
from events.layout import turn_name, turn_number
from events.log import events_of, parse_log, read_events
from events.projection import TurnView, project_turn
from events.schema import Event
from indexers.errors import ArchiveError

from ..vault import Vault
from .trust import TurnFacts, turn_facts

if TYPE_CHECKING:  # the reliability table's module loads pyarrow
    from ..research.reliability import TurnsRead

__all__ = ["TurnReader"]

EVENTS_FILE = "events.jsonl"


class TurnReader:
    """Reads turns of one vault for the fold, keeping what a run of reads shares: the archived
    part last read and each user's `turns/` folder."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        # When given (rebuild): each live turn's extractions as the fold reads it, so the
        # reliability table is rebuilt without reading every events.jsonl a second time.
        self.extractions: TurnsRead | None = None
        self._archive_parts: dict[str, Any] = {}
        self._turns_dirs: dict[str, str] = {}
        self._turns_fds: dict[str, int] = {}  # while a full fold reads a user's turns

    def _stub(self, user: str, turn: str) -> Path:
        return self.vault.layout.archive_stub(user, turn)

    def _archived_events(self, user: str, turn: str) -> list[Event] | None:
        """Events of an archived turn, read from its Parquet part (None if unreadable)."""
        try:
            rel = self._stub(user, turn).relative_to(self.vault.root).as_posix()
            front = parse_document(read_vault_file(self.vault.root, rel)[0].decode("utf-8")).frontmatter
            part = str(front.get("archive_file") or "")
            if part not in self._archive_parts:  # keep one part: archived turns come in runs
                from indexers.archive import ArchiveStore  # pyarrow: archived turns only

                store = ArchiveStore(self.vault.layout.archive / "turns", root=self.vault.root)
                self._archive_parts = {part: store.read_part(self.vault.root / part)}
            files = self._archive_parts[part].intact((user, turn))
            data = files.file(EVENTS_FILE) if files is not None else None
            if data is None:
                return None
            return events_of(parse_log(Path(f"{part}#{user}/{turn}/{EVENTS_FILE}"), data))
        except (OSError, EventsError, ArchiveError, ValueError, orjson.JSONDecodeError):
            return None

    @contextmanager
    def turns_open(self, user: str) -> Iterator[None]:
        """Read `user`'s live turns by descriptor while the block runs: their `turns/` folder
        checked once from the vault root, each turn folder and file opened by name in it."""
        try:
            fd = open_vault_folder(self.vault.root, f"users/{user}/turns")
        except (OSError, NotInVault):  # none yet, or a link: each turn is read by path, as ever
            yield
            return
        self._turns_fds[user] = fd
        try:
            yield
        finally:
            del self._turns_fds[user]
            os.close(fd)

    def load_turn(self, user: str, number: int) -> tuple[TurnView, list[Event]] | str | None:
        """(view, events) of a completed turn; "pending" if not complete; None if absent."""
        name = turn_name(number)
        turns = self._turns_dirs.get(user)
        if turns is None:  # a string per user: a rebuild asks for every turn of the vault
            turns = self._turns_dirs[user] = os.fspath(self.vault.layout.turns_dir(user))
        folder = f"{turns}/{name}"
        opened = self._turns_fds.get(user)
        if opened is not None:
            live = _live_events(opened, f"users/{user}/turns/{name}", f"{folder}/{EVENTS_FILE}")
        elif not is_real_dir(folder):  # a linked folder is not a turn of this user, nor read
            live = None
        elif not os.path.exists(f"{folder}/metadata.json"):
            live = "pending"
        else:
            live = read_events(Path(folder, EVENTS_FILE), root=self.vault.root)
        if isinstance(live, str):
            return live
        if live is not None:
            events = live
        elif self._stub(user, name).exists():
            found = self._archived_events(user, name)
            if found is None:
                raise EventsError(f"{user}/{name}: archived events are unreadable")
            events = found
        else:
            return None
        view = project_turn(events)
        if live is not None and self.extractions is not None:
            self.extractions.add(
                user, name, (view.extractions, view.occurred_at) if view.extractions else None
            )
        return (view, events) if view.completed is not None else "pending"

    def facts(self, user: str, turn: str) -> TurnFacts | None:
        """The facts of a completed turn, read again (None: not a completed turn): a turn that
        feedback judges."""
        loaded = self.load_turn(user, turn_number(turn))
        return turn_facts(*loaded) if isinstance(loaded, tuple) else None


Live = list[Event] | str | None
"""A live turn's events, "pending" (no metadata.json says it ended), or None (no live folder)."""


def _live_events(turns: int, rel: str, path: str) -> Live:
    """`Live` of the turn folder `rel`, read by name in its `turns/` folder `turns`: a log
    that is a link or not a regular file is an `EventLogError`; a missing one is empty."""
    fd = open_folder_at(turns, rel.rpartition("/")[2])
    if fd is None:
        return None  # not there, a file, or a link: no live turn folder
    try:
        if not os.access("metadata.json", os.F_OK, dir_fd=fd):  # (as os.path.exists: through a link)
            return "pending"
        try:
            data, _ = read_in_folder(fd, EVENTS_FILE, f"{rel}/{EVENTS_FILE}")
        except FileNotFoundError:
            data = b""
        except NotInVault as exc:
            raise EventLogError(path, f"{exc.reason}; not read") from None
    finally:
        os.close(fd)
    return events_of(parse_log(path, data))

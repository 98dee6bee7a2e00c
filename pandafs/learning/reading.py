"""Reading a turn's events for the learning fold: its live folder, or its archived Parquet part."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from events import (
    Event,
    TurnView,
    is_real_dir,
    parse_document,
    project_turn,
    read_events,
    read_vault_file,
    turn_name,
)
from events.errors import EventsError
from events.log import events_of, parse_log
from indexers.archive import ArchiveStore
from indexers.errors import ArchiveError

from ..vault import Vault

if TYPE_CHECKING:  # the reliability table's module loads pyarrow
    from ..research.reliability import TurnsRead

EVENTS_FILE = "events.jsonl"


class _TurnReading:
    """The turn-reading part of `Learning` (a mixin: `vault`, `extractions`, `_archive_parts`
    and `_turns_dirs` are set by `Learning.__init__`)."""

    vault: Vault
    extractions: TurnsRead | None
    _archive_parts: dict[str, Any]
    _turns_dirs: dict[str, str]

    def _stub(self, user: str, turn: str) -> Path:
        return self.vault.layout.archive_stub(user, turn)

    def _archived_events(self, user: str, turn: str) -> list[Event] | None:
        """Events of an archived turn, read from its Parquet part (None if unreadable)."""
        try:
            rel = self._stub(user, turn).relative_to(self.vault.root).as_posix()
            front = parse_document(read_vault_file(self.vault.root, rel)[0].decode("utf-8")).frontmatter
            part = str(front.get("archive_file") or "")
            if part not in self._archive_parts:  # keep one part: archived turns come in runs
                store = ArchiveStore(self.vault.layout.archive / "turns", root=self.vault.root)
                self._archive_parts = {part: store.read_part(self.vault.root / part)}
            files = self._archive_parts[part].intact((user, turn))
            data = files.file(EVENTS_FILE) if files is not None else None
            if data is None:
                return None
            return events_of(parse_log(Path(f"{part}#{user}/{turn}/{EVENTS_FILE}"), data))
        except (OSError, EventsError, ArchiveError, ValueError, orjson.JSONDecodeError):
            return None

    def load_turn(self, user: str, number: int) -> tuple[TurnView, list[Event]] | str | None:
        """(view, events) of a completed turn; "pending" if not complete; None if absent."""
        name = turn_name(number)
        turns = self._turns_dirs.get(user)
        if turns is None:  # a string per user: a rebuild asks for every turn of the vault
            turns = self._turns_dirs[user] = os.fspath(self.vault.layout.turns_dir(user))
        folder = f"{turns}/{name}"
        live = is_real_dir(folder)  # a linked folder is not a turn of this user (nor read)
        if live:
            complete = os.path.exists(f"{folder}/metadata.json")
            if not complete:
                return "pending"
            events = read_events(Path(folder, EVENTS_FILE), root=self.vault.root)
            view = project_turn(events)
            if self.extractions is not None:
                self.extractions.add(
                    user, name, (view.extractions, view.occurred_at) if view.extractions else None
                )
            return (view, events) if view.is_complete else "pending"
        elif self._stub(user, name).exists():
            found = self._archived_events(user, name)
            if found is None:
                raise EventsError(f"{user}/{name}: archived events are unreadable")
            events = found
        else:
            return None
        view = project_turn(events)
        return (view, events) if view.is_complete else "pending"

    def _highest(self, user: str, upto: int) -> int:
        """The highest turn of `user` to fold up to (`Layout.newest_turn`, never below `upto`)."""
        return self.vault.layout.newest_turn(user, upto)

    def _all_numbers(self, user: str) -> list[int]:
        return sorted(self.vault.layout.turn_numbers(user))

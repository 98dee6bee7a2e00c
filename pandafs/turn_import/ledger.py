"""One user's import ledger (`users/{u}/turns/.external_ids.jsonl`): which external ids are in,
how far turns were scanned and indexed.  A summary of the turn folders: `recover` reads those
newer than its marks, so a crash neither duplicates a line nor leaves a turn unindexed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import orjson

from events.fsio import append_file, open_vault_file, remove_tree_in_vault
from events.layout import turn_name, turn_number

from ..turns import EVENTS_FILE, TurnRef, first_event, project
from ..vault import STAGING_DIR, Vault

__all__ = ["LEDGER", "Ledger"]

LEDGER = ".external_ids.jsonl"
PENDING = -1
_LOW = (1 << 64) - 1
_HEX = re.compile(r"[0-9a-f]{1,16}")


class Ledger:
    """One user's imported external ids and the `scanned` / `indexed` marks.  An entry: `{"e":
    external id, "t": turn, "h": digest of what it holds, "c": conversation}` (a later one wins)."""

    def __init__(self, vault: Vault, user: str) -> None:
        self.vault = vault
        self.user = user
        self.path = vault.layout.turns_dir(user) / LEDGER
        # external id → turn number << 64 | 64-bit digest of what it holds (0: unknown); or PENDING
        self.ids: dict[str, int] = {}
        self.last_of: dict[str, str] = {}  # conversation → its newest turn
        self.scanned = 0
        indexed: int | None = None
        torn = False
        rel = self.path.relative_to(vault.root).as_posix()
        # a linked ledger is refused (`NotInVault`), never read through
        with suppress(FileNotFoundError), open_vault_file(vault.root, rel) as handle:
            for line in handle:
                torn = not line.endswith(b"\n")
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # a torn last line: its turns are newer than `scanned`
                if not isinstance(entry, dict):
                    continue
                if "e" in entry:
                    self._learn(entry)
                    self.scanned = max(self.scanned, turn_number(entry["t"]))
                elif "indexed" in entry:
                    indexed = max(indexed or 0, int(entry["indexed"]))
                elif "scanned" in entry:
                    self.scanned = max(self.scanned, int(entry["scanned"]))
        # A ledger written before the `indexed` mark existed: its turns were indexed.
        self.indexed = self.scanned if indexed is None else min(indexed, self.scanned)
        self._torn = torn
        self.marked = indexed is not None  # the ledger holds an `indexed` mark

    def turn_of(self, key: str) -> str | None:
        """The turn holding external id `key`; "" while it is being placed; None if not in."""
        value = self.ids.get(key)
        if value is None:
            return None
        return "" if value == PENDING else turn_name(value >> 64)

    def digest_of(self, key: str) -> str | None:
        """The digest (16 hex digits) of what `key`'s turn holds, if the ledger knows it."""
        value = self.ids.get(key, PENDING)
        return f"{value & _LOW:016x}" if value != PENDING and value & _LOW else None

    def _learn(self, entry: dict[str, Any]) -> None:
        digest = entry.get("h")
        low = int(digest, 16) & _LOW if isinstance(digest, str) and _HEX.fullmatch(digest) else 0
        self.ids[entry["e"]] = turn_number(entry["t"]) << 64 | low
        if isinstance(entry.get("c"), str):
            last = self.last_of.get(entry["c"])
            if last is None or turn_number(last) < turn_number(entry["t"]):
                self.last_of[entry["c"]] = entry["t"]

    def record(self, entries: list[dict[str, Any]]) -> None:
        """Learn and append `{"e", "t", "h"?, "c"?}` entries (and any marks among them)."""
        for entry in entries:
            if "e" in entry:
                self._learn(entry)
        self.append(entries)

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Append entries; no fsync: the folders are durable first, the ledger is a summary."""
        if not entries:
            return
        data = b"".join(orjson.dumps(e) + b"\n" for e in entries)
        append_file(self.path, (b"\n" if self._torn else b"") + data, durable=False, root=self.vault.root)
        self._torn = False

    def mark_indexed(self, upto: int) -> None:
        """Record that every import turn up to `upto` is in the index."""
        self.indexed = max(self.indexed, upto)
        self.append([{"indexed": self.indexed}])
        self.marked = True

    def _numbers_after(self, mark: int) -> Iterator[int]:
        """Turn numbers above `mark` that have a folder, in order."""
        turns = self.vault.layout.turns_dir(self.user)
        counter = self.vault.layout.turn_counter(self.user)
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
        """Catch up with turns newer than the marks (staging leftovers removed, ids learnt, missing
        projections written); the import turns still to index."""
        turns = self.vault.layout.turns_dir(self.user)
        remove_tree_in_vault(self.vault.root, turns / STAGING_DIR)  # never through a link
        found: list[dict[str, Any]] = []
        to_index: list[str] = []
        newest = self.scanned
        for number in self._numbers_after(min(self.scanned, self.indexed)):
            name = turn_name(number)
            first = first_event(self.vault.root, turns / name / EVENTS_FILE)
            if first is None or first.get("type") != "turn_started":
                continue  # empty or torn: not a placed turn (`verify --repair` names it)
            data = first.get("data") or {}
            if number > self.scanned:
                newest = number
                external = data.get("external_id")
                if external is not None:
                    self.ids[external] = number << 64
                    found.append({"e": external, "t": name})
            if number > self.indexed and data.get("source") == "import":
                ref = TurnRef(self.user, name, turns)
                if not all((ref.path / f).exists() for f in ("context.md", "metadata.json")):
                    project(ref)
                to_index.append(name)
        if newest > self.scanned or found:
            self.scanned = newest
            self.append([*found, {"scanned": newest}])
        return to_index

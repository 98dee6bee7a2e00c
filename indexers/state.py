"""The index's state log: which files are indexed, at which checksum, mtime and size.

`state.jsonl` beside the tantivy segments gets one line per change (`{"d": 1}` for a
deletion), appended and fsynced after each commit; folding it gives path → entry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from events.fsio import append_file, atomic_write, open_vault_file


@dataclass(frozen=True)
class StateEntry:
    checksum: str
    mtime_ns: int
    size: int
    skipped: bool = False  # seen but not indexed (broken frontmatter, binary, too large)


def _state_line(path: str, entry: StateEntry) -> bytes:
    row: dict[str, Any] = {"p": path, "c": entry.checksum, "m": entry.mtime_ns, "s": entry.size}
    if entry.skipped:
        row["k"] = 1
    return orjson.dumps(row)


def _fold_state(state: dict[str, StateEntry], raw: bytes) -> None:
    for line in raw.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # torn last line of a crashed writer; reconcile re-checks that file
        if entry.get("d"):
            state.pop(entry["p"], None)
        else:
            state[entry["p"]] = StateEntry(entry["c"], entry["m"], entry["s"], bool(entry.get("k")))


class _StateLog:
    """The state-log part of `FullTextIndex` (a mixin: `state_path`, `indexes_dir`, `_lock`, `_open`,
    `count` and `_behind` are its)."""

    def open_log(self, path: Path) -> BinaryIO:
        """A state log (this index's, or a rebuild's beside it), opened as every vault file
        is: a link to it, or to a folder on its way, raises `NotInVault`."""
        root = self.indexes_dir.parent  # the vault
        return open_vault_file(root, path.relative_to(root).as_posix())

    def _append_state(self, path: Path, changes: dict[str, StateEntry | None]) -> None:
        if not changes:
            return
        # one buffer, each line freed once copied in: a bytes object from orjson keeps the
        # few KB it was written in, so a list of a rebuild's 100k lines held ~400 MB
        lines = bytearray()
        for p, e in changes.items():
            lines += orjson.dumps({"p": p, "d": 1}) if e is None else _state_line(p, e)
            lines += b"\n"
        append_file(path, lines, root=self.indexes_dir.parent)

    def state(self) -> dict[str, StateEntry]:
        """What has been indexed: path → (checksum, mtime, size), folded from the state log.

        The log only grows between compactions, so the fold is cached and only the lines
        appended since the last call are read (a 100k-document log is read once).
        Callers must not modify the returned mapping.
        """
        self._behind.settle()  # (at once on the job's own thread)
        path = self.state_path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._state_cache = None
            return {}
        cache = self._state_cache
        if cache is None or cache[0] != st.st_ino or st.st_size < cache[1]:
            cache = (st.st_ino, 0, {})
        ino, offset, state = cache
        if st.st_size > offset:
            with self.open_log(path) as handle:
                handle.seek(offset)
                chunk = handle.read(st.st_size - offset)
            end = chunk.rfind(b"\n") + 1  # a torn last line is left for the next call
            _fold_state(state, chunk[:end])
            offset += end
        self._state_cache = (ino, offset, state)
        return state

    def counts(self) -> tuple[int, int]:
        """(documents tantivy holds, documents the state records as indexed), read under the
        writer lock so that no commit falls between the two.  They differ when tantivy kept
        a document no path of the state names (a delete it lost: `writer._tantivy_writer`),
        which no reconcile can find, or after a writer died between its commit and its state
        line, which the next reconcile mends."""
        self._open()  # (made under the lock if missing: before taking it here)
        with self._lock():
            recorded = sum(1 for entry in self.state().values() if not entry.skipped)
            return self.count(), recorded

    def _read_state(self, path: Path) -> dict[str, StateEntry]:
        state: dict[str, StateEntry] = {}
        try:
            with self.open_log(path) as handle:
                _fold_state(state, handle.read())
        except FileNotFoundError:
            pass
        return state

    def compact_state(self, *, force: bool = False) -> bool:
        """Rewrite the state log with one line per indexed path, when it has grown to
        several times that (or `force`).  Returns whether it rewrote it."""
        with self._lock():
            state = self.state()
            try:
                size = self.state_path.stat().st_size
            except FileNotFoundError:
                return False
            if not force and size < max(1_000_000, 4 * 120 * len(state)):
                return False
            data = b"".join(_state_line(p, e) + b"\n" for p, e in sorted(state.items()))
            atomic_write(self.state_path, data, root=self.indexes_dir.parent)
            return True

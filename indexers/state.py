"""The index's state log, `state.jsonl`: one line per change (`{"d": 1}` a deletion),
appended and fsynced after each commit; folding it gives path → (checksum, mtime, size)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import orjson

from events.fsio import append_file, atomic_write, json_lines, open_vault_file

if TYPE_CHECKING:
    from .folder import IndexFolder


class StateEntry(NamedTuple):
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
    for entry in json_lines(raw):  # a torn last line: reconcile re-checks that file
        if entry.get("d"):
            state.pop(entry["p"], None)
        else:
            state[entry["p"]] = StateEntry(entry["c"], entry["m"], entry["s"], bool(entry.get("k")))


class StateLog:
    """The state log of one index folder, and its fold cached between calls."""

    def __init__(self, folder: IndexFolder) -> None:
        self.folder = folder
        self.path = folder.state_path
        self._cache: tuple[int, int, dict[str, StateEntry]] | None = None  # (inode, offset read, fold)

    def open_log(self, path: Path) -> BinaryIO:
        """A state log (this index's, or a rebuild's beside it), opened as every vault file
        is: a link to it, or to a folder on its way, raises `NotInVault`."""
        root = self.folder.root
        return open_vault_file(root, path.relative_to(root).as_posix())

    def append(self, path: Path, changes: dict[str, StateEntry | None]) -> None:
        """Append a line per change to the log at `path` (this one, or a rebuild's)."""
        if not changes:
            return
        # one buffer, each line freed once copied in: orjson's bytes keep the buffer they were
        # written in, so a list of them holds far more than its lines
        lines = bytearray()
        for p, e in changes.items():
            lines += orjson.dumps({"p": p, "d": 1}) if e is None else _state_line(p, e)
            lines += b"\n"
        append_file(path, lines, root=self.folder.root)

    def state(self) -> dict[str, StateEntry]:
        """What has been indexed: path → (checksum, mtime, size).  The fold is cached and only
        lines appended since are read; callers must not modify the mapping."""
        self.folder.behind.settle()  # (at once on the job's own thread)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._cache = None
            return {}
        cache = self._cache
        if cache is None or cache[0] != st.st_ino or st.st_size < cache[1]:
            cache = (st.st_ino, 0, {})
        ino, offset, state = cache
        if st.st_size > offset:
            with self.open_log(self.path) as handle:
                handle.seek(offset)
                chunk = handle.read(st.st_size - offset)
            end = chunk.rfind(b"\n") + 1  # a torn last line is left for the next call
            _fold_state(state, chunk[:end])
            offset += end
        self._cache = (ino, offset, state)
        return state

    def read(self, path: Path) -> dict[str, StateEntry]:
        """The fold of the log at `path` (a rebuild's), read whole and not cached."""
        state: dict[str, StateEntry] = {}
        try:
            with self.open_log(path) as handle:
                _fold_state(state, handle.read())
        except FileNotFoundError:
            pass
        return state

    def compact(self, *, force: bool = False) -> bool:
        """Rewrite the state log with one line per indexed path, when it has grown to
        several times that (or `force`).  Returns whether it rewrote it."""
        with self.folder.lock():
            state = self.state()
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                return False
            if not force and size < max(1_000_000, 4 * 120 * len(state)):
                return False
            data = b"".join(_state_line(p, e) + b"\n" for p, e in sorted(state.items()))
            atomic_write(self.path, data, root=self.folder.root)
            return True

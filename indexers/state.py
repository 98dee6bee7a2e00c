"""The index's state log, `state.jsonl`: one line per change (`{"d": 1}` a deletion),
appended and fsynced after each commit; folding it gives path → (checksum, mtime, size)."""

from typing import Any, NamedTuple

import orjson

from events.fsio import json_lines


class StateEntry(NamedTuple):
    checksum: str
    mtime_ns: int
    size: int
    skipped: bool = False  # seen but not indexed (broken frontmatter, binary, too large)


def state_lines(changes: dict[str, StateEntry | None]) -> bytearray:
    """A line per change (None: the path's deletion), in one buffer: each line is freed once
    copied in (orjson's bytes keep the buffer they were written in, so a list of them holds
    far more than its lines)."""
    lines = bytearray()
    for path, entry in changes.items():
        if entry is None:
            row: dict[str, Any] = {"p": path, "d": 1}
        else:
            row = {"p": path, "c": entry.checksum, "m": entry.mtime_ns, "s": entry.size}
            if entry.skipped:
                row["k"] = 1
        lines += orjson.dumps(row)
        lines += b"\n"
    return lines


def fold_state(state: dict[str, StateEntry], raw: bytes) -> None:
    for entry in json_lines(raw):  # a torn last line: reconcile re-checks that file
        if entry.get("d"):
            state.pop(entry["p"], None)
        else:
            state[entry["p"]] = StateEntry(entry["c"], entry["m"], entry["s"], bool(entry.get("k")))

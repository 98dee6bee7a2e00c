"""Rewriting a file a person may edit at the same time: `rewrite_file`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import ChangedMeanwhile
from .fsio import ABSENT, atomic_write, file_key, read_vault_file

__all__ = ["REWRITE_ATTEMPTS", "rewrite_file"]

T = TypeVar("T")

REWRITE_ATTEMPTS = 20


def rewrite_file(
    root: Path | str,
    rel: str,
    change: Callable[[bytes | None, os.stat_result | None], tuple[bytes | None, T]],
) -> T:
    """Read-modify-write of a vault file a person may edit at the same time: `change(data, st)`
    (None, None: no file) returns the new bytes (None: write nothing) and its result; the file
    is replaced only if still the one read, else read and changed again (an edit meanwhile is
    kept), up to REWRITE_ATTEMPTS times (then `ChangedMeanwhile`)."""
    path = Path(root) / rel
    for _ in range(REWRITE_ATTEMPTS):
        try:
            data, st = read_vault_file(root, rel)
            key = file_key(st)
        except FileNotFoundError:
            data, st, key = None, None, ABSENT
        out, result = change(data, st)
        if out is None:
            return result
        try:
            atomic_write(path, out, root=root, unchanged=key)
        except ChangedMeanwhile:
            continue
        return result
    raise ChangedMeanwhile(rel, REWRITE_ATTEMPTS)

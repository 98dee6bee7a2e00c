"""Durable file writes: every file PandaFS rewrites goes through `atomic_write`.

A reader (a person in Obsidian, the watcher, another process) sees either the old
bytes or the new bytes, never a half-written file: we write a temporary file in the
same directory, fsync it, and `os.replace` it over the target.  Bulk jobs pass
`durable=False` and call `sync_all()` once per batch instead of fsyncing each file.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write", "fsync_dir", "sync_all", "TMP_PREFIX", "is_temp_name"]

TMP_PREFIX = ".pfs-"


def is_temp_name(name: str) -> bool:
    """True for our own temporary files and the usual editor temporaries."""
    return name.startswith((TMP_PREFIX, ".#")) or name.endswith((".tmp", ".swp", ".swx", "~", ".part"))


def atomic_write(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """Replace `path` with `data` atomically; create parent folders as needed."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new entry in `directory` survive a power cut."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_all() -> None:
    """Flush everything written so far (the batch-mode durability point)."""
    os.sync()

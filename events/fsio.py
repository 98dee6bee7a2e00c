"""Durable file writes: every file PandaFS rewrites goes through `atomic_write`.

A reader (a person in Obsidian, the watcher, another process) sees either the old
bytes or the new bytes, never a half-written file: we write a temporary file in the
same directory, fsync it, and `os.replace` it over the target.  Bulk jobs pass
`durable=False` and call `sync_all()` once per batch instead of fsyncing each file.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["TMP_PREFIX", "atomic_write", "fsync_dir", "held_lock", "is_temp_name", "sync_all"]

TMP_PREFIX = ".pfs-"


def is_temp_name(name: str) -> bool:
    """True for our own temporary files and the usual editor temporaries."""
    return name.startswith((TMP_PREFIX, ".#")) or name.endswith((".tmp", ".swp", ".swx", "~", ".part"))


def atomic_write(path: Path, data: bytes | str, *, durable: bool = True, make_parents: bool = True) -> None:
    """Replace `path` with `data` atomically; create parent folders as needed."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if make_parents:
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


@contextmanager
def held_lock(path: Path, *, wait_s: float | None, on_busy: Callable[[str], Exception]) -> Iterator[None]:
    """Exclusive `flock` on `path` (created if missing), the holder's pid written in it.

    `wait_s=None` waits forever; otherwise, after `wait_s`, raise `on_busy(holder_pid)`.
    A killed holder's lock is released by the kernel, so a stale file never blocks.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:  # type: ignore[operator]
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    raise on_busy(holder) from None
                time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

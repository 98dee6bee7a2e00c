"""Durable file writes, kept inside the vault.

Writes: every file PandaFS rewrites goes through `atomic_write`.  A reader (a person
in Obsidian, the watcher, another process) sees either the old bytes or the new
bytes, never a half-written file: we write a temporary file in the same directory,
fsync it, and `os.replace` it over the target.  Bulk jobs pass `durable=False` and
call `sync_all()` once per batch instead of fsyncing each file.

Reads: the one safe way to read a file of the vault is in `events.vaultread`
(`open_vault_file`, `read_vault_file`, `read_vault_bytes`, `is_real_dir`), named here too.

Writes stay inside too: a writer puts nothing in a folder before `vault_folder` has
checked it from the vault root down (every part a real folder, made when missing);
appends and locks open their file with `O_NOFOLLOW` (`append_file`, `held_lock`), and
`atomic_write` replaces a linked file's link, never its target: a link planted in the
vault raises `NotInVault` instead of carrying the write out of it or into another user's
folder.  With `root` (`atomic_write`, `atomic_file`, `held_lock`; always for `append_file`)
a writer also gets the readers' after-open check, on the file it appends to or locks or on
the folder it makes, renames and fsyncs in (`open_folder`), so a folder swapped for a link
after the check gains nothing.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from .errors import ChangedMeanwhile, NotInVault
from .opened import FOLDER_FLAGS, CheckedFolders, check_opened, checked_folders, make_folder_at, open_folder
from .vaultread import is_real_dir, open_vault_file, read_vault_bytes, read_vault_file

__all__ = [
    "ABSENT",
    "TMP_PREFIX",
    "FileKey",
    "append_all",
    "append_file",
    "atomic_file",
    "atomic_write",
    "check_folders",
    "file_key",
    "held_lock",
    "is_real_dir",
    "is_temp_name",
    "lock_is_held",
    "make_folder",
    "make_folders_for",
    "open_created",
    "open_vault_file",
    "read_vault_bytes",
    "read_vault_file",
    "swap_in",
    "sync_all",
    "vault_folder",
]

TMP_PREFIX = ".pfs-"


def is_temp_name(name: str) -> bool:
    """True for our own temporary files and the usual editor temporaries."""
    return name.startswith((TMP_PREFIX, ".#")) or name.endswith((".tmp", ".swp", ".swx", "~", ".part"))


def _create_temp(path: Path, folders: CheckedFolders) -> tuple[int, str, int]:
    """A new temporary file beside `path`: its folder's descriptor (opened by `folders`,
    checked with their root), name and descriptor.  Made exclusively, never through a link:
    its name is predictable (the pid), and a link planted there to a file outside the vault
    is removed, not filled."""
    folder = folders.fd(path.parent, target=path)
    tmp = f"{TMP_PREFIX}{path.name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with suppress(FileExistsError):
        return folder, tmp, os.open(tmp, flags, 0o644, dir_fd=folder)
    os.unlink(tmp, dir_fd=folder)
    return folder, tmp, os.open(tmp, flags, 0o644, dir_fd=folder)


FileKey = tuple[int, int, int]
"""(inode, size, mtime) of a file as read: `atomic_write(unchanged=…)` compares it."""

ABSENT: FileKey = (0, 0, 0)
"""The key of a file that was not there when read."""


def file_key(st: os.stat_result) -> FileKey:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def atomic_write(
    path: Path,
    data: bytes | str,
    *,
    durable: bool = True,
    make_parents: bool = True,
    root: Path | str | None = None,
    unchanged: FileKey | None = None,
) -> None:
    """Replace `path` with `data` atomically; create parent folders as needed.

    With `root` (the vault root, `path` under it) missing parents are made by `vault_folder`,
    and the folder is checked once opened, before anything is made in it (`open_folder`).
    With `unchanged` (the `file_key` of the file `data` was made from, or `ABSENT`), the
    file is compared with it just before the replace, after the fsync, and
    `ChangedMeanwhile` raised instead if it changed (`events.rewrite`)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if make_parents:
        make_folders_for(path, root)
    with _replacing(path, durable, root, unchanged) as fd:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]


@contextmanager
def atomic_file(path: Path, *, durable: bool = True, root: Path | str | None = None) -> Iterator[BinaryIO]:
    """`atomic_write` for a writer that wants a file object (pyarrow's Parquet writers,
    which would otherwise open a path themselves, following links)."""
    make_folders_for(path, root)
    with _replacing(path, durable, root) as fd, os.fdopen(os.dup(fd), "wb") as handle:
        yield handle  # (closed before the fsync; the writer may close its copy itself)


def make_folders_for(path: Path, root: Path | str | None) -> None:
    """The folders `path` goes in, made if missing (`make_folder`; one that is there is
    left to the after-open check)."""
    if root is None or not os.path.lexists(path.parent):
        make_folder(path.parent, root)


def make_folder(folder: Path, root: Path | str | None) -> None:
    """`folder`, made if missing: inside a `root` from the root down, never through a link
    (`vault_folder`); without one (a folder outside any vault, in tests) as any folder."""
    if root is None:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        vault_folder(root, folder)


@contextmanager
def _replacing(
    path: Path, durable: bool, root: Path | str | None = None, unchanged: FileKey | None = None
) -> Iterator[int]:
    """A new temporary file beside `path` (`_create_temp`) that replaces it when the block
    ends without an error (fsynced first if `durable`, its folder after), else removed;
    all in one folder descriptor (`checked_folders`)."""
    with checked_folders(root, durable=durable) as folders:
        folder, tmp, fd = _create_temp(path, folders)
        try:
            try:
                yield fd
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if unchanged is not None:
                try:
                    now = file_key(os.stat(path.name, dir_fd=folder, follow_symlinks=False))
                except FileNotFoundError:
                    now = ABSENT
                if now != unchanged:
                    raise ChangedMeanwhile(path)
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)  # (gone once renamed)
            raise


def vault_folder(root: Path | str, folder: Path | str, *, create: bool = True) -> Path:
    """`folder`, a folder under `root`, checked from `root` down before anything is
    written in it: every part must be a real folder (not a link, not a file); a missing
    part is made when `create` (else `FileNotFoundError`).  Raises `NotInVault` otherwise.

    The walk goes by descriptor, each part opened by name in the folder opened before it
    and never through a link (`O_NOFOLLOW`), and a missing part is made there: a folder
    swapped for a link during the walk cannot make a folder outside the vault."""
    base, folder = Path(root), Path(folder)
    try:
        parts = folder.relative_to(base).parts
    except ValueError:
        raise NotInVault(str(folder), "is not inside the vault", action="written") from None
    if any(part in (".", "..") for part in parts):
        raise NotInVault(str(folder), "is not a plain vault path", action="written")
    if not parts:
        return folder
    fd = os.open(base, FOLDER_FLAGS)
    try:
        for depth, part in enumerate(parts):
            try:
                child = _open_part(fd, part, create)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                mode = os.lstat(part, dir_fd=fd).st_mode
                why = "is a symbolic link" if stat.S_ISLNK(mode) else "is not a folder"
                raise NotInVault(Path(*parts[: depth + 1]).as_posix(), why, action="written") from None
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return folder


def _open_part(parent: int, name: str, create: bool) -> int:
    """The folder `name` in `parent` opened by name, never through a link; made there
    first when missing and `create`."""
    try:
        return os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    return make_folder_at(parent, name, exist_ok=True)


def check_folders(root: Path | str, *folders: Path) -> None:
    """Each of `folders` that exists is checked as `vault_folder` checks it (none is made)."""
    for folder in folders:
        if os.path.lexists(folder):
            vault_folder(root, folder, create=False)


def _open_no_link(path: Path, flags: int) -> int:
    """`os.open` of a regular file that is not a link (`NotInVault` otherwise)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotInVault(str(path), "is a symbolic link", action="written") from None
        if exc.errno == errno.ENXIO:  # a fifo with no reader
            raise NotInVault(str(path), "is not a regular file", action="written") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotInVault(str(path), "is not a regular file", action="written")
    os.set_blocking(fd, True)
    return fd


def append_file(path: Path, data: bytes | bytearray, *, root: Path | str, durable: bool = True) -> None:
    """Append `data` to `path` (created if missing) in the vault `root`, never through a
    link; fsynced when `durable` (and, for a file this call created, its folder's entry too).
    The opened file is checked before a byte is appended (`check_opened`; a file this call
    created where it should not be is removed again, an existing one is left), and a
    durable append fsyncs the folder it opened and checked first (`open_folder`), not the
    path again: a folder swapped after the append is no error once the data is in."""
    folder = open_folder(path.parent, root, target=path) if durable else None
    try:
        fd, created = open_created(path, os.O_WRONLY | os.O_APPEND)
        check_opened(fd, path, root, created=created)
        try:
            append_all(fd, data, durable=durable)
        finally:
            os.close(fd)
        if created and folder is not None:
            os.fsync(folder)
    finally:
        if folder is not None:
            os.close(folder)


def append_all(fd: int, data: bytes | bytearray, *, durable: bool) -> None:
    """Write all of `data` at the end of `fd` (opened `O_APPEND`), fsynced when `durable`.

    An append the disk refuses (full, a size limit, an I/O error), or an interrupt, is
    cut back: what this call wrote is truncated away when it is one run at the file's
    end (no other writer appended after or between its writes), so no partial line is
    left for the next append to glue onto (one line broken mid-file, and an event log's
    chain with it), and no whole line stays that was never acknowledged."""
    view, start, end = memoryview(data), -1, -1
    try:
        while view:
            count = os.write(fd, view)
            at = os.lseek(fd, 0, os.SEEK_CUR)
            if start < 0:
                start = at - count
            elif at - count != end:
                start = -2  # another writer appended between two of ours: not one run
            end = at
            view = view[count:]
        if durable:
            os.fsync(fd)
    except BaseException:
        if start >= 0:
            with suppress(OSError):
                if os.fstat(fd).st_size == end:
                    os.ftruncate(fd, start)
        raise


def open_created(
    path: Path, flags: int, opener: Callable[[Path, int], int] | None = None
) -> tuple[int, bool]:
    """`path` opened with `flags` (`opener`: `_open_no_link` by default, never through a
    link), made if missing, and whether this open made it: known exactly, so
    `check_opened` only ever removes a file of our own making."""
    opener = opener or _open_no_link
    while True:
        try:
            return opener(path, flags), False
        except FileNotFoundError:
            pass
        try:
            return opener(path, flags | os.O_CREAT | os.O_EXCL), True
        except FileExistsError:
            pass  # made meanwhile by another writer: open that one


def swap_in(new: Path, live: Path, *, root: Path | str | None) -> None:
    """Put the folder `new` where `live` is, as one rename: the live folder first moves
    aside to `{live}.old`, which is removed afterwards (a reader sees one folder whole).
    All by name in their folder as opened and checked from `root` (`checked_folders`,
    fsynced): one swapped for a link moves and deletes nothing out there (`NotInVault`)."""
    old = live.with_name(live.name + ".old")
    with checked_folders(root) as folders:
        folders.remove_tree(old)
        with suppress(FileNotFoundError):  # no live folder yet
            folders.rename(live, old)
        folders.rename(new, live)
        folders.remove_tree(old)


def sync_all() -> None:
    """Flush everything written so far (the batch-mode durability point)."""
    os.sync()


@contextmanager
def held_lock(
    path: Path,
    *,
    wait_s: float | None,
    on_busy: Callable[[str], Exception],
    root: Path | str | None = None,
) -> Iterator[None]:
    """Exclusive `flock` on `path` (created if missing), the holder's pid written in it.

    `wait_s=None` waits forever; otherwise, after `wait_s`, raise `on_busy(holder_pid)`.
    A killed holder's lock is released by the kernel, so a stale file never blocks.
    A lock file that is a link is refused (`NotInVault`): taking the lock writes the file.
    With `root` the opened lock file gets the writers' after-open check (`check_opened`;
    a lock file this open made where it should not be is removed again).
    """
    make_folders_for(path, root)
    if root is None:
        fd = _open_no_link(path, os.O_RDWR | os.O_CREAT)
    else:
        fd, created = open_created(path, os.O_RDWR)
        check_opened(fd, path, root, created=created)
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


def lock_is_held(path: Path) -> bool:
    """True while another holder has `path` locked (by `held_lock`); nothing is written."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:  # missing (never taken), or a link no writer would take either
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's own lock, if it got one
    return False

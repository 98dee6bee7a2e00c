"""The one safe way to read a file of the vault.

The vault is the boundary.  `open_vault_file` / `read_vault_file` open a
vault-relative path with `O_NOFOLLOW` and then check where the opened file really
is (`/proc/self/fd`, else `realpath`): a symlink, a symlinked folder on the way, a
path leaving the root, or anything but a regular file raises `NotInVault`.  The
check is on the file actually opened, so swapping a folder for a link between a
check and the read gains nothing.  Walks skip symlinked folders (`is_real_dir`).
`read_vault_bytes` is the same read for PandaFS's own small files (metadata, caches,
journals, markers), where a file that cannot be read safely counts as one not there.
`open_vault_folder` is the same open for a folder that is walked or listed: by its
descriptor (`os.fwalk`, `dir_fd`), so a folder swapped for a link after it was opened
names nothing of the link's target, and one swapped before is refused.
(Split from `events.fsio`, which still names them, when that module outgrew one job.)
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import NotInVault
from .opened import HARD_LINK, has_other_names, is_inside, where_opened

__all__ = [
    "is_real_dir",
    "is_real_file",
    "open_vault_file",
    "open_vault_folder",
    "read_in_folder",
    "read_vault_bytes",
    "read_vault_file",
]


def is_real_dir(path: Path | str) -> bool:
    """A folder that is not a symbolic link (walks never enter a linked folder)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def is_real_file(path: Path | str) -> bool:
    """A regular file that is not a symbolic link (nor a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _open_fd(root: Path | str, rel: str, *, folder: bool = False) -> tuple[int, os.stat_result]:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise NotInVault(rel, "not a plain vault-relative path")
    base = os.fspath(root)
    full = os.path.join(base, rel)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_DIRECTORY if folder else 0)
    try:
        fd = os.open(full, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (folder and exc.errno == errno.ENOTDIR and os.path.islink(full)):
            raise NotInVault(rel, "is a symbolic link") from None
        raise
    try:
        st = os.fstat(fd) if folder else _checked_file(fd, rel)
        if not is_inside(where_opened(fd, full), base, rel):
            raise NotInVault(rel, "a folder on its path is a symbolic link or leaves the vault")
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def _checked_file(fd: int, rel: str) -> os.stat_result:
    """The stat of the file open as `fd` (vault-relative `rel`), if a reader may read it:
    a regular file, and not a document with other names (`HARD_LINK`)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise NotInVault(rel, "is not a regular file")
    if has_other_names(st) and _is_document(rel):
        raise NotInVault(rel, HARD_LINK)
    return st


def _is_document(rel: str) -> bool:
    """Whether `rel` is a document (`classify`): a document with other names is not read
    (`HARD_LINK`).  Other files keep theirs: the inbox moves a query by linking its new
    name before it drops the old one."""
    from .layout import classify  # (the layout reads through this module)

    return classify(rel) is not None


def open_vault_file(root: Path | str, rel: str) -> BinaryIO:
    """Open `root/rel` for reading, refusing what is not plainly a file of the vault.

    Raises `NotInVault` for a symlink (the file or any folder on its path), a path that
    is absolute, holds `..` or resolves outside `root`, or something other than a
    regular file (a fifo would block); `FileNotFoundError` if it is not there.
    """
    fd, _ = _open_fd(root, rel)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_vault_folder(root: Path | str, rel: str) -> int:
    """A descriptor of the folder `root/rel`, to walk and list by (`os.fwalk(dir_fd=)`,
    `os.scandir(fd)`, `dir_fd=`) and for the caller to close, with the checks of
    `open_vault_file`: `NotInVault` for a link (the folder or one on its path) or a
    path leaving `root`; `FileNotFoundError` / `NotADirectoryError` if it is not there
    or not a folder."""
    return _open_fd(root, rel, folder=True)[0]


def read_vault_file(root: Path | str, rel: str, *, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """Bytes (at most `limit` + 1 of them when `limit` is set) and stat of a vault file,
    with the checks of `open_vault_file`."""
    fd, st = _open_fd(root, rel)
    return _read_open(fd, st, limit), st


def read_in_folder(
    folder: int, name: str, rel: str, *, limit: int | None = None
) -> tuple[bytes, os.stat_result]:
    """`read_vault_file` of the file `name` in the vault folder open as `folder`
    (vault-relative `rel`), for a walk that has the folder open (`indexers.walk`).

    The folder was opened by name in its parent's descriptor from the root down, never
    through a link, so the file opened by name in it (`O_NOFOLLOW`: not a link either)
    is `root/rel` without asking the kernel where it landed: one path lookup of one
    component, no `/proc/self/fd` read.  The other checks are `read_vault_file`'s."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotInVault(rel, "is a symbolic link") from None
        raise
    try:
        st = _checked_file(fd, rel)
    except BaseException:
        os.close(fd)
        raise
    return _read_open(fd, st, limit), st


def _read_open(fd: int, st: os.stat_result, limit: int | None) -> bytes:
    """The bytes of the file open as `fd` (at most `limit` + 1 of them when `limit` is
    set; all of them, however far it grew meanwhile, when not); `fd` is closed."""
    try:
        want = st.st_size + 1 if limit is None else min(st.st_size, limit) + 1
        chunks = []
        got = 0
        while want > 0:
            asked = min(want, 1 << 20)
            chunk = os.read(fd, asked)
            if not chunk:
                break
            chunks.append(chunk)
            want -= len(chunk)
            got += len(chunk)
            if len(chunk) < asked and got >= st.st_size:
                break  # short at its stat'ed size: the end, without a read to say so
        if limit is None and not want:  # the file grew while we read it: read the rest
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_vault_bytes(root: Path | str, path: Path | str, *, limit: int | None = None) -> bytes | None:
    """The bytes of `path`, a file under `root`, read as `read_vault_file` reads; None
    when it is not there or is refused (a link, a linked folder on its way, not a
    regular file): a file PandaFS keeps for itself that a link replaced counts as
    missing, never as the link's target.  Other `OSError`s are raised."""
    try:
        return read_vault_file(root, Path(path).relative_to(root).as_posix(), limit=limit)[0]
    except (FileNotFoundError, NotInVault):
        return None

"""Files of the vault, read and written without ever leaving it: the vault boundary.

The one rule: PandaFS reads only a regular file with one name (`refusal`).  A symbolic
link, a FIFO, a device, a socket, a folder where a file is expected, or a hard-linked file
(its other name may be another user's or outside the vault) is never read, wherever it is.
Reads open a vault-relative path with `O_NOFOLLOW` and check where the opened file really
is (`/proc/self/fd`, else `realpath`): a linked folder on the way or a path leaving the root
raises `NotInVault`, and swapping a folder between check and read gains nothing.  Writers
check the file they opened too (`check_opened`); renames, links and unlinks go through
folders opened and checked from the root (`checked_folders`).  `atomic_write` writes a
temporary file beside the target, fsyncs it and `os.replace`s it;
`rewrite_file` replaces a file a person may edit only if it is still the one read."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import orjson

from .errors import ChangedMeanwhile, NotInVault

__all__ = [
    "FOLDER_FLAGS",
    "HARD_LINK",
    "REASONS",
    "TMP_PREFIX",
    "REWRITE_ATTEMPTS",
    "CheckedFolders",
    "FileKey",
    "append_all",
    "append_file",
    "atomic_file",
    "atomic_write",
    "check_folders",
    "check_opened",
    "checked_folders",
    "file_key",
    "held_lock",
    "is_real_dir",
    "is_real_file",
    "is_temp_name",
    "json_lines",
    "lock_is_held",
    "make_folder",
    "make_folder_at",
    "open_created",
    "open_folder",
    "open_folder_at",
    "open_no_link",
    "open_outside_file",
    "open_to_read",
    "open_vault_file",
    "open_vault_folder",
    "read_and_close",
    "read_in_folder",
    "read_vault_bytes",
    "read_vault_file",
    "refusal",
    "refusal_at",
    "remove_tree_in_vault",
    "rename_in_vault",
    "rewrite_file",
    "swap_in",
    "sync_all",
    "unlink_in_vault",
    "vault_folder",
    "where_opened",
]

# -- the one rule: what is never read -------------------------------------------------

HARD_LINK = "has other names (a hard link): one may be outside the vault or another user's"
"""Why a file with more than one name is neither read nor written."""

REASONS = {
    "symlink": "is a symbolic link",
    "hard_link": HARD_LINK,
    "fifo": "is not a regular file (a FIFO)",
    "device": "is not a regular file (a device)",
    "socket": "is not a regular file (a socket)",
    "folder": "is a folder, not a file",
}
"""Why each kind `refusal` names is never read (`NotInVault.reason`)."""


_KINDS = {stat.S_IFLNK: "symlink", stat.S_IFDIR: "folder", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}


def refusal(st: os.stat_result) -> str | None:
    """The kind of file (a key of `REASONS`) a stat taken without following a link shows
    PandaFS never reads; None for a regular file with one name."""
    if stat.S_ISREG(st.st_mode):
        return "hard_link" if st.st_nlink > 1 else None
    return _KINDS.get(stat.S_IFMT(st.st_mode), "device")


def refusal_at(path: Path | str, *, dir_fd: int | None = None) -> str | None:
    """`refusal` of what `path` names now; None when it is readable or not there."""
    try:
        return refusal(os.stat(path, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return None


def open_outside_file(path: Path | str) -> BinaryIO:
    """Open `path`, a file outside any vault (an import's source), under the one rule.  A pipe
    this process was handed (`/dev/fd/N`, the shell's `<(zcat …)`) names no file anyone could
    plant: it is read from its descriptor."""
    name = os.fspath(path)
    handed = _handed_pipe(name)
    if handed is not None:
        return os.fdopen(handed, "rb")
    fd, _ = open_to_read(name)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_to_read(
    name: str, rel: str | None = None, dir_fd: int | None = None, *, folder: bool = False
) -> tuple[int, os.stat_result]:
    """`name` (in the folder `dir_fd`) opened to read, never through a link nor blocking on
    a FIFO, and its stat, if the rule lets it be read; else `NotInVault` naming `rel`.  With
    `folder`, a folder is wanted: `NotADirectoryError` for anything else but a link."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_DIRECTORY if folder else 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:  # (a link met with O_DIRECTORY may say ENOTDIR)
        link = exc.errno == errno.ENOTDIR and folder and refusal_at(name, dir_fd=dir_fd) == "symlink"
        if exc.errno == errno.ELOOP or link:
            raise NotInVault(rel or name, REASONS["symlink"]) from None
        raise
    try:
        st = os.fstat(fd)
        kind = None if folder else refusal(st)
        if kind is not None:
            raise NotInVault(rel or name, REASONS[kind])
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _handed_pipe(name: str) -> int | None:
    """A duplicate of descriptor N when `name` is `/dev/fd/N` (or `/proc/self/fd/N`) and N
    is a pipe open in this process; None otherwise."""
    head, _, number = name.rpartition("/")
    if head not in ("/dev/fd", "/proc/self/fd") or not number.isdigit():
        return None
    try:
        if not stat.S_ISFIFO(os.fstat(int(number)).st_mode):
            return None
        return os.dup(int(number))
    except OSError:
        return None


# -- where an open really landed ------------------------------------------------------

FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""How a folder is opened to be used by descriptor (with `O_NOFOLLOW` by name in its parent)."""

_PROC_FD = "/proc/self/fd"
_HAS_PROC_FD = os.path.isdir(_PROC_FD)


def where_opened(fd: int, full: str) -> str:
    """The real path of the file open as `fd` (opened by the name `full`)."""
    if _HAS_PROC_FD:
        try:
            return os.readlink(f"{_PROC_FD}/{fd}")
        except OSError:
            pass
    return os.path.realpath(full)


def is_inside(opened: str, root: str, rel: str) -> bool:
    """True if the file the kernel opened is `root/rel` itself: its real path ends in
    `/rel` and what comes before is the root (same device and inode); `rel` "" is the root."""
    if rel and not opened.endswith("/" + rel):
        return False
    head = (opened[: -len(rel) - 1] or "/") if rel else opened
    if head == root:
        return True
    try:
        a, b = os.stat(head), os.stat(root)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_opened(
    fd: int,
    path: Path,
    root: Path | str,
    *,
    created: bool,
    target: Path | None = None,
    action: str = "written",
) -> None:
    """The writers' after-open check: the file the kernel opened for `path` must be
    `root/<rel of path>`, else `fd` is closed, the file removed if this open `created` it,
    and `NotInVault` raised naming `target` (the file being written, when `path` is its
    temporary file) before a byte is written.  A file found there with other names is
    refused too: a lock's pid or an appended line would land in its other name."""
    base = os.fspath(root)
    opened = where_opened(fd, os.fspath(path))
    if is_inside(opened, base, _rel(path, base)):
        if created or refusal(os.fstat(fd)) != "hard_link":
            return
        os.close(fd)
        raise NotInVault(_rel(target or path, base), HARD_LINK, action=action)
    try:
        if created:
            _remove_opened(fd, opened)
    finally:
        os.close(fd)
    why = "a folder on its path is a symbolic link or leaves the vault"
    raise NotInVault(_rel(target or path, base), why, action=action)


def open_folder(folder: Path, root: Path | str | None = None, *, target: Path | None = None) -> int:
    """A descriptor of `folder`, to create, rename and fsync in by `dir_fd`; with `root`,
    checked as `check_opened` checks a file, so later swaps on its path change nothing."""
    fd = os.open(folder, FOLDER_FLAGS)
    if root is not None:
        check_opened(fd, folder, root, created=False, target=target)
    return fd


class CheckedFolders:
    """Vault folders opened through `open_folder` (each once, checked from the root), to
    rename between and fsync by descriptor: a folder swapped for a link after it was opened
    gains nothing, one swapped before is refused.  `root` None: a bare folder, in tests."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = root
        self._fds: dict[Path, int] = {}

    def fd(self, folder: Path, *, target: Path | None = None) -> int:
        """The descriptor of `folder`, opened and checked the first time (a refusal names `target`)."""
        if folder not in self._fds:
            self._fds[folder] = open_folder(folder, self.root, target=target)
        return self._fds[folder]

    def rename(self, src: Path, dest: Path) -> None:
        """`os.rename(src, dest)`, both names taken in their checked folders."""
        src_fd = self.fd(src.parent, target=src)
        dst_fd = self.fd(dest.parent, target=dest)
        os.rename(src.name, dest.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def unlink(self, path: Path, *, missing_ok: bool = False) -> None:
        """`os.unlink(path)`, the name taken in its checked folder."""
        try:
            os.unlink(path.name, dir_fd=self.fd(path.parent, target=path))
        except FileNotFoundError:
            if not missing_ok:
                raise

    def remove_tree(self, folder: Path, *, ignore_errors: bool = True) -> None:
        """`shutil.rmtree(folder)` by name in its checked folder, walked by descriptor: a link
        in its place is refused, its target never emptied."""
        import shutil  # not at module level: a search never removes a folder

        try:
            parent = self.fd(folder.parent, target=folder)
        except FileNotFoundError:
            if ignore_errors:
                return
            raise
        shutil.rmtree(folder.name, ignore_errors=ignore_errors, dir_fd=parent)

    def make(self, folder: Path, *, exist_ok: bool = False) -> int:
        """Make `folder` in its (already opened) parent and open it by name there, never through
        a link; with `exist_ok` one already there is opened instead."""
        if exist_ok and folder in self._fds:
            return self._fds[folder]
        self._fds[folder] = make_folder_at(self._fds[folder.parent], folder.name, exist_ok=exist_ok)
        return self._fds[folder]

    def fsync(self) -> None:
        """Make every rename and new entry in these folders survive a power cut."""
        for fd in self._fds.values():
            os.fsync(fd)

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.popitem()[1])


@contextmanager
def checked_folders(root: Path | str | None, *, durable: bool = True) -> Iterator[CheckedFolders]:
    """A block of renames and entries in vault folders (`CheckedFolders`); each folder it
    opened is fsynced when the block ends without an error (if `durable`), and closed."""
    folders = CheckedFolders(root)
    try:
        yield folders
        if durable:
            folders.fsync()
    finally:
        folders.close()


def make_folder_at(parent: int, name: str, *, exist_ok: bool = False) -> int:
    """Make the folder `name` in the folder `parent` and open it by name there, never through
    a link; the caller closes it.  With `exist_ok` one already there is opened instead."""
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:
        if not exist_ok:
            raise
    return os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=parent)


def open_folder_at(fd: int, name: str) -> int | None:
    """The folder `name` in the folder open as `fd`, opened by name, never through a link;
    None when it is not there, is a file, or is a link."""
    try:
        return os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise


def rename_in_vault(root: Path | str, src: Path, dest: Path) -> None:
    """Rename `src` to `dest` through their checked folders, fsyncing both (`NotInVault`,
    nothing moved, when a folder on either path is a link or leaves the vault)."""
    with checked_folders(root) as folders:
        folders.rename(src, dest)


def unlink_in_vault(root: Path | str | None, path: Path, *, durable: bool = True) -> None:
    """Remove the file `path`, if there, by name in its checked folder, never a file behind a link."""
    with checked_folders(root, durable=durable) as folders:
        folders.unlink(path, missing_ok=True)


def remove_tree_in_vault(root: Path | str | None, folder: Path, *, ignore_errors: bool = True) -> None:
    """`shutil.rmtree(folder)` by name in its checked folder, walked by descriptor."""
    with checked_folders(root, durable=False) as folders:
        folders.remove_tree(folder, ignore_errors=ignore_errors)


def _rel(path: Path, base: str) -> str:
    full, head = os.fspath(path).rstrip("/"), base.rstrip("/") + "/"
    if full + "/" == head:
        return ""  # the root folder itself
    return full[len(head) :] if full.startswith(head) else full  # not under it: refused


def _remove_opened(fd: int, opened: str) -> None:
    """Remove the file open as `fd` by its real path `opened`, if that name is still that file."""
    try:
        here, there = os.fstat(fd), os.lstat(opened)
    except OSError:
        return
    if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
        os.unlink(opened)


# -- reading ---------------------------------------------------------------------------


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
    fd, st = open_to_read(full, rel, folder=folder)
    try:
        if not is_inside(where_opened(fd, full), base, rel):
            raise NotInVault(rel, "a folder on its path is a symbolic link or leaves the vault")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_vault_file(root: Path | str, rel: str) -> BinaryIO:
    """Open `root/rel` for reading.  `NotInVault` for a link (the file or a folder on its
    path), a path that is absolute, holds `..` or leaves `root`, or a file `refusal` names;
    `FileNotFoundError` if it is not there."""
    fd, _ = _open_fd(root, rel)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_vault_folder(root: Path | str, rel: str) -> int:
    """A descriptor of the folder `root/rel`, with `open_vault_file`'s checks; the caller closes it."""
    return _open_fd(root, rel, folder=True)[0]


def read_vault_file(root: Path | str, rel: str, *, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """Bytes (at most `limit` + 1) and stat of a vault file, with `open_vault_file`'s checks."""
    fd, st = _open_fd(root, rel)
    return read_and_close(fd, st, limit), st


def read_in_folder(
    folder: int, name: str, rel: str, *, limit: int | None = None
) -> tuple[bytes, os.stat_result]:
    """`read_vault_file` of `name` in the checked vault folder open as `folder` (its
    vault-relative path `rel`): opened by name with `O_NOFOLLOW`, it is `root/rel` without
    asking the kernel where it landed."""
    fd, st = open_to_read(name, rel, folder)
    return read_and_close(fd, st, limit), st


def read_and_close(fd: int, st: os.stat_result, limit: int | None = None) -> bytes:
    """The bytes of the file open as `fd` (at most `limit` + 1; without a limit, however
    far it grew meanwhile); `fd` is closed."""
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
    """`read_vault_file`'s bytes of `path` under `root`, or None when it is not there or
    refused: a file PandaFS keeps for itself that a link replaced counts as missing."""
    try:
        return read_vault_file(root, Path(path).relative_to(root).as_posix(), limit=limit)[0]
    except (FileNotFoundError, NotInVault):
        return None


def json_lines(data: bytes, mentioning: bytes = b"") -> Iterator[dict[str, Any]]:
    """The JSON objects of JSON Lines `data`, one a line, of the lines that hold `mentioning`
    (the others are not parsed); a line that is not one (a crashed writer's torn last line, a
    foreign one) is passed over."""
    for line in data.splitlines():
        if mentioning not in line:
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


# -- writing ---------------------------------------------------------------------------


TMP_PREFIX = ".pfs-"


def is_temp_name(name: str) -> bool:
    """True for our own temporary files and the usual editor temporaries."""
    return name.startswith((TMP_PREFIX, ".#")) or name.endswith((".tmp", ".swp", ".swx", "~", ".part"))


def _create_temp(path: Path, folders: CheckedFolders) -> tuple[int, str, int]:
    """A new temporary file beside `path` (its folder's descriptor, its name, its descriptor),
    made exclusively: a link planted at its predictable name is removed, not filled."""
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
    root: Path | str | None = None,
    unchanged: FileKey | None = None,
) -> None:
    """Replace `path` with `data` atomically, making parent folders as needed (from the
    vault `root` down, when given).  With `unchanged` (the `file_key` of the file `data` was
    made from, or `ABSENT`), `ChangedMeanwhile` is raised instead if the file changed before
    the replace."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    make_folder(path.parent, root)
    with _replacing(path, durable, root, unchanged) as fd:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]


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


@contextmanager
def atomic_file(path: Path, *, durable: bool = True, root: Path | str | None = None) -> Iterator[BinaryIO]:
    """`atomic_write` for a writer that wants a file object (pyarrow's Parquet writers,
    which would otherwise open a path themselves, following links)."""
    make_folder(path.parent, root)
    with _replacing(path, durable, root) as fd, os.fdopen(os.dup(fd), "wb") as handle:
        yield handle  # (closed before the fsync; the writer may close its copy itself)


def make_folder(folder: Path, root: Path | str | None) -> None:
    """`folder`, made if missing: from `root` down, never through a link (`vault_folder`);
    one there is left to the after-open check of what is made or opened in it."""
    if root is None:
        folder.mkdir(parents=True, exist_ok=True)
    elif not os.path.lexists(folder):
        vault_folder(root, folder)


@contextmanager
def _replacing(
    path: Path, durable: bool, root: Path | str | None = None, unchanged: FileKey | None = None
) -> Iterator[int]:
    """A temporary file beside `path` that replaces it when the block ends without an error
    (fsynced first if `durable`, its folder after), else removed."""
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
    """`folder` under `root`, checked from the root down before anything is written in it:
    every part a real folder, a missing one made when `create` (else `FileNotFoundError`);
    `NotInVault` otherwise.  The walk goes by descriptor, each part opened by name in the one
    before, so a folder swapped for a link meanwhile cannot make a folder outside the vault."""
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
            try:  # opened by name, never through a link; made first when missing and `create`
                try:
                    child = os.open(part, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    child = make_folder_at(fd, part, exist_ok=True)
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


def check_folders(root: Path | str, *folders: Path) -> None:
    """Each of `folders` that exists is checked as `vault_folder` checks it (none is made)."""
    for folder in folders:
        if os.path.lexists(folder):
            vault_folder(root, folder, create=False)


def open_no_link(path: Path, flags: int) -> int:
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
    """Append `data` to `path` (created if missing) in the vault `root`, checked once opened,
    never through a link; fsynced when `durable`, with the checked folder's new entry."""
    with checked_folders(root, durable=False) as folders:
        if durable:
            folders.fd(path.parent, target=path)  # (to fsync a new entry in)
        fd, created = open_created(path, os.O_WRONLY | os.O_APPEND)
        check_opened(fd, path, root, created=created)
        try:
            append_all(fd, data, durable=durable)
        finally:
            os.close(fd)
        if created and durable:
            folders.fsync()


def append_all(fd: int, data: bytes | bytearray, *, durable: bool) -> None:
    """Write all of `data` at the end of `fd` (opened `O_APPEND`), fsynced when `durable`.  A
    failed append (disk full, an interrupt) is cut back when what it wrote is one run at the
    file's end: no partial line for the next to glue onto, no unacknowledged line."""
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


def open_created(path: Path, flags: int) -> tuple[int, bool]:
    """`path` opened with `flags` by `open_no_link`, made if missing, and whether this open
    made it, so `check_opened` only removes a file of our own making."""
    while True:
        try:
            return open_no_link(path, flags), False
        except FileNotFoundError:
            pass
        try:
            return open_no_link(path, flags | os.O_CREAT | os.O_EXCL), True
        except FileExistsError:
            pass  # made meanwhile by another writer: open that one


def swap_in(new: Path, live: Path, *, root: Path | str | None) -> None:
    """Put the folder `new` where `live` is: the live folder moves aside to `{live}.old`,
    removed afterwards, all by name in checked folders (fsynced)."""
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
    path: Path, *, wait_s: float | None, on_busy: Callable[[str], Exception], root: Path | str | None = None
) -> Iterator[None]:
    """Exclusive `flock` on `path` (created if missing, never through a link), the holder's pid
    in it; after `wait_s` (None: forever) `on_busy(holder_pid)` is raised.  With `root` the
    lock file gets the writers' after-open check."""
    make_folder(path.parent, root)
    fd, created = open_created(path, os.O_RDWR)
    if root is not None:
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

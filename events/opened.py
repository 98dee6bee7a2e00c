"""Where an open really landed: the one after-open check of the vault boundary.

A folder checked from the vault root down (`events.fsio.vault_folder`) can be swapped
for a symbolic link before the file in it is opened by path.  So readers and writers
check the file they actually opened: its real path (`/proc/self/fd`, else `realpath`)
must be `root/<rel>`.  Readers refuse what fails (`events.vaultread.read_vault_file`);
writers refuse it before a byte is written and remove what their own open made there
(`check_opened`, and `open_folder` for the folder an atomic write makes, renames and
fsyncs in).  Links, renames and folder fsyncs between vault folders go through
`checked_folders` (`rename_in_vault`, `fsync_folder` for one; unlinks, new folders and
whole trees removed too), never by path.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import NotInVault

__all__ = [
    "FOLDER_FLAGS",
    "CheckedFolders",
    "check_opened",
    "checked_folders",
    "fsync_folder",
    "is_inside",
    "make_folder_at",
    "mode_at",
    "open_folder_at",
    "open_folder",
    "remove_tree_in_vault",
    "rename_in_vault",
    "unlink_in_vault",
    "where_opened",
]

FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""How a folder is opened to be walked or written in by descriptor (add `O_NOFOLLOW` for
one opened by name in its parent)."""

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
    `/rel` and what comes before is the root folder (same device and inode).  An empty
    `rel` is the root folder itself."""
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


HARD_LINK = "has other names (a hard link): one may be outside the vault or another user's"
"""Why a file with more than one name is neither written nor read as a document."""


def has_other_names(st: os.stat_result) -> bool:
    """A regular file with more than one name (`HARD_LINK`; a folder always has: its `..`
    entries): the one test of the writers here, the document reader (`events.vaultread`)
    and the walk (`indexers.walk`)."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def check_opened(
    fd: int,
    path: Path,
    root: Path | str,
    *,
    created: bool,
    target: Path | None = None,
    action: str = "written",
) -> None:
    """The writers' after-open check, the one `events.fsio` makes for readers: the file
    the kernel opened for `path` must be `root/<rel of path>`.  A folder on the way
    swapped for a link after `vault_folder` checked it (a check-then-use race) lands
    the open elsewhere: then `fd` is closed, the file is removed when this open
    `created` it (never a file found there), and `NotInVault` is raised naming `target`
    (the file being written, when `path` is its temporary file), before a byte is
    written (a reader that opened by path itself, as `events.log.read_log`, passes
    `action="read"`).  A file found there (not `created`) that has other names (a hard
    link) is refused too when written: its other name may be outside the vault, and a
    lock's pid or an appended line would land there (seen 2026-11-25: the sharing log
    hard-linked to a file outside took the publish record).  Costs one readlink (and an
    fstat for a found file written)."""
    base = os.fspath(root)
    opened = where_opened(fd, os.fspath(path))
    if is_inside(opened, base, _rel(path, base)):
        if created or action != "written" or not has_other_names(os.fstat(fd)):
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
    """A descriptor of `folder`, to create, rename and fsync in by `dir_fd`.  With `root`
    it is checked as `check_opened` checks a file (it must be `root/<its path>`; else
    `NotInVault` naming `target`), so what goes through it stays in the folder checked,
    whatever is swapped for a link on its path later."""
    fd = os.open(folder, FOLDER_FLAGS)
    if root is not None:
        check_opened(fd, folder, root, created=False, target=target)
    return fd


class CheckedFolders:
    """Vault folders opened through `open_folder` (each once, checked from the vault root),
    to rename between and fsync by descriptor: a folder swapped for a link after it was
    opened gains nothing, and one swapped before is refused (`NotInVault`) before anything
    moves.  Made by `checked_folders`, which fsyncs and closes them.  (`root` None: a bare
    folder outside any vault, in tests; nothing is checked.)"""

    def __init__(self, root: Path | str | None) -> None:
        self.root = root
        self._fds: dict[Path, int] = {}

    def fd(self, folder: Path, *, target: Path | None = None) -> int:
        """The descriptor of `folder`, opened and checked the first time it is asked for
        (a refusal names `target`, the file being moved, if given)."""
        if folder not in self._fds:
            self._fds[folder] = open_folder(folder, self.root, target=target)
        return self._fds[folder]

    def rename(self, src: Path, dest: Path) -> None:
        """`os.rename(src, dest)` (replacing `dest` as it does), both names taken in
        their checked folders."""
        src_fd = self.fd(src.parent, target=src)
        dst_fd = self.fd(dest.parent, target=dest)
        os.rename(src.name, dest.name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def unlink(self, path: Path, *, missing_ok: bool = False) -> None:
        """`os.unlink(path)`, the name taken in its checked folder (gone already is fine
        with `missing_ok`)."""
        try:
            os.unlink(path.name, dir_fd=self.fd(path.parent, target=path))
        except FileNotFoundError:
            if not missing_ok:
                raise

    def remove_tree(self, folder: Path, *, ignore_errors: bool = True) -> None:
        """`shutil.rmtree(folder, ignore_errors=...)`, the name taken in its checked folder
        and the tree walked by descriptor (`rmtree`'s `dir_fd`), never through a link: a
        link in its place is refused (left), not its target emptied.  Ignoring errors,
        nothing happens if its folder is gone."""
        import shutil  # not at module level: a search never removes a folder

        try:
            parent = self.fd(folder.parent, target=folder)
        except FileNotFoundError:
            if ignore_errors:
                return
            raise
        shutil.rmtree(folder.name, ignore_errors=ignore_errors, dir_fd=parent)

    def make(self, folder: Path, *, exist_ok: bool = False) -> int:
        """Make `folder` in its parent (already opened here) and open it by name there,
        never through a link: a new folder's descriptor, fsynced and closed with the rest.
        With `exist_ok` a folder already there is opened instead (a link there: `OSError`)."""
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
    """Make the folder `name` in the folder `parent` (a descriptor) and open it by name
    there, never through a link: its descriptor, for the caller to close.  With
    `exist_ok` a folder already there is opened instead (a link there: `OSError`)."""
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:
        if not exist_ok:
            raise
    return os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=parent)


def open_folder_at(fd: int, name: str) -> int | None:
    """A descriptor of the folder `name` in the folder open as `fd`, opened by name and
    never through a link (`O_NOFOLLOW`); None when it is not there, is a file, or is a
    link (gone since it was listed, or swapped meanwhile: `mode_at` tells a link)."""
    try:
        return os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise


def mode_at(fd: int, name: str) -> int | None:
    """The mode of `name` in the folder open as `fd`, not following a link (`st_mode` of
    an lstat by name there); None if it cannot be stat'ed (gone since it was listed)."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        return None


def rename_in_vault(root: Path | str, src: Path, dest: Path) -> None:
    """Rename `src` to `dest` (both in the vault `root`) through their folders opened and
    checked from the root, then fsync both: refused (`NotInVault`) with nothing moved
    when a folder on either path is a link or leaves the vault."""
    with checked_folders(root) as folders:
        folders.rename(src, dest)


def unlink_in_vault(
    root: Path | str | None, path: Path, *, missing_ok: bool = False, durable: bool = True
) -> None:
    """Remove the file `path` by its name in its folder as opened and checked from `root`
    (fsynced after, if `durable`): a folder on its path swapped for a link is refused
    (`NotInVault`), never the link target's file of that name removed."""
    with checked_folders(root, durable=durable) as folders:
        folders.unlink(path, missing_ok=missing_ok)


def remove_tree_in_vault(root: Path | str | None, folder: Path, *, ignore_errors: bool = True) -> None:
    """`shutil.rmtree(folder)` by its name in its folder as opened and checked from `root`,
    walked by descriptor (`CheckedFolders.remove_tree`): a folder on its path swapped for a
    link is refused (`NotInVault`), its target never emptied."""
    with checked_folders(root, durable=False) as folders:
        folders.remove_tree(folder, ignore_errors=ignore_errors)


def fsync_folder(folder: Path, root: Path | str) -> None:
    """`os.fsync` of a vault folder, opened and checked from `root`: a folder swapped for
    a link is refused (`NotInVault`), not the link's target synced in its place."""
    with checked_folders(root) as folders:
        folders.fd(folder)


def _rel(path: Path, base: str) -> str:
    full, head = os.fspath(path).rstrip("/"), base.rstrip("/") + "/"
    if full + "/" == head:
        return ""  # the root folder itself
    return full[len(head) :] if full.startswith(head) else full  # not under it: refused


def _remove_opened(fd: int, opened: str) -> None:
    """Remove the file open as `fd`, named by its real path `opened`, if that name is
    still that file (a path through the link could by now name another one)."""
    try:
        here, there = os.fstat(fd), os.lstat(opened)
    except OSError:
        return
    if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
        os.unlink(opened)

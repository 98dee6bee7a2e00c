"""A turn folder as bytes: reading every file of one (bytes, sha256, mode, mtime) and
writing it back exactly, for the Parquet cold store (`indexers.archive`)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from events.errors import NotInVault
from events.fsio import CheckedFolders, checked_folders, make_folder, read_vault_file

from .documents import sha256_bytes
from .errors import ArchiveError
from .walk import is_utf8_name, walk_tree

__all__ = ["FileEntry", "TurnFiles", "TurnKey", "collect_turn_files", "folder_signature", "write_turn_folder"]

TurnKey = tuple[str, str]


@dataclass(frozen=True)
class FileEntry:
    """One file (or empty folder, `path` ending in '/') of a turn folder."""

    path: str
    data: bytes
    mode: int
    mtime_ns: int
    sha256: str

    @property
    def is_dir(self) -> bool:
        return self.path.endswith("/")


@dataclass(frozen=True)
class TurnFiles:
    """Every file of one turn folder, in path order."""

    user: str
    turn: str
    created_at: datetime
    files: tuple[FileEntry, ...]

    @property
    def key(self) -> TurnKey:
        return (self.user, self.turn)

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    @property
    def month(self) -> str:
        return self.created_at.astimezone(UTC).strftime("%Y-%m")

    @property
    def size(self) -> int:
        return sum(len(f.data) for f in self.files)

    def checksums(self) -> dict[str, str]:
        return {f.path: f.sha256 for f in self.files}

    def signature(self) -> dict[str, tuple[int, int]]:
        """What `folder_signature` returns for the folder these files were read from."""
        return {f.path: (len(f.data), f.mtime_ns) for f in self.files}

    def file(self, name: str) -> bytes | None:
        return next((entry.data for entry in self.files if entry.path == name), None)


def folder_signature(folder: Path, root: Path | None = None) -> dict[str, tuple[int, int]]:
    """path → (size, mtime_ns) of every file in `folder` (empty folders: (0, mtime)), walked as
    `collect_turn_files` walks it; none for a folder that is a link or under one."""
    try:
        found = walk_tree(folder, root)
    except NotInVault:
        return {}
    return {rel: (0 if rel.endswith("/") else st.st_size, st.st_mtime_ns) for rel, st in found}


def collect_turn_files(
    folder: Path, user: str, turn: str, created_at: datetime, *, root: Path | None = None
) -> TurnFiles:
    """Read every file of a turn folder of the vault `root`, listed by descriptor and read
    through `read_vault_file`; links and special files are refused (`ArchiveError`)."""
    base, under = (folder, "") if root is None else (root, folder.relative_to(root).as_posix() + "/")
    entries: list[FileEntry] = []
    try:
        for rel, st in walk_tree(folder, root):
            if not is_utf8_name(rel):  # no Parquet row (a UTF-8 column) can name it
                shown = os.fsencode(rel).decode("utf-8", "replace")
                raise ArchiveError(f"{folder}: {shown} has a name that is not UTF-8 text (rename it)")
            if rel.endswith("/"):
                entries.append(
                    FileEntry(rel, b"", stat.S_IMODE(st.st_mode), st.st_mtime_ns, sha256_bytes(b""))
                )
                continue
            if not stat.S_ISREG(st.st_mode):
                raise ArchiveError(f"{folder}: {rel} is not a regular file (symlink or special)")
            for _ in range(3):  # what is opened is checked, not what was listed: a file
                data, st = read_vault_file(base, under + rel)  # swapped for a link since is refused
                after = os.lstat(folder / rel)
                if (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, len(data), st.st_mtime_ns):
                    break  # else written while we read it: read again
            else:
                raise ArchiveError(f"{folder}: {rel} keeps changing while it is read")
            entries.append(FileEntry(rel, data, stat.S_IMODE(st.st_mode), st.st_mtime_ns, sha256_bytes(data)))
    except FileNotFoundError as exc:
        raise ArchiveError(f"{folder}: changed while it was read ({exc.filename})") from None
    except NotInVault as exc:
        raise ArchiveError(f"{folder}: {exc}") from None
    if not entries:
        raise ArchiveError(f"{folder}: empty turn folder")
    return TurnFiles(user, turn, created_at.astimezone(UTC), tuple(entries))


def write_turn_folder(turn: TurnFiles, dest: Path, *, root: Path | None = None) -> None:
    """Recreate a turn folder at `dest` (which must not exist) with bytes, modes and mtimes,
    every folder and file made by name in its checked parent, never through a link.  Not
    fsynced: the caller syncs once per batch before renaming `dest` into place."""
    make_folder(dest.parent, root)
    with checked_folders(root, durable=False) as folders:
        folders.fd(dest.parent, target=dest)
        folders.make(dest)
        made: dict[Path, FileEntry] = {}
        for entry in turn.files:
            target = dest / entry.path
            if entry.is_dir:
                _make_below(folders, dest, target)
                made[target] = entry
                continue
            folder = _make_below(folders, dest, target.parent)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(target.name, flags, 0o600, dir_fd=folder)
            try:
                view = memoryview(entry.data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, entry.mode)
                os.utime(fd, ns=(entry.mtime_ns, entry.mtime_ns))
            finally:
                os.close(fd)
        for path, entry in sorted(made.items(), key=lambda item: -len(item[0].parts)):
            fd = folders.fd(path)
            os.fchmod(fd, entry.mode)
            os.utime(fd, ns=(entry.mtime_ns, entry.mtime_ns))


def _make_below(folders: CheckedFolders, dest: Path, folder: Path) -> int:
    """The descriptor of `folder` (`dest` or below), each part made if missing in its parent."""
    if folder != dest:
        _make_below(folders, dest, folder.parent)
    return folders.make(folder, exist_ok=True)

"""Which files of the vault are documents: the walk every rebuild, reconcile, verify and
promotion scan makes, from the listings alone.

Links are never documents and linked folders are never entered: each goes to the caller's
`refused` list.  The walk goes by descriptor, each folder opened by name in its parent's,
so a folder swapped for a link after its parent was listed names nothing of its target.
A rebuild's walk also reads the turn folders (`read_turn_folders`), by name in each
folder's descriptor."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path

from events.errors import NotInVault
from events.fsio import (
    FOLDER_FLAGS,
    HARD_LINK,
    open_folder_at,
    open_vault_folder,
    read_in_folder,
    refusal,
    refusal_at,
)
from events.layout import NOT_DOCUMENTS, TURN_DIR_RE, TURN_DOCUMENTS, DocRef, classify

from .documents import Loaded, Skipped, read_checked

__all__ = [
    "NOT_UTF8",
    "is_utf8_name",
    "not_utf8",
    "read_turn_folders",
    "refused_files",
    "scan_documents",
    "walk_documents",
    "walk_tree",
]


def scan_documents(
    root: Path, under: str | None = None, *, refused: list[Skipped] | None = None
) -> dict[str, tuple[int, int]]:
    """Every document path (vault-relative) with its (mtime_ns, size).  Links, linked folders
    and hard-linked files go to `refused` with their reason; only documents cost a stat."""
    found: dict[str, tuple[int, int]] = {}
    refused = [] if refused is None else refused
    for rel, entry in walk_documents(root, under, refused=refused):
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if refusal(st) == "hard_link":  # read by no one (`events.fsio`): named, as a link is
            refused.append(Skipped(rel, HARD_LINK, refused=True))
            continue
        found[rel] = (st.st_mtime_ns, st.st_size)
    return found


def walk_documents(
    root: Path,
    under: str | None = None,
    *,
    refused: list[Skipped] | None = None,
    turn_folders: list[str] | None = None,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Each document of the vault (or of `under`): its vault-relative path and directory
    entry, by `scan_documents`' rules.  With `turn_folders`, turn folders are listed, not
    entered, for `read_turn_folders`.  Walked by descriptor from `under` checked from the
    root; an entry is good for `stat` only while the walk is on."""
    refused = [] if refused is None else refused
    if under:
        parts = under.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return
        for depth in range(1, len(parts) + 1):  # a linked folder on the way: not ours to walk
            step = root.joinpath(*parts[:depth])
            if step.is_symlink():
                refused.append(Skipped("/".join(parts[:depth]), _LINK_REASON, refused=True))
                return
        try:
            top = open_vault_folder(root, under)
        except (FileNotFoundError, NotADirectoryError, NotInVault):  # (a link since: refused)
            return
        prefix = under + "/"
    else:
        top, prefix = os.open(root, FOLDER_FLAGS), ""
    try:
        yield from _walk_folder(top, prefix, refused, turn_folders)
    finally:
        os.close(top)


def read_turn_folders(
    root: Path,
    folders: Iterable[str],
    *,
    refused: list[Skipped],
    max_bytes: int,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, DocRef, Loaded]]:
    """Each document in the turn `folders`: its path, what it is, and what `read_checked`
    makes of its bytes, read by name in its checked folder; `progress` hears of each folder."""
    parent_rel, parent = "", -1
    try:
        for folder in folders:
            head, _, name = folder.rpartition("/")
            if head != parent_rel:
                if parent >= 0:
                    os.close(parent)
                try:
                    parent = open_vault_folder(root, head)
                except (FileNotFoundError, NotADirectoryError, NotInVault):  # gone, or a link since
                    parent = -1
                parent_rel = head
            if parent >= 0:
                yield from _read_turn_folder(parent, name, folder, refused, max_bytes)
            if progress is not None:
                progress(1)
    finally:
        if parent >= 0:
            os.close(parent)


def _read_turn_folder(
    parent: int, name: str, folder: str, refused: list[Skipped], max_bytes: int
) -> Iterator[tuple[str, DocRef, Loaded]]:
    """`read_turn_folders` of the one folder `name` in the folder open as `parent`."""
    sub = _open_sub(parent, name, folder + "/", refused)
    if sub is None:
        return
    try:
        # each opened by name, not listed; the seldom one asked for first (`access`: cheaper
        # than an open that fails, and true for a link, which the read then refuses)
        for doc in TURN_DOCUMENTS:
            if doc != TURN_DOCUMENTS[0] and not os.access(doc, os.F_OK, dir_fd=sub, follow_symlinks=False):
                continue
            rel = f"{folder}/{doc}"
            loaded = read_checked(rel, partial(read_in_folder, sub, doc, rel), max_bytes)
            if isinstance(loaded, Skipped) and loaded.refused:  # as the walk names it, or skips it
                kind = refusal_at(doc, dir_fd=sub)
                if kind == "folder":
                    continue
                if kind == "symlink":
                    loaded = Skipped(rel, _LINK_REASON, refused=True)
            if loaded is not None:
                ref = classify(rel)
                assert ref is not None  # (a turn folder's name matched `TURN_DIR_RE`)
                yield rel, ref, loaded
    finally:
        os.close(sub)


def _open_sub(fd: int, name: str, rel_dir: str, refused: list[Skipped]) -> int | None:
    """`open_folder_at(fd, name)`; a link in its place since it was listed is refused."""
    sub = open_folder_at(fd, name)
    if sub is None and refusal_at(name, dir_fd=fd) == "symlink":
        refused.append(Skipped(rel_dir.rstrip("/"), _LINK_REASON, refused=True))
    return sub


def _walk_folder(
    fd: int, rel_dir: str, refused: list[Skipped], turn_folders: list[str] | None = None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """`walk_documents` below the folder open as `fd` (at `rel_dir`)."""
    with os.scandir(fd) as listing:
        entries = list(listing)
    top = not rel_dir
    folders: list[str] = []
    for entry in entries:
        name = entry.name
        if name[0] == "." or (top and name in NOT_DOCUMENTS):
            continue
        if not is_utf8_name(name):  # no document's path may hold it (its id, the index, JSON)
            if name.endswith(".md") or entry.is_dir(follow_symlinks=False):
                refused.append(not_utf8(rel_dir + name))
            continue
        if entry.is_symlink():  # d_type only: no system call
            refused.append(Skipped(rel_dir + name, _LINK_REASON, refused=True))
            continue
        if entry.is_dir(follow_symlinks=False):
            folders.append(name)
            continue
        if not name.endswith(".md"):
            continue
        rel = rel_dir + name
        if classify(rel) is None:
            continue
        if not entry.is_file(follow_symlinks=False):  # d_type again: a fifo, a socket…
            if refusal_at(name, dir_fd=fd) is not None:  # (not just removed)
                refused.append(Skipped(rel, "is not a regular file", refused=True))
            continue
        yield rel, entry
    turns = rel_dir.startswith("users/") and rel_dir.endswith("/turns/") and rel_dir.count("/") == 3
    if turn_folders is not None and turns:  # a user's turn folders: listed for the caller, not walked
        turn_folders += (rel_dir + name for name in sorted(folders) if TURN_DIR_RE.fullmatch(name))
        folders = [name for name in folders if not TURN_DIR_RE.fullmatch(name)]
    for name in folders:
        sub = _open_sub(fd, name, rel_dir + name + "/", refused)
        if sub is None:
            continue
        try:
            yield from _walk_folder(sub, rel_dir + name + "/", refused, turn_folders)
        finally:
            os.close(sub)


_LINK_REASON = "is a symbolic link (never followed)"
NOT_UTF8 = "has a name that is not UTF-8 text (rename it to be read)"


def not_utf8(rel: str) -> Skipped:
    """The refusal of a path that is not UTF-8, named with U+FFFD for its bad bytes."""
    return Skipped(os.fsencode(rel).decode("utf-8", "replace"), NOT_UTF8, refused=True)


def is_utf8_name(name: str) -> bool:
    """False for a name whose bytes were not UTF-8 (they arrive as lone surrogates)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def refused_files(root: Path) -> Iterator[tuple[str, str]]:
    """Every entry of the vault the one rule refuses, documents or not: its path and kind.
    Walked by `walk_tree`; top-level dot folders are not entered."""
    for rel, st in walk_tree(root, skip=lambda rel: rel.startswith(".")):
        kind = refusal(st)
        if kind is not None and kind != "folder":
            yield rel, kind


def walk_tree(
    folder: Path, root: Path | None = None, *, skip: Callable[[str], bool] | None = None
) -> list[tuple[str, os.stat_result]]:
    """(path relative to `folder`, lstat) of every file, link and empty folder below it
    (an empty folder's path ends in `/`), sorted, walked by descriptor from `folder` checked
    from `root` (None: not checked).  A linked folder is listed, never entered, nor a folder
    `skip(its path)` names."""
    try:
        if root is None:
            top = os.open(folder, FOLDER_FLAGS)
        else:
            top = open_vault_folder(root, folder.relative_to(root).as_posix())
    except (FileNotFoundError, NotADirectoryError):  # gone (or never a folder): nothing in it
        return []
    found: list[tuple[str, os.stat_result]] = []
    try:
        for dirpath, dirnames, filenames, fd in os.fwalk(".", dir_fd=top):
            dirnames.sort()
            rel_dir = os.path.normpath(dirpath)
            prefix = "" if rel_dir == "." else rel_dir + "/"
            if prefix and not dirnames and not filenames:
                found.append((prefix, os.fstat(fd)))
            for name in sorted(filenames) + dirnames:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:  # removed since the listing
                    continue
                if name in filenames or stat.S_ISLNK(st.st_mode):  # a linked folder: never entered
                    found.append((prefix + name, st))
            if skip is not None:
                dirnames[:] = [name for name in dirnames if not skip(prefix + name)]
    finally:
        os.close(top)
    found.sort(key=lambda item: item[0])
    return found

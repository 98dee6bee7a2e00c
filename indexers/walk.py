"""Which files of the vault are documents: the walk every rebuild, reconcile, verify and
promotion scan makes, from the listings alone.

Symbolic links are never documents and linked folders are never entered: each one met
goes to the caller's `refused` list (verify names them).  The walk goes by descriptor,
each folder opened by name in its parent's and never through a link, so a folder
swapped for one after its parent was listed names nothing of the link's target.
(Split from `indexers.sync` when the walk went by descriptor.)
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from events import classify
from events.errors import NotInVault
from events.opened import FOLDER_FLAGS, HARD_LINK, has_other_names, mode_at
from events.vaultread import open_vault_folder

from .documents import Skipped

__all__ = ["SKIP_TOP", "scan_documents", "walk_documents"]

SKIP_TOP = frozenset({"indexes", "inbox", "outbox", "observability"})


def scan_documents(
    root: Path,
    under: str | None = None,
    *,
    refused: list[Skipped] | None = None,
) -> dict[str, tuple[int, int]]:
    """Every document path (vault-relative) with its (mtime_ns, size).

    Symbolic links are never documents and linked folders are never entered; each one
    met (any file or folder, pointing anywhere) goes to `refused` with its reason, and so
    does a file with other names (a hard link: `events.opened.HARD_LINK`).
    `os.scandir` tells links and folders apart from the directory listing itself, so
    only documents cost a stat.
    """
    found: dict[str, tuple[int, int]] = {}
    for rel, entry in walk_documents(root, under, refused=refused):
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if has_other_names(st):  # read by no one (`events.vaultread`): named, as a link is
            if refused is not None:
                refused.append(Skipped(rel, HARD_LINK, refused=True))
            continue
        found[rel] = (st.st_mtime_ns, st.st_size)
    return found


def walk_documents(
    root: Path,
    under: str | None = None,
    *,
    refused: list[Skipped] | None = None,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Each document of the vault (or of the folder `under`): its vault-relative path
    and directory entry, read from the listings alone (`scan_documents`' rules).  A
    rebuild keeps only the paths: no stat, nothing else per document held.

    Walked by descriptor: `under` opened and checked from the root (`open_vault_folder`),
    each folder below opened by name in its parent's descriptor, never through a link,
    and listed by its own: a folder swapped for a link after its parent was listed is
    refused (named as a link), nothing in it named.  An entry is good for `stat` only
    while the walk is on (its folder's descriptor is closed once walked)."""
    if under:
        parts = under.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return
        for depth in range(1, len(parts) + 1):  # a linked folder on the way: not ours to walk
            step = root.joinpath(*parts[:depth])
            if step.is_symlink():
                if refused is not None:
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
        yield from _walk_folder(top, prefix, refused)
    finally:
        os.close(top)


def _walk_folder(
    fd: int, rel_dir: str, refused: list[Skipped] | None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """`walk_documents` below the folder open as `fd` (vault-relative `rel_dir`)."""
    with os.scandir(fd) as listing:
        entries = list(listing)
    top = not rel_dir
    folders: list[str] = []
    for entry in entries:
        name = entry.name
        if name[0] == "." or (top and name in SKIP_TOP):
            continue
        if entry.is_symlink():  # d_type only: no system call
            if refused is not None:
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
            if refused is not None and mode_at(fd, name) is not None:  # (not just removed)
                refused.append(Skipped(rel, "is not a regular file", refused=True))
            continue
        yield rel, entry
    for name in folders:
        try:
            sub = os.open(name, FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            continue  # removed since it was listed
        except OSError as exc:  # ELOOP / ENOTDIR: a link (or a file) in its place since
            if stat.S_ISLNK(mode_at(fd, name) or 0):
                if refused is not None:
                    refused.append(Skipped(rel_dir + name, _LINK_REASON, refused=True))
            elif not isinstance(exc, NotADirectoryError):
                raise
            continue
        try:
            yield from _walk_folder(sub, rel_dir + name + "/", refused)
        finally:
            os.close(sub)


_LINK_REASON = "is a symbolic link (never followed)"

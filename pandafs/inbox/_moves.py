"""Giving files their names without ever overwriting one: free names, hard links that
never replace, and removing a folder only once it is empty."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from events.fsio import CheckedFolders, checked_folders, vault_folder


def rejected_name(name: str) -> str:
    """A rejected file keeps its bytes but not a name Obsidian would parse as a note
    (a binary `x.md` crashes vault tooling): `x.md` → `x.md.rejected`."""
    return f"{name}.rejected" if name.lower().endswith(".md") else name


def free_name(
    folder: Path, name: str, reserved: Iterable[str] = (), *, companions: tuple[str, ...] = ()
) -> Path:
    """`folder/name`, or `folder/stem-2.ext`, `-3`... : the first name not taken."""
    taken = set(reserved)
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    n = 1
    while True:
        candidate = name if n == 1 else (f"{stem}-{n}.{ext}" if ext else f"{stem}-{n}")
        path = folder / candidate
        paths = [path, *(Path(f"{path}{c}") for c in companions)]
        if not any(p.exists() or str(p) in taken for p in paths):
            return path
        n += 1


def link_no_replace(root: Path, src: Path, dest: Path) -> bool:
    """Make `dest` name the file `src` names; False if `dest` is another file already.

    A hard link never replaces a name; without hard links (or for a folder) we check then
    rename under the inbox lock.  Both folders are opened and checked from `root` and
    fsynced, so one swapped for a link is refused and `src` keeps its name."""
    vault_folder(root, dest.parent)
    with checked_folders(root) as folders:
        src_fd = folders.fd(src.parent, target=src)
        dest_fd = folders.fd(dest.parent, target=dest)
        try:
            os.link(src.name, dest.name, src_dir_fd=src_fd, dst_dir_fd=dest_fd, follow_symlinks=False)
        except FileExistsError:
            return bool(_same_file(folders, src, dest))
        except OSError:
            return _rename_no_replace(folders, src, dest)
        return True


def _rename_no_replace(folders: CheckedFolders, src: Path, dest: Path) -> bool:
    """`link_no_replace` on a filesystem without hard links: rename `src` to `dest`
    unless that name is taken (then: True if it is `src`'s file)."""
    same = _same_file(folders, src, dest)
    if same is None:
        folders.rename(src, dest)
        return True
    return same


def _same_file(folders: CheckedFolders, src: Path, dest: Path) -> bool | None:
    """Whether `dest` is `src`'s file, both looked up in their checked folders and neither
    followed if a link; None if `dest` is not there."""
    try:
        there = os.stat(dest.name, dir_fd=folders.fd(dest.parent, target=dest), follow_symlinks=False)
    except FileNotFoundError:
        return None
    here = os.stat(src.name, dir_fd=folders.fd(src.parent, target=src), follow_symlinks=False)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def remove_empty_tree(folders: CheckedFolders, top: Path) -> str | None:
    """Remove `top` if it holds only empty folders; else name one file it still holds.
    Walked by descriptor from folders checked from the vault root, never through a link."""
    try:
        top_fd = folders.fd(top)
    except FileNotFoundError:
        return None
    for dirpath, dirnames, filenames, fd in os.fwalk(".", topdown=False, dir_fd=top_fd):
        here = top / dirpath
        if filenames:
            return str(here / filenames[0])
        for name in dirnames:
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                return str(here / name)
    try:
        os.rmdir(top.name, dir_fd=folders.fd(top.parent, target=top))
    except FileNotFoundError:
        pass
    except OSError:
        return str(top)
    return None

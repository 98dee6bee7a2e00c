"""Giving files their names without ever overwriting one: free names, hard links that
never replace, and removing a folder only once it is empty."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from events.fsio import fsync_dir, vault_folder
from events.opened import check_made, open_folder


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

    A hard link never replaces an existing name, so nothing is ever overwritten.  On a
    filesystem without hard links we fall back to check-then-rename (we hold the inbox
    lock; only a person could race us there).  `dest`'s folder is checked from `root`
    down (`vault_folder`): a linked folder is refused, and so is one swapped for a link
    after that check (`check_made` removes the new name again; the rename goes into the
    folder descriptor `open_folder` checked, so `src` keeps its name when refused).
    """
    vault_folder(root, dest.parent)
    try:
        os.link(src, dest)
    except FileExistsError:
        return os.path.samefile(src, dest)
    except OSError:
        return _rename_no_replace(root, src, dest)
    check_made(root, dest)
    fsync_dir(dest.parent)
    return True


def _rename_no_replace(root: Path, src: Path, dest: Path) -> bool:
    """`link_no_replace` on a filesystem without hard links: rename `src` to `dest`
    unless that name is taken (then: True if it is `src`'s file)."""
    folder = open_folder(dest.parent, root, target=dest)
    try:
        try:
            there = os.stat(dest.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(src, dest.name, dst_dir_fd=folder)
            os.fsync(folder)
            return True
        here = os.stat(src)
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
    finally:
        os.close(folder)


def remove_empty_tree(top: Path) -> str | None:
    """Remove `top` if it holds only empty folders; else name one file it still holds."""
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        if filenames:
            return os.path.join(dirpath, filenames[0])
        for name in dirnames:
            try:
                os.rmdir(os.path.join(dirpath, name))
            except OSError:
                return os.path.join(dirpath, name)
    try:
        os.rmdir(top)
    except FileNotFoundError:
        pass
    except OSError:
        return str(top)
    return None

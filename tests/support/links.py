"""A folder swapped for a link between our check and our use: what someone who can write
the folder's parent does to carry a write out of the vault."""

from __future__ import annotations

from pathlib import Path

__all__ = ["moved_aside", "swap_for_link"]


def moved_aside(folder: Path) -> Path:
    """Where `swap_for_link` put the real folder."""
    return folder.with_name(folder.name + ".moved")


def swap_for_link(folder: Path, outside: Path) -> None:
    """Move `folder` aside (`moved_aside`) and put a link to the folder `outside` in its
    place; nothing if it is a link already (a hook may fire more than once)."""
    if not folder.is_symlink():
        folder.rename(moved_aside(folder))
        folder.symlink_to(outside, target_is_directory=True)

"""`vault_folder` makes a missing folder in the folder it checked, never by path: a
folder on the way swapped for a link between the check and the `mkdir` (what someone who
can write the folder's parent does) makes nothing outside the vault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from events.errors import NotInVault
from events.fsio import vault_folder
from tests.support.links import moved_aside, swap_for_link


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def test_a_folder_swapped_before_the_mkdir_makes_nothing_outside(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    (root / "users" / "ann").mkdir(parents=True)
    real_mkdir = os.mkdir

    def swapped_then_made(path: str | Path, *args: object, **kwargs: object) -> None:
        if Path(path).name == "turns":  # checked up to here: now the parent turns into a link
            swap_for_link(root / "users" / "ann", outside)
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", swapped_then_made)
    vault_folder(root, root / "users" / "ann" / "turns")
    assert os.listdir(outside) == []
    assert (moved_aside(root / "users" / "ann") / "turns").is_dir()  # made where it was checked


def test_links_and_files_on_the_way_are_refused_by_name(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "vault"
    (root / "users").mkdir(parents=True)
    (root / "users" / "bob").symlink_to(outside, target_is_directory=True)
    (root / "notes").write_text("a file, not a folder\n")
    with pytest.raises(NotInVault, match="users/bob.*symbolic link"):
        vault_folder(root, root / "users" / "bob" / "turns")
    with pytest.raises(NotInVault, match="notes.*not a folder"):
        vault_folder(root, root / "notes" / "x")
    with pytest.raises(FileNotFoundError):
        vault_folder(root, root / "users" / "cy" / "turns", create=False)
    assert os.listdir(outside) == []
    assert not (root / "users" / "cy").exists()
    assert vault_folder(root, root / "users" / "cy" / "turns") == root / "users" / "cy" / "turns"
    assert (root / "users" / "cy" / "turns").is_dir()


def test_open_vault_folder_refuses_a_link_and_names_a_file(tmp_path: Path, outside: Path) -> None:
    """The folder a reader lists is opened as a file is: a link in its place, or on its way,
    is `NotInVault`; a file there is `NotADirectoryError`; a real folder opens."""
    from events.fsio import open_vault_folder

    root = tmp_path / "vault"
    (root / "users" / "ann" / "turns").mkdir(parents=True)
    (root / "users" / "ann" / "facts.md").write_text("x")
    (root / "users" / "bob").symlink_to(outside, target_is_directory=True)
    (outside / "turns").mkdir()
    os.close(open_vault_folder(root, "users/ann/turns"))
    with pytest.raises(NotInVault, match="is a symbolic link"):
        open_vault_folder(root, "users/bob")
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        open_vault_folder(root, "users/bob/turns")
    with pytest.raises(NotADirectoryError):
        open_vault_folder(root, "users/ann/facts.md")

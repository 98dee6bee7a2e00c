"""The example vault the repository tracks: made by `init`, and never written by a command
run without `--root` in a checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "panda-system-docs"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_makes_the_example_vaults_config_and_obsidian_files(cli, tmp_path: Path) -> None:
    """If this fails, init's defaults changed: copy a fresh `pandafs --root DIR init`'s
    files over the example vault's."""
    assert cli("--root", tmp_path / "fresh", "init").code == 0
    for name in ("pandafs.toml", ".obsidian/app.json", ".obsidian/core-plugins.json"):
        assert (tmp_path / "fresh" / name).read_bytes() == (EXAMPLE / name).read_bytes(), name


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "I prefer window seats", "--user", "demo"],
        ["search", "hamster", "--user", "demo"],
        ["save", "I like tea", "--user", "demo"],
        ["init"],
        ["watch", "--once"],
    ],
)
def test_no_command_without_root_writes_into_a_checkouts_example_vault(
    tmp_path: Path, args: list[str]
) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(EXAMPLE, checkout / "panda-system-docs")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    before = _snapshot(checkout)
    env = {k: v for k, v in os.environ.items() if k != "PANDAFS_ROOT"}
    done = subprocess.run(
        [sys.executable, "-m", "pandafs", *args], cwd=checkout, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--root" in done.stderr and "example vault" in done.stderr
    assert _snapshot(checkout) == before
    assert not (checkout / "panda-system-docs" / "indexes").exists()


def test_the_example_vault_is_served_when_asked_for_by_name(cli, tmp_path: Path) -> None:
    vault = tmp_path / "example"
    shutil.copytree(EXAMPLE, vault)
    found = cli("--root", vault, "search", "sunflower seeds", "--user", "demo", "--json")
    assert found.code == 0 and found.json


def test_tools_needs_no_vault_anywhere(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PANDAFS_ROOT"}
    done = subprocess.run(
        [sys.executable, "-m", "pandafs", "tools", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr

"""Vault creation and atomic turn allocation across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from pandafs.config import Config
from pandafs.vault import Vault
from tests.support.turns import allocate_turns

from ..conftest import REPO


def test_init_creates_layout_config_and_obsidian(tmp_path: Path) -> None:
    vault, created = Vault.init(tmp_path / "v")
    for name in ("inbox", "outbox", "users", "knowledge", "site_knowledge", "indexes", "archive"):
        assert (vault.root / name).is_dir()
    config_text = vault.layout.config_file.read_text()
    assert Config.model_validate(tomllib.loads(config_text)) == Config()
    assert "# " in config_text  # commented
    app = json.loads((vault.root / ".obsidian" / "app.json").read_text())
    assert "indexes/" in app["userIgnoreFilters"]
    json.loads((vault.root / ".obsidian" / "core-plugins.json").read_text())
    assert (vault.root / "Home.md").exists()
    _, again = Vault.init(tmp_path / "v")
    assert again == []  # idempotent, keeps what exists


def test_allocation_is_sequential(vault: Vault) -> None:
    assert allocate_turns(vault, "alice", 3) == ["turn_000001", "turn_000002", "turn_000003"]
    assert allocate_turns(vault, "alice") == ["turn_000004"]
    assert allocate_turns(vault, "bob") == ["turn_000001"]


def test_lost_counter_never_reuses_a_number(vault: Vault) -> None:
    allocate_turns(vault, "alice", 5)
    (vault.layout.turns_dir("alice") / ".counter").unlink()
    stub = vault.layout.archive_stub("alice", "turn_000009")
    stub.parent.mkdir(parents=True)
    stub.write_text("archived")
    assert allocate_turns(vault, "alice") == ["turn_000010"]


ALLOCATE = """
import sys
from pandafs.vault import Vault
vault = Vault.open(sys.argv[1])
names = []
for _ in range(200):
    with vault.new_turn("alice") as name:
        names.append(name)
print("\\n".join(names))
"""


def test_two_processes_get_distinct_numbers(vault: Vault) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ALLOCATE, str(vault.root)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    together = outputs[0] + outputs[1]
    assert len(together) == 400
    assert len(set(together)) == 400
    assert sorted(together) == [f"turn_{n:06d}" for n in range(1, 401)]


def test_reserved_turns_are_never_allocated_and_a_taken_name_is_not_placed(vault: Vault) -> None:
    """Bulk writers reserve numbers, build folders aside, then place them whole."""
    reserved = vault.reserve_turns("alice", 3)
    assert reserved == ["turn_000001", "turn_000002", "turn_000003"]
    assert not any((vault.layout.turns_dir("alice") / name).exists() for name in reserved)
    assert allocate_turns(vault, "alice") == ["turn_000004"]
    staging = vault.layout.turns_dir("alice") / ".staging"
    for name in reserved:
        (staging / name).mkdir(parents=True)
        (staging / name / "events.jsonl").write_bytes(b"x\n")
    (vault.layout.turns_dir("alice") / "turn_000002").mkdir()  # taken meanwhile (a lost counter)
    assert vault.place_turns("alice", [(name, staging / name) for name in reserved]) == ["turn_000002"]
    assert (vault.layout.turns_dir("alice") / "turn_000001" / "events.jsonl").exists()
    assert not any((vault.layout.turns_dir("alice") / "turn_000002").iterdir())  # left as it was
    assert (staging / "turn_000002").is_dir()  # for the writer to rebuild under a new number

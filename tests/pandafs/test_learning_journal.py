"""The learning cache is a snapshot and a journal: a Save appends a line to the journal (and
one on each side of rewriting a memory file) and rewrites no file of the cache; a journal
that outgrows its snapshot is folded into a new one; a crash at any point leaves files that
fold to the state the events give (a torn line: recomputed; an old journal left beside a new
snapshot: never folded twice); a state kept in one process sees what another process
appended.  Real vault, real pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from pandafs.assembly import open_memory
from pandafs.learning import state as state_module
from pandafs.learning.api import rebuild
from pandafs.learning.engine import Learning
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.learning import T0, cache_json, sync

HAMSTER = "Biscuit the Syrian hamster loves sunflower seeds and hides them in his cheeks."
QUERIES = ("What does my hamster Biscuit eat?", "thanks!", "Where does Biscuit hide his seeds?")


def _files(cache: Path) -> dict[str, tuple[int, int]]:
    """Each file of the cache: (inode, mtime)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(cache.iterdir())}


def _ask(pipeline: Pipeline, clock: dict[str, datetime], n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        clock["t"] = T0 + timedelta(hours=1 + i)
        pipeline.ask(QUERIES[i % len(QUERIES)], user="alice")


def _folded(vault: Vault) -> dict[str, object]:
    """The state as this process keeps it and as a fresh read of the files gives it."""
    with Learning(vault).open() as engine:
        kept = engine.cache.state.dump()
    return {"kept": kept, "files": cache_json(vault)}


def test_a_save_appends_one_line_and_rewrites_no_cache_file(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    _ask(pipeline, clock, 3)
    cache = vault.layout.indexes / "learning"
    journal = cache / orjson.loads((cache / "state.json").read_bytes())["journal"]
    before, lines = _files(cache), journal.read_bytes().count(b"\n")
    _ask(pipeline, clock, 1, start=3)  # its Save folds turn 3 and previews turn 4
    after = _files(cache)
    assert set(after) == set(before) == {"state.json", journal.name}
    assert after["state.json"] == before["state.json"]  # the snapshot is not rewritten
    assert after[journal.name][0] == before[journal.name][0]  # appended to, not replaced
    # a line for the fold; a memory it rewrites is named dirty until written, then cleared
    assert lines < journal.read_bytes().count(b"\n") <= lines + 3


def test_a_journal_that_outgrows_its_snapshot_is_folded_into_a_new_one(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    _ask(pipeline, clock, 2)
    cache = vault.layout.indexes / "learning"
    first = orjson.loads((cache / "state.json").read_bytes())["journal"]
    monkeypatch.setattr(state_module, "JOURNAL_MIN_BYTES", 0)
    _ask(pipeline, clock, 4, start=2)
    sync(vault)
    journals = sorted(p.name for p in cache.glob("journal-*.jsonl"))
    named = orjson.loads((cache / "state.json").read_bytes())["journal"]
    assert named != first and journals in ([], [named])  # the old journals are gone
    folded = _folded(vault)
    assert folded["kept"] == folded["files"]
    rebuild(vault)
    assert cache_json(vault) == folded["files"]


def test_an_old_journal_left_beside_a_new_snapshot_is_never_folded(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """A crash after a new snapshot is written and before the old journal is removed."""
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    _ask(pipeline, clock, 3)
    sync(vault)
    expected = cache_json(vault)
    cache = vault.layout.indexes / "learning"
    stale = cache / "journal-00000000000000000001.jsonl"
    stale.write_bytes(orjson.dumps({"counts": {"alice/turn_000001": [99, 99, 0]}}) + b"\n")
    assert cache_json(vault) == expected
    assert sync(vault).full is False and cache_json(vault) == expected


def test_a_snapshot_naming_a_file_that_is_no_journal_is_stale_and_nothing_else_is_read(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """The journal's name comes from the snapshot, a file anyone can edit: another user's
    document named there is not folded as counts; the cache is recomputed from the events."""
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    _ask(pipeline, clock, 3)
    bob = vault.root / "users" / "bob"
    bob.mkdir(parents=True)
    (bob / "facts.md").write_bytes(orjson.dumps({"counts": {"alice/turn_000001": [99, 99, 0]}}) + b"\n")
    sync(vault)
    expected = cache_json(vault)
    cache = vault.layout.indexes / "learning"
    snapshot = orjson.loads((cache / "state.json").read_bytes())
    snapshot["journal"] = "../../users/bob/facts.md"
    (cache / "state.json").write_bytes(orjson.dumps(snapshot))
    assert sync(vault).full is True
    assert cache_json(vault) == expected


def test_a_kept_state_sees_what_another_process_appended(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    _ask(pipeline, clock, 3)
    sync(vault)  # this process keeps the state it saved
    clock["t"] = T0 + timedelta(hours=9)
    other = subprocess.run(
        [sys.executable, "-m", "pandafs", "--root", str(vault.root), "ask", QUERIES[0], "--user", "alice"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
        check=False,
    )
    assert other.returncode == 0, other.stderr
    assert sync(vault).turns == 1  # the other process's turn, folded here from the journal it left
    folded = _folded(vault)
    assert folded["kept"] == folded["files"]
    rebuild(vault)
    assert cache_json(vault) == folded["files"]


LOOP = """
import sys
from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

questions = {questions!r}
with Pipeline(Vault.open(sys.argv[1]), backend=OfflineBackend()) as pipeline:
    for n in range(10_000):
        pipeline.ask(questions[n % len(questions)], user="alice")
"""


def test_saves_killed_anywhere_fold_to_what_a_rebuild_gives(vault: Vault) -> None:
    """SIGKILL a process in the middle of its turns, again and again: what the learning cache
    says after the next sync is what a recompute from the events says."""
    open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    script = LOOP.format(questions=QUERIES)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    for delay in (2.0, 2.6, 3.1, 2.3):
        child = subprocess.Popen([sys.executable, "-c", script, str(vault.root)], env=env)
        try:
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    assert len(vault.layout.turn_dirs("alice")) > 4
    sync(vault)
    folded = cache_json(vault)
    memories = {p.name: p.read_bytes() for p in (vault.root / "users/alice/memories").glob("*.md")}
    rebuild(vault)
    assert cache_json(vault) == folded
    assert {p.name: p.read_bytes() for p in (vault.root / "users/alice/memories").glob("*.md")} == memories

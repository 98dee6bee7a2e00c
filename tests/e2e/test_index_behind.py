"""A turn's index batch is written behind its answer (`indexers.behind`).

`ask` returns once the turn's events are fsynced and its files written; the index commit
lands meanwhile, and every read of the index in this process waits for it.  A real
process killed after its answer, while its commit waits for the index lock another
process holds, leaves the turn marked `.indexing`: `verify` names it, and the next `ask`
indexes it.  A commit that fails (the lock held past the wait) is said by
`Finisher.settle` and mended the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.config import set_setting

from ..conftest import REPO, run_pandafs

CHILD = r"""
import sys
from pathlib import Path
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

pipeline = Pipeline(Vault.open(Path(sys.argv[1])))
result = pipeline.ask("Where did we put the quokka photos?", user="alice")
print(result.turn, flush=True)
pipeline.finisher.settle()  # waits for the index lock the test holds
print("settled", flush=True)
"""


def _hits(vault: Vault, words: str) -> list[str]:
    return [h["doc_id"] for h in Memory(vault).search(words, user="alice")]


def test_every_read_of_this_process_sees_the_turn_its_ask_wrote_behind(vault: Vault) -> None:
    """Right after `ask` returns, a search through another `Memory` of the same vault (a
    `FullTextIndex` of its own) finds the turn: it waits for the commit in flight."""
    with Pipeline(vault) as pipeline:
        for i in range(3):
            turn = pipeline.ask(f"Remember that my quokka number {i} is called Pip", user="alice").turn
            assert f"alice/{turn}" in _hits(vault, "quokka Pip")
        assert len(pipeline.finisher.behind_ms) == 3
    for turn in ("turn_000001", "turn_000002", "turn_000003"):
        assert not (vault.layout.turn_dir("alice", turn) / ".indexing").exists()


def test_a_process_killed_before_its_commit_landed_leaves_the_turn_for_the_next_ask(vault: Vault) -> None:
    memory = Memory(vault)
    memory.index_paths([])  # the index exists before the child's first search
    with (
        memory.index.batch(),  # another writer holds the index: the child's commit waits
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(vault.root)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc,
    ):
        try:
            assert proc.stdout is not None and proc.stderr is not None
            turn = proc.stdout.readline().strip()  # the answer is out; its commit is not
            assert turn == "turn_000001", proc.stderr.read()
            time.sleep(0.2)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
    folder = vault.layout.turn_dir("alice", turn)
    assert (folder / ".indexing").exists() and (folder / "metadata.json").exists()
    assert _hits(vault, "quokka photos") == []

    checked = run_pandafs("--root", vault.root, "verify", "--json")
    assert checked.code == 1
    assert {"path": f"users/alice/turns/{turn}/.indexing", "kind": "unindexed"}.items() <= next(
        p for p in checked.json["problems"] if p["kind"] == "unindexed"
    ).items()

    with Pipeline(vault) as pipeline:  # the next ask indexes it before its own turn
        pipeline.ask("and the koala?", user="alice")
    assert f"alice/{turn}" in _hits(vault, "quokka photos")
    assert not (folder / ".indexing").exists()
    assert run_pandafs("--root", vault.root, "verify", "--json").json["ok"]


def test_a_commit_that_fails_is_said_by_settle_and_mended_by_verify_repair(vault: Vault) -> None:
    set_setting(vault.root, "writer_wait_s", 0.2)
    memory = Memory(vault)
    memory.index_paths([])
    with Pipeline(vault) as pipeline:
        with memory.index.batch():  # held past the child's wait: its commit fails
            result = pipeline.ask("Where did we put the quokka photos?", user="alice")
            assert result.answer and result.outcome
            try:
                pipeline.finisher.settle()
                raise AssertionError("the failed commit was not said")
            except Exception as exc:  # the index's own error
                assert "busy" in str(exc)
    folder = vault.layout.turn_dir("alice", result.turn)
    assert (folder / ".indexing").exists()
    repaired = run_pandafs("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    assert [(p["path"], p["kind"]) for p in repaired.json["repaired"]] == [
        (f"users/alice/turns/{result.turn}/.indexing", "unindexed")
    ]
    assert f"alice/{result.turn}" in _hits(vault, "quokka photos")
    assert not (folder / ".indexing").exists()

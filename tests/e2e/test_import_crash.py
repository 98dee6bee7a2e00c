"""SIGKILL `pandafs import-turns` (real child processes) at random points, then re-run it.

After every kill, before anything repairs it, no live turn folder is empty or half
written.  The final re-run must leave every line imported exactly once, every turn
in the index (found by a search for its own words), and `pandafs verify` clean.
The seed of the kill points is printed, so a failure can be replayed with
PANDAFS_CRASH_SEED=<seed>.

A vault damaged by an older version (empty turn folders, a turn with events but no
`context.md`, turns the ledger counts as done that never reached the index) is
brought back by `verify --repair`, which names each repair, and a re-run of the
import then adds each missing line once.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from events.log import events_of, read_events, read_log
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.conftest import REPO, run_pandafs

pytestmark = pytest.mark.slow

LINES = 2000  # several seconds of work on any machine: most kills land mid-import
BATCH = 20
KILLS = 6
SEED = int(os.environ.get("PANDAFS_CRASH_SEED", time.time_ns() % 1_000_000))


def _source(tmp_path: Path, count: int = LINES) -> Path:
    source = tmp_path / "turns.jsonl"
    lines = [
        orjson.dumps(
            {
                "user": f"user{i % 3}",
                "external_id": f"c{i}",
                "timestamp": f"2026-0{1 + i % 8}-{1 + i % 27:02d}T10:00:00Z",
                "query": f"question {i} about marker{i}word and gardens",
                "response": f"Answer {i}. " + "Some words about bicycles. " * 3,
            }
        )
        for i in range(count)
    ]
    source.write_bytes(b"\n".join(lines) + b"\n")
    return source


def _wait_until_importing(lock: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until the child holds the import lock (its pid is written in the lock file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if lock.read_text().strip() == str(proc.pid):
                return
        except FileNotFoundError:
            pass
        time.sleep(0.01)


def _assert_no_partial_folder(vault: Vault) -> None:
    for user in vault.layout.users():
        for folder in vault.layout.turn_dirs(user):
            names = {p.name for p in folder.iterdir()}
            assert {"events.jsonl", "context.md", "metadata.json"} <= names, (folder, names)
            log = read_log(folder / "events.jsonl")
            assert log.torn_tail is None and len(events_of(log)) == 3, folder


def _assert_each_line_once_and_indexed(vault: Vault, count: int) -> None:
    seen: dict[str, str] = {}
    for user in vault.layout.users():
        for folder in vault.layout.turn_dirs(user):
            started = read_events(folder / "events.jsonl")[0]
            external = started.data.external_id  # type: ignore[attr-defined]
            assert external not in seen, f"{external} imported twice: {seen[external]} and {folder}"
            seen[external] = f"{user}/{folder.name}"
    assert sorted(seen) == sorted(f"c{i}" for i in range(count))
    memory = Memory(vault)
    indexed = {p for p in memory.index.state() if p.endswith("/context.md")}
    expected = {"users/{}/turns/{}/context.md".format(*doc.split("/")) for doc in seen.values()}
    assert indexed == expected
    for i in range(0, count, max(1, count // 40)):
        hits = memory.search(f"marker{i}word", user=f"user{i % 3}", limit=3, snippets=False)
        assert hits and hits[0]["doc_id"] == seen[f"c{i}"], (i, hits[:1])


def test_import_killed_at_random_points_then_rerun(tmp_path: Path) -> None:
    print(f"PANDAFS_CRASH_SEED={SEED}")
    rng = random.Random(SEED)
    vault, _ = Vault.init(tmp_path / "vault")
    source = _source(tmp_path)
    lock = vault.layout.users_dir / ".import.lock"
    command = [sys.executable, "-m", "pandafs", "--root", str(vault.root), "import-turns", str(source)]
    command += ["--batch-size", str(BATCH), "--json"]
    kills = 0
    for _ in range(KILLS):
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_until_importing(lock, proc)
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        _assert_no_partial_folder(vault)
    print(f"{kills} kills")
    assert kills >= KILLS // 2, "the import finished before most kills: raise LINES"
    final = run_pandafs("--root", vault.root, "import-turns", source, "--json")
    assert final.code == 0, final.err
    report = final.json
    assert report["imported"] + report["skipped"] == LINES and report["failed"] == []
    _assert_no_partial_folder(vault)
    _assert_each_line_once_and_indexed(vault, LINES)
    verified = run_pandafs("--root", vault.root, "verify", "--json")
    assert verified.code == 0, verified.out
    assert verified.json["problems"] == [] and verified.json["repaired"] == []
    assert not any((vault.layout.turns_dir(u) / ".staging").exists() for u in vault.layout.users())


def test_a_killed_batch_is_indexed_by_the_next_run(vault: Vault, tmp_path: Path) -> None:
    """Killed after its turns were placed and recorded, before the index saw them."""
    source = _source(tmp_path, 60)
    memory = Memory(vault)
    calls = 0

    class Killed(BaseException):
        pass

    def index_then_die(docs: list) -> None:  # type: ignore[type-arg]
        nonlocal calls
        calls += 1
        if calls == 2:
            raise Killed
        memory.index_docs(docs)

    with pytest.raises(Killed):
        import_turns(vault, source, batch_size=20, after_batch=index_then_die)
    again = import_turns(vault, source, batch_size=20, after_batch=memory.index_docs)
    assert (again.imported, again.skipped, again.recovered) == (20, 40, 20)
    _assert_each_line_once_and_indexed(vault, 60)


def test_verify_repair_clears_what_an_older_version_left(vault: Vault, tmp_path: Path) -> None:
    source = _source(tmp_path, 30)
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    turns = vault.layout.turns_dir("user0")
    # An older import died after mkdir (empty folders), mid-turn (events, no
    # context.md) and after its ledger but before its index (unindexed turns).
    empties = [turns / f"turn_{n:06d}" for n in (90, 91, 92)]
    for folder in empties:
        folder.mkdir()
    (turns / "turn_000093").mkdir()
    (turns / "turn_000093" / "events.jsonl").write_bytes(b"")
    half = vault.layout.turn_dirs("user1")[0]
    (half / "context.md").unlink()
    (half / "metadata.json").unlink()
    unindexed = vault.layout.turn_dirs("user2")[-1]
    with memory.index.batch() as batch:
        batch.delete(vault.rel(unindexed / "context.md"))
    old = time.time() - 3600
    for folder in [*empties, turns / "turn_000093"]:
        os.utime(folder, (old, old))

    before = run_pandafs("--root", vault.root, "verify", "--json")
    assert before.code == 1
    kinds = {p["kind"] for p in before.json["problems"]}
    assert {"empty_turn", "missing", "index_stale"} <= kinds, kinds

    repaired = run_pandafs("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    said = {(p["kind"], p["path"]) for p in repaired.json["repaired"]}
    for folder in [*empties, turns / "turn_000093"]:
        assert ("empty_turn", vault.rel(folder)) in said
        assert not folder.exists()
    assert ("missing", vault.rel(half / "context.md")) in said
    assert any(kind == "index_stale" for kind, _ in said)
    assert (half / "context.md").exists()

    after = run_pandafs("--root", vault.root, "verify", "--json")
    assert after.code == 0 and after.json["problems"] == [], after.out
    again = import_turns(vault, source, after_batch=memory.index_docs)
    assert (again.imported, again.skipped) == (0, 30)
    _assert_each_line_once_and_indexed(vault, 30)


def test_an_empty_folder_its_live_writer_holds_is_left_for_it(vault: Vault) -> None:
    """`ask` holds its folder's lock from its mkdir, a moment before its first event, to
    its end: not abandoned, and no problem either."""
    with vault.new_turn("alice") as turn:
        folder = vault.layout.turn_dir("alice", turn)
        report = run_pandafs("--root", vault.root, "verify", "--repair", "--json")
        assert report.code == 0 and report.json["problems"] == [], report.out
        assert folder.is_dir()

"""SIGKILL `pandafs archive` / `pandafs restore --all` (real child processes) at random points.

After every kill nothing may be lost: each turn is still a live folder, or intact rows
in the Parquet archive, or a trash copy — byte for byte what it was.  A rerun must end
with every turn exactly once (live or archived), the Parquet rows counting each archived
turn once (DuckDB), and `pandafs verify` clean.  The seed of the kill points is printed,
so a failure can be replayed with PANDAFS_CRASH_SEED=<seed>.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import orjson
import pytest

from indexers.archive import ArchiveStore
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.conftest import REPO, run_pandafs

pytestmark = pytest.mark.slow

TURNS = 360
BATCH = 16
NOW = "2026-11-21T12:00:00Z"
SEED = int(os.environ.get("PANDAFS_CRASH_SEED", time.time_ns() % 1_000_000))


def _build(tmp_path: Path) -> tuple[Vault, dict[str, dict[str, str]]]:
    vault, _ = Vault.init(tmp_path / "vault")
    source = tmp_path / "turns.jsonl"
    lines = [
        orjson.dumps(
            {
                "user": f"user{i % 3}",
                "external_id": f"c{i}",
                "timestamp": f"2026-0{1 + i % 8}-{1 + i % 27:02d}T10:00:00Z",
                "query": f"crash test question {i} about topic{i % 17}",
                "response": f"Answer {i}. " + "Some words about gardens and bicycles. " * 4,
            }
        )
        for i in range(TURNS)
    ]
    source.write_bytes(b"\n".join(lines) + b"\n")
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    return vault, _live_checksums(vault)


def _folder_checksums(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _live_checksums(vault: Vault) -> dict[str, dict[str, str]]:
    return {
        f"{user}/{folder.name}": _folder_checksums(folder)
        for user in vault.layout.users()
        for folder in vault.layout.turn_dirs(user)
    }


def _archived_checksums(vault: Vault) -> dict[str, list[dict[str, str]]]:
    """doc id → the checksums of every intact copy of it in the Parquet files."""
    store = ArchiveStore(vault.layout.archive / "turns")
    copies: dict[str, list[dict[str, str]]] = {}
    for part in store.parts():
        contents = store.read_part(part)
        for key in contents.turns:
            files = contents.intact(key)
            if files is not None:
                copies.setdefault(files.doc_id, []).append(files.checksums())
    return copies


def _trash_checksums(vault: Vault) -> dict[str, list[dict[str, str]]]:
    copies: dict[str, list[dict[str, str]]] = {}
    for user in vault.layout.users():
        for name in (".archive-trash", ".archive-restore"):
            for folder in sorted((vault.layout.turns_dir(user) / name).glob("turn_*")):
                doc_id = f"{user}/{folder.name.split('.')[0]}"
                copies.setdefault(doc_id, []).append(_folder_checksums(folder))
    return copies


def _stubs(vault: Vault) -> set[str]:
    return {f"{p.parent.name}/{p.stem}" for p in (vault.layout.archive / "stubs").glob("*/turn_*.md")}


def _assert_nothing_lost(vault: Vault, originals: dict[str, dict[str, str]], when: str) -> None:
    live = _live_checksums(vault)
    archived = _archived_checksums(vault)
    trash = _trash_checksums(vault)
    for doc_id, checksums in originals.items():
        held = (
            live.get(doc_id) == checksums
            or checksums in archived.get(doc_id, [])
            or checksums in trash.get(doc_id, [])
        )
        assert held, f"{when}: {doc_id} is lost (seed {SEED})"


def _assert_exactly_once(vault: Vault, originals: dict[str, dict[str, str]]) -> None:
    live, stubs = set(_live_checksums(vault)), _stubs(vault)
    assert not live & stubs, f"both live and archived: {sorted(live & stubs)[:5]} (seed {SEED})"
    assert live | stubs == set(originals), f"seed {SEED}"
    assert _live_checksums(vault) == {d: originals[d] for d in live}
    archived = _archived_checksums(vault)
    for doc_id in stubs:
        assert archived.get(doc_id) == [originals[doc_id]], f"{doc_id} (seed {SEED})"
    assert set(archived) == stubs
    assert not _trash_checksums(vault)
    glob = str(vault.layout.archive / "turns" / "**" / "*.parquet")
    if stubs:
        [(distinct, rows)] = duckdb.sql(
            'SELECT count(DISTINCT ("user", turn)), count(*) '
            f"FROM read_parquet('{glob}', hive_partitioning = true)"
        ).fetchall()
        assert distinct == len(stubs)
        assert rows == sum(len(originals[d]) for d in stubs)
    verify = run_pandafs("--root", vault.root, "verify", "--json")
    assert verify.code == 0, verify.out
    assert verify.json["ok"] and not verify.json["problems"]


def _progress(vault: Vault) -> tuple[int, set[str]]:
    """(stubs, names of pending journals): what a watcher of the run can see."""
    stubs = sum(1 for _ in (vault.layout.archive / "stubs").glob("*/turn_*.md"))
    journals = {p.name for p in (vault.layout.archive / ".journal").glob("*.json")}
    return stubs, journals


def _kill_at_random_point(
    vault: Vault, args: list[str], rng: random.Random, direction: int
) -> tuple[bool, str]:
    """Start `pandafs ARGS`, SIGKILL it at a random point; (was it killed, where).

    Points: a random time after start (startup, recovery of the previous kill, ...),
    a random few ms after a new batch journal appears (Parquet write and read-back),
    or after a random number of turns changed state (stubs, renames, index update).
    """
    start_stubs, start_journals = _progress(vault)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pandafs", "--root", str(vault.root), *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    trigger = rng.choice(["journal", "journal", "progress", "progress", "time"])
    deadline = time.monotonic() + 60
    if trigger == "time":
        # the whole run takes ~0.5–1.4 s, less after earlier kills did part of it: a kill
        # later than 1 s could find it done (a fast, idle machine: 2026-11-24)
        delay = rng.uniform(0.1, 0.5)
        point = f"{delay:.3f} s after start"
        time.sleep(delay)
    else:
        target = rng.randint(1, 3 * BATCH)
        point = f"{trigger} {target}"
        seen: set[str] = set()
        while proc.poll() is None and time.monotonic() < deadline:
            stubs, journals = _progress(vault)
            seen |= journals - start_journals
            if trigger == "journal" and len(seen) >= 1 + target // BATCH:
                break
            if trigger == "progress" and direction * (stubs - start_stubs) >= target:
                break
            time.sleep(0.0005)
        extra = rng.uniform(0, 0.005) if trigger == "journal" else rng.uniform(0, 0.03)
        point += f" + {extra * 1000:.1f} ms"
        time.sleep(extra)
    if proc.poll() is not None:
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        assert proc.returncode == 0, err[-3000:]
        return False, point
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if proc.stderr:
        proc.stderr.close()
    return True, point


def test_archive_killed_at_random_points_finishes_on_rerun(tmp_path: Path) -> None:
    vault, originals = _build(tmp_path)
    rng = random.Random(SEED)
    args = ["archive", "--now", NOW, "--batch-size", str(BATCH), "--json"]
    kills: list[str] = []
    for _ in range(10):
        killed, point = _kill_at_random_point(vault, args, rng, +1)
        _assert_nothing_lost(vault, originals, f"after kill at {point}")
        if not killed:
            break
        kills.append(point)
        if len(kills) == 3:
            break
    assert len(kills) >= 3, f"the run finished before it could be killed 3 times (seed {SEED}): {kills}"
    print(f"seed {SEED}: killed at {kills}")
    final = run_pandafs("--root", vault.root, *args)
    assert final.code == 0, final.err
    _assert_exactly_once(vault, originals)
    assert _stubs(vault) == set(originals), f"not everything archived (seed {SEED})"
    again = run_pandafs("--root", vault.root, *args)
    assert again.json["archived"] == 0 and not again.json["recovered"]


def test_restore_all_killed_at_random_points_finishes_on_rerun(tmp_path: Path) -> None:
    vault, originals = _build(tmp_path)
    first = run_pandafs("--root", vault.root, "archive", "--now", NOW, "--batch-size", "60", "--json")
    assert first.json["archived"] == TURNS
    rng = random.Random(SEED + 1)
    restore = ["restore", "--all", "--batch-size", str(BATCH), "--json"]
    kills: list[str] = []
    for _ in range(8):
        killed, point = _kill_at_random_point(vault, restore, rng, -1)
        _assert_nothing_lost(vault, originals, f"after kill of restore at {point}")
        if not killed:
            break
        kills.append(point)
        if len(kills) == 2:
            break
    assert len(kills) >= 2, f"restore finished before it could be killed twice (seed {SEED}): {kills}"
    print(f"seed {SEED}: killed restore at {kills}")
    final = run_pandafs("--root", vault.root, *restore)
    assert final.code == 0, final.err
    _assert_exactly_once(vault, originals)
    assert _live_checksums(vault) == originals
    assert ArchiveStore(vault.layout.archive / "turns").parts() == []

"""A damaged file of the full-text index costs its hits, not the turn.

Each case damages one file of a real index (a segment truncated, a segment's bytes
overwritten so that only a read of them fails, `meta.json` gone): `ask` still answers
(the search records `tier_failed`, no `phase_failed`, no host path in the answer or the
turn's files), `search` is one line naming the index, `verify` names the damaged file by
its vault-relative path, and `verify --repair` rebuilds the index from the files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from events.log import read_log
from pandafs.vault import Vault


def _truncate_postings(tantivy: Path) -> Path:
    (path,) = sorted(tantivy.glob("*.idx"))[:1]
    with path.open("r+b") as handle:
        handle.truncate(10)
    return path


def _zero_store(tantivy: Path) -> Path:
    (path,) = sorted(tantivy.glob("*.store"))[:1]
    with path.open("r+b") as handle:
        handle.seek(20)
        handle.write(b"\0" * 64)
    return path


def _remove_meta(tantivy: Path) -> Path:
    path = tantivy / "meta.json"
    path.unlink()
    return path


@pytest.mark.parametrize("damage", [_truncate_postings, _zero_store, _remove_meta])
def test_a_damaged_index_file_costs_its_hits_not_the_turn(
    cli, vault: Vault, tmp_path: Path, damage: Callable[[Path], Path]
) -> None:
    root = vault.root
    assert cli("--root", root, "save", "--type", "fact", "bob likes oolong tea", "--user", "bob").code == 0
    assert cli("--root", root, "ask", "tell me about oolong", "--user", "bob").code == 0
    damaged = damage(root / "indexes" / "fulltext" / "tantivy").relative_to(root).as_posix()
    host = str(tmp_path)

    checked = cli("--root", root, "verify", "--json")
    assert checked.code == 1
    assert {"path": damaged, "kind": "index_damaged"} in [
        {"path": p["path"], "kind": p["kind"]} for p in checked.json["problems"]
    ]
    assert host not in checked.out

    got = cli("--root", root, "ask", "what tea do I like", "--user", "bob", "--json")
    assert got.code == 0, got.err
    assert "oolong" in got.json["answer"]  # the memory lines are read from the files
    turn = vault.layout.turn_dir("bob", got.json["turn_id"])
    records = read_log(turn / "events.jsonl").records
    assert "phase_failed" not in [r["type"] for r in records]
    (failed,) = [r["data"] for r in records if r["type"] == "tier_failed"]
    assert failed["tier"] == "search" and failed["error_type"] == "IndexDamaged"
    assert host not in got.out and host not in got.err
    for name in ("context.md", "metadata.json", "events.jsonl"):
        assert host not in (turn / name).read_text(), name

    searched = cli("--root", root, "search", "oolong", "--user", "bob")  # hits it can read, or one line
    assert searched.code in (0, 1) and "Traceback" not in searched.err and host not in searched.err
    if searched.code == 1:
        assert searched.err.count("\n") == 1 and "the index indexes/fulltext" in searched.err, searched.err

    # (the answer's own commit may have merged a segment whose store it never read away)
    still = [p for p in cli("--root", root, "verify", "--json").json["problems"] if p["path"] == damaged]
    repaired = cli("--root", root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out + repaired.err
    named = [p for p in repaired.json["repaired"] if p["path"] == damaged and p["kind"] == "index_damaged"]
    assert len(named) == len(still)
    assert cli("--root", root, "verify").code == 0
    found = cli("--root", root, "search", "oolong", "--user", "bob", "--json")
    assert found.code == 0 and "users/bob/facts.md" in found.out


def test_a_fifo_in_place_of_a_segment_file_is_named_without_a_wait(vault: Vault) -> None:
    """Checking the index's files reads each by the one read rule: a FIFO where a segment
    file should be is named as damage at once (an open of it would wait for a writer)."""
    import os
    import threading

    from pandafs.memory.api import Memory

    memory = Memory(vault)
    memory.save("bob likes oolong tea", user="bob", doc_type="fact")
    tantivy = vault.root / "indexes" / "fulltext" / "tantivy"
    (segment,) = sorted(tantivy.glob("*.idx"))[:1]
    segment.unlink()
    os.mkfifo(segment)
    found: list[object] = []
    checking = threading.Thread(target=lambda: found.append(memory.index.folder.damaged_file()), daemon=True)
    checking.start()
    checking.join(20)
    assert found == [(segment.relative_to(vault.root).as_posix(), "is not a regular file (a FIFO)")]

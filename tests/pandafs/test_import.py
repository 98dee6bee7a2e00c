"""Bulk import: one completed turn per line, idempotent, bad lines named."""

from __future__ import annotations

from pathlib import Path

import orjson

from events.documents import parse_document
from events.log import read_events
from pandafs.turn_import import import_turns
from pandafs.turns import iter_turns
from pandafs.vault import Vault


def _lines(n: int, user: str = "alice", start: int = 0) -> list[bytes]:
    return [
        orjson.dumps(
            {
                "user": user,
                "external_id": f"ext-{i}",
                "timestamp": f"2026-03-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
                "query": f"what about hamster number {i}?",
                "response": f"hamster {i} is syrian",
                "meta": {"session": f"s{i // 10}", "speaker": "Maya"},
            }
        )
        for i in range(start, start + n)
    ]


def test_each_line_becomes_a_completed_turn(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(_lines(3)) + b"\n")
    report = import_turns(vault, source)
    assert (report.imported, report.skipped, report.failed) == (3, 0, [])
    folder = vault.layout.turn_dir("alice", "turn_000002")
    events = read_events(folder / "events.jsonl")
    assert [e.type for e in events] == ["turn_started", "response_synthesized", "turn_completed"]
    doc = parse_document((folder / "context.md").read_text())
    assert "## 0. User Query" in doc.body and "hamster number 1?" in doc.body
    assert "## 5. Synthesis" in doc.body and "hamster 1 is syrian" in doc.body
    assert doc.frontmatter["meta"] == {"session": "s0", "speaker": "Maya"}
    assert doc.frontmatter["external_id"] == "ext-1"
    assert str(doc.frontmatter["created_at"]).startswith("2026-03-02")
    meta = orjson.loads((folder / "metadata.json").read_bytes())
    assert meta["meta"] == {"session": "s0", "speaker": "Maya"} and meta["outcome"] == "IMPORTED"


def test_reimport_adds_nothing(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(_lines(20) + _lines(5, user="bob")) + b"\n")
    assert import_turns(vault, source).imported == 25
    again = import_turns(vault, source)
    assert (again.imported, again.skipped) == (0, 25)
    assert len(list(iter_turns(vault))) == 25
    # A line repeated inside one file is imported once.
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(b"\n".join(_lines(1, start=100) * 2) + b"\n")
    report = import_turns(vault, dup)
    assert (report.imported, report.skipped) == (1, 1)


def test_crash_between_turn_and_ledger_is_not_duplicated(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(_lines(4)) + b"\n")
    import_turns(vault, source)
    ledger = vault.layout.turns_dir("alice") / ".external_ids.jsonl"
    ledger.unlink()  # as if the process died right after writing the turns
    again = import_turns(vault, source)
    assert (again.imported, again.skipped) == (0, 4)


def test_bad_lines_are_named_and_the_rest_import(vault: Vault, tmp_path: Path) -> None:
    good = _lines(6)
    lines = (
        good[:2] + [b"{not json"] + good[2:4] + [b'{"user": "../x", "timestamp": "2026-01-01", "query": "q"}']
    )
    lines += [good[4], b'{"user": "alice", "timestamp": "yesterday", "query": "q"}', good[5]]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    report = import_turns(vault, source)
    assert report.imported == 6
    assert [f["line"] for f in report.failed] == [3, 6, 8]
    assert "invalid user id" in report.failed[1]["error"]
    assert "timestamp" in report.failed[2]["error"]
    assert not (vault.root / "users" / "..").joinpath("x").exists()


def test_ten_thousand_lines(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    source.write_bytes(b"\n".join(_lines(10_000)) + b"\n")
    report = import_turns(vault, source)
    assert report.imported == 10_000
    data = report.as_json()
    assert data["turns_per_s"] > 0 and data["seconds"] > 0
    assert len(vault.layout.turn_dirs("alice")) == 10_000


def _place_imported(vault: Vault, name: str, query: str) -> None:
    """Build turn `name` of alice in staging and place it, as an import does."""
    from datetime import UTC, datetime

    from pandafs.turn_import.lines import ImportLine
    from pandafs.turn_import.render import turn_files
    from pandafs.vault import STAGING_DIR

    when = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    line = ImportLine(user="alice", timestamp=when, query=query, response="the tart one")
    log, files, _, _ = turn_files("alice", name, line, ts=when)
    staged = vault.layout.turns_dir("alice") / STAGING_DIR / name
    staged.mkdir(parents=True)
    (staged / "events.jsonl").write_bytes(log)
    for file, data in files.items():
        (staged / file).write_bytes(data)
    assert vault.place_turns("alice", [(name, staged)]) == []


def test_a_turn_an_import_places_after_a_sync_passed_its_number_is_still_folded(vault: Vault) -> None:
    """An import reserves numbers, then places the turns it built in staging.  A learning
    sync in between (a Save's, say) must not take the reserved numbers for missing turns:
    the turn placed afterwards is folded by the next sync (its catalog row is there)."""
    from pandafs.learning.catalog import Catalog
    from pandafs.vault import file_lock
    from tests.support.learning import sync

    sync(vault)  # the learning state exists: later syncs fold only what is new
    with file_lock(vault.layout.import_lock):  # the import's own lock, held for its whole run
        (name,) = vault.reserve_turns("alice", 1)
        assert sync(vault).turns == 0
        _place_imported(vault, name, "which quince jam?")
    assert sync(vault).turns == 1
    assert [r["turn"] for r in Catalog(vault.root / "observability" / "catalog").read_rows()] == [name]


def test_a_turn_an_import_places_after_a_rebuild_passed_its_number_is_still_folded(vault: Vault) -> None:
    """The same for a full rebuild of the learning fold: a number an import holds below a
    turn already placed (another writer's, numbered after it) is not taken for a gap."""
    from pandafs.learning.api import rebuild
    from pandafs.learning.catalog import Catalog
    from pandafs.vault import file_lock
    from tests.support.learning import sync

    with file_lock(vault.layout.import_lock):
        first, second = vault.reserve_turns("alice", 2)
        _place_imported(vault, second, "which plum jam?")  # placed first: the other is still staging
        assert rebuild(vault).turns == 1
        _place_imported(vault, first, "which quince jam?")
    assert sync(vault).turns == 1
    rows = Catalog(vault.root / "observability" / "catalog").read_rows()
    assert sorted(r["turn"] for r in rows) == [first, second]


def test_a_number_a_killed_import_reserved_is_not_waited_for(vault: Vault) -> None:
    from pandafs.learning.engine import Learning
    from tests.support.learning import sync

    sync(vault)
    vault.reserve_turns("alice", 2)  # the import died before placing them: no one holds its lock
    assert sync(vault).turns == 0
    with Learning(vault).open() as engine:
        assert engine.cache.state.users["alice"].upto == 2 and engine.cache.state.users["alice"].pending == ()

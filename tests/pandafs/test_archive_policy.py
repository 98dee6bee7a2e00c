"""Cold storage of turns: eligibility, dry run, archive / restore, expansion, verify."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from events.documents import parse_document
from events.log import EventWriter
from events.schema import DocumentsUsed
from indexers.archive import ArchiveStore
from indexers.errors import ArchiveError
from pandafs.archive import _jobs as archive_jobs
from pandafs.archive import archive_turns, find_candidates, key_claims, recent_uses, restore_turns
from pandafs.assembly import open_memory
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from pandafs.verify import default_checks, verify_vault
from tests.support.links import swap_for_link
from tests.support.turns import allocate_turns

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
TOPICS = ["hamster", "laptop", "sourdough", "marathon", "bicycle", "telescope", "kayak"]
WORDS = """apple anchor bamboo banjo beacon biscuit blizzard bonsai cactus canyon carnival
cathedral cello chimney cobalt comet compass coral crystal dolphin dragon ember falcon fjord
galaxy glacier granite harbor harvest helmet island jasmine jungle lantern lemon lighthouse
meadow meteor mosaic nectar orchid origami paddle pepper pyramid quartz raven saffron tornado
violin""".split()


def _import(vault: Vault, tmp_path: Path, rows: list[dict[str, object]]) -> Memory:
    source = tmp_path / f"import-{len(list(tmp_path.glob('import-*')))}.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    memory = open_memory(vault)
    report = import_turns(vault, source, after_batch=memory.index_docs)
    assert not report.failed
    return memory


def _turn(user: str, days_old: float, query: str, i: int = 0) -> dict[str, object]:
    ts = NOW - timedelta(days=days_old)
    return {
        "user": user,
        "external_id": f"{user}-{i}-{days_old}",
        "timestamp": ts.isoformat(),
        "query": query,
        "response": f"We talked about {query}. It was useful. Nothing else to add here.",
        "meta": {"i": i},
    }


def _folders(vault: Vault) -> dict[str, dict[str, tuple[str, int, int]]]:
    """doc id → {path: (sha256, mode, mtime_ns)} of every live turn folder."""
    out: dict[str, dict[str, tuple[str, int, int]]] = {}
    for user in vault.layout.users():
        for folder in vault.layout.turn_dirs(user):
            out[f"{user}/{folder.name}"] = {
                p.relative_to(folder).as_posix(): (
                    hashlib.sha256(p.read_bytes()).hexdigest(),
                    p.stat().st_mode,
                    p.stat().st_mtime_ns,
                )
                for p in sorted(folder.rglob("*"))
                if p.is_file()
            }
    return out


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _use(vault: Vault, user: str, turn: str, doc_ids: list[str], when: datetime) -> None:
    log = vault.layout.turn_dir(user, turn) / "events.jsonl"
    with EventWriter(log, user=user, turn=turn) as writer:
        writer.append(DocumentsUsed(doc_ids=doc_ids, outcome="APPROVE"), ts=when)


def _canonical(hits: list[dict[str, object]]) -> list[tuple[int, str, bytes]]:
    """Hits without their score, in rank order; documents with exactly equal scores (ties,
    ordered by tantivy's internal document order) compare as a set.  BM25 statistics
    count deleted documents until segments merge, so scores may move in the 4th digit."""
    out, rank, last = [], -1, None
    for hit in hits:
        if hit["score"] != last:
            rank, last = rank + 1, hit["score"]
        rest = {k: v for k, v in hit.items() if k != "score"}
        out.append((rank, str(hit["doc_id"]), orjson.dumps(rest, option=orjson.OPT_SORT_KEYS)))
    return sorted(out)


def _stub_ids(vault: Vault) -> set[str]:
    stubs = vault.layout.archive / "stubs"
    return {f"{p.parent.name}/{p.stem}" for p in stubs.glob("*/turn_*.md")}


def _verify(vault: Vault, repair: bool = False) -> list[tuple[str, str]]:
    report = verify_vault(vault, repair=repair, checks=default_checks())
    return [(p.kind, p.path) for p in report.problems]


# --- eligibility ---------------------------------------------------------------------


def test_eligibility_by_age_recent_uses_and_force_age(vault: Vault, tmp_path: Path) -> None:
    _import(
        vault,
        tmp_path,
        [
            _turn("alice", 40, "old and unused", 1),  # turn_000001: goes
            _turn("alice", 40, "old but used three times", 2),  # turn_000002: stays
            _turn("alice", 40, "old and used twice", 3),  # turn_000003: goes
            _turn("alice", 400, "ancient and popular", 4),  # turn_000004: forced
            _turn("alice", 10, "recent", 5),  # turn_000005: too young
            _turn("alice", 2, "user turn a", 6),  # turn_000006..8 cite others
            _turn("alice", 2, "user turn b", 7),
            _turn("alice", 2, "user turn c", 8),
            _turn("bob", 1, "bob cites alice"),  # another user's use does not count
        ],
    )
    recent = NOW - timedelta(days=3)
    for turn in ("turn_000006", "turn_000007", "turn_000008"):
        _use(vault, "alice", turn, ["alice/turn_000002", "alice/turn_000004"], recent)
    _use(vault, "alice", "turn_000006", ["alice/turn_000003"], recent)
    _use(vault, "alice", "turn_000007", ["alice/turn_000003"], recent)
    _use(vault, "alice", "turn_000008", ["alice/turn_000001"], NOW - timedelta(days=45))
    _use(vault, "bob", "turn_000001", ["alice/turn_000001"] * 3, recent)
    since = NOW - timedelta(days=30)
    uses = recent_uses(vault, "alice", since=since, until=NOW)
    assert uses == {"alice/turn_000002": 3, "alice/turn_000004": 3, "alice/turn_000003": 2}
    eligible, kept, _ = find_candidates(vault, now=NOW)
    assert [c.doc_id for c in eligible] == [
        "alice/turn_000004",
        "alice/turn_000001",
        "alice/turn_000003",
    ]
    assert "forced" in eligible[0].reason and eligible[0].uses == 3
    assert [(c.doc_id, c.uses) for c in kept] == [("alice/turn_000002", 3)]
    assert "stays live" in kept[0].reason
    older, _, _ = find_candidates(vault, now=NOW, age_days=100)
    assert [c.doc_id for c in older] == ["alice/turn_000004"]
    only_bob, _, _ = find_candidates(vault, now=NOW, user="bob", age_days=0)
    assert [c.doc_id for c in only_bob] == ["bob/turn_000001"]


def test_dry_run_changes_nothing_and_explains(vault: Vault, tmp_path: Path, cli) -> None:
    _import(vault, tmp_path, [_turn("alice", 50 + i, f"{TOPICS[i]} talk", i) for i in range(5)])
    _use(vault, "alice", "turn_000005", ["alice/turn_000001"] * 1, NOW - timedelta(days=1))
    for turn in ("turn_000002", "turn_000003", "turn_000004"):
        _use(vault, "alice", turn, ["alice/turn_000005"], NOW - timedelta(days=1))
    before = _snapshot(vault.root)
    got = cli("--root", vault.root, "archive", "--dry-run", "--now", NOW.isoformat(), "--json")
    assert got.code == 0, got.err
    assert _snapshot(vault.root) == before
    data = got.json
    assert data["dry_run"] and data["archived"] == 0 and data["eligible"] == 4
    by_id = {t["doc_id"]: t for t in data["turns"]}
    assert sorted(by_id) == [f"alice/turn_00000{i}" for i in range(1, 5)]
    assert by_id["alice/turn_000001"]["uses"] == 1
    first = by_id["alice/turn_000004"]
    assert first["uses"] == 0
    assert "days old > 30" in first["reason"] and first["age_days"] > 50
    assert first["bytes"] > 0 and first["parquet_bytes"] > 0 and first["stub_bytes"] > 0
    assert first["saves"] == first["bytes"] - first["parquet_bytes"] - first["stub_bytes"]
    assert data["bytes_before"] == sum(t["bytes"] for t in data["turns"])
    assert data["kept"][0]["doc_id"] == "alice/turn_000005" and data["kept"][0]["uses"] == 3
    text = cli("--root", vault.root, "archive", "--dry-run", "--now", NOW.isoformat())
    assert "would archive 4 turns" in text.out and "kept alice/turn_000005" in text.out
    assert _snapshot(vault.root) == before


# --- archive and restore -------------------------------------------------------------


def test_archive_then_restore_1000_turns_is_byte_identical_and_searches_the_same(
    vault: Vault, tmp_path: Path
) -> None:
    rows = [
        _turn(f"user{i % 4}", 35 + i % 300, f"{TOPICS[i % 7]} and {WORDS[i % 50]}, turn {i}", i)
        for i in range(1000)
    ]
    memory = _import(vault, tmp_path, rows)
    (vault.layout.turn_dir("user0", "turn_000001") / "webpage_cache" / "x").mkdir(parents=True)
    (vault.layout.turn_dir("user0", "turn_000001") / "webpage_cache" / "x" / "p.md").write_text("cached page")
    memory.reconcile()
    originals = _folders(vault)
    # Queries that discriminate: with more equal-BM25 matches than the re-ranked
    # candidate pool, which tied documents make it depends on tantivy's internal
    # document order (re-adding documents, or `pandafs rebuild`, changes it).
    queries = [(word, None, 25) for word in WORDS]
    queries += [(f"{TOPICS[i % 7]} {word}", f"user{i % 4}", 1) for i, word in enumerate(WORDS)]
    before = [memory.search(q, user=u, now=NOW, limit=k) for q, u, k in queries]
    assert all(before) and len({h["doc_id"] for hits in before for h in hits}) == 1000

    report = archive_turns(vault, now=NOW, batch_size=400)
    assert report.archived == 1000 and not _folders(vault)
    assert report.bytes_after == report.parquet_bytes + report.stub_bytes
    assert report.parquet_bytes < report.bytes_before * 0.3
    assert _stub_ids(vault) == set(originals)
    during = memory.search("sourdough lantern", user="user2", now=NOW)
    assert during and all(h["archived"] for h in during)
    assert during[0]["doc_path"].startswith("archive/stubs/user2/")
    glob = f"{vault.layout.archive}/turns/**/*.parquet"
    [(turns, files)] = duckdb.sql(
        'SELECT count(DISTINCT ("user", turn)), count(*) '
        f"FROM read_parquet('{glob}', hive_partitioning = true)"
    ).fetchall()
    assert (turns, files) == (1000, sum(len(f) for f in originals.values()))
    assert _verify(vault) == []

    restored = restore_turns(vault)
    assert restored.restored == 1000 and not restored.failed
    assert _folders(vault) == originals
    assert not _stub_ids(vault) and ArchiveStore(vault.layout.archive / "turns").parts() == []
    after = [memory.search(q, user=u, now=NOW, limit=k) for q, u, k in queries]
    assert [_canonical(hits) for hits in after] == [_canonical(hits) for hits in before]
    for old, new in zip(before, after, strict=True):
        scores = {h["doc_id"]: h["score"] for h in old}
        assert all(h["score"] == pytest.approx(scores[h["doc_id"]], rel=1e-3) for h in new)
    assert _verify(vault) == []


def test_stub_is_searchable_retrieve_expands_and_three_expansions_restore(
    vault: Vault,
    tmp_path: Path,
    cli,
) -> None:
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("alice", 60, "How do I care for an axolotl in a cold aquarium?", 1),
            _turn("alice", 60, "Best hiking boots for wet weather", 2),
            _turn("alice", 1, "Something recent", 3),
        ],
    )
    live_path = vault.layout.turn_dir("alice", "turn_000001") / "context.md"
    original = live_path.read_bytes()
    original_doc = parse_document(original.decode())
    originals = _folders(vault)
    got = cli("--root", vault.root, "archive", "--now", NOW.isoformat(), "--json")
    assert got.code == 0, got.err
    assert {"archived", "bytes_before", "bytes_after", "turns", "seconds"} <= set(got.json)
    assert got.json["archived"] == 2 and got.json["bytes_before"] > got.json["parquet_bytes"]
    assert not live_path.exists()

    hit = memory.search("axolotl aquarium", user="alice", now=NOW)[0]
    assert hit["doc_id"] == "alice/turn_000001" and hit["archived"] is True
    assert hit["doc_path"] == "archive/stubs/alice/turn_000001.md"
    stub = parse_document((vault.root / hit["doc_path"]).read_text())
    assert stub.frontmatter["archived"] is True and stub.frontmatter["id"] == "alice/turn_000001"
    assert stub.frontmatter["archive_file"].startswith("archive/turns/month=2026-09/part-")
    assert stub.frontmatter["created_at"] == original_doc.frontmatter["created_at"]
    assert "axolotl" in stub.body and "## Key claims" in stub.body

    first = memory.retrieve("alice/turn_000001", now=NOW)
    assert first.archived and first.doc_path == "archive/stubs/alice/turn_000001.md"
    assert first.content == original_doc.body
    assert first.metadata["archived"] is True and first.metadata["expansions"] == 1
    assert first.metadata["title"] == original_doc.frontmatter["title"]
    by_old_path = cli(
        "--root", vault.root, "retrieve", vault.rel(live_path), "--now", NOW.isoformat(), "--json"
    )
    assert by_old_path.json["archived"] is True and by_old_path.json["content"] == first.content
    assert (vault.root / hit["doc_path"]).exists()

    third = memory.retrieve("alice/turn_000001", now=NOW)
    assert third.archived is False and third.doc_path == vault.rel(live_path)
    assert third.metadata["restored_from_archive"] is True
    assert live_path.read_bytes() == original
    assert _folders(vault)["alice/turn_000001"] == originals["alice/turn_000001"]
    assert not (vault.root / hit["doc_path"]).exists()
    hit = memory.search("axolotl aquarium", user="alice", now=NOW)[0]
    assert hit["archived"] is False and hit["doc_path"] == vault.rel(live_path)
    # three expansions in the window count as uses: the turn stays live for now
    again = archive_turns(vault, now=NOW + timedelta(days=1))
    assert again.archived == 0 and again.kept[0]["doc_id"] == "alice/turn_000001"
    assert _verify(vault) == []


def test_restore_cli_and_turn_numbers_are_never_reused(
    vault: Vault,
    tmp_path: Path,
    cli,
) -> None:
    _import(vault, tmp_path, [_turn("alice", 90, f"{t} chat", i) for i, t in enumerate(TOPICS)])
    assert archive_turns(vault, now=NOW).archived == 7
    (vault.layout.turns_dir("alice") / ".counter").unlink()
    assert allocate_turns(vault, "alice") == ["turn_000008"]
    (vault.layout.turns_dir("alice") / "turn_000008").rmdir()
    assert cli("--root", vault.root, "restore").code == 2
    assert cli("--root", vault.root, "restore", "alice/turn_000001", "--all").code == 2
    assert cli("--root", vault.root, "restore", "alice/turn_000099").code == 2
    assert cli("--root", vault.root, "restore", "alice/turn_000003", "alice/turn_000099").code == 2
    assert "alice/turn_000003" in _stub_ids(vault)  # a bad id among good ones: nothing is restored
    assert cli("--root", vault.root, "archive", "--now", "yesterday").code == 2
    got = cli("--root", vault.root, "restore", "alice/turn_000003", "--json")
    assert got.code == 0 and got.json["restored"] == 1 and got.json["turns"] == ["alice/turn_000003"]
    again = cli("--root", vault.root, "restore", "alice/turn_000003", "--json")
    assert again.json["restored"] == 0 and again.json["skipped"][0]["reason"].startswith("not")
    assert cli("--root", vault.root, "restore", "--all", "--json").json["restored"] == 6
    assert _stub_ids(vault) == set() and len(_folders(vault)) == 7
    assert _verify(vault) == []


# --- interrupted batches and verify ---------------------------------------------------


class Crash(Exception):
    pass


def test_interrupted_batch_is_finished_with_its_rows_reused(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _import(vault, tmp_path, [_turn("alice", 40 + i, f"{TOPICS[i]} notes", i) for i in range(6)])
    originals = _folders(vault)

    def crash() -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(archive_jobs, "sync_all", crash)  # after the stubs are written
        with pytest.raises(Crash):
            archive_turns(vault, now=NOW)
    store = ArchiveStore(vault.layout.archive / "turns")
    parts = store.parts()
    assert parts and len(_folders(vault)) == 6 and _stub_ids(vault)
    assert {p.kind for p in verify_vault(vault, checks=default_checks()).problems} >= {
        "archive_interrupted",
        "archive_both",
    }
    # a hand edit after the copy: that turn must stay live and its rows go
    edited = vault.layout.turn_dir("alice", "turn_000002") / "context.md"
    edited.write_text(edited.read_text() + "\nedited by hand\n")
    open_memory(vault).index_paths([edited])
    report = archive_turns(vault, now=NOW, age_days=1000)  # recovery alone, nothing new
    assert report.archived == 0
    assert any("finished archiving" in n for n in report.recovered)
    assert any("alice/turn_000002: stays live" in n for n in report.recovered)
    assert store.parts() == parts  # the rows were reused, not written again
    assert _stub_ids(vault) == set(originals) - {"alice/turn_000002"}
    assert set(_folders(vault)) == {"alice/turn_000002"}
    glob = f"{store.dir}/**/*.parquet"
    [(count,)] = duckdb.sql(f"SELECT count(DISTINCT (\"user\", turn)) FROM read_parquet('{glob}')").fetchall()
    assert count == 5
    assert _verify(vault) == [("drift", vault.rel(edited))]  # the hand edit, nothing else


def test_verify_names_damage_and_repairs_what_is_safe(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path, [_turn("alice", 40 + i, f"{TOPICS[i]} notes", i) for i in range(4)])
    originals = _folders(vault)
    archive_turns(vault, now=NOW)
    store = ArchiveStore(vault.layout.archive / "turns")
    stub1 = vault.layout.archive_stub("alice", "turn_000001")
    stub2 = vault.layout.archive_stub("alice", "turn_000002")
    part1 = vault.root / parse_document(stub1.read_text()).frontmatter["archive_file"]
    # a stub lost: its rows become orphans, and the only copy of the turn
    stub1_text = stub1.read_text()
    stub1.unlink()
    # a turn put back by hand while its stub stays: both live and archived
    dest = vault.layout.turn_dir("alice", "turn_000002")
    from indexers.turn_folder import write_turn_folder

    key2 = ("alice", "turn_000002")
    part2 = vault.root / parse_document(stub2.read_text()).frontmatter["archive_file"]
    write_turn_folder(store.read_turn(part2, *key2), dest)
    problems = _verify(vault)
    assert ("archive_orphan_rows", vault.rel(part1)) in problems
    assert ("archive_both", vault.rel(dest)) in problems
    assert _verify(vault, repair=True) == []
    assert stub1.exists() and not stub2.exists()
    assert parse_document(stub1.read_text()).frontmatter["archive_file"] == vault.rel(part1)
    assert stub1.read_text().split("archived_at:")[0] == stub1_text.split("archived_at:")[0]
    assert _folders(vault)["alice/turn_000002"] == originals["alice/turn_000002"]
    assert ("alice", "turn_000002") not in store.read_part(part2).turns if part2.exists() else True
    # a stub that names no valid file, and tampered bytes: reported, never "repaired" away
    stub3 = vault.layout.archive_stub("alice", "turn_000003")
    stub3.write_text(stub3.read_text().replace("archive_file: archive/turns/", "archive_file: x/"))
    part4 = (
        vault.root
        / parse_document(vault.layout.archive_stub("alice", "turn_000004").read_text()).frontmatter[
            "archive_file"
        ]
    )
    table = pq.read_table(part4, partitioning=None)
    rows = zip(
        table["turn"].to_pylist(), table["path"].to_pylist(), table["content"].to_pylist(), strict=True
    )
    content = [
        c.replace(b"notes", b"NOTES") if (t, p) == ("turn_000004", "context.md") else c for t, p, c in rows
    ]
    index = table.schema.get_field_index("content")
    pq.write_table(table.set_column(index, "content", pa.array(content, pa.binary())), part4)
    report = verify_vault(vault, repair=True, checks=default_checks())
    found = {(p.kind, p.path, p.message.split(":")[0]) for p in report.problems}
    assert found == {
        ("archive_stub", vault.rel(stub3), vault.rel(stub3)),
        ("archive_orphan_rows", vault.rel(part4), "alice/turn_000003"),
        ("archive_checksum", vault.rel(part4), "alice/turn_000004/context.md"),
    }
    assert stub3.exists() and vault.layout.archive_stub("alice", "turn_000004").exists()


def test_key_claims_come_from_tool_results_then_the_answer() -> None:
    body = """# Turn 000001 — laptops

## 0. User Query

cheap laptops?

## 4. Tool Execution

### internet.research (ok)

**Args:** query='cheap laptops'

Found 3 laptops under $800. The ThinkPad E14 is the best value.

```json
{"ignored": "code is not a claim"}
```

### memory.search (ok)

**Args:** query='budget'

Budget is $800 (from preferences). Second claim here is cut.

## 5. Synthesis

The answer is not used when tools said something.
"""
    assert key_claims(body) == [
        "Found 3 laptops under $800.",
        "The ThinkPad E14 is the best value.",
        "Budget is $800 (from preferences).",
    ]
    answer_only = "## 5. Synthesis\n\nHamsters like seeds. They sleep by day.\n"
    assert key_claims(answer_only) == ["Hamsters like seeds.", "They sleep by day."]
    assert key_claims("## 0. User Query\n\nhi\n") == []


def test_a_turn_whose_log_is_open_for_writing_stays_live(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path, [_turn("alice", 80, "kayak", 1), _turn("alice", 80, "bonsai", 2)])
    log = vault.layout.turn_dir("alice", "turn_000002") / "events.jsonl"
    with EventWriter(log, user="alice", turn="turn_000002"):
        report = archive_turns(vault, now=NOW)
    assert report.archived == 1 and _stub_ids(vault) == {"alice/turn_000001"}
    assert report.skipped == [
        {"doc_id": "alice/turn_000002", "reason": "a writer has its log open; stays live"}
    ]
    assert set(_folders(vault)) == {"alice/turn_000002"}
    assert _verify(vault) == []
    assert archive_turns(vault, now=NOW).archived == 1


def test_a_turn_whose_log_became_a_link_stays_live_for_that_reason(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log swapped for a link between the plan and the move is never read through and
    the turn stays live, as before; the report said "a writer has its log open", which
    sent the user looking for a process that was not there.  It names the link now."""
    _import(vault, tmp_path, [_turn("alice", 80, "kayak", 1), _turn("alice", 80, "bonsai", 2)])
    folder = vault.layout.turn_dir("alice", "turn_000002")
    copy = tmp_path / "events-copy.jsonl"
    copy.write_bytes((folder / "events.jsonl").read_bytes())
    real = archive_jobs.log_held

    def linked_then_held(path: Path):
        if path == folder and not (path / "events.jsonl").is_symlink():
            (path / "events.jsonl").unlink()
            (path / "events.jsonl").symlink_to(copy)
        return real(path)

    monkeypatch.setattr(archive_jobs, "log_held", linked_then_held)
    report = archive_turns(vault, now=NOW)
    assert report.archived == 1 and _stub_ids(vault) == {"alice/turn_000001"}
    assert report.skipped == [
        {"doc_id": "alice/turn_000002", "reason": "its events.jsonl is a symbolic link; stays live"}
    ]
    assert (folder / "events.jsonl").is_symlink() and copy.read_bytes()


def test_a_copy_that_does_not_read_back_removes_nothing(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _import(vault, tmp_path, [_turn("alice", 80, f"{t} notes", i) for i, t in enumerate(TOPICS)])
    originals = _folders(vault)
    write = ArchiveStore._write_table

    def lossy(self: ArchiveStore, table: pa.Table, where: object) -> None:
        write(self, table.slice(0, table.num_rows - 1), where)  # a writer that drops a row

    monkeypatch.setattr(ArchiveStore, "_write_table", lossy)
    with pytest.raises(ArchiveError, match="does not read back as written; nothing was removed"):
        archive_turns(vault, now=NOW)
    assert _folders(vault) == originals and not _stub_ids(vault)
    assert ArchiveStore(vault.layout.archive / "turns").parts() == []
    assert _verify(vault) == []
    monkeypatch.undo()
    assert archive_turns(vault, now=NOW).archived == len(TOPICS)


def test_stubs_are_stamped_with_the_jobs_now(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path, [_turn("alice", 60, "Which tent for a windy ridge?", 1)])
    assert archive_turns(vault, now=NOW).archived == 1
    stub = parse_document((vault.layout.archive / "stubs" / "alice" / "turn_000001.md").read_text())
    assert stub.frontmatter["archived_at"] == NOW


def test_a_batch_never_moves_a_turn_folder_through_a_swapped_trash_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch moves each turn folder aside into `turns/.trash/` before removing it.  The
    move went by path after `.trash` was checked: swapped for a link in between, it took
    alice's turn folder out of the vault (and the removal that follows reached through the
    link).  Now both folders are opened and checked from the vault root: refused, the turn
    stays live."""
    import shutil

    from events.errors import NotInVault
    from pandafs.archive._common import TRASH_DIR

    _import(vault, tmp_path, [_turn("alice", 90, "hamster chat")])
    turns = vault.layout.turns_dir("alice")
    trash = turns / TRASH_DIR
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_bytes(b"not the vault's\n")
    real_aside, real_rmtree = archive_jobs.aside, shutil.rmtree
    removed: list[str] = []

    def checked_then_swapped(*args: object) -> Path:
        got = real_aside(*args)
        swap_for_link(trash, outside)
        return got

    def rmtree(path: Path, *args: object, **kw: object) -> None:
        removed.append(os.path.realpath(path))
        real_rmtree(path, *args, **kw)

    monkeypatch.setattr(archive_jobs, "aside", checked_then_swapped)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link or leaves the vault"):
        archive_turns(vault, now=NOW)
    assert sorted(os.listdir(outside)) == ["keep.md"]
    assert not [p for p in removed if p.startswith(str(outside))]  # nothing removed out there
    assert (turns / "turn_000001" / "events.jsonl").is_file()  # still live, in its folder


def test_a_restore_never_writes_a_turn_through_a_swapped_staging_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore rebuilds the turn folder in `turns/.staging/` before renaming it into
    place.  That folder (and its files, modes and times) was written by path after
    `.staging` was checked: swapped for a link in between, alice's archived turn was
    written out of the vault, wherever the link pointed.  Now the folder is made in
    `.staging` as opened and checked from the vault root, its files by descriptor."""
    from events.errors import NotInVault
    from pandafs.archive import _jobs as archive_steps
    from pandafs.archive._common import STAGING_DIR

    _import(vault, tmp_path, [_turn("alice", 90, "hamster chat")])
    assert archive_turns(vault, now=NOW).archived == 1
    staging = vault.layout.turns_dir("alice") / STAGING_DIR
    outside = tmp_path / "outside"
    outside.mkdir()
    real = archive_steps.aside

    def checked_then_swapped(*args: object) -> Path:
        got = real(*args)
        swap_for_link(staging, outside)
        return got

    monkeypatch.setattr(archive_steps, "aside", checked_then_swapped)
    with pytest.raises(NotInVault, match="is a symbolic link"):
        restore_turns(vault)
    assert list(outside.rglob("*")) == []
    assert _stub_ids(vault) == {"alice/turn_000001"}  # still archived


def test_a_batch_never_removes_its_trash_through_a_swapped_trash_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once archived, the turn folder moved into `turns/.trash/` is removed.  That rmtree
    went by path: `.trash` swapped for a link just before (by alice, whose folder it is),
    the folder of that name under the link's target was deleted, out of the vault.  Now
    the removal goes by name in `.trash` as opened and checked from the vault root."""
    import shutil

    from pandafs.archive._common import TRASH_DIR

    _import(vault, tmp_path, [_turn("alice", 90, "hamster chat")])
    trash = vault.layout.turns_dir("alice") / TRASH_DIR
    outside = tmp_path / "outside"
    outside.mkdir()
    real_rmtree = shutil.rmtree
    planted: list[Path] = []

    def swapped_then_removed(path: str | Path, *args: object, **kw: object) -> None:
        name = os.path.basename(path)
        if name.startswith("turn_000001.") and not trash.is_symlink():
            planted.append(outside / name / "keep.md")
            trash.rename(tmp_path / "trash.moved")
            trash.symlink_to(outside, target_is_directory=True)
            (outside / name).mkdir()
            (outside / name / "keep.md").write_bytes(b"not the vault's\n")
        real_rmtree(path, *args, **kw)

    monkeypatch.setattr(shutil, "rmtree", swapped_then_removed)
    archive_turns(vault, now=NOW)
    [keep] = planted  # the swap was staged
    assert keep.read_bytes() == b"not the vault's\n"  # deleted through the link before
    assert list((tmp_path / "trash.moved").iterdir()) == []  # the real trash emptied

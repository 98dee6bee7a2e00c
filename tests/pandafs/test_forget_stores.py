"""Forget: one test per store the vault keeps, each failing if the forgotten text survives there.

One vault is built for the module with real turns (the offline pipeline), a real inbox
query answered to `outbox/`, archived turns (real Parquet and stubs), a research turn's
files, the learning catalog and a real tantivy index; every store is read before the
forget (the words are there) and after it (they are not).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import tantivy

from events.fsio import read_vault_file
from events.log import read_events
from pandafs.archive import archive_turns
from pandafs.forget import forget, scan_user
from pandafs.inbox import Inbox
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.rebuild import rebuild_all
from pandafs.turns import iter_turns, load_view, render_turn
from pandafs.vault import Vault

SECRET = "zorblaxian"  # the distinctive word of what alice will forget
KEPT = "quillfeather"  # a word of what she keeps: it must survive every store


def _grep(root: Path, base: str, word: str) -> list[str]:
    found = []
    for path in sorted((root / base).rglob("*")) if (root / base).exists() else []:
        if path.is_file() and not path.is_symlink() and word.encode() in path.read_bytes().lower():
            found.append(path.relative_to(root).as_posix())
    return found


def _parquet_text(root: Path, base: str) -> str:
    import pyarrow.parquet as pq

    out = []
    for path in sorted((root / base).rglob("*.parquet")) if (root / base).exists() else []:
        table = pq.read_table(path)
        for column in table.column_names:
            for value in table.column(column).to_pylist():
                out.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))
    return "\n".join(out).lower()


def _index_terms(root: Path) -> set[str]:
    """Every term of the index's text fields, and the words of its topic facets."""
    index = tantivy.Index.open(str(root / "indexes" / "fulltext" / "tantivy"))
    searcher = index.searcher()
    terms = {t for name in ("title", "keywords", "body") for t, _n in searcher.terms_with_prefix(name, "")}
    hits = searcher.search(tantivy.Query.all_query(), limit=max(1, searcher.num_docs)).hits
    for _score, address in hits:
        for name in ("prose", "payload"):
            value = searcher.doc(address).get_first(name)
            if value is not None:
                terms.update(bytes(value).decode("utf-8", "replace").lower().replace("/", " ").split())
    return terms


def _stores(root: Path) -> dict[str, Any]:
    """What each store says about the two words (True: it holds the word)."""

    def both(check: Any) -> dict[str, bool]:
        return {SECRET: check(SECRET), KEPT: check(KEPT)}

    return {
        "document": both(
            lambda w: bool(
                _grep(root, "users/alice/preferences.md", w) + _grep(root, "users/alice/memories", w)
            )
        ),
        "events": both(
            lambda w: bool([p for p in _grep(root, "users/alice/turns", w) if p.endswith("events.jsonl")])
        ),
        "context": both(
            lambda w: bool([p for p in _grep(root, "users/alice/turns", w) if p.endswith("context.md")])
        ),
        "projections": both(
            lambda w: bool(
                [
                    p
                    for p in _grep(root, "users/alice/turns", w)
                    if p.endswith(("ticket.md", "toolresults.md", "metadata.json", "query_analysis.json"))
                ]
            )
        ),
        "research": both(
            lambda w: bool(
                [p for p in _grep(root, "users/alice/turns", w) if "research" in p or "webpage_cache" in p]
            )
        ),
        "index_terms": both(lambda w: w in _index_terms(root)),
        "index_segments": both(lambda w: bool(_grep(root, "indexes/fulltext", w))),
        "parquet_part": both(lambda w: w in _parquet_text(root, "archive/turns")),
        "stub": both(lambda w: bool(_grep(root, "archive/stubs/alice", w))),
        "catalog": both(
            lambda w: (
                w in _parquet_text(root, "observability/catalog")
                or bool(_grep(root, "observability/daily", w))
            )
        ),
        "caches": both(lambda w: bool(_grep(root, "indexes/learning", w))),
        "outbox": both(lambda w: bool(_grep(root, "outbox/alice", w))),
        "inbox_processed": both(lambda w: bool(_grep(root, "inbox/processed", w))),
    }


def _research_files(folder: Path) -> None:
    """The research files a research turn leaves (names and shapes as `research.tool` writes them)."""
    (folder / "research.md").write_text(
        "---\ntitle: Research\n---\n# Research\n\n"
        f"The {SECRET} garden opens at nine.\n\nA {KEPT} shop sells pens.\n"
    )
    (folder / "webpage_cache/garden-example").mkdir(parents=True)
    (folder / "webpage_cache/garden-example/page_content.md").write_text(
        f"Visit the {SECRET} garden.\n\nPens by {KEPT}.\n"
    )


@pytest.fixture(scope="module")
def forgotten(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    vault, _ = Vault.init(tmp_path_factory.mktemp("forget") / "vault")
    root = vault.root
    config = (root / "pandafs.toml").read_text()  # a topic named by the word: the catalog's rows hold it
    (root / "pandafs.toml").write_text(
        config.replace("# [topics]\n", f'[topics]\n"garden.{SECRET}" = ["{SECRET}"]\n')
    )
    memory = Memory(vault)
    memory.save(f"Likes {SECRET} tea", user="alice", doc_type="preference")
    memory.save(f"Likes {KEPT} pens", user="alice", doc_type="preference")
    memory.save(f"The {SECRET} garden is behind the old mill", user="alice")
    memory.save(f"My {KEPT} notebook is blue", user="alice")
    with Pipeline(vault, memory=memory) as pipeline:
        pipeline.ask(f"What do you know about {SECRET} tea and {KEPT} pens?", user="alice")
        pipeline.ask(f"Tell me about the {SECRET} garden", user="alice")
        pipeline.ask(f"Where is my {KEPT} notebook?", user="alice")
    _research_files(root / "users/alice/turns/turn_000002")  # archived below: in Parquet
    (root / "inbox/alice").mkdir(parents=True, exist_ok=True)
    (root / "inbox/alice/q.md").write_text(f"Is the {SECRET} garden open on Sundays?\n")
    (root / "inbox/alice/k.md").write_text(f"Do I have a {KEPT} notebook?\n")
    with Inbox(vault, memory=memory, settle_s=0.0) as box:
        box.process_pending(final=True)
    archive_turns(vault, age_days=0, now=datetime(2027, 6, 1, tzinfo=UTC), user="alice")
    with Pipeline(vault, memory=memory) as pipeline:  # one live turn after the archive
        last = pipeline.ask(f"Is the {SECRET} garden near the {KEPT} shop?", user="alice")
    _research_files(root / last.context_path.rsplit("/", 1)[0])
    rebuild_all(vault, beside=False)
    before = _stores(root)
    report = forget(vault, SECRET, "alice")
    return {"vault": vault, "before": before, "after": _stores(root), "report": report}


STORES = [
    "document",
    "events",
    "context",
    "projections",
    "research",
    "index_terms",
    "index_segments",
    "parquet_part",
    "stub",
    "catalog",
    "caches",
    "outbox",
    "inbox_processed",
]


@pytest.mark.parametrize("store", STORES)
def test_forgotten_text_is_gone_from(forgotten: dict[str, Any], store: str) -> None:
    before, after = forgotten["before"][store], forgotten["after"][store]
    if not before[SECRET]:
        pytest.fail(f"the fixture put nothing forgettable in {store}: the test would prove nothing")
    assert after[SECRET] is False, f"{SECRET!r} survives in {store}"
    if before[KEPT] and store not in ("parquet_part", "stub"):  # archived turns that held it come back live
        assert after[KEPT] is True, f"{KEPT!r} (not forgotten) was lost from {store}"


def test_nothing_brings_it_back_and_the_rest_stays(forgotten: dict[str, Any]) -> None:
    vault: Vault = forgotten["vault"]
    memory = Memory(vault)
    assert forgotten["report"].survivors == []
    assert memory.search(SECRET, user="alice", include_expired=True) == []
    assert memory.search(KEPT, user="alice")  # what was not forgotten is still found
    for hit in memory.search("garden", user="alice", limit=50):
        assert (
            SECRET
            not in orjson.dumps(memory.retrieve(hit["doc_id"], user="alice").as_json()).decode().lower()
        )
    with Pipeline(vault, memory=memory) as pipeline:  # nor does a turn that asks about it
        answer = pipeline.ask("Which garden did I tell you about, and where is it?", user="alice").answer
    assert SECRET not in answer.lower()
    rebuild_all(vault, beside=False)  # a rebuild from the files does not resurrect it
    assert memory.search(SECRET, user="alice", include_expired=True) == []
    assert SECRET not in _index_terms(vault.root)
    assert scan_user(vault, "alice") == []


def test_logs_verify_and_replay_to_the_same_projections(forgotten: dict[str, Any]) -> None:
    from pandafs.verify import default_checks, verify_vault

    vault: Vault = forgotten["vault"]
    report = verify_vault(vault, checks=default_checks())
    assert report.ok, report.problems
    anchored = 0
    for ref in iter_turns(vault, "alice"):
        events = read_events(ref.events_path, root=vault.root)
        anchored += events[-1].type == "forgotten"
        for name, data in render_turn(load_view(ref)).items():  # replay gives what is on disk
            assert (
                read_vault_file(vault.root, vault.rel(ref.path / name))[0] == data or name == "metadata.json"
            )
    assert anchored >= 2
    records = [
        orjson.loads(line)
        for line in (vault.root / "users/alice/memory.events.jsonl").read_bytes().splitlines()
    ]
    record = [r for r in records if r["type"] == "forgotten"][-1]["data"]
    assert record["by"] == "alice" and record["kind"] == "words" and record["word_hashes"]
    assert SECRET not in orjson.dumps(record).decode()


def test_the_proof_finds_a_copy_planted_after(forgotten: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    vault = Vault.open(shutil.copytree(forgotten["vault"].root, tmp_path / "copy", symlinks=True))
    (vault.root / "users/alice/memories/planted.md").write_text(
        f"# note\n\nThe {SECRET.upper()} garden again.\n"
    )
    (vault.root / "outbox/alice/planted.json").write_bytes(orjson.dumps({"a": [f"x {SECRET}"]}))
    found = {s.where for s in scan_user(vault, "alice")}
    assert {"users/alice/memories/planted.md", "outbox/alice/planted.json"} <= found

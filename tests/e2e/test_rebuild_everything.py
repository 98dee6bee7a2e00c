"""Indexes are disposable: delete indexes/ and `pandafs rebuild` gives the same answers."""

from __future__ import annotations

import shutil

from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.learning import cache_json

QUERIES = ["hamster Biscuit food", "sunflower seeds", "what does Biscuit eat"]


def test_rebuild_after_deleting_indexes_restores_results_and_trust(cli, vault: Vault) -> None:
    Memory(vault).save(
        "Biscuit the Syrian hamster loves sunflower seeds.",
        user="alice",
        topic="pet.hamster",
        keywords=["hamster", "biscuit"],
    )
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        for _ in range(4):
            assert (
                pipeline.ask("What does my hamster Biscuit like to eat?", user="alice").outcome == "APPROVE"
            )
        pipeline.ask("thanks!", user="alice")
    before = [Memory(vault).search(q, user="alice", limit=20) for q in QUERIES]
    trusted = {h["doc_id"]: h["trust"] for hits in before for h in hits}
    assert any(doc.startswith("alice/turn_") and t is not None for doc, t in trusted.items())

    shutil.rmtree(vault.layout.indexes)
    result = cli("--root", vault.root, "rebuild", "--json")
    assert result.code == 0, result.err
    assert result.json["learning"]["turns"] == 5
    after = [Memory(vault).search(q, user="alice", limit=20) for q in QUERIES]
    assert [[h["doc_id"] for h in hits] for hits in after] == [[h["doc_id"] for h in hits] for hits in before]
    assert {h["doc_id"]: h["trust"] for hits in after for h in hits} == trusted
    assert cli("--root", vault.root, "verify").code == 0


def test_a_rebuild_indexes_each_document_once_with_its_trust(cli, vault: Vault) -> None:
    """The learning fold runs before the index is built, so each turn goes in once with
    the trust the fold gave it: no second copy whose deletion BM25 would still count."""
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        for _ in range(4):
            pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
    assert cli("--root", vault.root, "rebuild", "--json").code == 0
    memory = Memory(vault)
    hits = memory.search("hamster", user="alice", limit=20)
    assert any(h["trust"] is not None for h in hits)
    searcher = memory.index.reader.searcher()
    assert searcher.doc_freq("body", "hamster") == len(hits) == searcher.num_docs


def test_rebuild_says_what_runs_before_the_indexing_bar(cli, vault: Vault) -> None:
    """The learning fold runs first and has no count to show: a person is told what it is
    (on stderr); `--json` keeps stderr quiet."""
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
    plain = cli("--root", vault.root, "rebuild")
    assert plain.code == 0 and "recomputing trust, scope and the turn catalog" in plain.err
    assert "trust and scope recomputed from 1 turns" in plain.out
    quiet = cli("--root", vault.root, "rebuild", "--json")
    assert quiet.code == 0 and quiet.err == ""


def test_every_derived_artefact_comes_back_the_same_after_deleting_indexes(cli, vault: Vault) -> None:
    """Whatever a live turn derives, a rebuild derives alike from the files and events: the
    catalog and rollups (`stats --since`), the reliability table and its site notes, the
    learning counts, the documents' frontmatter and what each search finds with its trust
    (the documents found, not their order: a live index's BM25 still counts old copies).
    (It found a turn folded into the reliability table at the clock's time at Save and at
    the turn's own time in a rebuild.)"""
    import pyarrow.parquet as pq

    from tests.support.web_fixtures import WebFixtures, configure

    def derived() -> dict[str, object]:
        stats = cli("--root", vault.root, "stats", "--since", "30d", "--json")  # (the turns' own clock)
        assert stats.code == 0, stats.err  # (first: it folds the turns the last Save left to the next)
        memory = Memory(vault)
        return {
            "stats": stats.json,
            "reliability": sorted(
                pq.read_table(vault.layout.indexes / "source_reliability.parquet").to_pylist(),
                key=lambda row: row["domain"],
            ),
            "site notes": {p.name: p.read_text() for p in (vault.root / "site_knowledge").glob("*.md")},
            "counts": {k: v for k, v in cache_json(vault).items() if k in ("counts", "trust")},
            "documents": {
                str(p.relative_to(vault.root)): p.read_text() for p in vault.root.rglob("users/*/**/*.md")
            },
            "hits": [  # what is found, with its trust (BM25 near-ties may swap: docs/search.md)
                sorted((h["doc_id"], h["trust"]) for h in memory.search(q, user=user, limit=20))
                for user in ("alice", "bob")
                for q in (*QUERIES, "Lenovo LOQ price", "metric units", "laptop")
            ],
        }

    with WebFixtures() as web:
        vault = configure(vault, web)
        Memory(vault).save(
            "Biscuit the Syrian hamster loves sunflower seeds.", user="alice", topic="pet.hamster"
        )
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="alice")
            pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
            pipeline.ask("I prefer answers in metric units", user="alice")
            pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="bob")
    before = derived()
    assert before["reliability"] and before["site notes"] and before["counts"]
    assert sum(day["turns"] for day in before["stats"]["daily"]) == 5  # the rollups hold every turn
    shutil.rmtree(vault.layout.indexes)
    assert cli("--root", vault.root, "rebuild", "--json").code == 0
    assert derived() == before

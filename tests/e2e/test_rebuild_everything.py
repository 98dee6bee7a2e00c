"""Indexes are disposable: delete indexes/ and `pandafs rebuild` gives the same answers."""

from __future__ import annotations

import shutil

from pandafs.llm.offline import OfflineBackend
from pandafs.memory import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

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
    searcher = memory.index.searcher()
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

"""A past turn found by search shows what was asked and answered, never the pipeline's own
sections (§2's evidence tables and links, the reflection, the plan, the validation)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_a_turns_snippet_is_cut_from_its_question_and_answer(vault: Vault) -> None:
    memory = Memory(vault)
    memory.save(
        "Lenovo LOQ 15 gaming laptop with an RTX 4050 GPU: $697 at Best Buy",
        user="alice",
        topic="electronics.laptop",
        keywords=["lenovo", "laptop", "rtx"],
        now=T0,
    )
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: T0 + timedelta(hours=1)) as pipeline:
        result = pipeline.ask("Which Lenovo laptop with an RTX GPU did we look at?", user="alice")
        pipeline.finisher.settle()
    assert "$697" in result.answer
    [hit] = [
        h
        for h in Memory(vault).search("lenovo laptop", user="alice", limit=10)
        if h["doc_id"] == f"alice/{result.turn}"
    ]
    snippet = str(hit["snippet"])
    assert "Which **Lenovo** **laptop**" in snippet and "$697" in snippet, snippet
    for internal in ("|", "[[", "PROCEED", "Decision", "route", "APPROVE"):
        assert internal not in snippet, (internal, snippet)

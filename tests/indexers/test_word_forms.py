"""Word forms from the index's vocabulary: a stem meets the forms one letter apart, nothing looser."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson

from pandafs.importer import import_turns
from pandafs.memory import Memory
from pandafs.vault import Vault

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
TURNS = [
    ("s1", "2026-06-02T10:00:00Z", "The economic news worried me all spring"),
    ("s2", "2026-07-09T18:00:00Z", "The bank wants to assess every asset I hold"),
    ("s3", "2026-08-01T09:00:00Z", "We threw a party on the roof for Nadia"),
    ("s4", "2026-08-20T19:00:00Z", "My partner and I booked the harbour restaurant"),
]


def _memory(vault: Vault, tmp_path: Path) -> Memory:
    lines = [
        {
            "user": "alice",
            "external_id": f"{session}-t000",
            "timestamp": when,
            "query": text,
            "response": "Noted.",
            "meta": {"session": session},
        }
        for session, when, text in TURNS
    ]
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    return memory


def _sessions(memory: Memory, query: str) -> list[str]:
    hits = memory.search(query, user="alice", now=NOW, limit=10, snippets=False)
    return [h["episode"] for h in hits]


def test_a_stem_meets_the_form_porter_leaves_one_letter_apart(vault: Vault, tmp_path: Path) -> None:
    memory = _memory(vault, tmp_path)
    assert _sessions(memory, "What about the economy?") == ["s1"]  # economi → econom(ic)
    memory.ranking = replace(memory.ranking, prefix_weight=0.0)
    assert _sessions(memory, "What about the economy?") == []


def test_a_shorter_shared_prefix_is_not_a_word_form(vault: Vault, tmp_path: Path) -> None:
    memory = _memory(vault, tmp_path)
    assert _sessions(memory, "the assembly of the shelf") == []  # not "asse…": assess, asset
    assert _sessions(memory, "Where does my partner come from?") == ["s4"]  # not "part…": party

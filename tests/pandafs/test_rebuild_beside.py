"""A whole rebuild runs the learning fold in a forked process beside the indexing
(`pandafs.rebuild`): the index it swaps in is the one a fold-first rebuild makes, whether
the learning cache it took the turns' trust from was in step with the events, out of
step, or not there at all, and a fold that fails leaves the live index as it was."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.rebuild import rebuild_all
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.support.learning import T0, cache_json

QUERIES = ["hamster Biscuit food", "sunflower seeds", "what does Biscuit eat", "thanks"]


def _history(vault: Vault) -> None:
    """Turns whose trust the fold derives: used, validated, one thanked."""
    Memory(vault).save(
        "Biscuit the Syrian hamster loves sunflower seeds.",
        user="alice",
        topic="pet.hamster",
        keywords=["hamster", "biscuit"],
        now=T0,
    )
    asked = iter(range(1, 100))
    with Pipeline(
        vault, backend=OfflineBackend(), clock=lambda: T0 + timedelta(minutes=next(asked))
    ) as pipeline:
        for _ in range(4):
            pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
        pipeline.ask("thanks!", user="alice")
        pipeline.ask("Where do hamsters come from?", user="bob")


def _answers(vault: Vault) -> list[list[dict[str, Any]]]:
    memory = Memory(vault)
    now = T0 + timedelta(days=1)
    return [memory.search(q, user=user, limit=20, now=now) for q in QUERIES for user in ("alice", "bob")]


def _learning(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result["learning"].items() if k != "seconds"}


def test_beside_the_fold_a_rebuild_swaps_in_the_index_a_fold_first_one_does(vault: Vault) -> None:
    _history(vault)
    rebuild_all(vault, beside=False)
    first = rebuild_all(vault, beside=False)  # the second of two: rollups already written
    expected = _answers(vault)
    assert any(h["trust"] is not None for hits in expected for h in hits if h["kind"] == "turn")
    held = Memory(vault).index.reader.searcher().num_docs

    beside = rebuild_all(vault, beside=True)
    assert "waiting" in beside["stages"] and "waiting" not in first["stages"]
    assert _answers(vault) == expected  # hits, scores, trust
    assert Memory(vault).index.reader.searcher().num_docs == held  # no second copy of any turn
    assert _learning(beside) == _learning(first)
    assert beside["reliability"] == first["reliability"]


def test_a_cache_out_of_step_with_the_events_is_caught_and_the_turns_indexed_again(vault: Vault) -> None:
    _history(vault)
    rebuild_all(vault, beside=False)
    expected = _answers(vault)
    turn = next(h for hits in expected for h in hits if h["kind"] == "turn" and h["trust"] is not None)
    cache = vault.layout.indexes / "learning"
    journal = cache / orjson.loads((cache / "state.json").read_bytes())["journal"]
    with journal.open("ab") as out:  # a cache that no longer says what the events do
        out.write(orjson.dumps({"trust": {turn["doc_id"]: 0.0123}}) + b"\n")

    said: list[str] = []
    rebuild_all(vault, beside=True, stage=said.append)
    assert any("out of step" in line for line in said)
    assert _answers(vault) == expected
    assert cache_json(vault)["trust"][turn["doc_id"]] == turn["trust"]


def _imported(vault: Vault) -> None:
    """Turns that earned no trust: imported, never used nor judged."""
    source = vault.root.parent / "lines.jsonl"
    lines = [
        {"user": user, "timestamp": (T0 + timedelta(hours=n)).isoformat(), "query": q, "response": "Noted."}
        for n, (user, q) in enumerate(
            [("alice", "my hamster Biscuit eats sunflower seeds"), ("bob", "hamsters come from Syria")] * 3
        )
    ]
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert import_turns(vault, source).imported == len(lines)


def test_without_a_cache_turns_that_earned_no_trust_are_indexed_once_beside_the_fold(vault: Vault) -> None:
    """An import leaves no learning cache, nor does `rm -r indexes/`: the turns are indexed
    beside the fold with no trust, which is what the fold finds, so nothing is indexed
    twice and the index is the fold-first one."""
    _imported(vault)
    rebuild_all(vault, beside=False)
    first = rebuild_all(vault, beside=False)  # the second of two: rollups already written
    expected = _answers(vault)
    assert expected[0] and all(h["trust"] is None for hits in expected for h in hits)
    shutil.rmtree(vault.layout.indexes)

    said: list[str] = []
    beside = rebuild_all(vault, stage=said.append)
    assert "waiting" in beside["stages"] and len(said) == 1 and "beside" in said[0]
    assert _answers(vault) == expected
    assert _learning(beside) == _learning(first)


def test_without_a_cache_turns_that_earned_trust_are_indexed_again_with_it(vault: Vault) -> None:
    _history(vault)
    rebuild_all(vault, beside=False)
    expected = _answers(vault)
    shutil.rmtree(vault.layout.indexes)

    said: list[str] = []
    rebuild_all(vault, stage=said.append)
    assert any("not there" in line for line in said), said
    assert _answers(vault) == expected


def test_a_fold_that_fails_leaves_the_live_index_and_says_why_in_one_line(
    cli, vault: Vault, tmp_path: Path
) -> None:
    _history(vault)
    rebuild_all(vault, beside=False)
    expected = _answers(vault)
    daily = vault.layout.observability / "daily"
    for path in daily.iterdir():
        path.unlink()
    daily.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    daily.symlink_to(elsewhere)  # the fold writes no rollup through a link: it refuses

    got = cli("--root", vault.root, "rebuild", "--json")
    assert got.code == 2 and got.err.count("\n") == 1 and "Traceback" not in got.err, got
    assert "daily" in got.err
    assert _answers(vault) == expected
    assert list(elsewhere.iterdir()) == []
    assert not any(p.name.endswith(".new") for p in vault.layout.indexes.iterdir())

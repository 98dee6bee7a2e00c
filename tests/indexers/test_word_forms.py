"""Word forms from the index's vocabulary: a stem meets the forms one letter apart, nothing looser."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pandafs.vault import Vault
from tests.support.sessions import memory_with, sessions_found

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
TURNS = [
    ("s1", "2026-06-02T10:00:00Z", "The economic news worried me all spring", "Noted."),
    ("s2", "2026-07-09T18:00:00Z", "The bank wants to assess every asset I hold", "Noted."),
    ("s3", "2026-08-01T09:00:00Z", "We threw a party on the roof for Nadia", "Noted."),
    ("s4", "2026-08-20T19:00:00Z", "My partner and I booked the harbour restaurant", "Noted."),
]


def test_a_stem_meets_the_form_porter_leaves_one_letter_apart(vault: Vault, tmp_path: Path) -> None:
    memory = memory_with(vault, tmp_path, TURNS)
    assert memory.ranking.prefix_weight == 0.0  # off by default: no gain on the real sets
    assert sessions_found(memory, "What about the economy?", NOW) == []
    memory.ranking = memory.ranking._replace(prefix_weight=0.5)
    assert sessions_found(memory, "What about the economy?", NOW) == ["s1"]  # economi → econom(ic)


def test_a_shorter_shared_prefix_is_not_a_word_form(vault: Vault, tmp_path: Path) -> None:
    memory = memory_with(vault, tmp_path, TURNS)
    memory.ranking = memory.ranking._replace(prefix_weight=0.5)
    assert sessions_found(memory, "the assembly of the shelf", NOW) == []  # not "asse…": assess, asset
    assert sessions_found(memory, "Where does my partner come from?", NOW) == ["s4"]  # not "part…": party


def test_each_lexical_switch_turns_off_its_resource() -> None:
    from indexers.query import plan_query

    def groups(**switches: bool) -> dict[str, tuple[float, set[str]]]:
        plan = plan_query("what car did I buy, the one I like", **switches)
        return {g.stem: (g.weight, set(g.variants)) for g in plan.groups}

    every = groups()
    assert "the" not in every and every["like"][0] == 0.4 and "bought" in every["buy"][1]
    assert "the" in groups(stop_words=False)
    assert groups(framing=False)["like"][0] == 1.0
    assert "bought" not in groups(word_forms=False)["buy"][1]

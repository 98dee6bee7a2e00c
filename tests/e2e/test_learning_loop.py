"""The learning loop end to end (acceptance 1): a memory earns its scope through use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from events.documents import parse_document
from events.log import read_events
from events.schema import ScopeChanged
from events.stamps import format_ts
from pandafs.learning.engine import Learning
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.config import set_setting

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
HAMSTER = "Biscuit the Syrian hamster loves sunflower seeds and hides them in his cheeks."
QUERY = "What does my hamster Biscuit like to eat?"


def _front(vault: Vault, rel: str) -> dict:
    return parse_document((vault.root / rel).read_text(encoding="utf-8")).frontmatter


def _learned(vault: Vault, rel: str) -> dict:
    front = _front(vault, rel)
    keys = ("scope", "usage_count", "validation_count", "validation_success", "trust", "expires_at")
    return {k: front.get(k) for k in keys}


def test_a_memory_cited_by_twelve_approved_turns_goes_new_user_and_is_never_shared(cli, vault: Vault) -> None:
    # Six §2 slots would go to the earlier turns on the same question after a few turns;
    # with room for all of them every turn cites the memory (the gatherer's choice, not ours).
    set_setting(vault.root, "max_sources", 20)
    vault = Vault.open(vault.root)
    saved = Memory(vault).save(
        HAMSTER, user="alice", topic="pet.hamster", keywords=["hamster", "biscuit"], now=T0
    )
    assert _learned(vault, saved.doc_path)["scope"] == "new"

    clock = {"t": T0}
    changed_in: dict[str, list[ScopeChanged]] = {}
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: clock["t"]) as pipeline:
        for i in range(12):
            clock["t"] = T0 + timedelta(minutes=30 * (i + 1))
            result = pipeline.ask(QUERY, user="alice")
            assert result.outcome == "APPROVE"
            events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
            used = next(e.data for e in events if e.type == "documents_used")
            assert saved.doc_id in used.doc_ids and used.outcome == "APPROVE"
            changed_in[result.turn] = [e.data for e in events if isinstance(e.data, ScopeChanged)]

    # new → user was decided by the Save of the first turn at which the memory was an hour
    # old and used three times: an event of that turn
    [(turn, [step])] = [(t, c) for t, c in changed_in.items() if c]
    assert turn == "turn_000003"  # 1.5 h old, its third use
    assert (step.doc_id, step.old_scope, step.new_scope) == (saved.doc_id, "new", "user")
    assert step.reason.startswith("promoted: trust 0.84 ≥ 0.5, used 3 ≥ 3 times, age 1.5 h")
    learned = _learned(vault, saved.doc_path)
    assert learned["scope"] == "user" and learned["expires_at"] is None
    assert learned["usage_count"] == 12 and learned["validation_success"] == 12
    bob_before = Memory(vault).search("hamster Biscuit sunflower", user="bob", now=clock["t"])
    assert saved.doc_id not in [h["doc_id"] for h in bob_before]

    # two days on, used twelve times with trust 0.89: a memory is what alice saved about
    # her life, so `promote` never shares it (only research about the world goes global)
    now = format_ts(T0 + timedelta(days=2))
    assert cli("--root", vault.root, "promote", "--now", now, "--dry-run", "--json").json["changes"] == []
    done = cli("--root", vault.root, "promote", "--now", now, "--json")
    assert done.code == 0 and done.json["changes"] == [], done.err
    assert _learned(vault, saved.doc_path)["scope"] == "user"
    hits = Memory(vault).search("hamster Biscuit sunflower", user="bob", now=T0 + timedelta(days=2))
    assert saved.doc_id not in [h["doc_id"] for h in hits]

    # recomputing from the events alone gives the same trust and scope, byte for byte
    memory_file = (vault.root / saved.doc_path).read_bytes()
    with Learning(vault).open() as engine:
        counts = {d: engine.cache.state.counts[d] for d in engine.cache.state.counts}
    full = cli("--root", vault.root, "promote", "--full", "--now", now, "--json")
    assert full.code == 0 and full.json["sync"]["full"] and full.json["changes"] == []
    assert full.json["sync"]["documents_written"] == []
    assert (vault.root / saved.doc_path).read_bytes() == memory_file
    with Learning(vault).open() as engine:
        assert {d: engine.cache.state.counts[d] for d in engine.cache.state.counts} == counts
        assert engine.cache.state.scope[saved.doc_id].new == "user"

    # the rollups count both promotions on the days they were decided
    stats = cli("--root", vault.root, "stats", "--since", "2026-01-05", "--now", now, "--json").json
    promoted = {d["date"]: d["scope_changes"]["promoted"] for d in stats["daily"]}
    assert promoted == {"2026-01-05": 1, "2026-01-06": 0, "2026-01-07": 0}
    assert stats["totals"]["turns"] == 12

    assert cli("--root", vault.root, "replay", "--check").code == 0  # turns untouched
    verify = cli("--root", vault.root, "verify", "--json")
    assert verify.code == 0 and verify.json["ok"], verify.json["problems"]

"""Usage and trust: the pure fold, and the engine that materialises it into a real vault."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from events.documents import render_document
from events.layout import turn_name
from events.log import read_events
from events.schema import PhaseFailed
from events.stamps import format_ts
from pandafs.assembly import open_memory
from pandafs.learning import api as learning_api
from pandafs.learning import engine as engine_module
from pandafs.learning.api import rebuild
from pandafs.learning.engine import Learning
from pandafs.learning.promotion import promote
from pandafs.learning.trust import Counts, Projection, TurnFacts, trust_of, verdict
from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.rebuild import rebuild_all
from pandafs.turns import replay
from pandafs.vault import Vault, file_lock
from pandafs.verify import default_checks, verify_vault
from tests.support.learning import T0, cache_json, front_of, sync

HAMSTER = "Biscuit the Syrian hamster loves sunflower seeds and hides them in his cheeks."


def facts(n: int, used: tuple[str, ...] = (), outcome: str | None = "APPROVE", feedback=()) -> TurnFacts:
    return TurnFacts(
        user="alice",
        turn=f"turn_{n:06d}",
        occurred_at=T0 + timedelta(hours=n),
        used=used,
        outcome=outcome,
        feedback=tuple(feedback),
    )


def fold(turns: list[TurnFacts]) -> Projection:
    """The whole projection from scratch, each user's turns in turn order."""
    facts = sorted(turns, key=lambda f: (f.user, f.number))
    by_id = {f.doc_id: f for f in facts}
    projection = Projection()
    done: set[str] = set()
    for f in facts:
        projection.fold_turn(
            f,
            lambda user, turn: by_id.get(f"{user}/{turn}"),
            lambda user, number: f"{user}/{turn_name(number)}" in done,
        )
        done.add(f.doc_id)
    return projection


# --- the formula and the verdicts ------------------------------------------------------


def test_verdict_follows_the_seed_table_and_feedback_wins() -> None:
    assert verdict("APPROVE") == "success"
    assert verdict("RETRY") == "failure"
    assert verdict("FAIL") == "failure"
    assert verdict("REVISE") is None
    assert verdict(None) is None
    assert verdict("APPROVE", "rejected") == "failure"
    assert verdict("FAIL", "accepted") == "success"
    assert verdict("REVISE", "rejected") == "failure"


def test_trust_is_a_beta_posterior_centred_on_quality() -> None:
    assert trust_of(Counts(), 0.6, 2.0) == 0.6  # nobody judged it yet: its own quality
    assert trust_of(Counts(3, 3, 3), 0.6, 2.0) == 0.84
    assert trust_of(Counts(10, 10, 10), 0.6, 2.0) == 0.9333
    assert trust_of(Counts(5, 5, 3), 0.6, 2.0) == 0.6
    assert trust_of(Counts(1, 1, 0), 0.6, 2.0) == 0.4
    assert trust_of(Counts(100, 100, 0), 0.9, 2.0) == round(1.8 / 102, 4)


def test_usage_counts_every_citation_validation_only_a_verdict() -> None:
    p = fold(
        [
            facts(1, ("m",), "APPROVE"),
            facts(2, ("m",), "REVISE"),
            facts(3, ("m", "m"), "RETRY"),
            facts(4, ("m", "k"), "FAIL"),
        ]
    )
    assert p.counts["m"] == Counts(usage=4, validations=3, successes=1)
    assert p.counts["k"] == Counts(usage=1, validations=1, successes=0)


def test_rejection_lowers_what_the_rejected_turn_used_and_thanks_accepts() -> None:
    base = [facts(1, ("m", "k"), "APPROVE"), facts(2, ("m",), "FAIL")]
    plain = fold(base)
    assert plain.counts["m"] == Counts(2, 2, 1)
    rejected = fold([*base, facts(3, feedback=[("turn_000001", "rejected")])])
    assert rejected.counts["m"] == Counts(2, 2, 0)
    assert rejected.counts["k"] == Counts(1, 1, 0)
    assert rejected.counts["alice/turn_000001"] == Counts(0, 1, 0)  # the turn itself: judged bad
    thanked = fold([*base, facts(3, feedback=[("turn_000002", "accepted")])])
    assert thanked.counts["m"] == Counts(2, 2, 2)
    assert thanked.counts["alice/turn_000002"] == Counts(0, 1, 1)
    # the later feedback about the same turn wins, whatever the order it is folded in
    both = [
        *base,
        facts(3, feedback=[("turn_000001", "rejected")]),
        facts(4, feedback=[("turn_000001", "accepted")]),
    ]
    assert fold(both).counts["m"] == Counts(2, 2, 1)
    assert fold(both).feedback["alice/turn_000001"] == (4, "accepted")


def test_the_fold_does_not_depend_on_the_order_turns_arrive_in() -> None:
    rng = random.Random(7)
    docs = ["m1", "m2", "k1", "alice/turn_000001", "alice/turn_000002"]
    turns = []
    for n in range(1, 41):
        used = tuple(rng.sample(docs, rng.randint(0, 3)))
        outcome = rng.choice(["APPROVE", "APPROVE", "RETRY", "REVISE", "FAIL", None])
        feedback = []
        if n > 2 and rng.random() < 0.3:
            feedback = [(f"turn_{rng.randint(1, n - 1):06d}", rng.choice(["accepted", "rejected"]))]
        turns.append(facts(n, used, outcome, feedback))
    expected = fold(turns)
    by_id = {f.doc_id: f for f in turns}
    for _ in range(5):
        order = turns[:]
        rng.shuffle(order)
        p, done = Projection(), set[str]()

        def folded(user: str, number: int, done: set[str] = done) -> bool:
            return f"{user}/turn_{number:06d}" in done

        for f in order:  # e.g. turns that were still running when a later one was folded
            p.fold_turn(f, lambda u, t: by_id[f"{u}/{t}"], folded)
            done.add(f.doc_id)
        assert {k: v for k, v in p.counts.items()} == dict(expected.counts)
        assert p.feedback == expected.feedback


# --- the engine on a real vault --------------------------------------------------------


def snapshot(vault: Vault) -> dict[str, dict]:
    """Every counter of the cache and every memory file's bytes."""
    with Learning(vault).open() as engine:
        state = engine.cache.state
        counts = {d: (state.counts[d], state.trust.get(d)) for d in state.counts}
        feedback = dict(engine.cache.state.feedback)
    files = {
        vault.rel(p): p.read_bytes()
        for p in sorted((vault.root / "users").rglob("*.md"))
        if "turns" not in p.parts
    }
    return {"counts": counts, "feedback": feedback, "files": files}


def test_incremental_sync_and_full_recompute_agree(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """Each turn that feedback judges is read again from its log, to the same counts."""
    memory = open_memory(vault)
    saved = memory.save(HAMSTER, user="alice", topic="pet.hamster", keywords=["hamster"], now=T0)
    fact = memory.save("My hamster is called Biscuit", user="alice", doc_type="fact", now=T0)
    queries = [
        "What does my hamster Biscuit like to eat?",
        "that's wrong",
        "Where does Biscuit the hamster hide his seeds?",
        "thanks!",
        "Does my hamster Biscuit like sunflower seeds?",
    ]
    for i, query in enumerate(queries):
        clock["t"] = T0 + timedelta(hours=2 + i)
        pipeline.ask(query, user="alice")
        sync(vault)
    incremental = snapshot(vault)
    assert incremental["feedback"] == {
        "alice/turn_000001": (2, "rejected"),
        "alice/turn_000003": (4, "accepted"),
    }
    counts = incremental["counts"]
    assert counts[saved.doc_id][0].usage == 3
    assert counts[saved.doc_id][0].successes == 2  # turn 1 was rejected
    assert counts[fact.doc_id][0].usage >= 1
    front = front_of(vault, saved.doc_path)
    c = counts[saved.doc_id][0]
    assert (front["usage_count"], front["validation_count"], front["validation_success"]) == (
        c.usage,
        c.validations,
        c.successes,
    )
    assert front["trust"] == trust_of(c, 0.6, 2.0) == counts[saved.doc_id][1]
    mtimes = {rel: (vault.root / rel).stat().st_mtime_ns for rel in incremental["files"]}

    report = rebuild(vault)
    assert report.full and report.turns == 5
    assert snapshot(vault) == incremental
    assert {rel: (vault.root / rel).stat().st_mtime_ns for rel in incremental["files"]} == mtimes
    assert replay(vault, check=True).drift == []
    assert verify_vault(vault, checks=default_checks()).ok


def test_a_rebuild_counts_the_turns_its_fold_reads_for_the_progress_bar(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold lists every user's turns first, says how many, then reports them read in
    steps of `PROGRESS_EVERY` (2 here) and each user's remainder; then the indexing its own."""
    for i, (user, query) in enumerate(
        [("alice", "hi"), ("bob", "hello"), ("alice", "and"), ("bob", "so"), ("alice", "ok")]
    ):
        clock["t"] = T0 + timedelta(hours=i)
        pipeline.ask(query, user=user)
    monkeypatch.setattr(engine_module, "PROGRESS_EVERY", 2)
    fold_totals: list[int] = []
    fold_steps: list[int] = []
    index_totals: list[int] = []
    index_steps: list[int] = []
    result = rebuild_all(
        vault,
        beside=False,  # beside the indexing (`tests/pandafs/test_rebuild_beside.py`) it has no bar
        fold_progress=fold_steps.append,
        on_fold_total=fold_totals.append,
        progress=index_steps.append,
        on_total=index_totals.append,
    )
    assert result["learning"]["turns"] == 5
    assert fold_totals == [5]
    assert fold_steps == [2, 1, 2]  # alice's three turns, then bob's two
    assert index_totals == [result["documents"]] and sum(index_steps) == result["documents"]


def test_a_full_fold_leaves_a_turn_without_its_metadata_pending_until_it_has_one(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """A turn's metadata.json says it ended: a rebuild's fold (reading by descriptor)
    folds no turn without one, keeps it pending, and the next sync folds it once."""
    for i, query in enumerate(["hi", "hello", "ok"]):
        clock["t"] = T0 + timedelta(hours=i)
        pipeline.ask(query, user="alice")
    metadata = vault.layout.turn_dir("alice", "turn_000002") / "metadata.json"
    held = metadata.read_bytes()
    metadata.unlink()
    assert rebuild_all(vault, beside=False)["learning"]["turns"] == 2
    metadata.write_bytes(held)
    assert sync(vault).turns == 1
    assert sync(vault).turns == 0


def test_materialising_keeps_unknown_keys_and_writes_only_on_change(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    rel = "knowledge/hamster-care.md"
    text = render_document(
        {
            "title": "Hamster care",
            "primary_topic": "pet.hamster",
            "quality": 0.9,
            "created_at": T0,
            "my_rating": "five stars",
            "tags": ["pets"],
        },
        "# Hamster care\n\nSyrian hamsters like sunflower seeds; give Biscuit a sand bath.\n",
    )
    (vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault.root / rel).write_text(text)
    open_memory(vault).index_paths([rel])
    clock["t"] = T0 + timedelta(hours=1)
    pipeline.ask("What do Syrian hamsters like, sunflower seeds?", user="alice")
    sync(vault)
    front = front_of(vault, rel)
    assert front["my_rating"] == "five stars" and front["tags"] == ["pets"]
    assert front["usage_count"] == 1 and front["trust"] == round((1 + 1.8) / 3, 4)
    assert "scope" not in front  # a global document keeps its (default) scope
    stamp = (vault.root / rel).stat().st_mtime_ns
    sync(vault)
    rebuild(vault)
    assert (vault.root / rel).stat().st_mtime_ns == stamp
    hit = next(h for h in open_memory(vault).search("hamster sand bath") if h["doc_path"] == rel)
    assert hit["trust"] == front["trust"]


def test_turn_trust_goes_to_the_index_not_into_context_md(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    for i in range(3):
        clock["t"] = T0 + timedelta(hours=i)
        pipeline.ask("Which Lenovo laptop has an RTX GPU?", user="alice")
    sync(vault)
    hits = {h["doc_id"]: h for h in open_memory(vault).search("Lenovo laptop RTX", user="alice")}
    assert hits["alice/turn_000001"]["trust"] is not None
    assert "trust" not in front_of(vault, "users/alice/turns/turn_000001/context.md")
    assert replay(vault, check=True).drift == []
    assert verify_vault(vault, checks=default_checks()).ok
    # a rebuilt index reads the turns' trust from the learning cache …
    open_memory(vault).rebuild()
    kept = {h["doc_id"]: h for h in open_memory(vault).search("Lenovo laptop RTX", user="alice")}
    assert kept["alice/turn_000001"]["trust"] == hits["alice/turn_000001"]["trust"]
    # … and a learning rebuild recomputes it from the events alone
    rebuild(vault)
    again = {h["doc_id"]: h for h in open_memory(vault).search("Lenovo laptop RTX", user="alice")}
    assert again["alice/turn_000001"]["trust"] == hits["alice/turn_000001"]["trust"]


def test_a_torn_cache_is_recomputed_from_the_events(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    saved = open_memory(vault).save(HAMSTER, user="alice", topic="pet.hamster", now=T0)
    for i in range(3):
        clock["t"] = T0 + timedelta(hours=1 + i)
        pipeline.ask("What does my hamster Biscuit eat?", user="alice")
    sync(vault)
    before = snapshot(vault)
    cache = vault.layout.indexes / "learning"

    def tear(doc_id: str, usage: int | None = None) -> None:
        """End the journal in a torn line, as a crash in the middle of an append would."""
        journal = cache / orjson.loads((cache / "state.json").read_bytes())["journal"]
        line = orjson.dumps({"counts": {doc_id: [usage or 0, 0, 0]}})
        with journal.open("ab") as out:
            out.write(line[: len(line) // 2])

    tear(saved.doc_id, usage=999)
    assert promote(vault, now=T0).sync.full  # promote folds the journal: it recomputes
    assert snapshot(vault) == before

    tear("alice/turn_000002")
    clock["t"] = T0 + timedelta(hours=5)
    result = pipeline.ask("What does my hamster Biscuit eat?", user="alice")
    events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
    used = next(e.data.doc_ids for e in events if e.type == "documents_used")
    assert "alice/turn_000002" in used  # its Save folds the torn journal and recomputes
    assert not [e for e in events if isinstance(e.data, PhaseFailed)]
    sync(vault)
    after = snapshot(vault)
    assert after["counts"]["alice/turn_000002"][0].usage == before["counts"]["alice/turn_000002"][0].usage + 1
    rebuild(vault)
    assert snapshot(vault) == after


def test_a_learning_failure_is_recorded_and_the_turn_stands(
    vault: Vault, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(learning_api, "SAVE_WAIT_S", 0.05)
    # an answerable question (one memory cannot answer ends FAIL, honestly)
    open_memory(vault).save(
        "The Lenovo LOQ 15 has an RTX 4050 GPU.", user="alice", topic="electronics.laptop", now=T0
    )
    lock = vault.layout.indexes / "learning.lock"
    with file_lock(lock, what="test"):
        result = pipeline.ask("Which Lenovo laptop has an RTX GPU?", user="alice")
    assert result.outcome == "APPROVE"
    events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
    failed = [e.data for e in events if isinstance(e.data, PhaseFailed)]
    assert [(f.phase, f.error_type) for f in failed] == [("learning", "Busy")]
    assert sync(vault).turns == 1  # the next sync makes up for it


def test_state_file_names_how_far_the_fold_got(vault: Vault, pipeline: Pipeline) -> None:
    pipeline.ask("Which Lenovo laptop has an RTX GPU?", user="alice")
    pipeline.ask("How much is a ThinkPad?", user="alice")
    sync(vault)
    state = cache_json(vault)
    assert state["users"] == {"alice": {"upto": 2, "pending": []}}
    assert sync(vault).turns == 0  # nothing new: nothing re-read
    assert format_ts(T0).endswith("Z") and Path(vault.root / "indexes/learning/state.json").exists()


def test_save_updates_join_the_turns_own_index_commit(vault: Vault, clock: dict[str, datetime]) -> None:
    saved = open_memory(vault).save(
        HAMSTER, user="alice", topic="pet.hamster", keywords=["hamster", "biscuit"], now=T0
    )
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: clock["t"]) as pipeline:
        pipeline.ask("What does my hamster Biscuit like to eat?", user="alice")
    assert front_of(vault, saved.doc_path)["usage_count"] == 1
    assert verify_vault(vault, checks=default_checks()).ok  # the index has the new file already
    [hit] = [
        h
        for h in open_memory(vault).search("hamster Biscuit", user="alice", now=T0)
        if h["doc_id"] == saved.doc_id
    ]
    assert hit["trust"] == front_of(vault, saved.doc_path)["trust"]


def test_a_learning_commit_does_not_replace_a_document_saved_after_it_was_read(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync (promote, watch's upkeep, a Save without a turn to ride on) reads the
    documents it rewrote, then waits for the index lock: a preference saved meanwhile by
    another process was replaced in the index by the older copy, unsearchable until a
    reconcile.  Its commit goes through `Memory.index_docs`, which reads such a file again."""
    memory = open_memory(vault)
    memory.save("I prefer window seats", user="alice", doc_type="preference", now=T0)
    monkeypatch.setattr(learning_api, "SAVE_WAIT_S", 0.05)
    with file_lock(vault.layout.indexes / "learning.lock", what="test"):  # the turn's Save cannot fold it
        clock["t"] = T0 + timedelta(hours=1)
        pipeline.ask("Which seats do I prefer, window seats?", user="alice")
    path = vault.rel(vault.layout.preferences("alice"))
    with Learning(vault, memory).open() as engine:
        engine.documents.index_mode = "queue"  # what the sync read is committed by flush_index, below
        engine.sync()
        assert front_of(vault, path)["usage_count"] == 1  # it rewrote the counts, read them back
        open_memory(vault).save("I prefer oat milk", user="alice", doc_type="preference", now=T0)
        engine.documents.flush_index()
    hits = open_memory(vault).search("oat milk", user="alice", now=T0)
    assert [h["doc_id"] for h in hits] == ["alice/preferences"]
    assert verify_vault(vault, checks=default_checks()).ok


def test_the_fold_after_saves_preview_re_indexes_no_trust_the_index_already_holds(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """Save's preview indexes the trust each turn it used will have; the sync that folds
    that turn a Save later finds the value in the index and re-indexes nothing (it used
    to upsert every one of them a second time, identical)."""
    for i in range(4):
        clock["t"] = T0 + timedelta(hours=i)
        pipeline.ask("Which Lenovo laptop has an RTX GPU?", user="alice")
    memory = open_memory(vault)
    used = memory.search("Lenovo laptop RTX", user="alice")
    assert sum(1 for h in used if h["doc_id"].startswith("alice/turn_") and h["trust"] is not None) >= 2
    report = sync(vault)  # folds turn 4, whose Save previewed the trust of what it used
    assert report.turns == 1 and report.index_updates == 0

    def trusts() -> dict[str, float | None]:
        return {h["doc_id"]: h["trust"] for h in open_memory(vault).search("Lenovo laptop RTX", user="alice")}

    after = trusts()
    assert after == {h["doc_id"]: h["trust"] for h in used}
    rebuild(vault)  # the same trust, from the events alone
    assert trusts() == after


def test_a_save_folds_only_its_own_users_turns_and_a_sync_the_rest(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    """Save's fold visits the saving user only (it visited every user's counter and log,
    ~0.25 ms each per turn); another user's turns wait for their own Save or the next
    full sync, which folds each once and agrees with a rebuild."""
    memory = open_memory(vault)
    for user in ("alice", "bob"):
        memory.save(HAMSTER, user=user, topic="pet.hamster", keywords=["hamster"], now=T0)
    bobs = memory.save(HAMSTER, user="bob", topic="pet.hamster", keywords=["hamster"], now=T0)
    pipeline.ask("What does my hamster Biscuit like to eat?", user="bob")
    clock["t"] = T0 + timedelta(hours=1)
    pipeline.ask("Does my hamster Biscuit like seeds?", user="alice")
    clock["t"] = T0 + timedelta(hours=2)
    pipeline.ask("Where does a hamster hide seeds?", user="alice")
    state = cache_json(vault)
    assert state["users"] == {  # a Save's own turn is still running when it folds: pending
        "alice": {"upto": 2, "pending": [2]},
        "bob": {"upto": 1, "pending": [1]},  # finished since, but alice's Saves never looked
    }
    assert sync(vault).turns == 2  # bob's turn and alice's second
    state = cache_json(vault)
    assert state["users"] == {"alice": {"upto": 2, "pending": []}, "bob": {"upto": 1, "pending": []}}
    incremental = snapshot(vault)
    assert incremental["counts"][bobs.doc_id][0].usage == 1  # bob's turn, folded by the sync
    rebuild(vault)
    assert snapshot(vault) == incremental

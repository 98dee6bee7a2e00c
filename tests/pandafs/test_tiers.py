"""Tiered context: budgets, truncation, anchors, cold ranking, sampling, failure."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from events.layout import TURN_DIR_RE, turn_name, turn_number
from events.log import read_events
from events.stamps import format_ts
from pandafs.config import TiersConfig
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.memory.tiers import Tiers, assemble_tiers, identity_anchors, sample_numbers
from pandafs.memory.turn_records import TurnReader, parse_turn_context
from pandafs.pipeline import Pipeline
from pandafs.tokens import count_tokens, truncate_tokens
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.support.learning import T0

NOW = datetime(2027, 1, 1, tzinfo=UTC)
VOCAB = (
    "sourdough starter hamster cage laptop budget marathon training tomato greenhouse "
    "espresso grinder lisbon tram tax receipt python asyncio birthday cake bread flour "
    "wheel bedding gpu battery pace interval seedling burr dose pastel deadline"
).split()


def item_text(vault: Vault, user: str, item: Mapping[str, Any]) -> str | None:
    """Re-read the text a tier gave a turn, from its summary in `ContextRetrieved.tiers`.

    Whole if it was whole, else its query cut to the recorded tokens; never more
    than the recorded tokens, even if the file changed since.  None if it is gone.
    """
    name = str(item.get("turn", ""))
    if not TURN_DIR_RE.fullmatch(name):
        return None
    reader = TurnReader(vault, user)
    number = turn_number(name)
    record = reader.stub(number) if item.get("archived") else reader.live(number)
    if record is None:
        return None
    tokens = int(item.get("tokens", 0))
    text = record.query_text() if item.get("truncated") else record.full_text()
    return truncate_tokens(text, tokens)


def _turn_hits(memory: Memory, user: str, query: str, limit: int = 40) -> list[dict[str, Any]] | None:
    """What the Context Gatherer hands the cold tier: its search's turns (None: no search)."""
    if not query.strip() or limit <= 0:
        return None
    return memory.search(
        query, user=user, kinds=("turn", "archived_turn"), limit=limit, now=NOW, snippets=False
    )


def _import(vault: Vault, memory: Memory, lines: list[dict[str, Any]]) -> None:
    source = vault.root / "lines.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    report = import_turns(vault, source, after_batch=memory.index_docs)
    assert not report.failed and report.imported == len(lines)
    source.unlink()


def _line(user: str, when: datetime, query: str, response: str = "") -> dict[str, Any]:
    return {"user": user, "timestamp": when.isoformat(), "query": query, "response": response}


def _archive_by_hand(vault: Vault, user: str, turn: str) -> list[str]:
    """Replace a turn folder by a summary stub shaped like `pandafs.archive`'s (paths to reindex)."""
    folder = vault.layout.turn_dir(user, turn)
    meta = orjson.loads((folder / "metadata.json").read_bytes())
    stub = vault.layout.archive_stub(user, turn)
    stub.parent.mkdir(parents=True, exist_ok=True)
    record = TurnReader(vault, user).live(turn_number(turn))
    assert record is not None
    claim = record.body.split(".")[0][:200]
    stub.write_text(
        "---\n"
        f"id: {user}/{turn}\nuser: {user}\ntitle: {json.dumps(record.query[:80])}\n"
        f"content_types:\n- context\ncreated_at: {meta['created_at']}\narchived: true\n"
        "archive_file: archive/turns/month=2026-01/part-x.parquet\n"
        "---\n"
        f"# Turn {turn.removeprefix('turn_')} — archived\n\n**Query:** {record.query}\n\n"
        f"**Outcome:** IMPORTED · **Revisions:** 0\n\n**Summary:** {meta.get('summary', record.query)}\n\n"
        + (f"## Key claims\n\n- {claim}\n\n" if claim else "")
        + "## Original\n\nArchived.\n",
        encoding="utf-8",
    )
    shutil.rmtree(folder)
    return [vault.rel(stub), f"users/{user}/turns/{turn}/context.md"]


def _check_budgets_and_marks(vault: Vault, user: str, tiers: Tiers) -> None:
    seen: set[str] = set()
    for tier in tiers:
        assert tier.tokens <= tier.budget, (tier.name, tier.tokens, tier.budget)
        for anchor in tier.anchors:
            assert anchor.tokens == count_tokens(anchor.text) > 0
            assert anchor.truncated == (anchor.text != anchor.statement)
        summary = tier.summary()["items"]
        for item, recorded in zip(tier.items, summary, strict=True):
            assert item.doc_id not in seen, item.doc_id
            seen.add(item.doc_id)
            assert item.tokens == count_tokens(item.text) > 0
            full, short = item.record.full_text(), item.record.query_text()
            assert item.truncated == (item.text != full)
            if item.truncated:
                assert short.startswith(item.text)
            assert item_text(vault, user, recorded) == item.text


# --- acceptance 1: a property over many random histories ------------------------------------


def _random_history(rng: random.Random, user: str) -> list[dict[str, Any]]:
    def words(low: int, high: int) -> str:
        size = rng.randint(low, high) if rng.random() > 0.08 else rng.randint(300, 800)
        return " ".join(rng.choice(VOCAB) for _ in range(size))

    count = rng.choice([0, 1, 2, 4, 6, 10, 25, 40, 70])
    when = NOW - timedelta(days=rng.uniform(1, 900))
    lines = []
    for _ in range(count):
        when += timedelta(hours=rng.uniform(0.01, 400))
        response = "" if rng.random() < 0.1 else words(1, 120)
        lines.append(_line(user, min(when, NOW), words(1, 25), response))
    return lines


IDENTITY_VALUES = {
    "name": ["Alex", "Robin", "Sam Okafor"],
    "job": ["nurse", "train driver", "carpenter"],
    "location": ["Leeds", "Lisbon", "Osaka"],
}


def _random_facts(rng: random.Random, memory: Memory, user: str) -> set[tuple[str, str]]:
    """Write facts.md lines (identity and not); return the identity facts that must survive."""
    expected: dict[str, str] = {}
    tagged: set[tuple[str, str]] = set()
    for _ in range(rng.randint(0, 7)):
        roll = rng.random()
        if roll < 0.5:
            key = rng.choice(list(IDENTITY_VALUES))
            value = rng.choice(IDENTITY_VALUES[key])
            if rng.random() < 0.1:
                value += " " + " ".join(rng.choice(VOCAB) for _ in range(rng.randint(50, 200)))
            saved = memory.save(value, user=user, doc_type="fact", key=key, now=NOW, index=False)
            if saved.created:
                expected[key] = value
        elif roll < 0.6:
            value = f"Allergic to {rng.choice(VOCAB)}"
            memory.save(f"{value} #identity", user=user, doc_type="fact", now=NOW, index=False)
            tagged.add(("", value))
        else:
            memory.save(f"Likes {rng.choice(VOCAB)}", user=user, doc_type="fact", now=NOW, index=False)
    return set(expected.items()) | tagged


def test_random_histories_keep_every_tier_within_budget_hot_latest_and_anchors(
    vault: Vault,
) -> None:
    """60 random histories × 6 random budgets, turns and queries = 360 assemblies."""
    memory = Memory(vault)
    seeds = range(60)
    rngs = {seed: random.Random(seed) for seed in seeds}
    histories = {seed: _random_history(rngs[seed], f"h{seed}") for seed in seeds}
    _import(vault, memory, [line for seed in seeds for line in histories[seed]])
    reindex: list[str] = []
    for seed in seeds:
        rng, user, count = rngs[seed], f"h{seed}", len(histories[seed])
        for number in rng.sample(range(1, count + 1), k=rng.randint(0, count // 2)):
            reindex += _archive_by_hand(vault, user, turn_name(number))
    memory.index_paths(reindex)
    assemblies = anchors_checked = truncated = 0
    for seed in seeds:
        rng, user, count = rngs[seed], f"h{seed}", len(histories[seed])
        expected = _random_facts(rng, memory, user)
        live = [turn_number(p.name) for p in vault.layout.turn_dirs(user)]
        for _ in range(6):
            hot_turns = rng.randint(3, 5)
            config = TiersConfig(
                hot_turns=hot_turns,
                hot_tokens=rng.choice([hot_turns, 12, 40, 150, 600, 1500]),
                warm_tokens=rng.choice([0, 10, 80, 400, 2000]),
                cold_tokens=rng.choice([16, 30, 90, 300, 900]),
                warm_turns=rng.choice([0, 1, 5, 50]),
                recency_lambda=rng.choice([0.01, 0.1, 0.5]),
                sample_every=rng.randint(1, 15),
                cold_candidates=rng.choice([0, 5, 40]),
                max_sampled=rng.choice([1, 7, 50, 200]),
            )
            before = rng.choice([count + 1, count + 4, rng.randint(1, count + 1)])
            query = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))
            searched = rng.random() < 0.7
            tiers = assemble_tiers(
                vault,
                user,
                query,
                before=turn_name(before),
                now=NOW,
                search_hits=_turn_hits(memory, user, query, config.cold_candidates) if searched else None,
                config=config,
            )
            assemblies += 1
            assert not tiers.failures, [t.error for t in tiers.failures]
            _check_budgets_and_marks(vault, user, tiers)
            latest = sorted((n for n in live if n < before), reverse=True)[:hot_turns]
            assert [i.record.number for i in tiers.hot.items] == latest
            warm = [i.record.number for i in tiers.warm.items]
            assert warm == sorted(warm, reverse=True)
            assert all(n < latest[-1] for n in warm) if latest else not warm
            assert {(a.key, a.value) for a in tiers.cold.anchors} == expected
            assert all(i.record.number < before for _, i in tiers.items())
            anchors_checked += len(expected)
            truncated += sum(i.truncated for _, i in tiers.items())
    assert assemblies == 360 and anchors_checked > 200 and truncated > 100  # all exercised


# --- focused: truncation, anchors, ranking, sampling ------------------------------------------


def test_a_turn_that_does_not_fit_goes_in_as_its_query_marked_truncated(vault: Vault) -> None:
    memory = Memory(vault)
    long = " ".join(["word"] * 300)
    day = NOW - timedelta(days=1)
    _import(
        vault,
        memory,
        [
            _line("ann", day, "warm skipped " + long, "x"),  # 1: its query alone is too long
            _line("ann", day, "warm short", long),  # 2: query only, truncated
            _line("ann", day, "warm whole", "fine"),  # 3: whole
            _line("ann", day, "hot long query " + long, "y"),  # 4: query cut to its reserve
            _line("ann", day, "hot whole", "ok"),  # 5: whole
            _line("ann", day, "hot big answer", long),  # 6: newest, query only
        ],
    )
    config = TiersConfig(hot_turns=3, hot_tokens=60, warm_tokens=30, warm_turns=10, cold_tokens=50)
    tiers = assemble_tiers(vault, "ann", "anything", before="turn_000007", now=NOW, config=config)
    _check_budgets_and_marks(vault, "ann", tiers)
    hot = {i.record.turn: i for i in tiers.hot.items}
    assert list(hot) == ["turn_000006", "turn_000005", "turn_000004"]
    assert hot["turn_000006"].truncated and hot["turn_000006"].text == "User: hot big answer"
    assert not hot["turn_000005"].truncated
    assert hot["turn_000004"].truncated and hot["turn_000004"].text.startswith("User: hot long")
    assert hot["turn_000004"].tokens >= 60 // 3  # its reserve held although others came first
    warm = {i.record.turn: i for i in tiers.warm.items}
    assert list(warm) == ["turn_000003", "turn_000002"]
    assert not warm["turn_000003"].truncated
    assert warm["turn_000002"].truncated and warm["turn_000002"].text == "User: warm short"
    assert tiers.warm.stats == {"considered": 3, "skipped": 1}
    summary = tiers.summary()
    assert summary["hot"]["items"][0]["truncated"] is True
    assert summary["warm"]["tokens"] <= 30


FACTS = """---
id: kim/facts
user: kim
title: Facts of kim
---
# Facts of kim

- **name:** Alex _(saved 2026-01-01)_
- **Job:** nurse
- Works at St Mary's hospital _(from [[users/kim/turns/turn_000002/context|turn_000002]], 2026-01-02)_
- Lives in Leeds
- Allergic to penicillin #identity
- **city:** Paris
- **city:** Leeds
- Likes green tea
- **company:** Acme #not-identity
- Name: Robin _(from [[users/kim/turns/turn_000003/context|turn_000003]], 2026-01-03)_
- **pet:** a hamster called Biscuit
"""


def test_identity_anchors_are_marked_by_key_lead_or_tag_and_the_last_statement_wins(
    vault: Vault,
) -> None:
    facts = vault.layout.facts("kim")
    facts.parent.mkdir(parents=True)
    facts.write_text(FACTS, encoding="utf-8")
    anchors = identity_anchors(vault, "kim", TiersConfig().identity_keys)
    assert [(a.key, a.statement) for a in anchors] == [
        ("job", "Job: nurse"),
        ("work", "Works at St Mary's hospital"),
        ("location", "Lives in Leeds"),
        ("", "Allergic to penicillin"),
        ("city", "city: Leeds"),
        ("name", "Name: Robin"),
    ]
    assert anchors[1].source_turn == "turn_000002"
    custom = identity_anchors(vault, "kim", ["pet"])
    assert [a.key for a in custom] == ["", "pet"]  # the tagged line, and the configured key

    tiny = TiersConfig(cold_tokens=6)  # one token each: every anchor still survives, cut
    tiers = assemble_tiers(vault, "kim", "hello", before="turn_000001", now=NOW, config=tiny)
    assert len(tiers.cold.anchors) == 6 and tiers.cold.tokens <= 6
    assert all(a.tokens >= 1 for a in tiers.cold.anchors)
    assert any(a.truncated for a in tiers.cold.anchors)


def test_cold_ranks_by_recency_similarity_and_anchor(vault: Vault) -> None:
    memory = Memory(vault)
    filler = [_line("lee", NOW - timedelta(days=300 - i), f"chat {i} about the weather") for i in range(20)]
    topical = [
        _line("lee", NOW - timedelta(days=250), "sourdough starter feeding schedule", "Feed it daily."),
        _line("lee", NOW - timedelta(days=200), "my name and where I work", "You are Lee, a baker."),
        _line("lee", NOW - timedelta(days=20), "sourdough starter feeding tips", "Twice a day."),
        _line("lee", NOW - timedelta(days=20), "which tram goes to the castle", "Tram 28."),
        _line("lee", NOW - timedelta(days=120), "sourdough starter smells of acetone", "Feed more."),
    ]
    recent = [_line("lee", NOW - timedelta(days=1), f"recent chat {i}") for i in range(3)]
    _import(vault, memory, filler + topical + recent)
    memory.index_paths(_archive_by_hand(vault, "lee", "turn_000025"))  # the acetone one
    memory.save(
        "Lee, a baker",
        user="lee",
        doc_type="fact",
        key="name",
        source_turn="turn_000022",
        now=NOW,
        index=False,
    )
    config = TiersConfig(hot_turns=3, warm_turns=0, cold_tokens=900)
    query = "sourdough starter feeding"
    hits = _turn_hits(memory, "lee", query)
    tiers = assemble_tiers(
        vault, "lee", query, before="turn_000029", now=NOW, search_hits=hits, config=config
    )
    assert [i.record.turn for i in tiers.hot.items] == ["turn_000028", "turn_000027", "turn_000026"]
    ranked = {i.record.turn: i for i in tiers.cold.items}
    order = [i.record.turn for i in tiers.cold.items]
    recent_similar, old_similar = ranked["turn_000023"], ranked["turn_000021"]
    recent_unrelated, archived = ranked["turn_000024"], ranked["turn_000025"]
    assert order.index("turn_000023") < order.index("turn_000024")  # similar beats unrelated
    assert order.index("turn_000023") < order.index("turn_000021")  # recent beats old
    assert archived.record.archived and "acetone" in archived.text
    assert archived.similarity > 0.5
    assert ranked["turn_000022"].anchor == 1.0  # the source turn of an identity fact
    assert recent_unrelated.similarity < recent_similar.similarity
    for item in tiers.cold.items:
        assert item.score == pytest.approx(0.5 * item.recency + 0.3 * item.similarity + 0.2 * item.anchor)
    assert recent_similar.recency == pytest.approx(math.exp(-0.1 * 20), rel=1e-3)
    assert old_similar.recency == pytest.approx(math.exp(-0.1 * 250), rel=1e-3)
    assert [a.statement for a in tiers.cold.anchors] == ["name: Lee, a baker"]


def test_cold_reads_the_stubs_the_archiver_writes(vault: Vault) -> None:
    archive = pytest.importorskip("pandafs.archive")
    memory = Memory(vault)
    _import(
        vault,
        memory,
        [_line("zoe", NOW - timedelta(days=400), "greenhouse tomato seedlings", "Keep them at 20C.")]
        + [_line("zoe", NOW - timedelta(days=2), f"recent {i}") for i in range(4)],
    )
    report = archive.archive_turns(vault, age_days=30, user="zoe", now=NOW)
    assert report.archived == 1
    hits = _turn_hits(memory, "zoe", "tomato seedlings")
    tiers = assemble_tiers(vault, "zoe", "tomato seedlings", before="turn_000006", now=NOW, search_hits=hits)
    (item,) = tiers.cold.items
    assert item.record.archived and item.record.turn == "turn_000001"
    assert "greenhouse tomato seedlings" in item.text and item.similarity == 1.0


def test_long_histories_are_sampled_so_the_cost_stays_bounded(vault: Vault) -> None:
    assert sample_numbers(1, 30, 10, 200) == [30, 29, 28, 27, 26, 20, 10, 1]
    big = sample_numbers(1, 100_000, 10, 200)
    assert len(big) <= 206 and big[-1] == 1 and big[:5] == list(range(100_000, 99_995, -1))
    assert sample_numbers(5, 4, 10, 200) == []
    memory = Memory(vault)
    _import(vault, memory, [_line("max", NOW - timedelta(hours=600 - i), f"turn {i}") for i in range(600)])
    config = TiersConfig(warm_turns=20, max_sampled=25, cold_candidates=0)
    tiers = assemble_tiers(vault, "max", "turn", before="turn_000601", now=NOW, config=config)
    assert 20 <= tiers.cold.stats["sampled"] <= 25 + 6
    assert "max/turn_000001" in {i.doc_id for i in tiers.cold.items}  # the first turn, always


# --- the gatherer: tiers in a real turn, and a failing cold tier ------------------------------


def _broken_history(*args: Any, **kwargs: Any) -> list[int]:
    """The cold tier's walk over older history fails (as a corrupt shard would)."""
    raise OSError("index shard unreadable")


def _turn_events(vault: Vault, user: str, turn: str) -> list[Any]:
    return read_events(vault.layout.turn_dir(user, turn) / "events.jsonl")


@pytest.mark.parametrize("broken", [False, True])
def test_a_turn_records_its_tiers_and_survives_a_failing_cold_tier(
    vault: Vault, broken: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if broken:
        import pandafs.memory.tiers as tiers_module

        monkeypatch.setattr(tiers_module, "sample_numbers", _broken_history)
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        for query in (
            "My name is Robin.",
            "I work at St Mary's as a nurse",
            "I prefer window seats",
            "What is a good sourdough starter schedule?",
            "I live in Leeds",
        ):
            outcome = pipeline.ask(query, user="rob").outcome
            assert outcome != "FAIL" or "sourdough" in query  # nothing known: an honest FAIL
        result = pipeline.ask("Where do I work, and what did I ask about sourdough?", user="rob")
    assert result.outcome != "FAIL"
    events = _turn_events(vault, "rob", result.turn)
    assert not [e for e in events if e.type == "phase_failed"]
    failed = [e.data for e in events if e.type == "tier_failed"]
    retrieved = next(e.data for e in events if e.type == "context_retrieved")
    tiers = retrieved.tiers
    assert [i["turn"] for i in tiers["hot"]["items"]] == [
        "turn_000005",
        "turn_000004",
        "turn_000003",
        "turn_000002",
    ]
    assert [i["turn"] for i in tiers["warm"]["items"]] == ["turn_000001"]
    assert {c.doc_id: c.tier for c in retrieved.candidates}["rob/turn_000005"] == "hot"
    for name in ("hot", "warm", "cold"):
        assert tiers[name]["tokens"] <= tiers[name]["budget"]
    statements = [a["value"] for a in tiers["cold"]["anchors"]]
    assert statements == ["Robin", "Works at St Mary's as a nurse", "Lives in Leeds"]
    if broken:
        assert [(f.tier, f.error_type, f.message) for f in failed] == [
            ("cold", "OSError", "index shard unreadable")
        ]
        assert tiers["cold"]["error"] == {"type": "OSError", "message": "index shard unreadable"}
    else:
        assert failed == [] and "error" not in tiers["cold"]
    synthesized = next(e.data for e in events if e.type == "context_synthesized")
    assert synthesized.tokens <= vault.config.pipeline.context_tokens
    blocks = {b.heading: b for b in synthesized.blocks}
    anchors = [r[0] for r in blocks["Identity Anchors"].rows]  # even when the ranking failed
    assert anchors == ["Name: Robin", "Works at St Mary's as a nurse", "Lives in Leeds"]
    known = blocks.get("Known Facts")
    assert known is None or not set(anchors) & {r[1] for r in known.rows}  # not twice
    section = (vault.layout.turn_dir("rob", result.turn) / "context.md").read_text()
    assert "### Identity Anchors" in section.split("## 2.", 1)[1].split("## 3.", 1)[0]


def test_a_picked_turn_is_never_cut_to_nothing_by_its_tiers_budget(vault: Vault) -> None:
    """The hot tier packed only the turn's question (its answer did not fit the tier's
    budget); §2 reads the picked turn from its file and gives it what §2's own budget
    holds: the answer's matching sentences are there."""
    memory = Memory(vault)
    long_answer = "The sourdough starter needs flour and water. " * 200
    _import(vault, memory, [_line("sue", NOW - timedelta(hours=1), "sourdough starter care", long_answer)])
    with Pipeline(vault, backend=OfflineBackend(), memory=memory, clock=lambda: NOW) as pipeline:
        result = pipeline.ask("How do I care for a sourdough starter?", user="sue")
    events = _turn_events(vault, "sue", result.turn)
    retrieved = next(e.data for e in events if e.type == "context_retrieved")
    (hot,) = retrieved.tiers["hot"]["items"]
    assert hot["truncated"] is True and hot["tokens"] <= 1500  # 2,000 tokens did not fit
    picked = next(c for c in retrieved.candidates if c.doc_id == "sue/turn_000001")
    assert picked.tier == "hot" and picked.selected
    synthesized = next(e.data for e in events if e.type == "context_synthesized")
    (row,) = [r for b in synthesized.blocks if b.heading == "Relevant Prior Turns" for r in b.rows]
    assert "sourdough starter care" in row[3] and "flour and water" in row[3]
    assert count_tokens(row[3]) > hot["tokens"]
    assert synthesized.tokens <= vault.config.pipeline.context_tokens
    meta = next(b.meta for b in synthesized.blocks if b.heading == "Relevant Prior Turns")
    assert meta["tiers"] == {"hot": [1]}


def test_a_live_turn_record_names_its_session_as_the_frontmatter_does() -> None:
    """§2's "When" cell reads the episode from the cached record, not the file again: the
    first set `SESSION_KEYS` value of `meta`, read as YAML reads it."""

    def record(front: str) -> str | None:
        text = f"---\ncreated_at: '{format_ts(T0)}'\n{front}---\n\n## 0. Query\n\nhi\n"
        parsed = parse_turn_context("alice", "turn_00001", text)
        assert parsed is not None
        return parsed.session

    assert record("meta:\n  session: 'cat'\n") == "cat"
    assert record("meta:\n  session: ''\n  conversation_id: 42\n") == "42"
    assert record("meta: {conversation: s-9}\n") == "s-9"
    assert record("title: a session about cats\n") is None
    assert record("meta:\n  source: x\n") is None
    assert record("meta: [session]\n") is None


def test_a_turn_records_token_counts_are_its_texts_counts() -> None:
    """The tiers and §2's budget weigh a cached record by counts it keeps: they must be
    `count_tokens` of its query and of its whole text, with an answer or without one."""
    answered = (
        f"---\ncreated_at: '{format_ts(T0)}'\n---\n\n## 0. User Query\n\nhow's it — going?\n\n"
        "## 5. Synthesis\n\nFine, thanks: 3 cats.\n"
    )
    bodies = []
    for text in (answered, answered.split("\n## 5.")[0] + "\n"):
        record = parse_turn_context("alice", "turn_00001", text)
        assert record is not None
        assert (record.query_tokens, record.tokens) == (
            count_tokens(record.query_text()),
            count_tokens(record.full_text()),
        )
        bodies.append(record.body)
    assert bodies[0] and not bodies[1]

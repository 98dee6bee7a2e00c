"""Observability: the Parquet turn catalog, daily rollups and `stats --since` (acceptance 5)."""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from pydantic import BaseModel

from events.stamps import format_ts
from pandafs.learning.api import rebuild
from pandafs.learning.catalog import COMPACT_AFTER, Catalog, CatalogRebuild
from pandafs.learning.rollups import percentile
from pandafs.learning.rows import TurnRow, row_values
from pandafs.llm.offline import OfflineBackend
from pandafs.llm.usage import Usage
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.learning import cache_json, sync

START = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
WEEK = [
    ["I prefer Lenovo laptops", "Which Lenovo laptop has an RTX GPU?"],
    ["What does my hamster Biscuit like to eat?"],
    ["How much does the ThinkPad X1 Carbon cost?", "that's wrong", "Any recipe ideas for dinner?"],
    [],
    ["Which Lenovo laptop did we look at?", "thanks!"],
    ["hmm"],
    ["What budget did I mention for a laptop?", "Tell me about hamsters", "I'm vegetarian"],
]
NOW = "2026-01-07T20:00:00"


class MeteredBackend(OfflineBackend):
    """The offline rules, reporting token usage as a model server would (deterministically)."""

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        result, usage = super().run(task, data)
        return result, Usage(
            tokens_in=len(data.model_dump_json()) // 4,
            tokens_out=len(result.model_dump_json()) // 4,
            calls=usage.calls,
        )


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    """A synthetic week of real turns (one empty day), two users, timed by a fake clock."""
    vault, _ = Vault.init(tmp_path_factory.mktemp("week") / "vault")
    clock = {"t": START}
    with Pipeline(vault, backend=MeteredBackend(), clock=lambda: clock["t"]) as pipeline:
        for day, queries in enumerate(WEEK):
            for i, query in enumerate(queries):
                clock["t"] = START + timedelta(days=day, hours=2 * i)
                pipeline.ask(query, user="alice" if i % 3 else "bob")
    return vault


def _turns(vault: Vault) -> list[dict[str, Any]]:
    """metadata.json + metrics.json of every turn folder: the truth the rollups must match."""
    out = []
    for folder in sorted(vault.root.glob("users/*/turns/turn_*")):
        meta = orjson.loads((folder / "metadata.json").read_bytes())
        metrics = orjson.loads((folder / "metrics.json").read_bytes())
        out.append({**meta, "metrics": metrics, "date": meta["created_at"][:10]})
    return out


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile by the standard library (linear interpolation between order statistics)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def test_stats_since_reports_the_daily_rollups_of_a_synthetic_week(cli, week: Vault) -> None:
    result = cli("--root", week.root, "stats", "--since", "7d", "--now", NOW, "--json")
    assert result.code == 0, result.err
    data = result.json
    assert {"users", "content_types", "scopes"} <= set(data)  # the counts are still there
    assert (data["since"], data["until"]) == ("2026-01-01", "2026-01-07")
    assert [d["date"] for d in data["daily"]] == [f"2026-01-0{i}" for i in range(1, 8)]
    truth = _turns(week)
    assert data["totals"]["turns"] == len(truth) == sum(len(q) for q in WEEK)
    for rollup in data["daily"]:
        turns = [t for t in truth if t["date"] == rollup["date"]]
        assert rollup["turns"] == len(turns)
        assert rollup["outcomes"] == dict(Counter(t["outcome"] for t in turns))
        assert rollup["users"] == dict(Counter(t["user"] for t in turns))
        assert rollup["tool_calls"]["total"] == sum(t["metrics"]["tool_calls"] for t in turns)
        assert rollup["tokens"]["total"] == sum(t["metrics"]["total_tokens"] for t in turns)
        assert rollup["revisions"] == sum(t["revision_count"] for t in turns)
        if turns:
            totals = [t["metrics"]["total_ms"] for t in turns]
            assert rollup["latency_ms"]["total"]["p50"] == pytest.approx(_quantile(totals, 0.5), abs=1e-3)
            assert rollup["latency_ms"]["total"]["p95"] == pytest.approx(_quantile(totals, 0.95), abs=1e-3)
            phases = [t["metrics"]["phase_ms"] for t in turns]
            planner = [p["planner"] for p in phases if "planner" in p]
            if planner:
                p95 = rollup["latency_ms"]["phases"]["planner"]["p95"]
                assert p95 == pytest.approx(_quantile(planner, 0.95), abs=1e-3)
            on_disk = orjson.loads((week.root / f"observability/daily/{rollup['date']}.json").read_bytes())
            assert on_disk == rollup
        else:
            assert not (week.root / f"observability/daily/{rollup['date']}.json").exists()
    assert data["daily"][3]["turns"] == 0 and data["daily"][3]["latency_ms"]["total"] == {}
    assert data["totals"]["tokens"]["total"] > 0
    assert sum(d["feedback"].get("rejected", 0) for d in data["daily"]) == 1
    assert data["totals"]["feedback"] == {"accepted": 1, "rejected": 1}

    human = cli("--root", week.root, "stats", "--since", "2026-01-03", "--now", NOW)
    assert human.code == 0 and "daily trends 2026-01-03 … 2026-01-07" in human.out
    assert "2026-01-05" in human.out and human.out.rstrip().splitlines()[-1].startswith("total")
    assert cli("--root", week.root, "stats", "--since", "soon").code == 2
    plain = cli("--root", week.root, "stats", "--json").json
    assert "daily" not in plain and plain["users"]["alice"]["turns"] >= 1


def test_the_catalog_is_one_row_per_turn_queryable_by_duckdb_and_rebuildable(week: Vault) -> None:
    sync(week)
    catalog = Catalog(week.root / "observability" / "catalog")
    rows = catalog.read_rows()
    truth = _turns(week)
    assert len(rows) == len(truth)
    by_id = {(r["user"], r["turn"]): r for r in rows}
    for t in truth:
        row = by_id[(t["user"], t["turn"])]
        assert row["outcome"] == t["outcome"] and row["quality"] == t["quality"]
        assert row["ms_total"] == t["metrics"]["total_ms"]
        assert row["tokens_in"] + row["tokens_out"] == t["metrics"]["total_tokens"]
        assert row["topic"] == t["primary_topic"] and row["query_type"] == t["query_type"]
        assert format_ts(row["created_at"]) == t["created_at"]
    glob = str(week.root / "observability/catalog/*/*.parquet")
    con = duckdb.connect()
    per_day = con.execute(
        "SELECT date, count(*), round(quantile_cont(ms_total, 0.95), 3), sum(tool_calls), month "
        f"FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY date, month ORDER BY date"
    ).fetchall()
    for day, turns, p95, tools, month in per_day:
        rollup = orjson.loads((week.root / f"observability/daily/{day}.json").read_bytes())
        assert (
            rollup["turns"],
            pytest.approx(rollup["latency_ms"]["total"]["p95"], abs=1.5e-3),  # two roundings to 3 places
            rollup["tool_calls"]["total"],
        ) == (
            turns,
            p95,
            tools,
        )
        assert month == day.strftime("%Y-%m")
    feedback = con.execute(
        f"SELECT \"user\", turn, feedback_on, feedback_status FROM read_parquet('{glob}') "
        "WHERE feedback_status IS NOT NULL ORDER BY created_at"
    ).fetchall()
    assert [f[3] for f in feedback] == ["rejected", "accepted"]

    daily = {p.name: p.read_bytes() for p in (week.root / "observability/daily").iterdir()}
    rebuild(week)
    assert catalog.read_rows() == rows
    assert {p.name: p.read_bytes() for p in (week.root / "observability/daily").iterdir()} == daily
    assert len(catalog.files("2026-01")) == 1  # one compacted part per month after a rebuild


def test_a_rebuild_holding_few_rows_writes_the_same_catalog_and_rollups(
    week: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild holds at most SPILL_ROWS rows and writes the rest as chunks of their
    months: with chunks of five rows, it leaves the catalog, its one sorted part per
    month and the rollups of a rebuild that held every row."""
    import pyarrow.parquet as pq

    import pandafs.learning.catalog

    rebuild(week)
    catalog = Catalog(week.root / "observability" / "catalog")
    rows = catalog.read_rows()
    daily = {p.name: p.read_bytes() for p in (week.root / "observability/daily").iterdir()}
    assert len(rows) > 2 * 5 and len(rows) % 5
    monkeypatch.setattr(pandafs.learning.catalog, "SPILL_ROWS", 5)  # two chunks and the rest
    rebuild(week)
    assert catalog.read_rows() == rows
    assert {p.name: p.read_bytes() for p in (week.root / "observability/daily").iterdir()} == daily
    (part,) = catalog.files("2026-01")
    assert part.name.startswith("part-")
    keys = [(r["user"], r["turn_number"]) for r in pq.read_table(part).to_pylist()]
    assert keys == sorted(keys) and len(keys) == len(rows)


def _row(n: int, quality: float = 0.5) -> TurnRow:
    when = datetime(2026, 2, 1, tzinfo=UTC) + timedelta(minutes=n)
    zeros = {f"ms_{p}": None for p in ("query_analyzer", "reflection", "context_gatherer", "planner")}
    zeros |= {f"ms_{p}": None for p in ("executor", "coordinator", "synthesis", "validation", "save")}
    return TurnRow(
        user="alice",
        turn=f"turn_{n:06d}",
        turn_number=n,
        created_at=when,
        date=when.date(),
        source="ask",
        topic="general",
        query_type="question",
        outcome="APPROVE",
        validation="APPROVE",
        quality=quality,
        attempts=1,
        revisions=0,
        ms_total=1.0,
        **zeros,
        llm_calls=0,
        tokens_in=0,
        tokens_out=0,
        tool_calls=0,
        tool_errors=0,
        tools=[],
        sources_used=0,
        memory_committed=0,
        scope_changes=0,
        failures=0,
        feedback_on=None,
        feedback_status=None,
        has_research=False,
    )


def test_small_files_are_compacted_and_a_row_written_twice_counts_once(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog")
    for n in range(1, COMPACT_AFTER + 1):
        catalog.append([_row(n)])
    assert len(catalog.files("2026-02")) == COMPACT_AFTER
    catalog.append([_row(1, quality=0.9)])  # e.g. re-folded after a crash: the later copy wins
    files = catalog.files("2026-02")
    assert [f.name.split("-")[0] for f in files] == ["part"]
    rows = catalog.read_rows()
    assert len(rows) == COMPACT_AFTER and rows[0]["quality"] == 0.9
    assert [r["turn_number"] for r in rows] == list(range(1, COMPACT_AFTER + 1))
    assert catalog.days_of("2026-02")(date(2026, 2, 2)) == []
    for n in range(COMPACT_AFTER + 1, 2 * COMPACT_AFTER + 3):  # the next deltas: a second part
        catalog.append([_row(n)])
    assert [f.name.split("-")[0] for f in catalog.files("2026-02")] == ["part", "part", "delta"]
    catalog.compact("2026-02")
    assert len(catalog.files("2026-02")) == 1 and len(catalog.read_rows()) == 2 * COMPACT_AFTER + 2


def test_a_rebuilt_catalog_sorts_each_months_rows_whatever_order_they_came_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    import pandafs.learning.catalog

    monkeypatch.setattr(pandafs.learning.catalog, "SPILL_ROWS", 4)
    catalog = Catalog(tmp_path / "catalog")
    build = CatalogRebuild(catalog)
    numbers = [7, 3, 11, 1, 9, 2, 10, 5, 4, 8, 6]
    for n in numbers:
        build.add(row_values(_row(n)))
    assert build.finish() == ["2026-02"]
    (part,) = catalog.files("2026-02")
    assert [r["turn_number"] for r in pq.read_table(part).to_pylist()] == sorted(numbers)
    assert [r["turn_number"] for r in catalog.read_rows()] == sorted(numbers)


def test_percentile_interpolates_like_duckdb() -> None:
    values = [3.0, 1.0, 10.0, 7.5, 2.25, 4.0, 100.0]
    con = duckdb.connect()
    for q in (0.5, 0.95, 0.1):
        (expected,) = con.execute(
            "SELECT quantile_cont(v, ?) FROM unnest(?::DOUBLE[]) t(v)", [q, values]
        ).fetchone()
        assert percentile(values, q) == pytest.approx(expected, abs=1e-3)
    assert percentile([42.0], 0.95) == 42.0


def test_a_damaged_catalog_part_is_named_by_verify_and_rebuilt_by_repair(vault: Vault, cli) -> None:
    with Pipeline(vault) as pipeline:
        pipeline.ask("I prefer green tea", user="alice")
    sync(vault)
    (part,) = [p for month in Catalog.of(vault).months() for p in Catalog.of(vault).files(month)]
    rel = part.relative_to(vault.root).as_posix()
    part.write_bytes(part.read_bytes()[:40])  # a torn copy, as a full disk or a bad sync leaves

    stats = cli("--root", vault.root, "stats", "--since", "3650d")
    assert stats.code == 1 and stats.err.strip().count("\n") == 0 and "Traceback" not in stats.err
    assert f"{rel}: not a readable catalog part" in stats.err and "pandafs rebuild" in stats.err
    verdict = cli("--root", vault.root, "verify", "--json")
    assert verdict.code == 1 and [(p["path"], p["kind"]) for p in verdict.json["problems"]] == [
        (rel, "unreadable")
    ]
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    assert [p["path"] for p in repaired.json["repaired"]] == [rel]
    assert [r["user"] for r in Catalog.of(vault).read_rows()] == ["alice"]
    assert cli("--root", vault.root, "stats", "--since", "3650d").code == 0


def test_saves_rows_wait_in_the_cache_until_a_batch_or_the_next_sync_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Save does not write a Parquet file per turn: the rows it folds wait in the learning
    cache; `stats` (any sync that writes rollups) writes them, and so does Save once
    `CATALOG_BATCH` have gathered.  What it writes is what a rebuild writes."""
    import pandafs.learning.engine

    monkeypatch.setattr(pandafs.learning.engine, "CATALOG_BATCH", 4)
    vault, _ = Vault.init(tmp_path / "vault")
    catalog = Catalog(vault.root / "observability" / "catalog")
    clock = {"t": START}

    def ask(n: int) -> None:
        with Pipeline(vault, backend=OfflineBackend(), clock=lambda: clock["t"]) as pipeline:
            for _ in range(n):
                clock["t"] += timedelta(hours=1)
                pipeline.ask("Which Lenovo laptop has an RTX GPU?", user="alice")

    ask(4)  # each Save folds the turns before its own: three rows, under the batch
    waiting = cache_json(vault)["catalog_rows"]
    assert catalog.months() == [] and len(waiting) == 3
    for row in waiting.values():  # each in the JSON form of its `TurnRow`, keys in its order
        assert list(TurnRow.model_validate(row).model_dump(mode="json").items()) == list(row.items())
    sync(vault)
    assert [r["turn_number"] for r in catalog.read_rows()] == [1, 2, 3, 4]
    ask(5)  # Saves of turns 6-9 fold turns 5-8: the fourth row makes a batch
    assert len(catalog.files("2026-01")) == 2 and cache_json(vault)["catalog_rows"] == {}
    written = catalog.read_rows()
    assert [r["turn_number"] for r in written] == list(range(1, 9))
    rebuild(vault)
    assert catalog.read_rows()[:8] == written

"""Benchmark tier assembly (target, benchmarks/README.md: hot < 1 ms, warm < 50 ms, cold < 200 ms).

    .venv/bin/python benchmarks/bench_tiers.py [--sizes 100,1000,10000] [--queries 60]
                                            [--archive-share 0.5] [--keep DIR]

For each size, one user gets that many imported turns (spread over two years,
indexed for search) and identity facts; `--archive-share` of the oldest turns
are then archived by `pandafs.archive` (Parquet + stubs), so the cold tier ranks
stubs and live turns as it would for a long-lived user.  Each query assembles
the tiers for the user's next turn, timed per tier (the wall-clock `ms` each tier
reports, and its CPU time — on a busy machine the two differ), after a few
warm-up calls.  The cold tier ranks the turns a search of the query found, as the
Context Gatherer hands them over: that search is timed as part of the cold tier.
Prints a table and, last, one JSON line {"benchmark": "tiers", ...}.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from events.layout import turn_name
from pandafs.memory.api import Memory
from pandafs.memory.tiers import Tiers, assemble_tiers
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

TARGETS_MS = {"hot": 1.0, "warm": 50.0, "cold": 200.0}
TOPICS = [
    "sourdough bread starter hydration",
    "hamster cage bedding and wheel size",
    "gaming laptop with an rtx gpu under 800 dollars",
    "marathon training plan and long runs",
    "tax return deadline and receipts",
    "tomato seedlings and greenhouse temperature",
    "python asyncio task groups and cancellation",
    "trip to lisbon trams and pastel de nata",
    "espresso grinder burr size and dose",
    "kids birthday party games and cake",
]
FILLER = (
    "it depends on a few things worth checking first so here is what I would look at "
    "and why each of them matters for you this week"
).split()


def _line(user: str, i: int, when: datetime, rng: random.Random) -> dict[str, Any]:
    topic = rng.choice(TOPICS)
    words = topic.split()
    answer = " ".join(rng.choice(words + FILLER) for _ in range(rng.randint(30, 140)))
    return {
        "user": user,
        "external_id": f"{user}-{i}",
        "timestamp": when.isoformat(),
        "query": f"question {i} about {topic}?",
        "response": answer.capitalize() + ".",
    }


def build(vault: Vault, memory: Memory, user: str, turns: int, now: datetime, seed: int) -> None:
    rng = random.Random(seed)
    span = timedelta(days=730)
    source = vault.root / f"{user}.jsonl"
    with open(source, "wb") as out:
        for i in range(turns):
            when = now - span + span * (i + 1) / (turns + 1)
            out.write(orjson.dumps(_line(user, i, when, rng)) + b"\n")
    report = import_turns(vault, source, after_batch=memory.index_docs)
    assert report.imported == turns and not report.failed, report.as_json()
    source.unlink()
    for key, value in (("name", "Robin"), ("job", "nurse at St Mary's"), ("location", "Leeds")):
        memory.save(value, user=user, doc_type="fact", key=key, now=now)
    memory.save("Likes green tea", user=user, doc_type="fact", now=now)


def archive_oldest(vault: Vault, user: str, turns: int, share: float, now: datetime) -> float:
    """Archive the oldest `share` of the user's turns; returns the seconds it took."""
    if share <= 0:
        return 0.0
    from pandafs.archive import archive_turns  # imported only when archiving is asked for

    age_days = max(1, int(730 * (1 - share)))
    started = time.perf_counter()
    report = archive_turns(vault, age_days=age_days, user=user, now=now)
    assert report.archived > 0 or turns < 10, report.as_json()
    return time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    vault: Vault, memory: Memory, user: str, turns: int, queries: int, now: datetime
) -> dict[str, Any]:
    rng = random.Random(turns)
    before = turn_name(turns + 1)
    asked = [f"what did we say about {rng.choice(TOPICS)}?" for _ in range(queries)]
    limit = vault.config.tiers.cold_candidates

    def assemble(query: str) -> tuple[Tiers, float, float]:
        """The tiers, and the wall and CPU milliseconds of the search the cold tier ranks."""
        started, thread = time.perf_counter(), time.thread_time()
        hits = memory.search(
            query, user=user, kinds=("turn", "archived_turn"), limit=limit, now=now, snippets=False
        )
        searched = ((time.perf_counter() - started) * 1000.0, (time.thread_time() - thread) * 1000.0)
        return assemble_tiers(vault, user, query, before=before, now=now, search_hits=hits), *searched

    for query in asked[:3]:  # warm-up: imports, regex compilation, page cache, index reader
        assemble(query)
    times: dict[str, list[float]] = {"hot": [], "warm": [], "cold": []}
    cpu: dict[str, list[float]] = {"hot": [], "warm": [], "cold": []}
    last = None
    for query in asked:
        last, search_ms, search_cpu_ms = assemble(query)
        assert not last.failures, [t.error for t in last.failures]
        for tier in last:
            cold = tier.name == "cold"
            times[tier.name].append(tier.ms + (search_ms if cold else 0.0))
            cpu[tier.name].append(tier.cpu_ms + (search_cpu_ms if cold else 0.0))
    assert last is not None
    out: dict[str, Any] = {"turns": turns}
    for name, values in times.items():
        out[f"{name}_p50_ms"] = round(statistics.median(values), 3)
        out[f"{name}_p99_ms"] = round(_pct(values, 0.99), 3)
        out[f"{name}_cpu_p99_ms"] = round(_pct(cpu[name], 0.99), 3)
    out["tokens"] = {t.name: t.tokens for t in last}
    out["cold_sampled"] = last.cold.stats.get("sampled", 0)
    out["cold_ranked"] = last.cold.stats.get("ranked", 0)
    out["anchors"] = len(last.cold.anchors)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="turns per user, comma-separated")
    parser.add_argument("--queries", type=int, default=60, help="timed assemblies per size")
    parser.add_argument(
        "--archive-share", type=float, default=0.5, help="share of the oldest turns archived (0 = none)"
    )
    parser.add_argument("--keep", type=Path, help="build the vault here and keep it")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    now = datetime(2027, 1, 1, tzinfo=UTC)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-") as tmp:
        root = args.keep or Path(tmp) / "vault"
        vault, _ = Vault.init(root)
        memory = Memory(vault)
        for size in sizes:
            user = f"user{size}"
            started = time.perf_counter()
            build(vault, memory, user, size, now, seed=size)
            built = time.perf_counter() - started
            archived = archive_oldest(vault, user, size, args.archive_share, now)
            result = measure(vault, memory, user, size, args.queries, now)
            result.update(build_s=round(built, 2), archive_s=round(archived, 2))
            results.append(result)
    load = os.getloadavg()[0]
    print(f"wall-clock ms per tier, p50 / p99 (CPU-time p99); load average {load:.1f}, {os.cpu_count()} CPUs")
    print(f"{'turns/user':>10}  " + "".join(f"{t:>28}" for t in TARGETS_MS))
    for r in results:
        cells = [
            f"{r[f'{t}_p50_ms']:.3f} / {r[f'{t}_p99_ms']:.3f} ({r[f'{t}_cpu_p99_ms']:.3f})"
            for t in TARGETS_MS
        ]
        print(f"{r['turns']:>10,}  " + "".join(f"{c:>28}" for c in cells))
    print(f"{'target':>10}  " + "".join(f"{'< ' + str(v) + ' ms':>28}" for v in TARGETS_MS.values()))
    print(
        orjson.dumps(
            {
                "benchmark": "tiers",
                "archive_share": args.archive_share,
                "queries": args.queries,
                "sizes": results,
                "targets_ms": TARGETS_MS,
                "targets_met_p50": all(r[f"{t}_p50_ms"] < v for r in results for t, v in TARGETS_MS.items()),
                "targets_met_p99": all(r[f"{t}_p99_ms"] < v for r in results for t, v in TARGETS_MS.items()),
                "load_average": round(load, 2),
                "cpus": os.cpu_count(),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()

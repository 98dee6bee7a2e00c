"""Benchmark the event log and bulk import (target, benchmarks/README.md: bulk import ≥ 1,000 turns/s).

    .venv/bin/python benchmarks/bench_events.py [--events 3000] [--turns 10000]

Prints a table and, last, one JSON line {"benchmark": "events", ...}.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson

from events.clock import utcnow
from events.log import EventWriter
from events.schema import ResponseSynthesized, TurnStarted
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault


def bench_append(folder: Path, count: int, batch: int, durable: bool) -> float:
    path = folder / f"events-{batch}-{durable}.jsonl"
    payloads = [ResponseSynthesized(attempt=i, answer=f"answer number {i} " * 8) for i in range(count)]
    start = time.perf_counter()
    with EventWriter(path, user="bench", turn="turn_000001", durable=durable) as writer:
        writer.append(TurnStarted(query="q", occurred_at=utcnow()))
        for i in range(0, count, batch):
            writer.append_many(payloads[i : i + batch])
    return count / (time.perf_counter() - start)


def bench_import(folder: Path, turns: int) -> dict[str, float]:
    vault, _ = Vault.init(folder / "vault")
    source = folder / "import.jsonl"
    with open(source, "wb") as out:
        for i in range(turns):
            out.write(
                orjson.dumps(
                    {
                        "user": f"user{i % 4}",
                        "external_id": f"x{i}",
                        "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T12:00:00Z",
                        "query": f"question {i}: what did we say about hamsters and laptops?",
                        "response": "A reasonably long answer about hamsters, laptops and budgets. " * 6,
                        "meta": {"session": i // 20},
                    }
                )
                + b"\n"
            )
    report = import_turns(vault, source, after_batch=Memory(vault).index_docs)  # as the CLI: indexed
    return {
        "turns": report.imported,
        "seconds": report.seconds,
        "turns_per_s": report.imported / report.seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--turns", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-") as tmp:
        folder = Path(tmp)
        per_event = bench_append(folder, min(args.events, 1500), 1, True)
        per_100 = bench_append(folder, args.events * 10, 100, True)
        per_1000 = bench_append(folder, args.events * 10, 1000, True)
        no_fsync = bench_append(folder, args.events * 10, 1, False)
        imported = bench_import(folder, args.turns)
    rows = [
        ("append, fsync per event", f"{per_event:,.0f} events/s"),
        ("append, fsync per 100 events", f"{per_100:,.0f} events/s"),
        ("append, fsync per 1000 events", f"{per_1000:,.0f} events/s"),
        ("append, no fsync", f"{no_fsync:,.0f} events/s"),
        (
            f"import {imported['turns']} turns (target ≥ 1,000/s)",
            f"{imported['turns_per_s']:,.0f} turns/s",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(
        orjson.dumps(
            {
                "benchmark": "events",
                "append_fsync_each_per_s": round(per_event),
                "append_fsync_100_per_s": round(per_100),
                "append_fsync_1000_per_s": round(per_1000),
                "append_no_fsync_per_s": round(no_fsync),
                "import_turns": imported["turns"],
                "import_turns_per_s": round(imported["turns_per_s"]),
                "import_target_per_s": 1000,
            }
        ).decode()
    )


if __name__ == "__main__":
    main()

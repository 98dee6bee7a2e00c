"""Benchmark a search's cost against the shape of a user's history: sessions, a chatty day, a burst.

    .venv/bin/python benchmarks/bench_episodes.py [--turns 3000] [--rounds 6] [--keep DIR]

Stage 2 of the ranking scores every turn of the best episodes (`indexers.ranking`).
Turns without a session id form episodes by the time-gap rule, so how a user's turns
are spread in time decides how many turns one search scores:

- `sessions`: five turns two minutes apart, two sessions a day (a person's pace);
- `chatty`: one turn every two minutes, around the clock (the gap rule never cuts);
- `burst`: every turn at the same second (an import whose lines share a timestamp);
- `long-sessions`: sessions of 500 turns two minutes apart, each with its session id
  (an exported chat whose conversations run long).

One user, `--turns` imported turns per shape, the same eight questions.  Each shape is
searched with the configured `episode_reach` (the run scored near its best hits) and,
alternated in the same run, with `episode_reach = 0` (every turn of the run, as before
the reach existed): the second column is the floor's opposite, the cost the reach
removes.  Prints a table (p50 / p99 ms per shape) and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

TOPICS = ["laptop", "hamster", "marathon", "recipe", "travel", "budget", "garden", "camera"]
QUESTIONS = [
    "Which laptop did we talk about for my budget?",
    "What do you know about my hamster?",
    "Any tips for marathon training?",
    "What recipe did I like?",
    "Where did we plan to travel?",
    "How is the garden doing?",
    "Which camera should I buy?",
    "What did we say about the budget and travel?",
]
START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SHAPES = ("sessions", "chatty", "burst", "long-sessions")
LONG = 500


def when(shape: str, i: int) -> datetime:
    if shape == "burst":
        return START
    if shape == "chatty":
        return START + timedelta(minutes=2 * i)
    if shape == "long-sessions":
        return START + timedelta(days=i // LONG, minutes=2 * (i % LONG))
    return START + timedelta(days=i // 10, hours=6 * (i % 10 // 5), minutes=2 * (i % 5))


def build(folder: Path, shape: str, turns: int) -> Memory:
    vault_dir = folder / shape
    if not (vault_dir / "pandafs.toml").exists():
        shutil.rmtree(vault_dir, ignore_errors=True)
        vault, _ = Vault.init(vault_dir)
        rng = random.Random(7)
        source = folder / f"{shape}.jsonl"
        with open(source, "wb") as out:
            for i in range(turns):
                topic = rng.choice(TOPICS)
                line = {
                    "user": "bench",
                    "external_id": f"h{i}",
                    "timestamp": when(shape, i).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "query": f"question {i} about my {topic} and {rng.choice(TOPICS)}",
                    "response": f"an answer about the {topic}, number {i}, with some detail. " * 4,
                }
                if shape == "long-sessions":
                    line["meta"] = {"session": f"s{i // LONG}"}
                out.write(orjson.dumps(line) + b"\n")
        memory = Memory(vault)
        import_turns(vault, source, after_batch=memory.index_docs)
    return Memory(Vault.open(vault_dir))


def timed(memory: Memory) -> list[float]:
    out = []
    for question in QUESTIONS:
        started = time.perf_counter()
        memory.search(question, user="bench", now=NOW, limit=10)
        out.append((time.perf_counter() - started) * 1000)
    return out


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--keep", type=Path, help="build the vaults here and reuse them")
    args = parser.parse_args()
    if args.turns < 1 or args.rounds < 1:
        parser.error("--turns and --rounds must be at least 1")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="pandafs-bench-episodes-"))
    folder.mkdir(parents=True, exist_ok=True)
    report: dict[str, dict[str, float]] = {}
    reach_value = None
    try:
        for shape in SHAPES:
            memory = build(folder, shape, args.turns)
            reach = memory.ranking
            whole = reach._replace(episode_reach=0)
            reach_value = reach.episode_reach
            times: dict[str, list[float]] = {"reach": [], "whole": []}
            for ranking in (reach, whole):  # warm both
                memory.ranking = ranking
                timed(memory)
            for _ in range(args.rounds):  # alternated: load moves both alike
                for name, ranking in (("reach", reach), ("whole", whole)):
                    memory.ranking = ranking
                    times[name] += timed(memory)
            report[shape] = {
                "reach_p50_ms": round(statistics.median(times["reach"]), 2),
                "reach_p99_ms": round(p99(times["reach"]), 2),
                "whole_p50_ms": round(statistics.median(times["whole"]), 2),
                "whole_p99_ms": round(p99(times["whole"]), 2),
            }
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    rounds = f"{len(QUESTIONS)} questions × {args.rounds}"
    print(f"search p50 / p99 ms, {args.turns:,} turns of one user, {rounds}")
    print(f"{'history':<10} {'episode_reach':>16} {'whole run (0)':>16} {'whole / reach p50':>18}")
    for shape, row in report.items():
        ratio = row["whole_p50_ms"] / row["reach_p50_ms"]
        print(
            f"{shape:<10} {row['reach_p50_ms']:>7.2f} / {row['reach_p99_ms']:<6.2f}"
            f" {row['whole_p50_ms']:>7.2f} / {row['whole_p99_ms']:<6.2f} {ratio:>17.2f}×"
        )
    line = {"benchmark": "episodes", "turns": args.turns, "episode_reach": reach_value, "shapes": report}
    print(orjson.dumps(line).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

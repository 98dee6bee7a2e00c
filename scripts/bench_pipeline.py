"""Benchmark the turn pipeline's overhead with the offline backend (DESIGN.md §9: ≤ 50 ms).

    .venv/bin/python scripts/bench_pipeline.py [--sizes 1000,100000] [--turns 60]

For each size, a fresh vault gets that many prior turns (bulk import, indexed),
then `--turns` real turns run through `Pipeline.ask` for one user: every phase,
fsynced events, projections, the index update.  The offline backend's rules are
part of the measured time (there is no model to subtract), so the figure is an
upper bound of PandaFS's own overhead.  Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from pandafs.importer import import_turns
from pandafs.llm.offline import OfflineBackend
from pandafs.memory import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

TOPICS = ["laptop", "hamster", "marathon", "recipe", "travel", "budget", "garden", "camera"]
QUERIES = [
    "I prefer Lenovo laptops",
    "Which laptop did we talk about for my budget?",
    "How much was that one?",
    "What do you know about my hamster?",
    "Any tips for marathon training?",
    "I love spicy food",
    "What recipe did I like last month?",
    "Where did we plan to travel?",
    "hmm",
    "thanks!",
]


def build(folder: Path, prior: int) -> Vault:
    vault, _ = Vault.init(folder / "vault")
    rng = random.Random(7)
    source = folder / "history.jsonl"
    with open(source, "wb") as out:
        for i in range(prior):
            topic = rng.choice(TOPICS)
            out.write(
                orjson.dumps(
                    {
                        "user": f"user{i % 10}" if i % 10 else "bench",
                        "external_id": f"h{i}",
                        "timestamp": f"2026-{1 + i % 10:02d}-{1 + i % 28:02d}T12:00:00Z",
                        "query": f"question {i} about my {topic} and {rng.choice(TOPICS)}",
                        "response": f"an answer about the {topic}, number {i}, with some detail. " * 4,
                    }
                )
                + b"\n"
            )
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    memory.save(
        "Lenovo LOQ 15 gaming laptop with RTX 4050: $697 at Best Buy.",
        user="bench",
        topic="electronics.laptop",
        keywords=["lenovo", "laptop"],
        scope="user",
    )
    return vault


def measure(vault: Vault, turns: int) -> dict[str, float]:
    times: list[float] = []
    phases: dict[str, list[float]] = {}
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        pipeline.ask("warm up", user="bench")
        for i in range(turns):
            started = time.perf_counter()
            result = pipeline.ask(QUERIES[i % len(QUERIES)], user="bench")
            times.append((time.perf_counter() - started) * 1000)
            for phase, ms in result.phase_ms.items():
                phases.setdefault(phase, []).append(ms)
    times.sort()
    return {
        "turn_p50_ms": round(statistics.median(times), 2),
        "turn_p95_ms": round(times[int(len(times) * 0.95) - 1], 2),
        "turn_mean_ms": round(statistics.fmean(times), 2),
        **{f"phase_{k}_p50_ms": round(statistics.median(v), 2) for k, v in sorted(phases.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="pandafs-bench-pipeline-") as tmp:
            started = time.perf_counter()
            vault = build(Path(tmp), size)
            setup = time.perf_counter() - started
            results[str(size)] = {"setup_s": round(setup, 1), **measure(vault, args.turns)}
        row = results[str(size)]
        print(
            f"{size:>7} prior turns: turn p50 {row['turn_p50_ms']} ms, p95 {row['turn_p95_ms']} ms, "
            f"mean {row['turn_mean_ms']} ms (setup {row['setup_s']} s)"
        )
        for key, value in row.items():
            if key.startswith("phase_"):
                print(f"{'':>10}{key.removeprefix('phase_').removesuffix('_p50_ms'):<18} p50 {value} ms")
    passed = all(r["turn_p50_ms"] <= 50 for r in results.values())
    print(orjson.dumps({"benchmark": "pipeline", "target_ms": 50, "sizes": results, "pass": passed}).decode())


if __name__ == "__main__":
    main()

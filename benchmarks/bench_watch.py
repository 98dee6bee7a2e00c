"""Benchmark `pandafs watch`: edit → visible in search, and inbox throughput (benchmarks/README.md).

    .venv/bin/python benchmarks/bench_watch.py [--edits 200] [--turns 2000] [--inbox 60]

1. **Edit → visible.**  A vault with `--turns` imported turns and 40 knowledge notes;
   `python -m pandafs --root V watch` runs as a real child process.  Each of `--edits`
   edits rewrites one note (alternately in place and as an editor's atomic save: temp
   file + rename) with a fresh marker word, then polls `Memory.search(marker)` from
   this process every 5 ms until the note is the hit.  Latency = edit start → first
   search that finds it (debounce 250 ms + indexing + commit + reader reload): p50 /
   p99 / max, target p99 ≤ 1 s.  The edits are sequential, one at a time.
2. **Inbox throughput** with the offline backend, three ways on `--inbox` query files
   each: plain `Pipeline.ask` in-process (the pipeline alone, the baseline),
   `Inbox.process_pending` in-process (claim + turn + answer + file away, every step
   durable), and `pandafs watch` as a child process answering files dropped while it
   runs (wall time from the first drop to the last answer, settle time included).

Output: a table, then, last, one JSON line `{"benchmark": "watch", ...}`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from pandafs.inbox import Inbox
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

ROOT = Path(__file__).resolve().parents[1]

NOTES = 40
TOPICS = ["laptops", "hamsters", "gardens", "trains", "recipes", "budgets", "running", "cameras"]
QUESTIONS = [
    "Which laptop is best for travel?",
    "How often should I feed my hamster?",
    "When should I plant tomatoes?",
    "What is the fastest train to Vienna?",
    "Any vegetarian dinner ideas?",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class WatchChild:
    """`pandafs watch` in a child process; its stderr lines are kept."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pandafs", "--root", str(root), "watch", "--no-upkeep"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())

    def wait_for(self, needle: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.lines):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"watch never said {needle!r}: {self.lines[-5:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def seed_vault(folder: Path, turns: int) -> Vault:
    vault, _ = Vault.init(folder / "vault")
    if turns:
        source = folder / "turns.jsonl"
        with open(source, "wb") as out:
            for i in range(turns):
                topic = TOPICS[i % len(TOPICS)]
                line = {
                    "user": f"user{i % 4}",
                    "external_id": f"t{i}",
                    "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T12:00:00Z",
                    "query": f"question {i} about {topic}",
                    "response": f"An answer about {topic}, budgets and plans. " * 8,
                }
                out.write(orjson.dumps(line) + b"\n")
        import_turns(vault, source, after_batch=Memory(vault).index_docs)
    notes = vault.root / "knowledge" / "bench"
    notes.mkdir(parents=True)
    for n in range(NOTES):
        (notes / f"note{n:02d}.md").write_text(f"# Note {n}\nAbout {TOPICS[n % len(TOPICS)]}.\n")
    Memory(vault).reconcile()
    return vault


def bench_edits(vault: Vault, edits: int) -> list[float]:
    memory = Memory(vault)
    notes = vault.root / "knowledge" / "bench"
    watch = WatchChild(vault.root)
    latencies: list[float] = []
    try:
        watch.wait_for("reconciled")
        time.sleep(0.5)
        for i in range(edits):
            n = i % NOTES
            note = notes / f"note{n:02d}.md"
            rel = f"knowledge/bench/note{n:02d}.md"
            marker = f"edit{i:05d}marker"
            text = f"# Note {n}\nAbout {TOPICS[n % len(TOPICS)]} and {marker}.\n"
            started = time.perf_counter()
            if i % 2:
                tmp = notes / f".note{n:02d}.md.tmp"
                tmp.write_text(text)
                os.replace(tmp, note)
            else:
                note.write_text(text)
            deadline = started + 30.0
            while True:
                hits = memory.search(marker, limit=1)
                if hits and hits[0]["doc_path"] == rel:
                    break
                if time.perf_counter() > deadline:
                    raise SystemExit(f"edit {i} never became visible: {watch.lines[-5:]}")
                time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
    finally:
        watch.stop()
    return latencies


def drop_queries(vault: Vault, count: int, prefix: str, *, age: float) -> None:
    past = time.time() - age
    for i in range(count):
        path = vault.root / "inbox" / f"{prefix}{i:04d}.md"
        path.write_text(QUESTIONS[i % len(QUESTIONS)] + f" (#{i})\n")
        if age:
            os.utime(path, (past, past))


def bench_ask(vault: Vault, count: int) -> float:
    with Pipeline(vault) as pipeline:
        pipeline.ask("warm up: which laptop?", user="warmup")  # first-use costs are not the pipeline's
        started = time.perf_counter()
        for i in range(count):
            pipeline.ask(QUESTIONS[i % len(QUESTIONS)] + f" (#{i})", user="askbench")
        return time.perf_counter() - started


def bench_inbox(vault: Vault, count: int) -> float:
    drop_queries(vault, count, "lib", age=60)
    with Inbox(vault) as inbox:
        started = time.perf_counter()
        report = inbox.process_pending()
        seconds = time.perf_counter() - started
    assert len(report.of("answered")) == count, report.as_json()
    return seconds


def bench_watch_inbox(vault: Vault, count: int) -> float:
    outbox = vault.root / "outbox"
    before = sum(1 for _ in outbox.rglob("*.md"))
    watch = WatchChild(vault.root)
    try:
        watch.wait_for("reconciled")
        started = time.perf_counter()
        drop_queries(vault, count, "live", age=0)
        while sum(1 for _ in outbox.rglob("*.md")) < before + count:
            if time.perf_counter() - started > 600:
                raise SystemExit(f"the inbox was not answered: {watch.lines[-5:]}")
            time.sleep(0.05)
        return time.perf_counter() - started
    finally:
        watch.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--turns", type=int, default=2000, help="imported turns in the vault")
    parser.add_argument("--inbox", type=int, default=60, help="query files per inbox run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-watch-") as tmp:
        vault = seed_vault(Path(tmp), args.turns)
        documents = Memory(vault).index.reader.count()
        latencies = bench_edits(vault, args.edits)
        ask_s = bench_ask(vault, args.inbox)
        inbox_s = bench_inbox(vault, args.inbox)
        watch_s = bench_watch_inbox(vault, args.inbox)

    ms = [s * 1000 for s in latencies]
    p50, p99, worst = pct(ms, 0.5), pct(ms, 0.99), max(ms)
    per_min = {
        "ask": args.inbox / ask_s * 60,
        "inbox": args.inbox / inbox_s * 60,
        "watch": args.inbox / watch_s * 60,
    }
    overhead_ms = (inbox_s - ask_s) / args.inbox * 1000
    rows = [
        (f"vault: {args.turns:,} imported turns + {NOTES} notes", f"{documents:,} documents indexed"),
        (
            f"edit → visible, {len(ms)} edits (target p99 ≤ 1,000 ms)",
            f"p50 {p50:,.0f} ms · p99 {p99:,.0f} ms · max {worst:,.0f} ms · mean "
            f"{statistics.fmean(ms):,.0f} ms",
        ),
        (f"Pipeline.ask, {args.inbox} turns (baseline)", f"{per_min['ask']:,.0f} turns/min"),
        (
            f"Inbox.process_pending, {args.inbox} files",
            f"{per_min['inbox']:,.0f} files/min ({per_min['inbox'] / per_min['ask']:.2f}× ask; "
            f"+{overhead_ms:,.1f} ms/file)",
        ),
        (
            f"pandafs watch answering {args.inbox} dropped files",
            f"{per_min['watch']:,.0f} files/min ({per_min['watch'] / per_min['ask']:.2f}× ask; "
            "incl. 1 s settle)",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(
        orjson.dumps(
            {
                "benchmark": "watch",
                "turns": args.turns,
                "documents": documents,
                "edits": len(ms),
                "visible_p50_ms": round(p50, 1),
                "visible_p99_ms": round(p99, 1),
                "visible_max_ms": round(worst, 1),
                "visible_target_p99_ms": 1000,
                "visible_pass": p99 <= 1000,
                "inbox_files": args.inbox,
                "ask_turns_per_min": round(per_min["ask"]),
                "inbox_files_per_min": round(per_min["inbox"]),
                "watch_files_per_min": round(per_min["watch"]),
                "inbox_vs_ask": round(per_min["inbox"] / per_min["ask"], 3),
                "inbox_overhead_ms_per_file": round(overhead_ms, 1),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()

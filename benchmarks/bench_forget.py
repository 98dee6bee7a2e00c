"""What a forget costs, beside the rebuild it contains (no target: forgetting is rare).

    .venv/bin/python benchmarks/bench_forget.py [--turns 2000] [--rounds 2]

Imports N turns for 4 users (one in 50 of user0's says a word to forget, in a sentence
of its own), archives the older half, then alternates, each a whole `pandafs` process:
`rebuild` (the floor: a forget rebuilds every derived store) and `forget WORD --user
user0` (a new word each round). Prints a table and, last, one JSON line
{"benchmark": "forget", ...}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOW = "2026-11-21T12:00:00Z"


def _pandafs(*args: str | Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pandafs", *map(str, args)], capture_output=True, text=True, cwd=REPO
    )
    if done.returncode != 0:
        raise SystemExit(f"pandafs {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr[-400:]}")
    return time.perf_counter() - started, done


def build(folder: Path, turns: int, rounds: int) -> Path:
    root = folder / "vault"
    _pandafs("--root", root, "init")
    rows = []
    for i in range(turns):
        user = f"user{i % 4}"
        secret = f" The forgetword{(i // 200) % rounds} is private." if i % 200 == 0 else ""  # user0
        rows.append(
            {
                "user": user,
                "external_id": f"b{i}",
                "timestamp": f"2026-{'09' if i % 2 else '11'}-{1 + i % 20:02d}T10:00:00Z",
                "query": f"Tell me about keptword{i} and the garden.{secret}",
                "response": f"Here is keptword{i}. " + "Some words about gardens and bicycles. " * 6 + secret,
            }
        )
    source = folder / "turns.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _pandafs("--root", root, "import-turns", source, "--json")
    _pandafs("--root", root, "archive", "--age-days", "30", "--now", NOW, "--json")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-forget-") as tmp:
        root = build(Path(tmp), args.turns, args.rounds)
        rebuilds, forgets, changed = [], [], []
        for round_ in range(args.rounds):
            seconds, _ = _pandafs("--root", root, "rebuild", "--json")
            rebuilds.append(seconds)
            seconds, done = _pandafs(
                "--root", root, "forget", f"forgetword{round_}", "--user", "user0", "--json"
            )
            forgets.append(seconds)
            report = json.loads(done.stdout)
            changed.append(report["changed"])
            if not report["ok"]:
                raise SystemExit(f"forget left survivors: {report['survivors'][:3]}")
        _pandafs("--root", root, "verify", "--forgotten", "--json")
    rebuild_s, forget_s = statistics.median(rebuilds), statistics.median(forgets)
    print(f"{'turns':>6} {'rounds':>6} {'rebuild s':>10} {'forget s':>9} {'ratio':>6} {'files changed':>14}")
    print(
        f"{args.turns:>6} {args.rounds:>6} {rebuild_s:>10.2f} {forget_s:>9.2f} "
        f"{forget_s / rebuild_s:>6.2f} {statistics.median(changed):>14.0f}"
    )
    result = {
        "benchmark": "forget",
        "turns": args.turns,
        "rounds": args.rounds,
        "rebuild_s": [round(s, 2) for s in rebuilds],
        "forget_s": [round(s, 2) for s in forgets],
        "forget_vs_rebuild": round(forget_s / rebuild_s, 2),
        "files_changed": changed,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

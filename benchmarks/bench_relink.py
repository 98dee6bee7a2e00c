"""Benchmark the link pass that archive and restore run (pandafs/links.py, archive/_links.py).

    .venv/bin/python benchmarks/bench_relink.py [--turns 5000]

Imports N turns for one user (every tenth answer links an earlier turn, and facts.md
links them too), archives the older half, then times, on that vault: the link pass
with nothing left to change (what every later archive or restore pays: it reads the
user's markdown), the pass after the links were put back to point at the archived
folders (every link rewritten), and, as the floor, a raw walk reading the same files.
Prints a table and, last, one JSON line {"benchmark": "relink", ...}.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from pandafs.archive import archive_turns
from pandafs.archive._common import relink_users
from pandafs.links import relink
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def build(root: Path, turns: int) -> Vault:
    vault, _ = Vault.init(root / "vault")
    start = NOW - timedelta(days=60)
    step = timedelta(days=59) / turns
    lines = []
    for i in range(turns):
        link = (
            f" See [[users/alice/turns/turn_{max(1, i - 5):06d}/context|turn {max(1, i - 5)}]]."
            if i % 10 == 0
            else ""
        )
        lines.append(
            {
                "user": "alice",
                "external_id": f"bench-{i}",
                "timestamp": (start + i * step).isoformat(),
                "query": f"question {i} about hamster cages and laptop prices",
                "response": "An answer with a few sentences of text. " * 20 + link,
            }
        )
    source = root / "turns.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    facts = vault.layout.user_dir("alice") / "facts.md"
    entries = [
        f"- fact {i} _(from [[users/alice/turns/turn_{i:06d}/context|turn_{i:06d}]])_"
        for i in range(1, turns, 50)
    ]
    facts.write_text("---\ntitle: Facts of alice\n---\n# Facts\n\n" + "\n".join(entries) + "\n")
    return vault


def raw_read(vault: Vault) -> tuple[float, int]:
    started = time.perf_counter()
    count = 0
    for base in (vault.layout.user_dir("alice"), vault.layout.archive / "stubs" / "alice"):
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if name.endswith(".md"):
                    (Path(dirpath) / name).read_bytes()
                    count += 1
    return time.perf_counter() - started, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-relink-") as tmp:
        vault = build(Path(tmp), args.turns)
        started = time.perf_counter()
        report = archive_turns(vault, age_days=30, now=NOW)
        archive_s = time.perf_counter() - started
        raw_s, files = raw_read(vault)
        started = time.perf_counter()
        assert relink_users(vault, ["alice"]) == []
        scan_s = time.perf_counter() - started
        stale = 0
        for path in vault.root.rglob("*.md"):
            text = path.read_text()
            back = relink(text, lambda u, t: "live")  # as if every archived turn were still live
            if back != text:
                path.write_text(back)
                stale += 1
        started = time.perf_counter()
        rewritten = relink_users(vault, ["alice"])
        rewrite_s = time.perf_counter() - started
    rows = [
        ("archive_turns (includes one pass)", archive_s),
        (f"raw walk + read of {files} markdown files (floor)", raw_s),
        ("link pass, nothing to change", scan_s),
        (f"link pass rewriting {len(rewritten)} files", rewrite_s),
    ]
    print(f"{args.turns} turns, {report.archived} archived")
    for label, seconds in rows:
        print(f"  {label:52} {seconds:8.3f} s")
    print(
        orjson.dumps(
            {
                "benchmark": "relink",
                "turns": args.turns,
                "archived": report.archived,
                "files": files,
                "archive_s": round(archive_s, 3),
                "raw_read_s": round(raw_s, 3),
                "scan_s": round(scan_s, 3),
                "scan_vs_raw": round(scan_s / raw_s, 2) if raw_s else None,
                "scan_share_of_archive": round(scan_s / archive_s, 3) if archive_s else None,
                "rewritten": len(rewritten),
                "stale_files": stale,
                "rewrite_s": round(rewrite_s, 3),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()

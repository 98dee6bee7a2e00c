"""Measure what a turn costs on disk beside the text it holds (target, benchmarks/README.md: ≤ 3×).

    .venv/bin/python benchmarks/bench_vault_size.py [--imported 300] [--asked 20] [--text 2100]

A fresh vault gets `--imported` turns from `import-turns` (about `--text` bytes of
query + response each, the lines `bench_import` writes) and `--asked` turns run by
`Pipeline.ask` on the offline backend.  For every turn folder it sums the bytes of its
files (the folder itself aside) and divides by the floor: the UTF-8 bytes of the
turn's own text, its query and its answer.  Per kind of turn and per file it prints
bytes per turn, the ratio to the text, and the disk blocks the files take (`st_blocks`,
for reference: small files round up to the filesystem's block).  Last line: JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_import import write_source

from events.log import read_events
from events.projection import project_turn
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

QUERIES = [
    "I prefer Lenovo laptops",
    "Which laptop did we talk about for my budget?",
    "What do you know about my hamster?",
    "Any tips for marathon training?",
    "thanks!",
]


def measure(vault: Vault) -> dict[str, dict]:
    kinds: dict[str, dict[str, list[float]]] = {}
    for user_dir in sorted(vault.layout.users_dir.iterdir()):
        for folder in sorted((user_dir / "turns").glob("turn_*")):
            view = project_turn(read_events(folder / "events.jsonl"))
            text = len(view.query.encode()) + len((view.answer or "").encode())
            kind = "imported" if view.is_import else "asked"
            row = kinds.setdefault(kind, {"text": [], "bytes": [], "blocks": []})
            row["text"].append(text)
            total = blocks = 0
            for path in folder.rglob("*"):
                if path.is_file():
                    st = path.stat()
                    total += st.st_size
                    blocks += st.st_blocks * 512
                    row.setdefault(f"file {path.relative_to(folder)}", []).append(st.st_size)
            row["bytes"].append(total)
            row["blocks"].append(blocks)
    out: dict[str, dict] = {}
    for kind, row in kinds.items():
        n = len(row["text"])
        text = statistics.fmean(row["text"])
        out[kind] = {
            "turns": n,
            "text_bytes": round(text),
            "file_bytes": round(statistics.fmean(row["bytes"])),
            "ratio": round(statistics.fmean(row["bytes"]) / text, 2),
            "disk_blocks_bytes": round(statistics.fmean(row["blocks"])),
            "files": {
                k.removeprefix("file "): round(sum(v) / n)
                for k, v in sorted(row.items())
                if k.startswith("file ")
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imported", type=int, default=300)
    parser.add_argument("--asked", type=int, default=20)
    parser.add_argument("--text", type=int, default=2100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pandafs-bench-size-") as tmp:
        vault, _ = Vault.init(Path(tmp) / "vault")
        source = Path(tmp) / "turns.jsonl"
        write_source(source, args.imported, args.text)
        import_turns(vault, source, after_batch=Memory(vault).index_docs)
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            for i in range(args.asked):
                pipeline.ask(QUERIES[i % len(QUERIES)], user="asker")
        results = measure(vault)
    print(f"{'turns':<10}{'n':>6}{'text B':>9}{'files B':>9}{'ratio':>7}{'blocks B':>10}")
    for kind, row in results.items():
        print(
            f"{kind:<10}{row['turns']:>6}{row['text_bytes']:>9}{row['file_bytes']:>9}"
            f"{row['ratio']:>7}{row['disk_blocks_bytes']:>10}"
        )
        for name, size in row["files"].items():
            print(f"{'':<12}{name:<26}{size:>8} B")
    passed = all(r["ratio"] <= 3.0 for k, r in results.items() if k == "imported")
    print(
        orjson.dumps(
            {"benchmark": "vault_size", "target_ratio": 3.0, "kinds": results, "pass": passed}
        ).decode()
    )


if __name__ == "__main__":
    main()

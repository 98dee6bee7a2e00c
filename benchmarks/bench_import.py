"""Bulk import beside the raw filesystem (target, benchmarks/README.md: ≥ 0.5× the raw filesystem's
rate for the same files; bounded memory).

    .venv/bin/python benchmarks/bench_import.py [--turns 10000] [--rounds 2] [--text 2400] [--real]

`--real` imports LongMemEval's dev set instead (../shared/data/longmemeval-dev: 24,820
turns of real chat, as `eval_retrieval.py` reads them; `--turns` and `--text` are then
its own).

Each round, alternated so a busy machine slows both alike:

* **PandaFS**: `pandafs import-turns FILE --json` as a whole process (indexed, as the
  CLI always does), into a fresh vault: turns/s and the process's peak memory;
* **raw filesystem floor**: the same folders and files with the same sizes, written by a
  bare loop with the same durability as the importer (every file and folder fsynced, by
  the same number of background threads, one fsync of each turns folder per batch) —
  what the disk can do with nothing else to compute;
* for reference, the same loop with no fsync at all (not a floor: nothing durable).

Prints medians and the ratio PandaFS / floor, then one JSON line {"benchmark": "import", ...}.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import orjson

TARGET_RATIO = 0.5
FSYNC_THREADS = 4  # as pandafs.turn_import
BATCH = 1000  # as [index] batch_size


def write_real_source(path: Path) -> int:
    """LongMemEval's dev set as an import file (`eval_retrieval.load_longmemeval`); its lines."""
    from eval_retrieval import DEFAULT_LME, load_longmemeval  # scripts/ is on sys.path

    lines = load_longmemeval(DEFAULT_LME).lines
    with open(path, "wb") as out:
        for line in lines:
            out.write(orjson.dumps(line) + b"\n")
    return len(lines)


def write_source(path: Path, turns: int, text: int) -> None:
    """`turns` lines of about `text` bytes of query + response, four users."""
    sentence = "A reasonably long answer about hamsters, laptops and budgets, with prices and caveats. "
    response = (sentence * (text // len(sentence) + 1))[: max(0, text - 100)]
    with open(path, "wb") as out:
        for i in range(turns):
            line = {
                "user": f"user{i % 4}",
                "external_id": f"x{i}",
                "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T12:00:00Z",
                "query": f"question {i}: what did we say about hamsters, laptops and the budget?",
                "response": response,
                "meta": {"session": i // 20},
            }
            out.write(orjson.dumps(line) + b"\n")


def run_pandafs(root: Path, source: Path) -> dict[str, float]:
    """The CLI as a user runs it; wall time and peak RSS of that one process."""
    script = Path(sys.executable).with_name("pandafs")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pandafs"]
    subprocess.run([*command, "--root", str(root), "init"], check=True, stdout=subprocess.DEVNULL)
    start = time.perf_counter()
    proc = subprocess.run(
        [*command, "--root", str(root), "import-turns", str(source), "--json"], capture_output=True
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"import failed: {proc.stderr.decode()[-800:]}")
    report = orjson.loads(proc.stdout)
    # The largest child so far; the import is by far the largest child this script runs.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    stages = dict(report.get("stages") or {})
    # the importing thread's stages; "index" runs beside them on the indexer's thread
    main = sum(v for k, v in stages.items() if k != "index")
    stages["other in import"] = max(0.0, report["seconds"] - main)
    stages["start-up, line count, exit"] = max(0.0, seconds - report["seconds"])
    return {"turns": report["imported"], "seconds": seconds, "peak_mib": peak, "stages": stages}


def layout_of(root: Path) -> list[tuple[str, list[tuple[str, int]]]]:
    """(user, [(turn folder, [file sizes])]) of a PandaFS vault, to copy its shape."""
    shape = []
    for user_dir in sorted((root / "users").iterdir()):
        turns = user_dir / "turns"
        if not turns.is_dir():
            continue
        for folder in sorted(turns.iterdir()):
            if folder.name.startswith("turn_"):
                sizes = [(f.name, f.stat().st_size) for f in sorted(folder.iterdir())]
                shape.append((f"{user_dir.name}/{folder.name}", sizes))
    return shape


def run_floor(root: Path, shape: list[tuple[str, list[tuple[str, int]]]], durable: bool) -> float:
    """Write folders and files of the same sizes; seconds taken."""
    root.mkdir(parents=True)
    blobs: dict[int, bytes] = {}
    pool = ThreadPoolExecutor(FSYNC_THREADS)
    pending: list[Future[None]] = []

    def sync(fd: int) -> None:
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    start = time.perf_counter()
    made: set[str] = set()
    for done, (turn, files) in enumerate(shape, 1):
        user = turn.split("/")[0]
        if user not in made:
            os.makedirs(root / user)
            made.add(user)
        folder = root / turn
        os.mkdir(folder)
        for name, size in files:
            data = blobs.get(size) or blobs.setdefault(size, b"x" * size)
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, data)
            if durable:
                pending.append(pool.submit(sync, fd))
            else:
                os.close(fd)
        if durable:
            pending.append(pool.submit(sync, os.open(folder, os.O_RDONLY)))
        if durable and (done % BATCH == 0 or done == len(shape)):
            for future in pending:
                future.result()
            pending = []
            for user in made:
                sync(os.open(root / user, os.O_RDONLY))
    seconds = time.perf_counter() - start
    pool.shutdown()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--text", type=int, default=2400, help="bytes of query + response per line")
    parser.add_argument("--real", action="store_true", help="LongMemEval's dev set (real chat) as the file")
    args = parser.parse_args()
    rows: dict[str, list[float]] = {"pandafs": [], "floor": [], "no_fsync": []}
    peaks: list[float] = []
    stage_runs: list[tuple[float, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="pandafs-import-") as tmp:
        base = Path(tmp)
        source = base / "turns.jsonl"
        if args.real:
            args.turns = write_real_source(source)
        else:
            write_source(source, args.turns, args.text)
        input_mib = source.stat().st_size / 2**20
        shape: list[tuple[str, list[tuple[str, int]]]] = []
        for round_no in range(args.rounds):
            vault = base / f"vault{round_no}"
            result = run_pandafs(vault, source)
            assert result["turns"] == args.turns, result
            rows["pandafs"].append(args.turns / result["seconds"])
            peaks.append(result["peak_mib"])
            stage_runs.append((result["seconds"], result["stages"]))
            if not shape:
                shape = layout_of(vault)
            text_bytes = sum(size for _, files in shape for _, size in files)
            shutil.rmtree(vault)
            for name, durable in (("floor", True), ("no_fsync", False)):
                target = base / f"{name}{round_no}"
                rows[name].append(len(shape) / run_floor(target, shape, durable))
                shutil.rmtree(target)
    med = {name: statistics.median(values) for name, values in rows.items()}
    ratio = med["pandafs"] / med["floor"]
    what = "real chat (LongMemEval dev)" if args.real else f"~{args.text} B text"
    print(f"{args.turns:,} turns of {what} ({input_mib:.0f} MiB in); {args.rounds} rounds, medians")
    print(f"{'':44} {'turns/s':>9} {'× floor':>8}")
    print(f"{'PandaFS import-turns (whole process, indexed)':44} {med['pandafs']:>9,.0f} {ratio:>7.2f}×")
    print(f"{'raw filesystem, same files, same fsyncs':44} {med['floor']:>9,.0f} {1:>7.2f}×")
    print(f"{'raw filesystem, no fsync (reference)':44} {med['no_fsync']:>9,.0f}")
    print(
        f"peak memory of the import process: {max(peaks):.0f} MiB; "
        f"turn files {text_bytes / len(shape):,.0f} B/turn"
    )
    wall, stages = sorted(stage_runs, key=lambda run: run[0])[len(stage_runs) // 2]
    shares = {name: seconds / wall for name, seconds in stages.items()}
    print("where the import's wall time goes (median round; 'index' overlaps the rest):")
    for name, share in sorted(shares.items(), key=lambda item: -item[1]):
        print(f"  {name:32} {stages[name]:8.2f} s {share:7.1%}")
    print(f"target: ≥ {TARGET_RATIO}× the floor → {ratio >= TARGET_RATIO}")
    result_json = {
        "benchmark": "import",
        "turns": args.turns,
        "source": "longmemeval-dev" if args.real else "generated",
        "rounds": args.rounds,
        "pandafs_turns_per_s": round(med["pandafs"]),
        "floor_turns_per_s": round(med["floor"]),
        "no_fsync_turns_per_s": round(med["no_fsync"]),
        "ratio": round(ratio, 2),
        "peak_mib": round(max(peaks)),
        "turn_bytes": round(text_bytes / len(shape)),
        "meets": ratio >= TARGET_RATIO,
        "stage_shares": {name: round(share, 3) for name, share in shares.items()},
    }
    print(orjson.dumps(result_json).decode())


if __name__ == "__main__":
    main()

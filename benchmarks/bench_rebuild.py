"""Full rebuild beside raw tantivy (target, benchmarks/README.md: in-process ≥ 0.6× raw
tantivy's rate; whole process ≤ 3× a raw script; ≤ 300 MiB).

    .venv/bin/python benchmarks/bench_rebuild.py [--turns 10000 | --real] [--rounds 2] [--vault DIR]

Builds a vault of `--turns` imported turns (setup, not timed; `--vault DIR` reuses
the vault built there by an earlier run, or builds it there and keeps it), or with
`--real` of the 24,820 turns of real chat in LongMemEval's dev set
(`../shared/data/longmemeval-dev`, imported as `eval_retrieval.py` imports it: its ids,
titles and text are nobody's here, and showed what the generated turns did not, a third
of their frontmatters read by PyYAML), then, alternated round
by round so a busy machine slows both alike:

* **in-process**: `Memory(vault).rebuild()` (the index only) beside a raw tantivy loop
  in the same process that reads the same `context.md` files and indexes their title
  and body (same tokenizer, heap and threads as ours), committing once: docs/s each;
* **whole process**: `pandafs rebuild --json` (index, learning fold, catalog,
  reliability) beside a raw script doing the in-process raw loop: seconds and peak
  memory of each process.

Every timed run starts from the same page-cache state (`--cache`): `warm` (the default)
reads every file of the vault once, untimed, just before it, so each side costs what its
own code does; `cold` drops the kernel's caches before it (root only), so each side also
reads the disk.  Without either, whichever ran first paid the disk for both: at 100k our
rebuild ran first and read cold files while the raw loop after it found them cached.

Each is also given in CPU seconds (process time; children's user + system time), which a
machine busy with other work does not inflate the way it inflates wall time.  Peak memory
is the largest resident size of any one process and, sampled every 10 ms, the largest sum
over the process and any children of their proportional resident sizes (a page two
share counts once), in a second run of each whole process: the sampling's own CPU
is not in the timed run.

The children run as an installed program does, from cached bytecode (a private
PYTHONPYCACHEPREFIX, warmed once, as `bench_startup.py` does): our machines set
PYTHONDONTWRITEBYTECODE, which would make every `pandafs` run compile PandaFS from source
(~0.5 s) while the raw script compiles next to nothing.  `--no-bytecode-cache` keeps the
environment as it is.

Prints the table and ratios, the seconds per stage of the whole-process rebuild (from
its `--json` report: walk, read, parse, index add, commit, learning fold, catalog,
rollups, research/site rebuild), then one JSON line {"benchmark": "rebuild", ...}.
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
from pathlib import Path

import orjson

TARGET_IN_PROCESS = 0.6
TARGET_WHOLE = 3.0
TARGET_PEAK_MIB = 300

RAW = r'''
import os, sys, time, shutil
from pathlib import Path
import tantivy

def raw_index(root: str, out: str, heap_mb: int) -> int:
    """Index every turn's context.md: path, title (its first heading) and body."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("path", stored=True, tokenizer_name="raw")
    sb.add_text_field("title", tokenizer_name="en_stem")
    sb.add_text_field("body", tokenizer_name="en_stem")
    index = tantivy.Index(sb.build(), path=out)
    writer = index.writer(heap_size=heap_mb * 1_000_000, num_threads=1)
    count = 0
    for user in sorted(os.listdir(os.path.join(root, "users"))):
        turns = os.path.join(root, "users", user, "turns")
        if not os.path.isdir(turns):
            continue
        for name in sorted(os.listdir(turns)):
            path = os.path.join(turns, name, "context.md")
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except (FileNotFoundError, NotADirectoryError):
                continue
            _, _, body = text.partition("\n---\n")
            title = next((l for l in body.splitlines() if l.strip()), "")
            doc = tantivy.Document()
            doc.add_text("path", path)
            doc.add_text("title", title)
            doc.add_text("body", body)
            writer.add_document(doc)
            count += 1
    writer.commit()
    writer.wait_merging_threads()
    return count

if __name__ == "__main__":
    start = time.perf_counter()
    n = raw_index(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    print(n, time.perf_counter() - start)
'''


def build(folder: Path, turns: int, real: bool = False) -> Path:
    from bench_import import write_real_source, write_source  # scripts/ is on sys.path

    from pandafs.memory.api import Memory
    from pandafs.turn_import import import_turns
    from pandafs.vault import Vault

    vault, _ = Vault.init(folder / "vault")
    source = folder / "turns.jsonl"
    if real:
        write_real_source(source)
    else:
        write_source(source, turns, 2400)
    import_turns(vault, source, after_batch=Memory(vault).index_docs)
    return vault.root


def settle(root: Path, cache: str) -> None:
    """Put the page cache in the same state before each timed run (module docstring),
    with nothing dirty in it: the index the run before wrote is on disk first, so its
    writeback does not land in the next run's time."""
    os.sync()
    if cache == "cold":
        with open("/proc/sys/vm/drop_caches", "w") as handle:
            handle.write("3\n")
        return
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    while handle.read(1 << 20):
                        pass
            except OSError:
                pass


def child_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


PROBE = r'''
import os, resource, subprocess, sys, tempfile, time

def tree_rss(pid):
    """Proportional resident KiB (Pss: a page shared by n processes counts 1/n in each)
    of `pid` and its descendants (0 once gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next((int(l.split()[1]) for l in f if l.startswith("Pss:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total

sample = sys.argv[1] == "sample"
with tempfile.TemporaryFile() as out:
    start = time.perf_counter()
    proc = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
    peak_sum = 0
    while proc.poll() is None:
        if sample:
            peak_sum = max(peak_sum, tree_rss(proc.pid))
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    err = proc.stderr.read()
    assert proc.returncode == 0, err.decode()[-800:]
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(seconds, use.ru_maxrss / 1024, use.ru_utime + use.ru_stime, peak_sum / 1024)
    out.seek(0)
    sys.stdout.write(out.read().decode())
'''


def run_child(command: list[str], env: dict[str, str]) -> tuple[float, float, float, float, str]:
    """Wall seconds, peak MiB (largest process), CPU seconds, peak MiB (sum over the
    process tree, sampled) and stdout of `command`, run twice (a fresh probe each time):
    timed, then again for the sampled peak: reading every process's `smaps_rollup` each
    10 ms takes CPU from the rebuild measured, far more than from the raw script, which
    leaves half a core idle."""
    timed = _probe("time", command, env)
    first, _, rest = timed.partition("\n")
    seconds, peak, cpu, _ = first.split()
    peak_sum = _probe("sample", command, env).partition("\n")[0].split()[3]
    return float(seconds), float(peak), float(cpu), float(peak_sum), rest


def _probe(mode: str, command: list[str], env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", PROBE, mode, *command], check=True, capture_output=True, text=True, env=env
    ).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--real", action="store_true", help="LongMemEval's dev set (real chat) for the turns")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--vault", type=Path, help="build the vault here once and reuse it")
    parser.add_argument(
        "--cache",
        choices=("warm", "cold"),
        default="warm",
        help="page cache before each timed run: every file read once (warm) or dropped (cold, root only)",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE if set: every `pandafs` run compiles PandaFS from source",
    )
    args = parser.parse_args()
    if args.cache == "cold" and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        parser.exit(2, "bench_rebuild: --cache cold needs to write /proc/sys/vm/drop_caches (root)\n")
    from pandafs.memory.api import Memory
    from pandafs.vault import Vault

    namespace: dict[str, object] = {}
    exec(compile(RAW, "raw_tantivy", "exec"), namespace)  # the raw loop, in this process
    raw_index = namespace["raw_index"]
    script = Path(sys.executable).with_name("pandafs")
    pandafs = [str(script)] if script.exists() else [sys.executable, "-m", "pandafs"]
    kinds = ("ours_in", "raw_in", "ours_whole", "raw_whole")
    rows: dict[str, list[float]] = {k: [] for kind in kinds for k in (kind, f"{kind}_cpu")}
    peaks: dict[str, list[float]] = {"ours": [], "raw": [], "ours_sum": [], "raw_sum": []}
    stages: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="pandafs-rebuild-") as tmp:
        base = Path(tmp)
        if args.vault is not None and (args.vault / "vault" / "pandafs.toml").exists():
            root = args.vault / "vault"
        elif args.vault is not None:
            args.vault.mkdir(parents=True, exist_ok=True)
            root = build(args.vault, args.turns, args.real)
        else:
            root = build(base, args.turns, args.real)
        raw_script = base / "raw_tantivy.py"
        raw_script.write_text(RAW)
        env = dict(os.environ)
        if not args.no_bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
            warm = (
                "import pandafs.cli.memory, pandafs.rebuild, pandafs.learning.api, pandafs.learning.catalog"
            )
            subprocess.run([sys.executable, "-c", warm], check=True, env=env)  # fills the cache once
        vault = Vault.open(root)
        heap_mb = vault.config.index.writer_heap_mb  # the raw loop's too: same heap as ours
        for _ in range(args.rounds):
            settle(root, args.cache)
            start, cpu = time.perf_counter(), time.process_time()
            report = Memory(vault).rebuild()
            rows["ours_in"].append(report.indexed / (time.perf_counter() - start))
            rows["ours_in_cpu"].append(report.indexed / (time.process_time() - cpu))
            settle(root, args.cache)
            start, cpu = time.perf_counter(), time.process_time()
            count = raw_index(str(root), str(base / "raw-index"), heap_mb)  # type: ignore[operator]
            rows["raw_in"].append(count / (time.perf_counter() - start))
            rows["raw_in_cpu"].append(count / (time.process_time() - cpu))
            command = [*pandafs, "--root", str(root), "rebuild", "--json"]
            settle(root, args.cache)
            seconds, peak, cpu, peak_sum, out = run_child(command, env)
            rows["ours_whole"].append(seconds)
            rows["ours_whole_cpu"].append(cpu)
            peaks["ours"].append(peak)
            peaks["ours_sum"].append(peak_sum)
            for stage, value in orjson.loads(out).get("stages", {}).items():
                stages.setdefault(stage, []).append(value)
            raw_command = [sys.executable, str(raw_script), str(root), str(base / "raw-index2"), str(heap_mb)]
            settle(root, args.cache)
            seconds, peak, cpu, peak_sum, _ = run_child(raw_command, env)
            rows["raw_whole"].append(seconds)
            rows["raw_whole_cpu"].append(cpu)
            peaks["raw"].append(peak)
            peaks["raw_sum"].append(peak_sum)
            shutil.rmtree(base / "raw-index2", ignore_errors=True)
        documents = report.documents
    med = {k: statistics.median(v) for k, v in rows.items()}
    in_ratio = med["ours_in"] / med["raw_in"]
    whole_ratio = med["ours_whole"] / med["raw_whole"]
    peak = max(peaks["ours"] + peaks["ours_sum"])  # the larger: the target is on what the rebuild holds
    source = "real chat (LongMemEval dev)" if args.real else "generated"
    print(f"{documents:,} documents, {source} turns; {args.rounds} rounds, medians")
    print(f"{'':44} {'PandaFS':>12} {'raw tantivy':>12} {'ratio':>8}")
    print(
        f"{'in-process indexing, docs/s':44} {med['ours_in']:>12,.0f} "
        f"{med['raw_in']:>12,.0f} {in_ratio:>7.2f}×"
    )
    print(
        f"{'whole process (pandafs rebuild), seconds':44} {med['ours_whole']:>12.2f} "
        f"{med['raw_whole']:>12.2f} {whole_ratio:>7.2f}×"
    )
    in_cpu_ratio = med["ours_in_cpu"] / med["raw_in_cpu"]
    whole_cpu_ratio = med["ours_whole_cpu"] / med["raw_whole_cpu"]
    print(  # CPU time: what a busy machine does not inflate (wall time waits for the CPU)
        f"{'in-process indexing, docs per CPU second':44} {med['ours_in_cpu']:>12,.0f} "
        f"{med['raw_in_cpu']:>12,.0f} {in_cpu_ratio:>7.2f}×"
    )
    print(
        f"{'whole process, CPU seconds':44} {med['ours_whole_cpu']:>12.2f} "
        f"{med['raw_whole_cpu']:>12.2f} {whole_cpu_ratio:>7.2f}×"
    )
    print(f"{'peak memory of one process, MiB':44} {max(peaks['ours']):>12.0f} {max(peaks['raw']):>12.0f}")
    print(
        f"{'peak memory, process tree (sum of Pss), MiB':44} {max(peaks['ours_sum']):>12.0f} "
        f"{max(peaks['raw_sum']):>12.0f}"
    )
    print(f"page cache {args.cache} before each timed run")
    print(f"bytecode {'compiled from source every run' if env.get('PYTHONDONTWRITEBYTECODE') else 'cached'}")
    stage_s = {k: statistics.median(v) for k, v in stages.items()}
    if stage_s:
        listed = ", ".join(f"{k} {v:.2f}" for k, v in stage_s.items())
        print(f"whole-process rebuild by stage, seconds: {listed}")
    meets = {
        "in_process": in_ratio >= TARGET_IN_PROCESS,
        "whole_process": whole_ratio <= TARGET_WHOLE,
        "peak": peak <= TARGET_PEAK_MIB,
    }
    print(
        f"targets: in-process ≥ {TARGET_IN_PROCESS}×, whole ≤ {TARGET_WHOLE}×, "
        f"≤ {TARGET_PEAK_MIB} MiB → {meets}"
    )
    result = {
        "benchmark": "rebuild",
        "turns": documents,
        "source": "longmemeval-dev" if args.real else "generated",
        "rounds": args.rounds,
        "in_process_docs_per_s": round(med["ours_in"]),
        "raw_docs_per_s": round(med["raw_in"]),
        "in_process_ratio": round(in_ratio, 2),
        "whole_s": round(med["ours_whole"], 2),
        "raw_whole_s": round(med["raw_whole"], 2),
        "whole_ratio": round(whole_ratio, 2),
        "in_process_cpu_ratio": round(in_cpu_ratio, 2),
        "whole_cpu_ratio": round(whole_cpu_ratio, 2),
        "peak_mib": round(peak),
        "peak_one_process_mib": round(max(peaks["ours"])),
        "peak_tree_sum_mib": round(max(peaks["ours_sum"])),
        "raw_peak_mib": round(max(peaks["raw"])),
        "cache": args.cache,
        "bytecode_cached": not env.get("PYTHONDONTWRITEBYTECODE"),
        "stages_s": {k: round(v, 2) for k, v in stage_s.items()},
        "meets": meets,
    }
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()

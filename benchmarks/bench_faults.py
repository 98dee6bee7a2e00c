"""A fault campaign you can rerun: real `pandafs` processes killed, raced, tampered with,
fed bad input, probed across the user boundary (documents, the inbox, import sources),
and given a damaged archive part.

    .venv/bin/python benchmarks/bench_faults.py                  # default size (≥ 20 kills each)
    .venv/bin/python benchmarks/bench_faults.py --size small     # about a minute
    .venv/bin/python benchmarks/bench_faults.py --only import --trials 40 --seed 7

Every campaign runs in its own temporary vault against `python -m pandafs` child
processes (each started in its own session, SIGKILLed with its children) and counts what
went wrong instead of stopping at the first failure:

- lost: an acknowledged thing (an imported line, an answered inbox file, a saved line, a
  turn folder) that is gone or that no search finds;
- duplicated: the same thing twice (two turns for one external_id or one inbox file);
- corrupted: damage left behind (an empty or half-written turn folder, an INCOMPLETE
  turn after recovery, bytes that differ, search results that differ from a clean
  rebuild, `verify` not clean after `verify --repair`, a change on disk after a refused
  command) or damage `verify` does not name;
- leaked: another user's secret or a file outside the vault seen through some door;
- resurrected: a forgotten word found again after a killed `forget` was finished (in a
  file of the user's area, an archived row, search, or after a rebuild);
- wrong exit: an exit code the contract does not allow (or a refusal that is not exactly
  one line on stderr);
- tracebacks: "Traceback" on the stderr of any process (killed ones included).

The table has one row per campaign, the last line is one JSON document
`{"campaigns": {...}, "totals": {...}}`; each row keeps its first few notes so a
failure names the path or command that shows it. Exit 0 whatever the counts (this is a
measurement; tests/e2e/test_fault_campaign.py asserts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("lost", "duplicated", "corrupted", "leaked", "resurrected", "wrong_exit", "tracebacks")
NOW = "2026-11-21T12:00:00Z"
SECRET = "purplemoose"
OUTSIDE_SECRET = "zebracrypt"
PASSWD_MARK = "root:x:0:0"
MAX_NOTES = 3  # per column


# ---------------------------------------------------------------- bookkeeping


@dataclass
class Tally:
    """What one campaign counted; `notes` name the first few failures."""

    trials: int = 0
    lost: int = 0
    duplicated: int = 0
    corrupted: int = 0
    leaked: int = 0
    resurrected: int = 0
    wrong_exit: int = 0
    tracebacks: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def add(self, column: str, note: str, count: int = 1) -> None:
        if count <= 0:
            return
        setattr(self, column, getattr(self, column) + count)
        if sum(n.startswith(f"{column}:") for n in self.notes) < MAX_NOTES:
            self.notes.append(f"{column}: {note}")

    def failures(self) -> int:
        return sum(getattr(self, c) for c in COLUMNS)


@dataclass
class Done:
    args: list[str]
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)

    def line(self) -> str:
        return "pandafs " + " ".join(a if len(a) < 60 else a[:40] + "…" for a in self.args)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PANDAFS_ROOT", "PANDAFS_DEBUG")}
    return {**env, **(extra or {})}


class Runner:
    """Starts real `pandafs` processes for one campaign; every stderr is read for tracebacks."""

    def __init__(self, tally: Tally, work: Path) -> None:
        self.tally = tally
        self.work = work
        self._n = 0

    def _files(self) -> tuple[Path, Path]:
        self._n += 1
        return self.work / f".out{self._n}", self.work / f".err{self._n}"

    def _collect(self, args: list[str], code: int, out_path: Path, err_path: Path) -> Done:
        out = out_path.read_text(encoding="utf-8", errors="replace")
        err = err_path.read_text(encoding="utf-8", errors="replace")
        out_path.unlink()
        err_path.unlink()
        done = Done(args, code, out, err)
        if "Traceback" in err:
            last = [ln for ln in err.strip().splitlines() if ln.strip()][-1:]
            self.tally.add("tracebacks", f"{done.line()} → {last[0][:160] if last else ''}")
        return done

    def run(
        self, *args: str | Path, env: dict[str, str] | None = None, timeout: float = 600, python: bool = False
    ) -> Done:
        """Run to the end (`python=True`: args are a `python -c` program and its argv)."""
        argv = [str(a) for a in args]
        out_path, err_path = self._files()
        cmd = [sys.executable, "-c", *argv] if python else [sys.executable, "-m", "pandafs", *argv]
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.run(cmd, stdout=out, stderr=err, env=_env(env), cwd=REPO, timeout=timeout)
        return self._collect(argv, proc.returncode, out_path, err_path)

    def kill_during(
        self,
        *args: str | Path,
        ready: Callable[[], bool],
        delay: float,
        env: dict[str, str] | None = None,
        timeout: float = 300,
    ) -> tuple[bool, Done]:
        """Start `pandafs ARGS`, wait until `ready()` says it is at work, wait `delay`
        seconds more, then SIGKILL its whole process group.  (killed?, what it printed)."""
        argv = [str(a) for a in args]
        out_path, err_path = self._files()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pandafs", *argv],
                stdout=out,
                stderr=err,
                env=_env(env),
                cwd=REPO,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while proc.poll() is None and not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        if proc.poll() is None and delay > 0:
            end = time.monotonic() + delay
            while proc.poll() is None and time.monotonic() < end:
                time.sleep(0.005)
        killed = False
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
            except ProcessLookupError:
                pass
        code = proc.wait()
        killed = killed and code == -signal.SIGKILL
        return killed, self._collect(argv, code, out_path, err_path)


def turn_dirs(root: Path) -> list[Path]:
    users = root / "users"
    if not users.is_dir():
        return []
    out = []
    for user in sorted(users.iterdir()):
        turns = user / "turns"
        if turns.is_dir():
            out += [p for p in sorted(turns.iterdir()) if p.name.startswith("turn_") and p.is_dir()]
    return out


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def folder_checksums(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def snapshot(root: Path) -> dict[str, str]:
    """Every file of the vault (lock files and indexes/ aside) → sha256."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts[:1] == ("indexes",):
            dirnames[:] = []
            continue
        for name in filenames:
            if name.endswith(".lock"):
                continue
            path = Path(dirpath) / name
            if path.is_symlink():
                out[(rel_dir / name).as_posix()] = "symlink:" + os.readlink(path)
            else:
                out[(rel_dir / name).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def half_written(folder: Path) -> str | None:
    """Why a turn folder is not a whole turn, or None."""
    names = {p.name for p in folder.iterdir()}
    if not names:
        return "empty folder"
    for need in ("events.jsonl", "context.md", "metadata.json"):
        if need not in names:
            return f"no {need}"
    meta = read_json(folder / "metadata.json")
    if not isinstance(meta, dict):
        return "unreadable metadata.json"
    if meta.get("outcome") in (None, "INCOMPLETE"):
        return f"outcome {meta.get('outcome')}"
    return None


def log_events(folder: Path) -> int:
    """Lines in a turn folder's events.jsonl (0 if it has none)."""
    try:
        return (folder / "events.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def is_complete_log(folder: Path) -> bool:
    """The turn's log ends with its turn_completed event."""
    try:
        lines = (folder / "events.jsonl").read_bytes().splitlines()
    except FileNotFoundError:
        return False
    return bool(lines) and b'"type":"turn_completed"' in lines[-1]


def init_vault(runner: Runner, root: Path) -> None:
    """A fresh vault, made in this process (what `pandafs init` does, one start-up less)."""
    from pandafs.vault import Vault

    Vault.init(root)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def batch_search(runner: Runner, root: Path, queries: list[dict[str, Any]], name: str) -> list[Any] | None:
    """`search --batch` in one process: one hit list (or {error}) per query."""
    source = runner.work / f"{name}.jsonl"
    write_jsonl(source, queries)
    done = runner.run("--root", root, "search", "--batch", source, "--json")
    try:
        return [json.loads(line) for line in done.out.splitlines() if line.strip()]
    except ValueError:
        return None


def verify(runner: Runner, root: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = runner.run("--root", root, "verify", *extra, "--json")
    try:
        report = done.json
    except ValueError:
        report = {"ok": False, "problems": [], "unparsed": done.out[-500:], "stderr": done.err[-500:]}
    return done.code, report


def problem_kinds(report: dict[str, Any]) -> str:
    kinds = Counter(p.get("kind") for p in report.get("problems", []))
    paths = [p.get("path") for p in report.get("problems", [])][:3]
    return f"{dict(kinds)} e.g. {paths}"


# ---------------------------------------------------------------- 1. import


def campaign_import(work: Path, trials: int, rng: random.Random) -> Tally:
    """Kill `import-turns` at random points, re-run every import, account for every line."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    lines_per_file = 160
    files: list[tuple[Path, list[dict[str, Any]]]] = []

    def new_file() -> None:
        n = len(files)
        rows = [
            {
                "user": ("alice", "bob")[i % 2],
                "external_id": f"f{n}-{i}",
                "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
                "query": f"question imp{n}x{i} about gardens and bicycles",
                "response": f"Answer imp{n}x{i}. " + "Some words about hamsters and tea. " * 3,
            }
            for i in range(lines_per_file)
        ]
        path = work / f"import{n}.jsonl"
        write_jsonl(path, rows)
        files.append((path, rows))

    new_file()
    attempts = 0
    while tally.trials < trials and attempts < trials * 4:
        attempts += 1
        before = len(turn_dirs(root))
        killed, done = runner.kill_during(
            "--root",
            root,
            "import-turns",
            files[-1][0],
            "--batch-size",
            str(rng.choice((1, 4, 16))),
            "--json",
            ready=lambda b=before: len(turn_dirs(root)) > b,
            delay=rng.uniform(0, 0.3),
        )
        if killed:
            tally.trials += 1
        elif done.code == 0:
            new_file()  # this file is fully imported: the next kills hit a fresh one
        else:
            tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
    for path, _ in files:
        done = runner.run("--root", root, "import-turns", path, "--json")
        if done.code != 0:
            tally.add("wrong_exit", f"re-run {done.line()} exit {done.code}: {done.err.strip()[:800]}")
    _account_imported(runner, tally, root, [row for _, rows in files for row in rows])
    return tally


def _account_imported(runner: Runner, tally: Tally, root: Path, rows: list[dict[str, Any]]) -> None:
    held: Counter[tuple[str, str]] = Counter()
    for folder in turn_dirs(root):
        why = half_written(folder)
        if why:
            tally.add("corrupted", f"{folder.relative_to(root)}: {why} (after re-running the import)")
            continue
        meta = read_json(folder / "metadata.json")
        if meta.get("external_id"):
            held[(meta["user"], meta["external_id"])] += 1
    queries = [{"query": r["query"].split()[1], "user": r["user"], "limit": 5} for r in rows]
    results = batch_search(runner, root, queries, "import-search") or []
    unfound = 0
    for i, row in enumerate(rows):
        key = (row["user"], row["external_id"])
        if held[key] == 0:
            tally.add("lost", f"line external_id={key[1]} user={key[0]} has no turn folder")
            continue
        if held[key] > 1:
            tally.add("duplicated", f"external_id={key[1]}: {held[key]} turns")
        hits = results[i] if i < len(results) else None
        if not isinstance(hits, list) or not any(h.get("external_id") == key[1] for h in hits):
            unfound += 1
            tally.add(
                "lost", f"external_id={key[1]}: in the vault, found by no search ({queries[i]['query']})"
            )
    if unfound:
        tally.notes.append(f"{unfound} imported lines not found by search")
    verify(runner, root, "--repair")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"verify exit {code} after verify --repair: {problem_kinds(report)}")


# ---------------------------------------------------------------- 2. ask


def campaign_ask(work: Path, trials: int, rng: random.Random) -> Tally:
    """Kill `ask` anywhere in its turn; the very next `ask`, at once, must leave no
    INCOMPLETE, empty or unprojected turn and the chain intact (a turn's liveness is
    told by its locks, never by its age, so nothing waits).  Every other trial,
    `verify --repair` then must find no turn left to repair."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    damaged: set[str] = set()
    unfinished: Counter[str] = Counter()
    attempts = 0
    while tally.trials < trials and attempts < trials * 4:
        attempts += 1
        before = len(turn_dirs(root))
        killed, done = runner.kill_during(
            "--root",
            root,
            "ask",
            f"How big should a cage for hamster number {attempts} be?",
            "--user",
            "alice",
            ready=lambda b=before: len(turn_dirs(root)) > b,
            # an offline turn takes ~50 ms once its folder exists; every fourth kill comes as
            # soon as the folder is seen, to aim at the moment before its first event
            delay=0.0 if attempts % 4 == 0 else rng.uniform(0, 0.12),
        )
        if not killed:
            if done.code != 0:
                tally.add("wrong_exit", f"{done.line()} exit {done.code}")
            continue
        tally.trials += 1
        newest = turn_dirs(root)[-1:]
        if newest and half_written(newest[0]):
            if not log_events(newest[0]):
                unfinished["before its first event"] += 1
            elif is_complete_log(newest[0]):
                unfinished["after its last event, before its projections"] += 1
            else:
                unfinished["mid-turn"] += 1
        done = runner.run("--root", root, "ask", f"I prefer cages number {attempts}", "--user", "alice")
        if done.code != 0:
            tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
        for folder in turn_dirs(root):
            why = half_written(folder)
            key = str(folder.relative_to(root))
            if why and key not in damaged:
                damaged.add(key)
                tally.add("corrupted", f"{key}: {why} after the next ask")
        if tally.trials % 2 == 0:
            done = runner.run("--root", root, "verify", "--repair", "--json")
            if done.code not in (0, 1):
                tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
            elif left := [p for p in done.json["repaired"] if p["path"].startswith("users/")]:
                tally.add("corrupted", f"verify --repair after the next ask still repaired {left[:2]}")
    kills = ", ".join(f"{n} {where}" for where, n in sorted(unfinished.items())) or "none"
    tally.notes.append(f"kills that left an unfinished turn to recover ({tally.trials} kills): {kills}")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"verify exit {code} at the end: {problem_kinds(report)}")
    return tally


# ---------------------------------------------------------------- 3. archive / restore


def campaign_archive(work: Path, trials: int, rng: random.Random) -> Tally:
    """Kill `archive` and `restore --all` in turn; after each re-run every turn is once
    live or archived, and restored folders are byte-identical to the originals."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    rows = [
        {
            "user": f"user{i % 3}",
            "external_id": f"a{i}",
            "timestamp": f"2026-0{1 + i % 8}-{1 + i % 27:02d}T10:00:00Z",
            "query": f"archive question {i} about topic{i % 17}",
            "response": f"Answer {i}. " + "Some words about gardens and bicycles. " * 4,
        }
        for i in range(150)
    ]
    source = work / "archive.jsonl"
    write_jsonl(source, rows)
    if runner.run("--root", root, "import-turns", source, "--json").code != 0:
        tally.add("wrong_exit", "import-turns of the archive vault failed")
        return tally
    originals = {f"{p.parent.parent.name}/{p.name}": folder_checksums(p) for p in turn_dirs(root)}

    def progress() -> tuple[int, int]:
        archive = root / "archive"
        files = sum(len(f) for _, _, f in os.walk(archive)) if archive.is_dir() else 0
        return len(turn_dirs(root)), files

    def kill_then_finish(*args: str) -> None:
        for _ in range(3):
            start = progress()
            killed, done = runner.kill_during(
                "--root", root, *args, ready=lambda s=start: progress() != s, delay=rng.uniform(0, 0.4)
            )
            if killed:
                tally.trials += 1
                break
            if done.code != 0:
                tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
        done = runner.run("--root", root, *args)
        if done.code != 0:
            tally.add("wrong_exit", f"re-run {done.line()} exit {done.code}: {done.err.strip()[:800]}")

    archive_args = ("archive", "--age-days", "30", "--now", NOW, "--batch-size", "8", "--json")
    cycles = 0
    while tally.trials < trials and cycles < trials:
        cycles += 1
        kill_then_finish(*archive_args)
        live = {f"{p.parent.parent.name}/{p.name}" for p in turn_dirs(root)}
        stubs = {f"{p.parent.name}/{p.stem}" for p in (root / "archive" / "stubs").glob("*/turn_*.md")}
        if live & stubs:
            tally.add("duplicated", f"both live and archived after archive: {sorted(live & stubs)[:3]}")
        for doc_id in sorted(set(originals) - live - stubs):
            tally.add("lost", f"{doc_id}: neither live nor archived after archive")
        kill_then_finish("restore", "--all", "--batch-size", "8", "--json")
        for doc_id, checksums in originals.items():
            user, turn = doc_id.split("/")
            folder = root / "users" / user / "turns" / turn
            if not folder.is_dir():
                tally.add("lost", f"{doc_id}: not back after restore --all (cycle {cycles})")
            elif folder_checksums(folder) != checksums:
                tally.add("corrupted", f"{doc_id}: restored bytes differ (cycle {cycles})")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"verify exit {code} at the end: {problem_kinds(report)}")
    return tally


# ---------------------------------------------------------------- 4. watch + inbox


def campaign_watch(work: Path, trials: int, rng: random.Random) -> Tally:
    """Kill `watch` (and `watch --once`) while inbox files keep arriving; restart
    `watch --once` until quiet; every file answered exactly once."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    inbox = root / "inbox" / "alice"
    inbox.mkdir(parents=True, exist_ok=True)
    staging = work / "staging"
    staging.mkdir()
    dropped: list[str] = []
    stop = threading.Event()

    def drop(count: int = 1) -> None:
        for _ in range(count):
            name = f"q{len(dropped):04d}"
            tmp = staging / f"{name}.md"
            tmp.write_text(f"How warm should the room be for hamster wq{len(dropped)}x?\n", encoding="utf-8")
            os.replace(tmp, inbox / f"{name}.md")
            dropped.append(name)

    def dropper() -> None:
        while not stop.wait(rng.uniform(0.1, 0.5)):
            drop()

    def answered() -> int:
        outbox = root / "outbox" / "alice"
        return len(os.listdir(outbox)) if outbox.is_dir() else 0

    drop(3)
    thread = threading.Thread(target=dropper, daemon=True)
    thread.start()
    try:
        attempts = 0
        while tally.trials < trials and attempts < trials * 4:
            attempts += 1
            start = answered()
            once = attempts % 2 == 0
            args = ["watch", "--once"] if once else ["watch", "--no-upkeep", "-q"]
            killed, done = runner.kill_during(
                "--root",
                root,
                *args,
                ready=lambda s=start: answered() > s,
                delay=rng.uniform(0, 0.8),
                timeout=60,
            )
            if killed:
                tally.trials += 1
            elif done.code != 0:
                tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
    finally:
        stop.set()
        thread.join()
    for _ in range(6):
        pending = [p for p in inbox.iterdir() if p.is_file()]
        done = runner.run("--root", root, "watch", "--once", "--no-upkeep", "-q", "--json")
        if done.code != 0:
            tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:800]}")
        if not pending and not [p for p in inbox.iterdir() if p.is_file()]:
            break
    _account_inbox(tally, root, dropped)
    return tally


def _account_inbox(tally: Tally, root: Path, dropped: list[str]) -> None:
    outbox = root / "outbox" / "alice"
    answers = Counter()
    for path in outbox.glob("*.md") if outbox.is_dir() else []:
        answers[path.stem.split("-")[0].split(".")[0][:5]] += 1
    turns: Counter[str] = Counter()
    for folder in turn_dirs(root):
        meta = read_json(folder / "metadata.json") or {}
        query = str(meta.get("query") or "")
        for word in query.replace("?", " ").split():
            if word.startswith("wq") and word.endswith("x"):
                turns[f"q{int(word[2:-1]):04d}"] += 1
        why = half_written(folder)
        if why:
            tally.add("corrupted", f"{folder.relative_to(root)}: {why} after watch --once until quiet")
    rejected = root / "inbox" / "rejected"
    for name in dropped:
        if (rejected / f"{name}.md").exists():
            tally.add("lost", f"inbox/alice/{name}.md was rejected")
        elif answers[name] == 0:
            where = "still in inbox" if (root / "inbox" / "alice" / f"{name}.md").exists() else "no answer"
            tally.add("lost", f"inbox/alice/{name}.md: {where} in outbox/alice/")
        elif answers[name] > 1 or turns[name] > 1:
            tally.add("duplicated", f"inbox/alice/{name}.md: {answers[name]} answers, {turns[name]} turns")


# ---------------------------------------------------------------- 5. rebuild


def _rebuild_vault(runner: Runner, root: Path, work: Path, odd_queries: bool) -> list[dict[str, Any]]:
    """A vault of imported turns and saved memories; the search lines that compare indexes."""
    rows = [
        {
            "user": ("alice", "bob")[i % 2],
            "external_id": f"r{i}",
            "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T09:00:00Z",
            "query": f"rebuild question rb{i}x about {('gardens', 'laptops', 'tea', 'hamsters')[i % 4]}",
            "response": f"Answer rb{i}x. " + "Words about cages, bicycles and routers. " * 3,
        }
        for i in range(300)
    ]
    if odd_queries:  # issue 10: indexed at import, dropped by rebuild
        rows.append({**rows[0], "external_id": "nul", "query": "question with a nul\u0000 oddnul inside"})
        rows.append({**rows[1], "external_id": "big", "query": "oddbig " + "lorem ipsum " * 260_000})
    source = work / "rebuild.jsonl"
    write_jsonl(source, rows)
    runner.run("--root", root, "import-turns", source, "--json")
    words = ["gardens", "laptops", "tea", "hamsters", "cages", "routers", "oddnul", "oddbig", "rebuild"]
    queries = [{"query": w, "user": u, "limit": 10} for w in words for u in ("alice", "bob")]
    queries += [{"query": f"rb{i}x", "user": ("alice", "bob")[i % 2], "limit": 3} for i in range(0, 300, 15)]
    return queries


def _ids(results: list[Any] | None) -> list[Any]:
    if results is None:
        return ["unparsable"]
    return [[h.get("doc_id") for h in r] if isinstance(r, list) else r for r in results]


def campaign_rebuild(work: Path, trials: int, rng: random.Random, odd_queries: bool = True) -> Tally:
    """Kill `rebuild`; searches right after the kill and after a re-run give the results
    of a clean rebuild, which equal the index import built."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    queries = _rebuild_vault(runner, root, work, odd_queries)
    imported = _ids(batch_search(runner, root, queries, "imported"))
    if runner.run("--root", root, "rebuild", "--json").code != 0:
        tally.add("wrong_exit", "clean rebuild failed")
    clean = _ids(batch_search(runner, root, queries, "clean"))
    tally.trials += 1  # the index import built against a clean rebuild
    for query, a, b in zip(queries, imported, clean, strict=True):
        if a != b:
            tally.add(
                "corrupted",
                f"search {query['query'][:20]!r} --user {query['user']}: "
                f"import index {a[:4]} ≠ rebuild {b[:4]}",
            )

    def index_files() -> int:
        return sum(len(f) for _, _, f in os.walk(root / "indexes"))

    attempts = kills = 0
    while kills < trials and attempts < trials * 4:
        attempts += 1
        start = index_files()
        killed, done = runner.kill_during(
            "--root",
            root,
            "rebuild",
            "--json",
            ready=lambda s=start: index_files() != s,
            delay=rng.uniform(0, 0.5),
        )
        if not killed:
            if done.code != 0:
                tally.add("wrong_exit", f"{done.line()} exit {done.code}")
            continue
        kills += 1
        tally.trials += 1
        after_kill = _ids(batch_search(runner, root, queries, "after-kill"))
        if after_kill != clean:
            tally.add("corrupted", f"kill {kills}: search right after a killed rebuild differs")
        if kills % 5 and kills < trials:
            continue  # the next kill hits a vault whose last rebuild died too
        done = runner.run("--root", root, "rebuild", "--json")
        if done.code != 0:
            tally.add("wrong_exit", f"re-run {done.line()} exit {done.code}: {done.err.strip()[:800]}")
        rerun = _ids(batch_search(runner, root, queries, "rerun"))
        if rerun != clean:
            tally.add("corrupted", f"kill {kills}: search after re-running rebuild differs")
    return tally


# ---------------------------------------------------------------- 6. concurrency

WRITER = """
import sys
from pathlib import Path
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

root, kind, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
vault = Vault.open(root)
for r in range(rounds):
    word = f"{kind}{r}w"
    if kind.startswith("ask"):
        with Pipeline(vault) as pipeline:
            result = pipeline.ask(f"I prefer {word} notebooks", user="alice")
        if result.outcome != "APPROVE":
            continue
    else:
        doc_type = "fact" if kind == "fact" else "preference"
        Memory(vault).save(f"likes {word} things", user="alice", doc_type=doc_type)
    print(word, flush=True)
"""


def campaign_concurrency(work: Path, trials: int, rng: random.Random) -> Tally:
    """Two askers ("I prefer …"), a preference saver and a fact saver at once for one
    user, `trials` rounds each: every acknowledged word is in preferences.md / facts.md."""
    tally = Tally(trials=trials)
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    kinds = ("ask_a", "ask_b", "pref", "fact")
    outputs: dict[str, Done] = {}
    threads = [
        threading.Thread(
            target=lambda k=k: outputs.__setitem__(k, runner.run(WRITER, root, k, trials, python=True))
        )
        for k in kinds
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for kind in kinds:
        done = outputs[kind]
        if done.code != 0:
            tally.add("wrong_exit", f"writer {kind} exit {done.code}: {done.err.strip()[:800]}")
        doc = "facts.md" if kind == "fact" else "preferences.md"
        text = _memory_text(root / "users" / "alice" / doc)
        for word in done.out.split():
            found = text.count(word.lower())
            if found == 0:
                tally.add(
                    "lost",
                    f"{word!r} acknowledged, not in users/alice/{doc}",
                )
            elif found > 1:
                tally.add("duplicated", f"{word!r} {found} times")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"verify exit {code}: {problem_kinds(report)}")
    return tally


def _memory_text(path: Path) -> str:
    """The entry lines of a memory document (frontmatter aside), lower-cased."""
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        text = text[end + 5 :] if end >= 0 else text
    return "\n".join(ln.lower() for ln in text.splitlines() if ln.lstrip().startswith("- "))


# ---------------------------------------------------------------- 7. tampering

ASKS = """
import sys
from pathlib import Path
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

vault = Vault.open(Path(sys.argv[1]))
user = sys.argv[2]
with Pipeline(vault) as pipeline:
    for query in sys.argv[3:]:
        pipeline.ask(query, user=user)
"""


def _tamper_cases(root: Path) -> list[tuple[str, str, Callable[[], None]]]:
    turns = root / "users" / "alice" / "turns"
    memories = root / "users" / "alice" / "memories"

    def edit_byte() -> None:
        path = turns / "turn_000001" / "events.jsonl"
        data = bytearray(path.read_bytes())
        at = data.index(b"hamster")
        data[at] = ord("H")
        path.write_bytes(bytes(data))

    def cut_tail() -> None:
        path = turns / "turn_000002" / "events.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-2]))

    def torn_line() -> None:
        path = turns / "turn_000003" / "events.jsonl"
        with path.open("ab") as f:
            f.write(b'{"v":1,"seq":99,"ts":"2026-11-21T12:00:00Z","ty')

    def rehash() -> None:  # a forged history: a word changed, every hash recomputed
        path = turns / "turn_000004" / "events.jsonl"
        prev, lines = "0" * 64, []
        for line in path.read_bytes().splitlines():
            record = json.loads(line.decode().replace("quiet", "noisy"))
            record["prev"] = prev
            body = {k: v for k, v in record.items() if k != "hash"}
            canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            record["hash"] = prev = hashlib.sha256(canonical.encode()).hexdigest()
            lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
        path.write_bytes(b"".join(lines))

    def broken_frontmatter() -> None:
        path = root / "users" / "alice" / "preferences.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("---\n", "---\nbroken: [unclosed, list\n", 1), encoding="utf-8")

    def binary() -> None:
        memories.mkdir(parents=True, exist_ok=True)
        (memories / "blob.md").write_bytes(b"---\nscope: user\n---\n" + bytes(range(256)) * 64)

    def huge() -> None:
        memories.mkdir(parents=True, exist_ok=True)
        with (memories / "huge.md").open("w", encoding="utf-8") as f:
            f.write("---\nscope: user\n---\n# huge\n")
            line = "hugefile words about nothing in particular, repeated to fill space\n"
            for _ in range(50 * 1024 * 1024 // len(line) + 1):
                f.write(line)

    return [  # most telling first: a small run takes the first few
        ("cut log tail", "users/alice/turns/turn_000002", cut_tail),
        ("broken frontmatter", "users/alice/preferences.md", broken_frontmatter),
        ("binary file", "users/alice/memories/blob.md", binary),
        ("torn last line", "users/alice/turns/turn_000003", torn_line),
        ("edited byte", "users/alice/turns/turn_000001", edit_byte),
        ("50 MB file", "users/alice/memories/huge.md", huge),
        ("rehashed log", "users/alice/turns/turn_000004", rehash),
    ]


def _names(report: dict[str, Any], path: str) -> bool:
    for key in ("problems", "warnings", "repaired", "skipped"):
        for item in report.get(key) or []:
            text = json.dumps(item) if not isinstance(item, str) else item
            if path in text:
                return True
    return False


def campaign_tamper(work: Path, trials: int, rng: random.Random, only: tuple[str, ...] = ()) -> Tally:
    """Each tampering (the first `trials` of seven) in a fresh copy of one vault: `verify`
    exits 1 and names the path; `verify --repair` lists what it repaired and is never ok
    while naming nothing about a document that is not in the index."""
    tally = Tally()
    runner = Runner(tally, work)
    base = work / "base"
    init_vault(runner, base)
    queries = ("How big should a hamster cage be?", "What do hamsters eat?", "Is a hamster wheel needed?")
    runner.run(ASKS, base, "alice", *queries, "I prefer quiet hamster cages", python=True)
    code, report = verify(runner, base)
    if code != 0:
        tally.add("wrong_exit", f"untampered vault: verify exit {code}: {problem_kinds(report)}")
    cases = (
        [c for c in _tamper_cases(base) if c[0] in only] if only else _tamper_cases(base)[: max(1, trials)]
    )
    for name, rel, _ in cases:
        root = work / f"case-{name.replace(' ', '-')}"
        shutil.copytree(base, root, symlinks=True)
        next(fn for case, _, fn in _tamper_cases(root) if case == name)()
        tally.trials += 1
        code, report = verify(runner, root)
        if code != 1:
            tally.add("wrong_exit", f"{name}: verify exit {code} (want 1) — {rel}")
        if not _names(report, rel):
            tally.add("corrupted", f"{name}: verify does not name {rel}: {problem_kinds(report)}")
        code, repaired = verify(runner, root, "--repair")
        if code == 0 and not _names(repaired, rel):
            tally.add("corrupted", f"{name}: verify --repair exits 0 and names nothing about {rel}")
        if name == "torn last line" and not repaired.get("repaired"):
            tally.add("corrupted", f"{name}: verify --repair lists no repair")
        shutil.rmtree(root)
    return tally


# ---------------------------------------------------------------- 8. bad inputs


def _bad_inputs(work: Path, full: bool) -> list[tuple[list[str], set[int]]]:
    """(arguments after --root, allowed exit codes)."""
    missing = str(work / "no-such-file.jsonl")
    malformed = work / "malformed.jsonl"
    malformed.write_text('{"user": "alice", "query": \n not json at all\n', encoding="utf-8")
    nul_batch = work / "nul.jsonl"
    nul_batch.write_text(json.dumps({"query": "nul\u0000query", "user": "alice"}) + "\n", encoding="utf-8")
    big_batch = work / "big.jsonl"
    big_batch.write_text(json.dumps({"query": "x" * 3_000_000, "user": "alice"}) + "\n", encoding="utf-8")
    bad_lines = work / "badlines.jsonl"
    bad_lines.write_text(
        json.dumps({"user": "../x", "timestamp": NOW, "query": "q", "response": "r"})
        + "\n"
        + json.dumps({"user": "alice", "timestamp": "not a date", "query": "q", "response": "r"})
        + "\n",
        encoding="utf-8",
    )
    long_user = "a" * 200
    cases: list[tuple[list[str], set[int]]] = [
        (["ask", "hello", "--user", "../x"], {2}),
        (["ask", "hello", "--user", "Alice"], {2}),
        (["ask", "hello", "--user", ""], {2}),
        (["ask", "hello", "--user", long_user], {2}),
        (["ask", "", "--user", "alice"], {0, 2}),
        (["search", "hamster", "--user", "../x"], {2}),
        (["search", "hamster", "--scope", "bogus"], {2}),
        (["search", "hamster", "--limit", "0"], {2}),
        (["search", "--batch", missing, "--json"], {2}),
        (["search", "--batch", str(malformed), "--json"], {1, 2}),
        (["search", "--batch", str(nul_batch), "--json"], {0, 1, 2}),
        (["search", "--batch", str(big_batch), "--json"], {0, 1, 2}),
        (["save", "hello", "--user", "Alice"], {2}),
        (["save", "hello", "--user", "alice", "--type", "weird"], {2}),
        (["save", "hello", "--user", "alice", "--topic", "Bad Topic!"], {2}),
        (["save", "hello", "--user", "alice", "--scope", "bogus"], {2}),
        (["save", "hello", "--user", "alice", "--scope", "global"], {2}),
        (["save", "hello", "--user", "alice", "--ttl-hours", "-1"], {2}),
        (["import-turns", missing], {2}),
        (["import-turns", str(malformed)], {1, 2}),
        (["import-turns", str(bad_lines)], {1}),
        (["rebuild", "--user", "../x"], {2}),
        (["rebuild", "--user", "nobody"], {2}),
        (["archive", "--now", "garbage"], {2}),
        (["archive", "--now", "0001-01-01", "--dry-run"], {2}),
        (["archive", "--age-days", "-1"], {2}),
        (["archive", "--user", "Bad"], {2}),
        (["restore", "alice/turn_999999"], {1, 2}),
        (["restore", "../x"], {1, 2}),
        (["retrieve", "bob/nothing-here"], {1, 2}),
        (["retrieve", "../../etc/passwd"], {1, 2}),
        (["retrieve", "alice/turn_000001", "--now", "garbage"], {2}),
        (["replay", "../x"], {2}),
        (["verify", "../x"], {2}),
        (["promote", "--now", "garbage"], {2}),
        (["promote", "--now", "9999-12-31T23:59:59Z", "--dry-run"], {0, 2}),
        (["prune", "--expired", "--now", "garbage"], {2}),
        (["stats", "--since", "99999999d"], {2}),
        (["stats", "--since", "garbage"], {2}),
        (["stats", "--now", "garbage"], {2}),
        (["tools", "--json", "extra"], {2}),
        (["watch", "--bogus"], {2}),
        (["init", "--bogus"], {2}),
        (["no-such-command"], {2}),
    ]
    if not full:
        keep = {0, 9, 11, 14, 18, 24, 31, 37}
        cases = [c for i, c in enumerate(cases) if i in keep]
    return cases


def campaign_bad_inputs(work: Path, trials: int, rng: random.Random) -> Tally:
    """Bad input to every command: the allowed exit, exactly one line on stderr, no
    traceback, nothing changed on disk (lock files and indexes/ aside)."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    runner.run(ASKS, root, "alice", "How big should a hamster cage be?", python=True)
    for args, allowed in _bad_inputs(work, full=trials >= 20)[: max(1, trials)]:
        tally.trials += 1
        before = snapshot(root)
        done = runner.run("--root", root, *args)
        shown = done.line()
        if done.code not in allowed:
            tally.add("wrong_exit", f"{shown} exit {done.code} (want {sorted(allowed)})")
        elif done.code != 0 and len(done.err.strip().splitlines()) != 1:
            tally.add("wrong_exit", f"{shown}: {len(done.err.strip().splitlines())} lines on stderr")
        after = snapshot(root)
        if after != before and done.code != 0:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            tally.add("corrupted", f"{shown} (exit {done.code}) changed {changed[:3]}")
    return tally


# ---------------------------------------------------------------- 9. isolation

TOOL_PROBE = """
import json, sys
from datetime import datetime, timezone
from pathlib import Path
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline.context import TurnContext
from pandafs.pipeline.tools import run_tool
from pandafs.vault import Vault

vault = Vault.open(Path(sys.argv[1]))
ctx = TurnContext(vault=vault, memory=Memory(vault), backend=OfflineBackend(), user="alice",
                  turn="turn_999999", clock=lambda: datetime(2026, 11, 21, 12, tzinfo=timezone.utc))
for call in json.loads(sys.argv[2]):
    try:
        out = run_tool(ctx, call["name"], call["args"])
        shown = {"ok": out.ok, "result": out.result, "text": out.text, "error": out.error}
        text = json.dumps(shown, default=str)
    except Exception as exc:  # a refusal by exception is fine; its message is checked too
        text = json.dumps({"ok": False, "raised": f"{type(exc).__name__}: {exc}"})
    print(text, flush=True)
"""

BOB_ASKS = """
import sys
from pathlib import Path
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

vault = Vault.open(Path(sys.argv[1]))
with Pipeline(vault) as pipeline:
    for i in range(int(sys.argv[2])):
        pipeline.ask("what is my bank pin hint? thanks", user="bob")
"""


def _leaks(text: str) -> list[str]:
    low = text.lower()
    return [s for s in (SECRET, OUTSIDE_SECRET, PASSWD_MARK) if s in low]


BOB_SAVES = """
import sys
from pathlib import Path
from pandafs.memory.api import Memory
from pandafs.vault import Vault

vault = Vault.open(Path(sys.argv[1]))
for doc_type, scope in (("memory", "new"), ("memory", "user"), ("fact", "user"), ("preference", "user")):
    Memory(vault).save(sys.argv[2], user="bob", doc_type=doc_type, scope=scope, topic="finance.bank")
"""


def _isolation_vault(
    runner: Runner, tally: Tally, root: Path, work: Path, symlinks: bool
) -> dict[Path, Path]:
    """Bob's secrets every way there is to hold them; the symlinks planted for alice."""
    init_vault(runner, root)
    runner.run(BOB_SAVES, root, f"{SECRET} is my bank pin hint", python=True)
    done = runner.run(
        "--root",
        root,
        "save",
        f"{SECRET} is my bank pin hint",
        "--user",
        "bob",
        "--scope",
        "global",
        "--json",
    )
    if done.code != 2:
        tally.add("wrong_exit", f"{done.line()} exit {done.code} (bob is no publisher: want 2)")
    outside = work / "outside.md"
    outside.write_text(
        f"---\nscope: global\n---\n# notes\n{OUTSIDE_SECRET} bank pin hint outside the vault\n"
    )
    bob_mem = root / "users" / "bob" / "memories"
    bob_mem.mkdir(parents=True, exist_ok=True)
    (bob_mem / "claimed-global.md").write_text(
        "---\nscope: global\nuser: alice\ncontent_types: [memory]\n---\n"
        f"# bank\n{SECRET} bank pin hint, claimed global\n"
    )
    (bob_mem / "no-owner.md").write_text(
        f"---\ncontent_types: [memory]\n---\n# bank\n{SECRET} bank pin hint, no user field\n"
    )
    alice_mem = root / "users" / "alice" / "memories"
    alice_mem.mkdir(parents=True, exist_ok=True)
    (alice_mem / "own.md").write_text("---\nscope: user\n---\n# own\nalice likes hamster cages\n")
    links = {
        alice_mem / "bob-link.md": bob_mem / "no-owner.md",
        alice_mem / "passwd.md": Path("/etc/passwd"),
        alice_mem / "outside.md": outside,
        root / "knowledge" / "outside.md": outside,
        root / "knowledge" / "passwd.md": Path("/etc/passwd"),
    }
    if not symlinks:
        links = {}
    for link, target in links.items():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    runner.run("--root", root, "rebuild", "--json")  # the hand-written files and links, indexed
    runner.run(BOB_ASKS, root, "12", python=True)  # bob's memories used and validated: promotable
    return links


def campaign_isolation(
    work: Path, trials: int, rng: random.Random, symlinks: bool = True, retrieve: bool = True
) -> Tally:
    """Bob's secrets (saved with every scope, a hand-written `scope: global` file, a file
    without `user:`), symlinks into bob's memories, to /etc/passwd and out of the vault:
    alice sees none of them through search, retrieve, ask, the tool API or the inbox,
    before (trials ≥ 2) and after promotion and watch's upkeep far in the future."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    links = _isolation_vault(runner, tally, root, work, symlinks)
    full = trials >= 2
    bob_ids = ["bob/memories/claimed-global", "bob/memories/no-owner", "bob/facts", "bob/preferences"]
    alice_paths = [link.relative_to(root).as_posix() for link in links]
    targets = bob_ids + alice_paths if full else [bob_ids[1], *alice_paths[1:2]]
    if not retrieve:  # the doors but retrieve (CLI and tool)
        targets, bob_ids, alice_paths = [], [], []
    searches = ["purplemoose", "bank pin hint", "zebracrypt", "root", "passwd", "nologin bin bash"]
    user_opt: list[str] = ["--user", "alice"]

    def probe(label: str, text: str) -> None:
        tally.trials += 1
        for secret in _leaks(text):
            tally.add("leaked", f"{label}: {secret!r}")

    def probe_all(when: str) -> None:
        nonlocal user_opt
        results = batch_search(runner, root, [{"query": q, "user": "alice"} for q in searches], "iso") or []
        for query, hits in zip(searches, results, strict=False):
            probe(f"{when}: search {query!r} --user alice", json.dumps(hits))
        if full:
            done = runner.run("--root", root, "search", SECRET, "--user", "alice", "--json")
            probe(f"{when}: search {SECRET} --user alice", done.out + done.err)
        for target in targets:
            done = runner.run("--root", root, "retrieve", target, *user_opt, "--json")
            if user_opt and done.code == 2 and "no such option" in done.err.lower():
                tally.notes.append(
                    "retrieve has no --user on this base: probed without it (what any caller gets)"
                )
                user_opt = []
                done = runner.run("--root", root, "retrieve", target, "--json")
            if not user_opt and target.startswith("bob/"):
                continue  # with no user to bind to, reading bob's document by its id crosses no boundary
            probe(f"{when}: retrieve {target} {' '.join(user_opt)}", done.out + done.err)
        answer = runner.run("--root", root, "ask", "what is my bank pin hint?", "--user", "alice", "--json")
        try:
            probe(f"{when}: ask 'what is my bank pin hint?' --user alice", str(answer.json.get("answer", "")))
        except (ValueError, AttributeError):
            probe(f"{when}: ask --user alice", answer.out + answer.err)
        calls = [{"name": "search_memory", "args": {"query": q}} for q in searches]
        calls += [{"name": "retrieve_memory", "args": {"identifier": t}} for t in bob_ids + alice_paths]
        done = runner.run(TOOL_PROBE, root, json.dumps(calls), python=True)
        for call, line in zip(calls, done.out.splitlines(), strict=False):
            probe(f"{when}: tool {call['name']} {call['args']} as alice", line)
        inbox = root / "inbox" / "alice"
        inbox.mkdir(parents=True, exist_ok=True)
        name = f"pin-{when.split()[0]}"
        (inbox / f"{name}.md").write_text("what is my bank pin hint?\n")
        runner.run("--root", root, "watch", "--once", "--no-upkeep", "-q")
        answer_file = root / "outbox" / "alice" / f"{name}.md"
        probe(
            f"{when}: inbox/alice/{name}.md → outbox", answer_file.read_text() if answer_file.exists() else ""
        )
        if not answer_file.exists():
            tally.add("lost", f"{when}: inbox/alice/{name}.md got no answer")

    _probe_inbox_entries(runner, tally, root, work)  # while bob's turns are live, not archived
    _probe_import_sources(runner, tally, root, work)
    if full:
        probe_all("before promotion")
    runner.run("--root", root, "promote", "--now", "2030-01-01T00:00:00Z", "--json")
    runner.run("--root", root, "watch", "--once", "-q", env={"PANDAFS_CLOCK_SHIFT": "1200d"})
    probe_all("after promote --now 2030 and watch's upkeep 1200 days ahead")
    return tally


def _plant(path: Path, kind: str, target: Path | None = None) -> bool:
    """A `kind` of entry the one read rule refuses at `path`: a hard link or symlink to
    `target`, a FIFO, a character device (root only: False where it cannot be made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "hard link":
        assert target is not None
        os.link(target, path)
    elif kind == "symlink":
        assert target is not None
        path.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null: harmless if read
        except (PermissionError, OSError):
            return False
    return True


def _probe_inbox_entries(runner: Runner, tally: Tally, root: Path, work: Path) -> None:
    """Dropped in `inbox/alice/`: hard links to bob's turn, log and facts and to a file
    outside the vault, a symlink, a FIFO, a device and a folder named as a query.  Each
    is rejected with an `.error.md` (none left unexplained: lost), nothing of them reaches
    alice (leaked), no second name of bob's files is kept anywhere in the inbox and bob's
    facts still have one name (corrupted), and the watch never hangs on the FIFO."""
    bob_turn = sorted((root / "users" / "bob" / "turns").glob("turn_*"))[0]
    outside = work / "outside-inbox.txt"
    outside.write_text(f"{OUTSIDE_SECRET} dropped as a hard link\n")
    inbox = root / "inbox" / "alice"
    planted = {
        "hl-ticket.txt": ("hard link", bob_turn / "ticket.md"),
        "hl-log.txt": ("hard link", bob_turn / "events.jsonl"),
        "hl-facts.md": ("hard link", root / "users" / "bob" / "facts.md"),
        "hl-outside.txt": ("hard link", outside),
        "sl-facts.md": ("symlink", root / "users" / "bob" / "facts.md"),
        "fifo.md": ("fifo", None),
        "device.md": ("device", None),
    }
    dropped = [name for name, (kind, target) in planted.items() if _plant(inbox / name, kind, target)]
    (inbox / "folder.md").mkdir()
    dropped.append("folder.md")
    try:
        done = runner.run("--root", root, "watch", "--once", "--no-upkeep", "--json", timeout=120)
    except subprocess.TimeoutExpired:
        tally.add("lost", "watch --once hung on an entry of inbox/alice/ (a FIFO read?)")
        return
    for name in dropped:
        tally.trials += 1
        answer = root / "outbox" / "alice" / f"{name.rsplit('.', 1)[0]}.md"
        for secret in _leaks(answer.read_text() if answer.exists() else ""):
            tally.add(
                "leaked", f"inbox/alice/{name} ({planted.get(name, ('folder',))[0]}) → outbox: {secret!r}"
            )
        if not list((root / "inbox" / "rejected").glob(f"{name}*.error.md")):
            tally.add("lost", f"inbox/alice/{name}: no rejection explained in inbox/rejected/")
    for secret in _leaks(done.out):
        tally.add("leaked", f"watch --once --json printed {secret!r}")
    for path in (root / "inbox").rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_nlink > 1:
            tally.add("corrupted", f"{path.relative_to(root)} keeps a second name of another file")
    if (root / "users" / "bob" / "facts.md").stat().st_nlink != 1:
        tally.add("corrupted", "bob's facts.md still has another name after the inbox run")


def _probe_import_sources(runner: Runner, tally: Tally, root: Path, work: Path) -> None:
    """`import-turns` and `import chatgpt` given a source the one read rule refuses (a
    hard link to bob's log, a symlink to it, a FIFO, a device, a folder): exit 2 in one
    line, nothing imported for alice, nothing of bob's read (no hang on the FIFO)."""
    bob_log = sorted((root / "users" / "bob" / "turns").glob("turn_*"))[0] / "events.jsonl"
    sources = work / "sources"
    sources.mkdir(exist_ok=True)
    before = len(turn_dirs(root))
    cases: list[tuple[str, Path]] = []
    for kind in ("hard link", "symlink", "fifo", "device"):
        path = sources / f"{kind.replace(' ', '-')}.jsonl"
        if _plant(path, kind, bob_log):
            cases.append((kind, path))
    (sources / "folder.jsonl").mkdir(exist_ok=True)
    cases.append(("folder", sources / "folder.jsonl"))
    for kind, path in cases:
        for args in (["import-turns", str(path)], ["import", "chatgpt", str(path), "--user", "alice"]):
            tally.trials += 1
            try:
                done = runner.run("--root", root, *args, timeout=60)
            except subprocess.TimeoutExpired:
                tally.add("wrong_exit", f"pandafs {' '.join(args[:1])} of a {kind} hung")
                continue
            if done.code != 2 or done.err.count("\n") != 1:
                tally.add(
                    "wrong_exit", f"{done.line()} ({kind}): exit {done.code}, stderr {done.err[:120]!r}"
                )
            for secret in _leaks(done.out + done.err):
                tally.add("leaked", f"{done.line()} ({kind}) printed {secret!r}")
    if len(turn_dirs(root)) != before:
        tally.add("leaked", f"a refused import source made {len(turn_dirs(root)) - before} turn(s)")


# ---------------------------------------------------------------- 10. a damaged archive part

DAMAGES: list[tuple[str, Callable[[Path], None]]] = [
    ("truncated to 200 bytes", lambda part: os.truncate(part, 200)),
    ("cut in half", lambda part: os.truncate(part, part.stat().st_size // 2)),
    ("zeroed", lambda part: part.write_bytes(bytes(part.stat().st_size))),
    ("footer overwritten", lambda part: part.write_bytes(part.read_bytes()[:-12] + b"not parquet!")),
]


def campaign_damaged_part(work: Path, trials: int, rng: random.Random) -> Tally:
    """Old turns archived, then their Parquet part damaged (the first `trials` of four
    ways): an `ask` whose sources touch them still completes without `phase_failed`
    (corrupted), says `tier_failed` for the cold tier, shows no host path in its answer,
    context.md or events (leaked), and `verify` exits 1 naming the part (corrupted).
    Then as many of the derived stores' damages (`STORE_DAMAGES`: an index segment, its
    meta.json, a catalog part), each also rebuilt by `verify --repair`."""
    tally = Tally()
    runner = Runner(tally, work)
    rows = [
        {"user": "alice", "timestamp": f"2024-01-0{i}T09:00:00Z", "query": f"what is the quokka habitat {i}",
         "response": "Quokkas live on Rottnest Island"}
        for i in range(1, 5)
    ]  # fmt: skip
    for name, damage in DAMAGES[: max(1, trials)]:
        root = work / f"vault-{name.replace(' ', '-')}"
        init_vault(runner, root)
        source = work / "old-turns.jsonl"
        write_jsonl(source, rows)
        runner.run("--root", root, "import-turns", source, "--json")
        runner.run("--root", root, "archive", "--now", NOW, "--json")
        parts = sorted((root / "archive" / "turns").rglob("part-*.parquet"))
        if not parts:
            tally.add("lost", f"{name}: the archive wrote no part")
            continue
        damage(parts[0])
        rel = parts[0].relative_to(root).as_posix()
        tally.trials += 1
        types = _ask_goes_on(runner, root, name, "where do quokkas live")
        if "turn_completed" in types and "phase_failed" not in types and "tier_failed" not in types:
            tally.add("corrupted", f"{name}: no tier_failed says what the damaged part cost")
        code, report = verify(runner, root)
        if code != 1 or not any(p.get("path") == rel for p in report.get("problems", [])):
            tally.add(
                "corrupted", f"{name}: verify (exit {code}) does not name {rel}: {problem_kinds(report)}"
            )
        if str(work) in json.dumps(report):
            tally.add("leaked", f"{name}: the host path reached verify's report")
        shutil.rmtree(root)
    for name, damage in STORE_DAMAGES[: max(1, trials)]:
        _damaged_store(runner, work / f"vault-{name.replace(' ', '-')}", name, damage)
    return tally


def _first(folder: Path, pattern: str) -> Path:
    return sorted(folder.rglob(pattern))[0]


def _zero_bytes(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.seek(20)
        handle.write(bytes(64))


_INDEX = Path("indexes") / "fulltext"
_CATALOG = Path("observability") / "catalog"
STORE_DAMAGES: list[tuple[str, Callable[[Path], Path]]] = [
    ("index segment truncated", lambda root: _cut(_first(root / _INDEX, "*.idx"), 10)),
    ("catalog part truncated", lambda root: _cut(_first(root / _CATALOG, "*.parquet"), 100)),
    ("index meta.json garbage", lambda root: _garbage(root / _INDEX / "tantivy" / "meta.json")),
    ("index store bytes overwritten", lambda root: _then(_first(root / _INDEX, "*.store"), _zero_bytes)),
]
"""The derived stores (the index, the turn catalog) damaged as the archive parts are."""


def _cut(path: Path, size: int) -> Path:
    os.truncate(path, size)
    return path


def _garbage(path: Path) -> Path:
    path.write_bytes(b"garbage\n")
    return path


def _then(path: Path, act: Callable[[Path], None]) -> Path:
    act(path)
    return path


def _ask_goes_on(runner: Runner, root: Path, name: str, question: str) -> list[str]:
    """An `ask` after a damage: it exits 0 or 1 (else wrong_exit), its turn completes without
    `phase_failed` (else corrupted), no host path reaches its output or its turn's files
    (else leaked).  Returns the turn's event types."""
    tally, host = runner.tally, str(runner.work)
    done = runner.run("--root", root, "ask", question, "--user", "alice", "--json")
    if done.code not in (0, 1):
        tally.add("wrong_exit", f"{name}: ask exit {done.code}: {done.err[:160]!r}")
    if host in done.out or host in done.err:
        tally.add("leaked", f"{name}: the host path reached the ask's output")
    newest = turn_dirs(root)[-1]
    log = (newest / "events.jsonl").read_text() if (newest / "events.jsonl").exists() else ""
    types = [json.loads(line)["type"] for line in log.splitlines() if line.strip()]
    if "phase_failed" in types or "turn_completed" not in types:
        tally.add(
            "corrupted", f"{name}: the turn did not go on ({', '.join(t for t in types if 'fail' in t)})"
        )
    for file in ("context.md", "metadata.json", "events.jsonl"):
        if (newest / file).exists() and host in (newest / file).read_text():
            tally.add("leaked", f"{name}: the host path reached {newest.name}/{file}")
    return types


def _damaged_store(runner: Runner, root: Path, name: str, damage: Callable[[Path], Path]) -> None:
    """One file of the index or the turn catalog damaged: `verify` exits 1 naming it (else
    corrupted), an `ask` completes without `phase_failed` (corrupted) and no host path in
    its output or files (leaked), `verify --repair` rebuilds it and `verify` is clean again
    (corrupted)."""
    tally = runner.tally
    init_vault(runner, root)
    runner.run("--root", root, "save", "--type", "fact", "alice likes oolong tea", "--user", "alice")
    runner.run("--root", root, "ask", "what tea do I like", "--user", "alice")
    runner.run("--root", root, "stats", "--since", "7d")  # the catalog written
    try:
        rel = damage(root).relative_to(root).as_posix()
    except IndexError:
        tally.add("lost", f"{name}: nothing to damage")
        return
    tally.trials += 1
    host = str(runner.work)
    code, report = verify(runner, root)
    if code != 1 or not any(p.get("path") == rel for p in report.get("problems", [])):
        tally.add("corrupted", f"{name}: verify (exit {code}) does not name {rel}: {problem_kinds(report)}")
    if host in json.dumps(report):
        tally.add("leaked", f"{name}: the host path reached verify's report")
    _ask_goes_on(runner, root, name, "what tea do I like")
    verify(runner, root, "--repair")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"{name}: verify after --repair exits {code}: {problem_kinds(report)}")
    shutil.rmtree(root)


# ---------------------------------------------------------------- driver

# ---------------------------------------------------------------- 10. forget


def _forget_rows(words: int) -> list[dict[str, Any]]:
    """Turns of user0: every one says a kept word (in its own sentence) that must survive,
    every third one also a word to forget; half are old enough to be archived."""
    rows = []
    for i in range(words * 3):
        secret = f" The forgetword{i // 3} is private." if i % 3 == 0 else ""
        rows.append(
            {
                "user": "user0" if i % 5 else "user1",
                "external_id": f"f{i}",
                "timestamp": f"2026-{'09' if i % 2 else '11'}-{1 + i % 20:02d}T10:00:00Z",
                "query": f"Tell me about keptword{i}.{secret}",
                "response": f"Here is keptword{i}. It stays.{secret}",
            }
        )
    return rows


def _holds(root: Path, user: str, word: str) -> list[str]:
    """Where `word` is in `user`'s files or archived rows (decompressed)."""
    import pyarrow.parquet as pq

    found = []
    said = re.compile(rb"\b" + word.encode() + rb"\b", re.IGNORECASE)  # forgetword1, not forgetword12
    for base in (f"users/{user}", f"outbox/{user}", f"archive/stubs/{user}", f"archive/expired/users/{user}"):
        for path in sorted((root / base).rglob("*")) if (root / base).is_dir() else []:
            if path.is_file() and not path.is_symlink() and said.search(path.read_bytes()):
                found.append(path.relative_to(root).as_posix())
    for part in sorted((root / "archive" / "turns").rglob("*.parquet")):
        table = pq.read_table(part, filters=[("user", "=", user)])
        if any(said.search(bytes(c)) for c in table.column("content").to_pylist()):
            found.append(part.relative_to(root).as_posix())
    return found


def campaign_forget(work: Path, trials: int, rng: random.Random) -> Tally:
    """Kill `forget` anywhere (planning, rewriting logs, restoring archived turns,
    rebuilding); `verify --repair` (or, if the kill came before anything changed, the next
    `forget`) finishes it.  Then the word is nowhere in the user's area, the archive,
    search or a rebuild (resurrected), every kept word is still found (lost), and
    `verify` and `verify --forgotten` are clean (corrupted)."""
    tally = Tally()
    runner = Runner(tally, work)
    root = work / "vault"
    init_vault(runner, root)
    rows = _forget_rows(2 * max(trials, 1) + 4)  # words enough for kills that come too late
    source = work / "forget.jsonl"
    write_jsonl(source, rows)
    if runner.run("--root", root, "import-turns", source, "--json").code != 0:
        tally.add("wrong_exit", "import-turns of the forget vault failed")
        return tally
    done = runner.run("--root", root, "archive", "--age-days", "30", "--now", NOW, "--json")
    if done.code != 0:
        tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:300]}")
    intent = root / "users" / "user0" / ".forget-intent.json"
    secrets = sorted(
        {f"forgetword{i // 3}" for i, r in enumerate(rows) if r["user"] == "user0" and i % 3 == 0}
    )
    forgotten: list[str] = []
    landed: Counter[str] = Counter()
    for word in secrets:
        if tally.trials >= trials:
            break
        early = rng.random() < 0.2  # every fifth kill aims at the planning, before the intent
        killed, done = runner.kill_during(
            "--root", root, "forget", word, "--user", "user0", "--json",
            ready=lambda e=early: e or intent.exists(),
            delay=rng.uniform(0, 1.2) if early else rng.uniform(0, 1.5),
        )  # fmt: skip
        if killed:
            tally.trials += 1
            where = "while rewriting (intent left)" if intent.exists() else "planning or proving (no intent)"
            landed[where] += 1
            repair = runner.run("--root", root, "verify", "--repair", "--json")
            if repair.code not in (0, 1):
                tally.add("wrong_exit", f"{repair.line()} exit {repair.code}: {repair.err.strip()[:300]}")
        elif done.code != 0:
            tally.add("wrong_exit", f"{done.line()} exit {done.code}: {done.err.strip()[:300]}")
        if intent.exists():
            tally.add("corrupted", f"{word}: the forget's intent is still there after verify --repair")
        if _holds(root, "user0", word):  # killed before it changed anything: forget again
            again = runner.run("--root", root, "forget", word, "--user", "user0", "--json")
            if again.code != 0:
                tally.add("wrong_exit", f"{again.line()} exit {again.code}: {again.err.strip()[:300]}")
        forgotten.append(word)
        for where in _holds(root, "user0", word):
            tally.add("resurrected", f"{word} in {where} after a killed forget was finished")
    kills = ", ".join(f"{n} {where}" for where, n in sorted(landed.items())) or "none"
    tally.notes.append(f"where the kills landed ({tally.trials} kills): {kills}")
    runner.run("--root", root, "rebuild", "--json")
    queries = [{"query": w, "user": "user0", "limit": 5} for w in forgotten]
    queries += [{"query": f"keptword{i}", "user": r["user"], "limit": 5} for i, r in enumerate(rows)]
    results = batch_search(runner, root, queries, "forget-search") or []
    for word, hits in zip(forgotten, results, strict=False):
        said = re.compile(rf"\b{word}\b", re.IGNORECASE)  # (a hit for a like word is no resurrection)
        if any(said.search(f"{h.get('title')} {h.get('snippet')}") for h in hits if isinstance(h, dict)):
            tally.add("resurrected", f"search finds {word} after the forget and a rebuild")
    for (i, row), hits in zip(enumerate(rows), results[len(forgotten) :], strict=False):
        if row["user"] == "user0" and f"forgetword{i // 3}" in forgotten and i % 3 == 0:
            continue  # its question was one sentence with the word: forgotten too
        if not hits:
            tally.add("lost", f"keptword{i} ({row['user']}) no longer found")
    code, report = verify(runner, root)
    if code != 0:
        tally.add("corrupted", f"verify exit {code} at the end: {problem_kinds(report)}")
    code, report = verify(runner, root, "--forgotten")
    if code != 0:
        tally.add("resurrected", f"verify --forgotten exit {code}: {problem_kinds(report)}")
    return tally


CAMPAIGNS: dict[str, Callable[[Path, int, random.Random], Tally]] = {
    "import": campaign_import,
    "ask": campaign_ask,
    "archive": campaign_archive,
    "watch": campaign_watch,
    "rebuild": campaign_rebuild,
    "concurrency": campaign_concurrency,
    "tamper": campaign_tamper,
    "bad_inputs": campaign_bad_inputs,
    "isolation": campaign_isolation,
    "forget": campaign_forget,
    "damaged_part": campaign_damaged_part,
}
SIZES = {
    "small": {
        "import": 2, "ask": 2, "archive": 2, "watch": 2, "rebuild": 1,
        "concurrency": 3, "tamper": 3, "bad_inputs": 8, "isolation": 1, "forget": 3,
        "damaged_part": 2,
    },
    "default": {
        "import": 20, "ask": 20, "archive": 20, "watch": 20, "rebuild": 20,
        "concurrency": 30, "tamper": 6, "bad_inputs": 44, "isolation": 2, "forget": 20,
        "damaged_part": 4,
    },
}  # fmt: skip


def run_campaign(name: str, trials: int, seed: int, keep: Path | None = None) -> Tally:
    """One campaign in its own temporary folder (kept under `keep` if given)."""
    rng = random.Random(f"{seed}-{name}")
    started = time.perf_counter()
    if keep is not None:
        work = keep / name
        work.mkdir(parents=True, exist_ok=True)
        tally = CAMPAIGNS[name](work, trials, rng)
    else:
        with tempfile.TemporaryDirectory(prefix=f"faults-{name}-") as tmp:
            tally = CAMPAIGNS[name](Path(tmp), trials, rng)
    tally.seconds = round(time.perf_counter() - started, 1)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    parser.add_argument("--trials", type=int, help="trials (kills, rounds, cases) for every campaign")
    parser.add_argument(
        "--only", action="append", choices=sorted(CAMPAIGNS), help="run only this campaign (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--keep", type=Path, help="keep the vaults under this folder")
    args = parser.parse_args(argv)
    names = args.only or list(CAMPAIGNS)
    print(f"fault campaigns: size {args.size}, seed {args.seed} (rerun with --seed {args.seed})", flush=True)
    header = f"{'campaign':<12} {'trials':>6} " + " ".join(f"{c:>10}" for c in COLUMNS) + f" {'seconds':>8}"
    results: dict[str, Tally] = {}
    started = time.perf_counter()
    for name in names:
        trials = args.trials if args.trials is not None else SIZES[args.size][name]
        results[name] = run_campaign(name, trials, args.seed, args.keep)
        print(f"  {name}: done in {results[name].seconds} s", file=sys.stderr, flush=True)
    print(header)
    for name, t in results.items():
        print(
            f"{name:<12} {t.trials:>6} "
            + " ".join(f"{getattr(t, c):>10}" for c in COLUMNS)
            + f" {t.seconds:>8}"
        )
    for name, t in results.items():
        for note in t.notes:
            print(f"  {name}: {note}")
    totals = {c: sum(getattr(t, c) for t in results.values()) for c in ("trials", *COLUMNS)}
    totals["seconds"] = round(time.perf_counter() - started, 1)
    campaigns = {n: asdict(t) for n, t in results.items()}
    print(
        json.dumps(
            {
                "benchmark": "faults",
                "seed": args.seed,
                "size": args.size,
                "campaigns": campaigns,
                "totals": totals,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`pandafs watch` as a real child process: search follows the files, the inbox is
answered exactly once through SIGKILLs, and `watch --once` matches a rebuild.

The kill points of the crash test are random; the seed is printed so a failure can be
replayed with PANDAFS_WATCH_SEED=<seed>.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from events.documents import parse_document
from events.log import read_log
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.conftest import REPO, run_pandafs
from tests.support.faults import limit_file_size

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("PANDAFS_WATCH_SEED", time.time_ns() % 1_000_000))


class WatchProcess:
    """`python -m pandafs --root ROOT watch ARGS` with its stderr lines collected."""

    def __init__(self, root: Path, *args: str, file_size_limit: int | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pandafs", "--root", str(root), "watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=None if file_size_limit is None else lambda: limit_file_size(file_size_limit),
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def count(self, needle: str) -> int:
        with self._cond:
            return sum(needle in line for line in self.lines)

    def wait_for(self, needle: str, timeout: float = 30.0, times: int = 1) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(needle in line for line in self.lines) < times:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.proc.poll() is not None and not self._reader.is_alive():
                    tail = "\n".join(self.lines[-20:])
                    pytest.fail(f"no {needle!r} from watch (exit {self.proc.poll()}):\n{tail}")
                self._cond.wait(min(remaining, 0.2))

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)
        self._close()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
        """SIGTERM as a service manager would (or SIGINT, Ctrl-C); returns (exit code, stdout)."""
        self.proc.send_signal(sig)
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        self.proc.wait(30)
        self._reader.join(10)
        self._close()
        return self.proc.returncode, out

    def wait_exit(self, timeout: float = 30.0) -> int:
        """The exit code of a watch that ends by itself, its output read to the end."""
        code = self.proc.wait(timeout)
        self._reader.join(10)
        self._close()
        return code

    def _close(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def wait_until(check: Callable[[], bool], timeout: float = 15.0, what: str = "") -> float:
    """Seconds until `check()` held; fail after `timeout`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            pytest.fail(f"timed out after {timeout} s waiting for {what or check}")
        time.sleep(0.01)
    return time.monotonic() - started


def drop(root: Path, rel: str, data: bytes | str, *, age: float = 10.0) -> bytes:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    path.write_bytes(raw)
    past = time.time() - age
    os.utime(path, (past, past))
    return raw


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    created, _ = Vault.init(tmp_path / "vault")
    return created


# -- 1 and 2: the index follows the files ---------------------------------------------------


def test_search_follows_creates_edits_saves_renames_and_deletes(vault: Vault) -> None:
    memory = Memory(vault)
    watch = WatchProcess(vault.root)
    try:
        watch.wait_for("reconciled")

        def hits(word: str) -> list[str]:
            return [h["doc_path"] for h in memory.search(word, limit=20)]

        folder = vault.root / "knowledge" / "animals"
        folder.mkdir(parents=True)
        note = folder / "okapi.md"
        latencies = []
        note.write_text("# Okapi\nThe okapi lives in the forest.\n")
        latencies.append(wait_until(lambda: hits("okapi") == ["knowledge/animals/okapi.md"]))

        note.write_text("# Okapi\nThe quokka is another animal entirely.\n")  # edit in place
        latencies.append(wait_until(lambda: hits("quokka") == ["knowledge/animals/okapi.md"]))
        assert hits("forest") == []

        tmp = folder / ".okapi.md.tmp"  # an editor's atomic save: temp file, then rename over
        tmp.write_text("# Okapi\nNarwhals have tusks.\n")
        os.replace(tmp, note)
        latencies.append(wait_until(lambda: hits("narwhals") == ["knowledge/animals/okapi.md"]))

        os.rename(note, folder / "okapi.md~")  # vim: move away, write anew, delete the backup
        note.write_text("# Okapi\nPangolins roll up.\n")
        os.unlink(folder / "okapi.md~")
        latencies.append(wait_until(lambda: hits("pangolins") == ["knowledge/animals/okapi.md"]))

        os.rename(note, folder / "forest-giraffe.md")
        latencies.append(wait_until(lambda: hits("pangolins") == ["knowledge/animals/forest-giraffe.md"]))

        (folder / "forest-giraffe.md").unlink()
        latencies.append(wait_until(lambda: hits("pangolins") == []))

        (vault.root / "knowledge" / "animals").rename(vault.root / "knowledge" / "zoo")
        print(f"edit → visible: {[round(s, 3) for s in latencies]}")
        assert max(latencies) < 5.0  # the 1 s p99 target is measured by benchmarks/bench_watch.py
        code, out = watch.stop()
    finally:
        watch.ensure_dead()
    assert code == 0, watch.lines[-10:]
    assert any(" stopped; status: queue" in line for line in watch.lines)
    assert any("status: queue" in line for line in watch.lines)
    assert out.startswith("inbox: 0 answered")


def test_a_commit_the_disk_refuses_is_retried_and_watch_goes_on(vault: Vault) -> None:
    """A commit that cannot be written (a file-size limit here, a full disk in life) is
    logged and retried; it ended `pandafs watch` with an internal error (tantivy's
    ValueError was not among the errors the loop retries)."""
    watch = WatchProcess(vault.root, file_size_limit=100_000)
    try:
        watch.wait_for("reconciled")
        words = " ".join(f"w{i}" for i in range(150_000))  # its segment: past the limit
        drop(vault.root, "knowledge/big.md", f"# Big\n{words}\n")
        watch.wait_for("indexing failed, will retry")
        assert watch.proc.poll() is None, watch.lines[-5:]
        code, _ = watch.stop()
    finally:
        watch.ensure_dead()
    assert code == 0, watch.lines[-10:]
    assert any("the index could not be written (File too large)" in line for line in watch.lines)


def test_a_damaged_index_is_rebuilt_from_the_documents_and_watch_goes_on(vault: Vault) -> None:
    """A corrupt meta.json made every index write fail as "index is busy", and the watch
    retried it every second for good; now it names the damage, rebuilds the index from the
    documents (derived: nothing is lost) and goes on indexing."""
    drop(vault.root, "knowledge/tulips.md", "# Tulips\ntulips need cold winters\n")
    watch = WatchProcess(vault.root)
    try:
        watch.wait_for("reconciled")
        (vault.root / "indexes/fulltext/tantivy/meta.json").write_text("garbage\n")
        drop(vault.root, "knowledge/roses.md", "# Roses\nroses like the sun\n")
        watch.wait_for("rebuilt the index")
        drop(vault.root, "knowledge/lilies.md", "# Lilies\nlilies like shade\n")
        memory = Memory(vault)
        wait_until(lambda: len(memory.search("tulips roses lilies", limit=5)) == 3, what="all three found")
        assert watch.proc.poll() is None and watch.count("index is busy") == 0, watch.lines[-5:]
        code, _ = watch.stop()
    finally:
        watch.ensure_dead()
    assert code == 0, watch.lines[-10:]
    assert any(
        "cannot be read" in line and "rebuilding it from the documents" in line for line in watch.lines
    )


def test_an_index_damaged_again_soon_after_its_rebuild_ends_the_watch_with_the_error(vault: Vault) -> None:
    """Damage that comes back right after a rebuild is the disk failing, not the index:
    the watch does not rebuild in a loop; it ends with the one-line error."""
    watch = WatchProcess(vault.root)
    try:
        watch.wait_for("reconciled")
        meta = vault.root / "indexes/fulltext/tantivy/meta.json"
        meta.write_text("garbage\n")
        drop(vault.root, "knowledge/roses.md", "# Roses\nroses like the sun\n")
        watch.wait_for("rebuilt the index")
        meta.write_text("garbage\n")
        drop(vault.root, "knowledge/lilies.md", "# Lilies\nlilies like shade\n")
        assert watch.wait_exit() == 1
    finally:
        watch.ensure_dead()
    assert watch.count("rebuilt the index") == 1
    assert watch.lines[-1].startswith("error: the index indexes/fulltext cannot be read ("), watch.lines[-3:]


def test_a_document_whose_delete_tantivy_lost_is_gone_after_the_watch_reconciles(vault: Vault) -> None:
    """A delete tantivy lost (2026-11-25) left a removed document searchable with a state
    that no longer names it: no reconcile can remove it by path, and until then only
    `verify` saw it.  The watch's full reconcile now counts, and rebuilds the index."""
    root = vault.root
    drop(root, "knowledge/tulips.md", "# Tulips\ntulips need cold winters\n")
    drop(root, "knowledge/roses.md", "# Roses\nroses like the sun\n")
    memory = Memory(vault)
    memory.reconcile()
    (root / "knowledge/tulips.md").unlink()  # deleted: the state says so, tantivy still holds it
    with memory.index.folder.state_path.open("ab") as log:
        log.write(orjson.dumps({"p": "knowledge/tulips.md", "d": 1}) + b"\n")
    assert [h["doc_path"] for h in memory.search("tulips", limit=5)] == ["knowledge/tulips.md"]

    once = run_pandafs("--root", root, "watch", "--once", "--json", "--no-upkeep")
    assert once.code == 0, once.err
    assert "the index holds 2 documents but 1 are recorded as indexed; rebuilding it" in once.err, once.err
    assert memory.search("tulips", limit=5) == []
    assert [h["doc_path"] for h in memory.search("roses", limit=5)] == ["knowledge/roses.md"]
    assert run_pandafs("--root", root, "verify").code == 0


def test_a_burst_of_5000_files_all_ends_up_indexed(vault: Vault) -> None:
    memory = Memory(vault)
    watch = WatchProcess(vault.root)
    try:
        watch.wait_for("reconciled")
        body = b"---\nprimary_topic: burst\n---\n# Burst note\nsome words\n"
        for d in range(50):
            folder = vault.root / "knowledge" / "burst" / f"d{d:02d}"
            folder.mkdir(parents=True)
            for f in range(100):
                (folder / f"f{f:03d}.md").write_bytes(body)

        def indexed() -> int:
            return sum(p.startswith("knowledge/burst/") for p in memory.index.state())

        took = wait_until(lambda: indexed() == 5000, timeout=120, what="5,000 indexed files")
        print(f"5,000 files indexed {took:.1f} s after the burst")
        assert memory.index.reader.count() == 5000
        code, out = watch.stop(signal.SIGINT)  # Ctrl-C
    finally:
        watch.ensure_dead()
    assert code == 0 and "index: 5000 indexed" in out


# -- 3: exactly once through SIGKILL --------------------------------------------------------


def test_sigkill_while_answering_50_files_gives_exactly_50_turns(vault: Vault) -> None:
    rng = random.Random(SEED)
    print(f"PANDAFS_WATCH_SEED={SEED}")
    root = vault.root
    originals: dict[str, bytes] = {}
    for i in range(50):
        if i % 3 == 0:
            rel, text = f"inbox/q{i:02d}.md", f"Question {i}: which laptop is best for travel?\n"
        elif i % 3 == 1:
            rel, text = f"inbox/alice/q{i:02d}.txt", f"Question {i}: how do I feed a hamster?\n"
        else:
            rel, text = f"inbox/q{i:02d}.md", f"---\nuser: bob\n---\nQuestion {i}: best dog walks?\n"
        originals[Path(rel).name] = drop(root, rel, text, age=60 - i)

    def answered() -> int:
        outbox = root / "outbox"
        return sum(1 for _ in outbox.rglob("*.md")) if outbox.exists() else 0

    kills_mid_way = 0
    for _ in range(3):
        watch = WatchProcess(root, "--no-upkeep")
        try:
            watch.wait_for("answered", timeout=60)
            time.sleep(rng.uniform(0.0, 0.35))
            done = answered()
            watch.kill()
        finally:
            watch.ensure_dead()
        print(f"SIGKILL with {done} answered; last words: {watch.lines[-1:]}")
        kills_mid_way += 0 < done < 50
    assert kills_mid_way == 3

    watch = WatchProcess(root, "--no-upkeep")
    try:
        wait_until(lambda: answered() == 50, timeout=90, what="50 answers")
        watch.wait_for("status: queue 0")
        code, _ = watch.stop()
    finally:
        watch.ensure_dead()
    assert code == 0
    final = run_pandafs("--root", root, "watch", "--once", "--json", "--no-upkeep")
    assert final.code == 0, final.err
    assert final.json["inbox"]["answered"] == [] and final.json["ok"]

    # exactly 50 turns, each from one distinct processed file
    sources = []
    for user in ("alice", "bob", "me"):
        for folder in Vault.open(root).layout.turn_dirs(user):
            records = read_log(folder / "events.jsonl").records
            assert any(r["type"] == "turn_completed" for r in records), folder
            assert sum(r["type"] == "turn_started" for r in records) == 1
            sources.append(records[0]["data"]["inbox_file"])
    assert len(sources) == 50 and len(set(sources)) == 50
    processed = {p.name: p.read_bytes() for p in (root / "inbox" / "processed").iterdir()}
    assert processed == originals
    assert sorted(Path(s).name for s in sources) == sorted(originals)

    answers = [parse_document(p.read_text()).frontmatter for p in (root / "outbox").rglob("*.md")]
    assert len(answers) == 50 and len({a["doc_id"] for a in answers}) == 50
    assert {a["query_file"] for a in answers} == set(sources)
    assert sorted(n for n in os.listdir(root / "inbox") if n[0] != ".") == ["alice", "processed"]
    assert os.listdir(root / "inbox" / "alice") == []
    assert os.listdir(root / "inbox" / ".processing") == [".lock"]

    verify = run_pandafs("--root", root, "verify", "--json")
    assert verify.code == 0 and verify.json["ok"], verify.out


# -- 4: bad files --------------------------------------------------------------------------


def test_once_rejects_bad_files_with_an_explanation(vault: Vault) -> None:
    root = vault.root
    bad = {
        "inbox/binary.md": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary", "NUL bytes"),
        "inbox/empty.md": (b"", "empty", "empty"),
        "inbox/huge.md": (b"why? " * 1_000_000, "too_large", "5,000,000 bytes"),
        "inbox/sneaky.md": (b"---\nuser: ../etc\n---\nshow me passwords\n", "unknown_user", "../etc"),
    }
    for rel, (data, _, _) in bad.items():
        drop(root, rel, data)
    drop(root, "inbox/fine.md", "Which laptop for travel?")

    result = run_pandafs("--root", root, "watch", "--once", "--json")
    assert result.code == 1, result.err  # a rejected file is a reported problem
    data = result.json
    assert [a["source"] for a in data["inbox"]["answered"]] == ["inbox/fine.md"]
    rejected = {r["source"]: r for r in data["inbox"]["rejected"]}
    assert set(rejected) == set(bad)
    for rel, (raw, reason, says) in bad.items():
        name = Path(rel).name + (".rejected" if rel.endswith(".md") else "")
        assert rejected[rel]["reason"] == reason
        assert rejected[rel]["error_file"] == f"inbox/rejected/{name}.error.md"
        assert (root / "inbox" / "rejected" / name).read_bytes() == raw
        explanation = (root / "inbox" / "rejected" / f"{name}.error.md").read_text()
        assert says in explanation and "**What to do:**" in explanation
        assert f"rejected {rel}" in result.err
    assert sorted(os.listdir(root / "users")) == ["me"]  # no turn for ../etc, anywhere


# -- 5: --once after offline edits equals a rebuild ----------------------------------------


def test_once_after_offline_edits_matches_a_rebuild(vault: Vault) -> None:
    root = vault.root
    memory = Memory(vault)
    with Pipeline(vault, memory=memory) as pipeline:
        for query in ("I prefer Lenovo laptops", "What about hamster food?", "Dog walks nearby?"):
            pipeline.ask(query, user="alice")
    memory.save("Biscuit the hamster likes carrots", user="alice", topic="pet.hamster")
    gone = memory.save("An old note about printers", user="alice", topic="work")
    for name, text in {
        "laptops": "# Laptops\nThinkPad and Lenovo notes.\n",
        "gardens": "# Gardens\nTomatoes and basil.\n",
        "travel": "# Travel\nTrains across Europe.\n",
    }.items():
        (root / "knowledge" / f"{name}.md").write_text(text)
    memory.reconcile()

    # edits while no watcher runs
    (root / "knowledge" / "laptops.md").write_text("# Laptops\nThinkPad X1 Carbon battery life.\n")
    (root / "knowledge" / "gardens.md").unlink()
    (root / "knowledge" / "travel.md").rename(root / "knowledge" / "trains.md")
    (root / "knowledge" / "new" / "deep").mkdir(parents=True)
    (root / "knowledge" / "new" / "deep" / "basil.md").write_text("# Basil\nPesto with basil.\n")
    (root / gone.doc_path).unlink()
    context = root / "users" / "alice" / "turns" / "turn_000002" / "context.md"
    context.write_text(context.read_text() + "\nHand-written note: Biscuit prefers kale.\n")
    (root / "knowledge" / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n")

    once = run_pandafs("--root", root, "watch", "--once", "--json", "--no-upkeep")
    assert once.code == 0, once.err
    assert once.json["index"]["skipped"] == 1  # broken frontmatter: reported, never rewritten

    queries = ["laptop battery", "basil", "trains europe", "printers", "Biscuit kale", "hamster"]
    kinds = ("knowledge", "memory", "preferences", "facts", "note")

    def snapshot() -> tuple[dict, dict[str, list[tuple[str, float]]], dict[str, str]]:
        mem = Memory(Vault.open(root))
        documents = {  # every kind but turns: a turn's rank also depends on its day's others
            q: [
                (h["doc_path"], round(h["score"], 4))
                for h in mem.search(q, user="alice", kinds=kinds, limit=50)
            ]
            for q in queries
        }
        best = {q: mem.search(q, user="alice", limit=1)[0]["doc_path"] for q in queries if q != "printers"}
        return mem.index.state(), documents, best

    once_state, once_documents, once_best = snapshot()
    rebuilt = run_pandafs("--root", root, "rebuild", "--json")
    assert rebuilt.code == 0, rebuilt.err
    assert (once_state, once_documents, once_best) == snapshot()
    assert once_documents["printers"] == []
    assert [p for p, _ in once_documents["basil"]] == ["knowledge/new/deep/basil.md"]
    # the hand edit of a turn is indexed: the turn is found for words only the edit has
    # (its rank among the hamster memory depends on the turn's outcome, not on --once)
    kale = Memory(Vault.open(root)).search("Biscuit kale", user="alice", limit=5)
    assert "users/alice/turns/turn_000002/context.md" in [h["doc_path"] for h in kale]
    assert (root / "knowledge" / "broken.md").read_text() == "---\ntitle: [oops\n---\nbody\n"
    verify = run_pandafs("--root", root, "verify", "--json")
    assert sorted((p["path"], p["kind"]) for p in verify.json["problems"]) == [
        ("knowledge/broken.md", "skipped"),  # not in search: named with its reason
        ("users/alice/turns/turn_000002/context.md", "drift"),  # the hand edit, as designed
    ]


# -- everything else keeps working beside it ------------------------------------------------


def test_other_commands_work_while_watch_runs_and_two_once_runs_share_the_inbox(
    vault: Vault, tmp_path: Path
) -> None:
    root = vault.root
    watch = WatchProcess(root, "--no-upkeep")
    try:
        watch.wait_for("reconciled")
        asked = run_pandafs("--root", root, "ask", "Which laptop for travel?", "--user", "alice", "--json")
        assert asked.code == 0, asked.err
        saved = run_pandafs(
            "--root", root, "save", "Biscuit loves sunflower seeds", "--user", "alice", "--json"
        )
        assert saved.code == 0, saved.err
        lines = tmp_path / "turns.jsonl"
        lines.write_bytes(
            orjson.dumps(
                {"user": "carol", "timestamp": "2026-01-02T10:00:00Z", "query": "hi", "response": "hello"}
            )
            + b"\n"
        )
        assert run_pandafs("--root", root, "import-turns", lines, "--json").code == 0
        assert run_pandafs("--root", root, "rebuild", "--json").code == 0
        found = Memory(Vault.open(root)).search("sunflower", user="alice")
        assert [h["doc_path"] for h in found] == [saved.json["doc_path"]]
        drop(root, "inbox/live.md", "Where do dogs like to walk?", age=5)
        watch.wait_for("answered inbox/live.md")
        code, _ = watch.stop()
    finally:
        watch.ensure_dead()
    assert code == 0

    for i in range(12):
        drop(root, f"inbox/c{i:02d}.md", f"Concurrent question {i} about gardens?", age=30 - i)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "pandafs", "--root", str(root), "watch", "--once", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    answered = [a["source"] for out, _ in outputs for a in orjson.loads(out)["inbox"]["answered"]]
    assert sorted(answered) == [f"inbox/c{i:02d}.md" for i in range(12)]
    me = Vault.open(root).layout.turn_dirs("me")
    assert len(me) == 13  # live.md + the 12, each once

"""Scheduled upkeep (a registry of lazily imported jobs) and the watch loop's index sync."""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from indexers.watcher import ChangeBatch
from pandafs.memory.api import Memory
from pandafs.vault import Vault, file_lock
from pandafs.watch import UPKEEP_JOBS, Upkeep, UpkeepJob, Watch, reconcile_dirs, watch_ignore
from tests.support.config import set_setting

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def jobs_module(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A module `fake_upkeep` whose jobs record their calls."""
    calls: list[tuple[str, object]] = []
    module = types.ModuleType("fake_upkeep")

    class Report:
        def as_json(self) -> dict[str, object]:
            return {"archived": 2, "turns": [1, 2], "seconds": 0.1}

    def tidy(vault: Vault, *, now: datetime) -> Report:
        calls.append(("tidy", now))
        return Report()

    def no_now(vault: Vault) -> None:
        calls.append(("no_now", None))

    def broken(vault: Vault, now: datetime) -> None:
        raise RuntimeError("disk full")

    module.tidy, module.no_now, module.broken = tidy, no_now, broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_upkeep", module)
    return types.SimpleNamespace(calls=calls)


def test_jobs_run_when_due_and_a_restart_remembers_when(
    vault: Vault, jobs_module: types.SimpleNamespace
) -> None:
    jobs = [
        UpkeepJob("tidy", "tidy up", "fake_upkeep:tidy"),
        UpkeepJob("plain", "no clock", "fake_upkeep:no_now"),
    ]
    clock, lines = Clock(), []
    upkeep = Upkeep(vault, jobs=jobs, interval_s=3600, clock=clock, log=lines.append)
    assert [j.name for j in upkeep.due()] == ["tidy", "plain"]
    results = upkeep.run_due()
    assert [(r.job, r.status) for r in results] == [("tidy", "ok"), ("plain", "ok")]
    assert results[0].summary == {"archived": 2, "turns": 2, "seconds": 0.1}
    assert jobs_module.calls == [("tidy", NOW), ("no_now", None)]
    assert any("upkeep tidy: done" in line and "archived 2" in line for line in lines)

    state = orjson.loads((vault.root / "observability/upkeep.json").read_bytes())
    assert state["jobs"]["tidy"]["last_run"] == "2026-11-21T12:00:00.000000Z"

    restarted = Upkeep(vault, jobs=jobs, interval_s=3600, clock=clock)
    assert restarted.due() == [] and restarted.run_due() == []
    assert restarted.seconds_until_due() == pytest.approx(3600)
    clock.now = NOW + timedelta(minutes=59)
    assert restarted.due() == []
    clock.now = NOW + timedelta(hours=1)
    assert [r.job for r in restarted.run_due()] == ["tidy", "plain"]


def test_a_failing_job_is_recorded_and_waits_for_the_next_interval(
    vault: Vault, jobs_module: types.SimpleNamespace
) -> None:
    jobs = [UpkeepJob("broken", "breaks", "fake_upkeep:broken")]
    upkeep = Upkeep(vault, jobs=jobs, interval_s=60, clock=Clock())
    [result] = upkeep.run_due()
    assert result.status == "error" and result.message == "RuntimeError: disk full"
    assert upkeep.due() == []
    state = orjson.loads((vault.root / "observability/upkeep.json").read_bytes())
    assert state["jobs"]["broken"]["status"] == "error"


def test_a_broken_import_inside_a_job_module_is_reported_with_its_cause(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "half_landed.py").write_text("import not_installed_anywhere\ndef run(vault): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    jobs = [UpkeepJob("half", "half landed", "half_landed:run")]
    [result] = Upkeep(vault, jobs=jobs, interval_s=60).run_due()
    assert result.status == "error" and "not_installed_anywhere" in result.message


def test_only_one_process_runs_upkeep_at_a_time(vault: Vault, jobs_module: types.SimpleNamespace) -> None:
    jobs = [UpkeepJob("tidy", "tidy up", "fake_upkeep:tidy")]
    lines: list[str] = []
    upkeep = Upkeep(vault, jobs=jobs, interval_s=60, clock=Clock(), log=lines.append)
    with file_lock(vault.root / "observability" / ".upkeep.lock"):  # another process's run
        assert upkeep.run_due() == []
    assert jobs_module.calls == [] and "upkeep skipped: upkeep is busy" in lines[0]
    assert [r.status for r in upkeep.run_due()] == ["ok"]


def test_the_registry_finds_the_archive_and_a_zero_interval_disables_upkeep(vault: Vault) -> None:
    archive = next(job for job in UPKEEP_JOBS if job.name == "archive")
    assert callable(archive.resolve())
    assert {job.name for job in UPKEEP_JOBS} >= {"archive", "promote"}
    disabled = Upkeep(vault, interval_s=0)
    assert disabled.due() == [] and disabled.seconds_until_due() is None


# -- index sync ------------------------------------------------------------------------


def write(vault: Vault, rel: str, text: str) -> None:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_reconcile_dirs_touches_only_the_given_folders(vault: Vault) -> None:
    memory = Memory(vault)
    write(vault, "knowledge/a/one.md", "# One\nalpha\n")
    write(vault, "knowledge/a/two.md", "# Two\nbeta\n")
    write(vault, "knowledge/b/three.md", "# Three\ngamma\n")
    memory.reconcile()
    (vault.root / "knowledge/a/two.md").unlink()
    write(vault, "knowledge/a/sub/four.md", "# Four\ndelta\n")
    write(vault, "knowledge/b/five.md", "# Five\nepsilon\n")  # outside: left for later
    report = reconcile_dirs(memory, ["knowledge/a", "knowledge/a/sub"])
    assert (report.indexed, report.deleted, report.unchanged) == (1, 1, 1)
    assert sorted(memory.index.state()) == [
        "knowledge/a/one.md",
        "knowledge/a/sub/four.md",
        "knowledge/b/three.md",
    ]


def test_an_overflow_batch_reconciles_everything(vault: Vault) -> None:
    lines: list[str] = []
    watch = Watch(vault, log=lines.append, upkeep=Upkeep(vault, interval_s=0))
    try:
        write(vault, "knowledge/seen.md", "# Seen\nzebra\n")
        write(vault, "knowledge/lost.md", "# Lost\nokapi\n")  # its event was lost
        watch.handle_batch(
            ChangeBatch(frozenset({"knowledge/seen.md"}), frozenset(), False, time.monotonic())
        )
        assert sorted(watch.memory.index.state()) == ["knowledge/seen.md"]
        watch.handle_batch(ChangeBatch(frozenset(), frozenset(), True, time.monotonic()))
        assert sorted(watch.memory.index.state()) == ["knowledge/lost.md", "knowledge/seen.md"]
        assert [h["doc_path"] for h in watch.memory.search("okapi")] == ["knowledge/lost.md"]
        os.unlink(vault.root / "knowledge/seen.md")
        watch.handle_batch(ChangeBatch(frozenset(), frozenset({"knowledge"}), False, time.monotonic()))
        assert sorted(watch.memory.index.state()) == ["knowledge/lost.md"]
    finally:
        watch.close()
    assert any(line.startswith("indexed 1, removed 0 (knowledge/seen.md)") for line in lines)


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("outbox/me/q.md", True),
        ("inbox/processed/q.md", True),
        ("inbox/rejected/q.md.error.md", True),
        ("observability/upkeep.json", True),
        ("inbox/q.md", False),
        ("inbox/alice/q.md", False),
        ("inbox/.processing/x/query/q.md", True),
        ("outboxes/x.md", False),
        ("knowledge/x.md", False),
    ],
)
def test_watch_ignore(rel: str, ignored: bool) -> None:
    assert watch_ignore(rel) is ignored


def test_the_periodic_reconcile_repairs_a_change_whose_event_was_lost(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop in-process: events under knowledge/lost/ never reach it (as if the kernel
    queue had overflowed), yet the file is indexed by the next periodic reconcile."""
    import pandafs.watch._loop as watch_module

    real = watch_module.watch_ignore
    monkeypatch.setattr(
        watch_module, "watch_ignore", lambda rel: real(rel) or rel.startswith("knowledge/lost")
    )
    set_setting(vault.root, "reconcile_interval_s", 1.0, section="watch")
    vault = Vault.open(vault.root)
    lines: list[str] = []
    watch = Watch(vault, log=lines.append, upkeep=Upkeep(vault, interval_s=0))
    stop = threading.Event()
    runner = threading.Thread(target=watch.run, args=(stop,))
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while not any(line.startswith("reconciled") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
        write(vault, "knowledge/lost/x.md", "# Lost\naardvark\n")
        while not watch.memory.search("aardvark") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [h["doc_path"] for h in watch.memory.search("aardvark")] == ["knowledge/lost/x.md"]
    finally:
        stop.set()
        runner.join(10)
        watch.close()
    assert not runner.is_alive()
    assert any("reconciled 1 documents: 1 indexed" in line for line in lines)
    assert watch.report.reconciles >= 2 and lines[-1].startswith("stopped; status: queue")


def test_every_registered_job_resolves_to_its_function() -> None:
    # a job moved between modules is a job that silently never runs again
    assert {job.name: callable(job.resolve()) for job in UPKEEP_JOBS} == {
        job.name: True for job in UPKEEP_JOBS
    }

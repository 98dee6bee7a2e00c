"""A small version of every fault campaign of `benchmarks/bench_faults.py`.

Each test runs one campaign's function (the script is loaded by path) against real
`pandafs` processes in a temporary vault, with a few trials, and asserts that nothing was
lost, duplicated, corrupted or leaked, no exit code broke the contract and no process
printed a traceback.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_faults.py"
SEED = 20261123

pytestmark = pytest.mark.slow


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_faults", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_faults"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


faults = _load()


def _clean(tally) -> None:  # the script's Tally
    """Zero in every failure column; the notes say what went wrong."""
    assert tally.trials > 0
    failures = {c: getattr(tally, c) for c in faults.COLUMNS if getattr(tally, c)}
    if failures:  # whole, in the captured output: the assertion's own message is cut short
        print("\n".join(tally.notes))
    assert failures == {}, tally.notes


def _run(name: str, tmp_path: Path, trials: int, **options):
    return faults.CAMPAIGNS[name](tmp_path, trials, random.Random(f"{SEED}-{name}"), **options)


def test_killed_imports_leave_every_line_once_and_findable(tmp_path: Path) -> None:
    _clean(_run("import", tmp_path, 1))


def test_killed_asks_leave_no_incomplete_turn(tmp_path: Path) -> None:
    _clean(_run("ask", tmp_path, 2))


def test_killed_archive_and_restore_give_back_byte_identical_turns(tmp_path: Path) -> None:
    _clean(_run("archive", tmp_path, 2))


def test_killed_watch_answers_every_inbox_file_exactly_once(tmp_path: Path) -> None:
    _clean(_run("watch", tmp_path, 1))


def test_killed_rebuild_gives_the_results_of_a_clean_rebuild(tmp_path: Path) -> None:
    _clean(_run("rebuild", tmp_path, 1, odd_queries=False))


def test_import_and_rebuild_index_nul_and_huge_queries_alike(tmp_path: Path) -> None:
    _clean(_run("rebuild", tmp_path, 0, odd_queries=True))


def test_concurrent_memory_writers_lose_no_acknowledged_line(tmp_path: Path) -> None:
    """40 rounds: before every writer took the user's memory lock and re-read under it,
    the learning engine wrote back a stale copy of preferences.md and this lost 1–3
    acknowledged lines in every run."""
    _clean(_run("concurrency", tmp_path, 40))


def test_verify_names_a_changed_byte_a_torn_line_a_cut_tail_and_a_rehashed_log(tmp_path: Path) -> None:
    only = ("edited byte", "torn last line", "cut log tail", "rehashed log")
    _clean(_run("tamper", tmp_path, 0, only=only))


def test_verify_names_broken_and_binary_files(tmp_path: Path) -> None:
    _clean(_run("tamper", tmp_path, 0, only=("broken frontmatter", "binary file")))


def test_bad_inputs_are_refused_in_one_line_changing_nothing(tmp_path: Path) -> None:
    _clean(_run("bad_inputs", tmp_path, 6))


def test_alice_never_sees_bobs_secrets_by_search_ask_tools_inbox_or_promotion(tmp_path: Path) -> None:
    _clean(_run("isolation", tmp_path, 1, symlinks=False, retrieve=False))


def test_alice_sees_nothing_through_symlinks_or_retrieve(tmp_path: Path) -> None:
    """With the inbox's probes (hard links to bob's turn, log and facts and to a file
    outside, a symlink, a FIFO, a device, a folder) and the import sources' (the same
    kinds given to import-turns and import chatgpt)."""
    _clean(_run("isolation", tmp_path, 1, symlinks=True, retrieve=True))


def test_killed_forgets_finish_losing_and_resurrecting_nothing(tmp_path: Path) -> None:
    _clean(_run("forget", tmp_path, 2))


def test_a_damaged_archive_part_costs_its_turns_not_the_answer(tmp_path: Path) -> None:
    _clean(_run("damaged_part", tmp_path, 2))


def test_the_script_prints_a_table_then_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    faults.main(["--only", "bad_inputs", "--trials", "1", "--seed", "1"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].split()[:2] == ["campaign", "trials"]
    assert lines[2].split()[:2] == ["bad_inputs", "1"]
    last = faults.json.loads(lines[-1])
    assert set(last) >= {"campaigns", "totals"}
    assert last["totals"]["trials"] == 1 and set(faults.COLUMNS) <= set(last["totals"])

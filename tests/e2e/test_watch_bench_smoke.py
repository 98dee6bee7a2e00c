"""`benchmarks/bench_watch.py` on a tiny vault: it runs, and its last line is the contract.

The numbers are not checked (benchmarks measure, tests do not time).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_watch.py"

pytestmark = pytest.mark.slow


def test_bench_watch_prints_a_table_then_one_json_line() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--edits", "6", "--turns", "20", "--inbox", "3"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("vault: 20 imported turns")
    result = json.loads(lines[-1])
    assert result["benchmark"] == "watch"
    assert result["edits"] == 6 and result["inbox_files"] == 3
    assert 0 < result["visible_p50_ms"] <= result["visible_p99_ms"] <= result["visible_max_ms"]
    for key in ("ask_turns_per_min", "inbox_files_per_min", "watch_files_per_min"):
        assert result[key] > 0

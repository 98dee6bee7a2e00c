"""`benchmarks/bench_search.py` on a tiny corpus: it runs, and its last line is the contract.

The numbers themselves are not checked (benchmarks measure, tests do not
time); only that every engine answered every shape, and that the two minimal
baselines (same terms, same filters) agree on how many documents match.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_search.py"


def test_bench_search_prints_a_table_then_one_json_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, str(SCRIPT), "--sizes", "200", "--queries", "15", "--out", str(out)),
            *("--feedback-docs", "10"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "200 turns" in lines[0]
    result = json.loads(lines[-1])
    assert result["benchmark"] == "search"
    assert set(result["pass"]) == {"search_filtered"}
    size = result["sizes"]["200"]
    assert size["turns"] == 200 and size["corpus"]["stamped"] == 200
    for engine in ("pandafs", "tantivy", "fts5"):
        for shape in ("user", "filtered", "topic"):
            assert size[engine][shape]["p50_ms"] <= size[engine][shape]["p99_ms"]
    for shape in ("user", "filtered", "topic"):
        # the two minimal baselines run the same terms with the same filters
        assert size["tantivy"][shape]["mean_hits"] == size["fts5"][shape]["mean_hits"], shape
        assert size["pandafs"][shape]["mean_hits"] > 0
    # RM3 on, timed beside the configured ranking: a second round, more tantivy calls
    rm3, filtered = size["pandafs"]["filtered_rm3"], size["pandafs"]["filtered"]
    assert rm3["feedback_docs"] == 10 and rm3["p50_ms"] <= rm3["p99_ms"]
    assert rm3["mean_hits"] > 0
    assert rm3["searches_per_query"] > filtered["searches_per_query"]
    assert set(size["pass"]) == {"search_filtered", "search_filtered_rm3"}
    assert "RM3 on (10 turns)" in done.stdout
    assert json.loads((out / "bench_search.json").read_text()) == result
    assert not (out / "n200").exists()  # no --keep: the work folder is gone

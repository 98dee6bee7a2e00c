"""The answers eval on LoCoMo: `--set locomo --limit 2` runs end to end on a cut of the real data.

The cut is the first conversation of `benchmarks/data/locomo/locomo10.jsonl.gz`, its
first three sessions and the questions whose evidence lies in them, so the run imports
real utterances and asks real questions through the offline pipeline in a few seconds.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "locomo" / "locomo10.jsonl.gz"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_eval_answers", ROOT / "benchmarks" / "eval_answers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_eval_answers"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _cut(out: Path, sessions: int = 3) -> dict:
    with gzip.open(DATA, "rt", encoding="utf-8") as handle:
        sample = json.loads(handle.readline())
    sample["sessions"] = sample["sessions"][:sessions]
    sample["qa"] = [
        q
        for q in sample["qa"]
        if (found := re.findall(r"D(\d+):", " ".join(q["evidence"])))
        and all(int(s) <= sessions for s in found)
    ]
    with gzip.open(out, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(sample) + "\n")
    return sample


def test_locomo_limit_2_asks_two_questions_and_judges_adversarial_as_abstention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _cut(tmp_path / "cut.jsonl.gz")
    assert {q["category"] for q in sample["qa"]} >= {4, 5}
    answers = _load()
    assert answers.main(["--set", "locomo", "--locomo", str(tmp_path / "cut.jsonl.gz"), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("LoCoMo: 2 questions over ")
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["benchmark"] == "answers" and summary["locomo_questions"] == 2
    kinds = summary["locomo_kinds"]
    assert sum(k["n"] for k in kinds.values()) == 2
    # sorted by category, the first asked is adversarial: "I don't know" is right only there
    assert kinds["adversarial_abs"]["n"] == 1
    assert summary["locomo_unknown_right"] == 1
    assert "lme_questions" not in summary and "dev_accuracy" not in summary


def test_locomo_limit_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _load().main(["--set", "locomo", "--limit", "0"])
    assert exited.value.code == 2
    assert "--limit must be at least 1" in capsys.readouterr().err

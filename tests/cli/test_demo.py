"""`scripts/demo`: its showcase question is answered, and approved, in words a user reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_answers_which_laptop_we_looked_at(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts/demo.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DEMO_VAULT": str(tmp_path / "demo-vault")},
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    step = proc.stdout.split("Which Lenovo laptop with an RTX GPU did we look at?", 1)[1].split("\n$ ")[0]
    assert "[APPROVE]" in step, step
    answer = step.split("[APPROVE]")[0]
    assert "Lenovo LOQ 15" in answer and "RTX 4050" in answer, answer
    assert not re.search(r"\||Key Facts|_memory\b|\bhigh\b", answer), answer  # no table, no labels

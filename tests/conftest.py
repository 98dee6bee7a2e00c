"""Shared fixtures: every test gets its own real vault in a temp folder."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from pandafs.cli import main
from pandafs.vault import Vault

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PANDAFS_ROOT", raising=False)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    created, _ = Vault.init(tmp_path / "vault")
    return created


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def json(self):  # any JSON value
        return orjson.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run `pandafs ARGS` in-process through the real entry point (exit codes included)."""

    def run(*args: str | Path) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_pandafs(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 120) -> CliResult:
    """Run the CLI in a real child process (for crash and concurrency tests)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pandafs", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def pytest_report_header() -> str:
    from events.clock import SHIFT_ENV, clock_shift

    return f"clock: {SHIFT_ENV}={os.environ.get(SHIFT_ENV, '')!r} (shift {clock_shift()})"

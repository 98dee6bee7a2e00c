"""The README is a front door a newcomer can act on: every command group it shows exists,
and every command the CLI has is shown there in use."""

from __future__ import annotations

import re
from pathlib import Path

from pandafs.cli.base import COMMANDS

REPO = Path(__file__).resolve().parents[2]


def _shown(text: str) -> set[str]:
    """The command of every `pandafs …` line in the fenced code blocks of `text`."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    pattern = re.compile(r"^\s*(?:\S*/)?pandafs(?: --root \S+)? ([a-z][a-z-]*)", re.M)
    return {match for block in blocks for match in pattern.findall(block)}


def test_the_readme_shows_every_command_and_only_commands_that_exist() -> None:
    shown = _shown((REPO / "README.md").read_text(encoding="utf-8"))
    assert set(COMMANDS) - shown == set(), "commands the README does not show in use"
    assert shown - set(COMMANDS) == set(), "the README shows commands the CLI lacks"


def test_the_readme_is_a_front_door() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for command in ("scripts/demo", "scripts/test", "pipx install", "uv tool install"):
        assert command in text
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links and all((REPO / link).is_file() for link in links if "://" not in link)


def test_docs_cli_names_every_command() -> None:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `([a-z][a-z-]*)", text, re.M))
    named |= set(re.findall(r"/ `([a-z][a-z-]*) ", text))
    assert set(COMMANDS) <= named


def test_no_doc_refers_to_a_file_outside_the_repository() -> None:
    for path in [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "benchmarks" / "README.md",
    ]:
        text = path.read_text(encoding="utf-8")
        assert "DESIGN.md" not in text and "shared/data" not in text, path
        for link in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" not in link:
                target = (path.parent / link).resolve()
                assert target.is_file() and target.is_relative_to(REPO), (path, link)


def test_benchmarks_readme_names_every_script() -> None:
    folder = REPO / "benchmarks"
    text = (folder / "README.md").read_text(encoding="utf-8")
    scripts = [*folder.glob("bench_*.py"), *folder.glob("eval_*.py"), *folder.glob("*.sh")]
    assert scripts and [p.name for p in scripts if p.name not in text] == []


def test_the_python_example_of_docs_cli_runs_as_its_comment_says(tmp_path: Path) -> None:
    """Run in a real child process, in a fresh folder: it prints the saved preference."""
    import subprocess
    import sys

    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    code = text.split("## From Python\n\n```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "I prefer aisle seats" in done.stdout, done.stdout

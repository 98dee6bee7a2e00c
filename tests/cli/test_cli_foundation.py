"""The CLI contract: --root, --json, exit codes 0/1/2, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest


def test_init_then_verify(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    assert cli("--root", root, "init").code == 0
    result = cli("--root", root, "verify", "--json")
    assert result.code == 0
    assert result.json["ok"] is True and result.json["problems"] == []
    json.loads((root / ".obsidian" / "app.json").read_text())


def test_init_takes_the_folder_as_git_init_does(cli, tmp_path: Path) -> None:
    assert cli("init", tmp_path / "mine").code == 0
    assert cli("--root", tmp_path / "mine", "verify").code == 0


def test_root_from_environment(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANDAFS_ROOT", str(tmp_path / "envvault"))
    assert cli("init").code == 0
    assert (tmp_path / "envvault" / "pandafs.toml").exists()


def test_missing_vault_is_bad_input(cli, tmp_path: Path) -> None:
    result = cli("--root", tmp_path / "nowhere", "verify")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "pandafs" in result.err and "init" in result.err


def test_unknown_command_is_usage_error(cli) -> None:
    result = cli("frobnicate")
    assert result.code == 2 and result.err.startswith("error:")


@pytest.mark.parametrize("bad", ["../x", "Alice", "a/b", "", "a" * 200])
def test_bad_user_ids_exit_2_before_any_path(cli, tmp_path: Path, bad: str) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    result = cli("--root", root, "replay", bad)
    assert result.code == 2, result.err
    assert result.err.startswith("error:") and result.err.count("\n") == 1
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_import_reports_failed_lines_and_exit_1(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    lines = [
        orjson.dumps({"user": "alice", "timestamp": "2026-01-01T00:00:00Z", "query": f"q{i}"})
        for i in range(5)
    ]
    lines.insert(1, b"garbage")
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines))
    result = cli("--root", root, "import-turns", source, "--json")
    assert result.code == 1
    assert result.json["imported"] == 5 and result.json["failed"][0]["line"] == 2
    assert {"imported", "skipped", "failed", "seconds"} <= set(result.json)
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(lines[0])
    assert cli("--root", root, "import-turns", ok).code == 0


def test_replay_check_exit_codes(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    source = tmp_path / "in.jsonl"
    source.write_bytes(orjson.dumps({"user": "alice", "timestamp": "2026-01-01", "query": "q"}))
    cli("--root", root, "import-turns", source)
    assert cli("--root", root, "replay", "--check").code == 0
    context = root / "users/alice/turns/turn_000001/context.md"
    context.write_text(context.read_text() + "edit\n")
    result = cli("--root", root, "replay", "--check", "--json")
    assert result.code == 1 and result.json["drift"][0]["kind"] == "modified"
    assert cli("--root", root, "replay", "alice/turn_000001").code == 0
    assert cli("--root", root, "replay", "--check").code == 0


def test_verify_tampering_exit_1_names_file_and_seq(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    source = tmp_path / "in.jsonl"
    source.write_bytes(orjson.dumps({"user": "alice", "timestamp": "2026-01-01", "query": "q"}))
    cli("--root", root, "import-turns", source)
    log = root / "users/alice/turns/turn_000001/events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[0] + lines[2] + lines[1])
    result = cli("--root", root, "verify")
    assert result.code == 1
    assert "users/alice/turns/turn_000001/events.jsonl" in result.out and "seq 1" in result.out


def test_stats_json(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    source = tmp_path / "in.jsonl"
    source.write_bytes(orjson.dumps({"user": "alice", "timestamp": "2026-01-01", "query": "q"}))
    cli("--root", root, "import-turns", source)
    result = cli("--root", root, "stats", "--json")
    assert result.code == 0
    assert result.json["users"]["alice"]["turns"] == 1
    assert result.json["content_types"]["context"] == 1


_ENDING = """
import atexit, sys, threading, time
import click
from pandafs.cli import program
from pandafs.cli.base import cli

@cli.command("probe")
@click.argument("folder")
def probe(folder):
    def late():
        time.sleep(0.3)
        with open(f"{folder}/thread", "w") as out:
            out.write("joined")
    threading.Thread(target=late).start()
    atexit.register(lambda: open(f"{folder}/atexit", "w").close())
    print("out", end="")
    sys.exit(3)

program()
"""


def test_the_program_ends_as_a_normal_exit_does(tmp_path: Path) -> None:
    """`pandafs` ends without the interpreter's teardown, but only after what a normal exit
    waits for: its output and exit code, a thread that is not a daemon, the atexit handlers."""
    args = ["probe", str(tmp_path)]
    proc = subprocess.run([sys.executable, "-c", _ENDING, *args], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (3, "out")
    assert (tmp_path / "thread").read_text() == "joined" and (tmp_path / "atexit").exists()

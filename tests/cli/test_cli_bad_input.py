"""Bad input to any command: one line on stderr, exit 2, no traceback, nothing changed.

Each case here would otherwise be a traceback, an exit 0 or a silent acceptance.
"""

from __future__ import annotations

import socket
from pathlib import Path

import orjson
import pytest

from pandafs.vault import Vault
from tests.support.config import set_setting

from ..conftest import run_pandafs


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the vault with its size and mtime (locks and the index aside)."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock") and "indexes" not in p.parts
    }


@pytest.mark.parametrize(
    "args",
    [
        ("archive", "--now", "0001-01-01", "--dry-run"),
        ("promote", "--now", "9999-12-31T23:59:59", "--dry-run"),
        ("stats", "--since", "99999999d"),
        ("stats", "--since", "0001-01-01"),
        ("save", "x", "--user", "alice", "--type", "weird"),
        ("save", "x", "--user", "alice", "--topic", "Bad Topic!"),
        ("save", "my bank pin hint", "--user", "bob", "--scope", "global"),
        ("save", "likes tea", "--user", "bob", "--type", "preference", "--scope", "global"),
        ("save", "a hamster named Bob", "--user", "alice", "--key", "pet_name"),
        ("save", "laptops", "--user", "alice", "--type", "research", "--key", "laptop"),
        ("rebuild", "--user", "nobody"),
        ("archive", "--user", "nobody"),
        ("archive", "--user", "nobody", "--dry-run"),
        ("search", "seed", "--topic", "Bad Topic!"),
        ("import",),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(cli, vault: Vault, args: tuple[str, ...]) -> None:
    assert cli("--root", vault.root, "save", "seed", "--user", "alice").code == 0
    before = _tree(vault.root)
    got = cli("--root", vault.root, *args)
    assert got.code == 2, (got.out, got.err)
    assert got.err.count("\n") == 1 and got.err.startswith("error:") and "Traceback" not in got.err
    assert _tree(vault.root) == before


def _turn_line(timestamp: str) -> bytes:
    line = {"user": "alice", "timestamp": timestamp, "query": "my hamster is called Bob", "response": "ok"}
    return orjson.dumps(line) + b"\n"


@pytest.mark.parametrize("timestamp", ["0001-01-01T00:00:00", "9999-12-31T23:59:59"])
def test_an_import_line_out_of_the_time_range_fails_and_imports_nothing(
    cli, vault: Vault, tmp_path: Path, timestamp: str
) -> None:
    """The range every other outside time is held to (--now, a batch line's now)."""
    source = tmp_path / "turns.jsonl"
    source.write_bytes(_turn_line(timestamp))
    before = _tree(vault.root)
    got = cli("--root", vault.root, "import-turns", source, "--json")
    assert got.code == 1 and got.json["imported"] == 0, got.out
    assert "out of range" in got.json["failed"][0]["error"]
    assert _tree(vault.root) == before


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("age_days", -30),  # archived every turn, even one from the future
        ("archive.batch_size", 0),
        ("zstd_level", 99),
        ("inbox.max_bytes", -1),
        ("freshness_half_life_days", 0.0),
        ("publishers", ["../x"]),
        ("default_user", '"Me Myself"'),
        ("topics", '{"Travel Plans" = ["trip"]}'),
    ],
)
def test_a_bad_value_in_pandafs_toml_is_refused_before_anything_moves(
    cli, vault: Vault, tmp_path: Path, name: str, value: object
) -> None:
    source = tmp_path / "turns.jsonl"
    source.write_bytes(_turn_line("2026-01-05T10:00:00"))
    assert cli("--root", vault.root, "import-turns", source).code == 0
    if name == "topics":  # a table of its own: a key of the top level, before any section
        config = vault.layout.config_file
        config.write_text(f"topics = {value}\n{config.read_text()}")
    else:
        section, _, key = name.rpartition(".")
        set_setting(vault.root, key, value, section=section)
    before = _tree(vault.root)
    got = cli("--root", vault.root, "archive", "--now", "2026-02-01")
    assert got.code == 2, (got.out, got.err)
    assert got.err.count("\n") == 1 and "pandafs.toml" in got.err and "Traceback" not in got.err
    assert _tree(vault.root) == before


def test_a_batch_line_out_of_the_time_range_is_refused_like_the_option(
    cli, vault: Vault, tmp_path: Path
) -> None:
    assert cli("--root", vault.root, "search", "x", "--after", "0001-01-01").code == 2
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(b'{"query": "hamster", "after": "0001-01-01"}\n{"query": "hamster", "topic": "A B"}\n')
    got = cli("--root", vault.root, "search", "--batch", batch, "--json")
    assert got.code == 1 and "2 line(s)" in got.err
    first, second = (orjson.loads(x) for x in got.out.splitlines())
    assert "out of range" in first["error"] and "bad topic" in second["error"]


def test_a_query_or_a_filter_beside_batch_is_refused_not_ignored(cli, vault: Vault, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(b'{"query": "hamster"}\n')
    for extra in (("seed",), ("--user", "bob"), ("--topic", "pet"), ("--limit", "3"), ("--include-expired",)):
        got = cli("--root", vault.root, "search", "--batch", batch, *extra, "--json")
        assert got.code == 2 and got.out == "", (extra, got.out)
        assert got.err.count("\n") == 1 and ("QUERY" if extra == ("seed",) else extra[0]) in got.err
    assert cli("--root", vault.root, "search", "--json", "--batch", batch).code == 0


def test_init_inside_a_vault_is_refused(cli, vault: Vault) -> None:
    """A vault in users/alice would be alice's documents (its pandafs.toml and Home.md)."""
    assert cli("--root", vault.root, "save", "seed", "--user", "alice").code == 0
    before = _tree(vault.root)
    for inner in (vault.root / "users" / "alice", vault.root / "knowledge" / "notes"):
        got = cli("--root", inner, "init")
        assert got.code == 2 and got.err.count("\n") == 1 and "inside the vault" in got.err, got.err
    assert _tree(vault.root) == before and not (vault.root / "knowledge" / "notes").exists()


def test_init_under_a_file_is_bad_input(tmp_path: Path) -> None:
    """A root whose parent is a file cannot be a folder: the root given is wrong (exit 2)."""
    (tmp_path / "notes.txt").write_text("mine\n")
    got = run_pandafs("--root", tmp_path / "notes.txt" / "vault", "init")
    assert got.code == 2 and got.err.count("\n") == 1 and got.err.startswith("error:"), got.err
    assert "Traceback" not in got.err and "notes.txt" in got.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "caf\udce9 hamster", "--user", "alice"),  # the bytes b"caf\xe9": Latin-1, not UTF-8
        ("save", "caf\udce9 hamster", "--user", "alice"),
        ("search", "\udcff\udcfe hamster", "--user", "alice"),
    ],
)
def test_an_argument_that_is_not_utf8_is_bad_input(vault: Vault, args: tuple[str, ...]) -> None:
    """Not an internal error, nor a search blaming the index: exit 2 naming the bytes."""
    before = _tree(vault.root)
    got = run_pandafs("--root", vault.root, *args)
    assert got.code == 2 and got.err.count("\n") == 1, got.err
    assert "not UTF-8" in got.err and "internal error" not in got.err and "index" not in got.err
    assert _tree(vault.root) == before and not (vault.root / "users" / "alice").exists()


def test_a_file_saved_as_latin1_is_named_not_utf8_at_its_byte(vault: Vault, tmp_path: Path) -> None:
    """orjson calls such bytes "surrogates not allowed" at line 1 column 1: a person saving an
    export in another encoding is told which byte, in each door that reads JSON."""
    export = tmp_path / "conversations.json"
    export.write_bytes('[{"title": "café", "mapping": {}}]'.encode("latin-1"))
    lines = tmp_path / "turns.jsonl"
    good = _turn_line("2026-01-05T10:00:00")  # a fixed moment of the line's own, not today
    lines.write_bytes(good.replace(b"hamster", "h\xe1mster".encode("latin-1")))
    before = _tree(vault.root)
    chat = run_pandafs("--root", vault.root, "import", "chatgpt", export, "--user", "alice")
    assert chat.code == 2 and "not valid UTF-8 (byte 15)" in chat.err and "surrogates" not in chat.err
    turns = run_pandafs("--root", vault.root, "import-turns", lines, "--json")
    offset = good.index(b"hamster") + 1
    assert turns.code == 1 and f"not valid UTF-8 (byte {offset})" in turns.out, turns.out
    assert _tree(vault.root) == before


def test_unknown_search_type_warns_but_searches(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "save", "a hamster cage", "--user", "alice").code == 0
    got = cli("--root", vault.root, "search", "hamster", "--type", "nonsense", "--json")
    assert got.code == 0 and got.json == []
    assert "warning: 'nonsense' is not a content type" in got.err and "memory" in got.err


def test_batch_search_with_a_failed_line_exits_1(cli, vault: Vault, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(b'{"query": "hamster"}\nnot json\n{"query": "x", "scope": "everyone"}\n')
    got = cli("--root", vault.root, "search", "--batch", batch, "--json")
    assert got.code == 1 and got.err.count("\n") == 1 and "2 line(s)" in got.err
    lines = [orjson.loads(x) for x in got.out.splitlines()]
    assert lines[0] == [] and "error" in lines[1] and "error" in lines[2]
    batch.write_bytes(b'{"query": "hamster"}\n')
    assert cli("--root", vault.root, "search", "--batch", batch, "--json").code == 0


def test_every_reported_problem_is_one_line_on_stderr_exit_1(vault: Vault, tmp_path: Path) -> None:
    """A command that reports a problem (lines that failed to import, damage verify found,
    drift) says so in one line on stderr with exit 1, whether stdout is the report or
    JSON.  Progress bars draw on a terminal only, so piped, these said nothing there."""
    source = tmp_path / "turns.jsonl"
    source.write_bytes(_turn_line("2026-01-01T00:00:00Z") + b"not json\n")
    for extra in ((), ("--json",)):
        got = run_pandafs("--root", vault.root, "import-turns", source, *extra)
        assert got.code == 1 and got.err.count("\n") == 1, (extra, got.err)
        assert "1 line(s) of turns.jsonl failed to import" in got.err
    context = next((vault.root / "users").glob("*/turns/turn_*/context.md"))
    context.write_text(context.read_text() + "\nedited by hand\n")
    for args in (("verify",), ("replay", "--check"), ("verify", "--json")):
        got = run_pandafs("--root", vault.root, *args)
        assert got.code == 1 and got.err.count("\n") == 1 and "error: " in got.err, (args, got.err)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_llm_is_a_recorded_fail_on_stderr_exit_1(vault: Vault) -> None:
    set_setting(vault.root, "backend", '"openai"')
    set_setting(vault.root, "max_retries", 0)
    set_setting(vault.root, "base_url", f'"http://127.0.0.1:{_closed_port()}/v1"')
    got = run_pandafs("--root", vault.root, "ask", "hello there", "--user", "alice")
    assert got.code == 1 and got.out == "", got.out
    assert (
        got.err.count("\n") == 1 and "cannot reach the LLM server" in got.err and "Traceback" not in got.err
    )
    metadata = orjson.loads((vault.layout.turn_dir("alice", "turn_000001") / "metadata.json").read_bytes())
    assert metadata["outcome"] == "FAIL"


def test_mcp_on_a_port_in_use_is_one_line_exit_2(vault: Vault) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = run_pandafs(
            "--root", vault.root, "mcp", "--user", "alice", "--transport", "http", "--port", str(port)
        )
    assert got.code == 2, (got.out, got.err)
    in_use = f"127.0.0.1:{port}: Address already in use (choose another --port)"
    assert got.err == f"error: cannot listen on {in_use}\n"

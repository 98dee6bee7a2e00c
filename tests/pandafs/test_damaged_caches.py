"""A damaged cache or turn catalog costs what it holds, not the turn.

The learning cache (`indexes/learning/state.json`, its journal), a daily rollup
(`observability/daily/*.json`) and a part of the turn catalog
(`observability/catalog/month=…/*.parquet`) are all made from the events: damaged, each
is named by `verify` at its vault-relative path, `ask` still answers, `stats` either
answers (a rollup is made again from the catalog) or says in one line which part to
rebuild, and `verify --repair` rebuilds them.  Real vault, real Parquet, the real CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from events.log import read_log
from pandafs.vault import Vault


def _state(root: Path) -> list[Path]:
    path = root / "indexes" / "learning" / "state.json"
    path.write_bytes(b"{garbage")
    return [path]


def _journal(root: Path) -> list[Path]:
    cache = root / "indexes" / "learning"
    path = cache / orjson.loads((cache / "state.json").read_bytes())["journal"]
    with path.open("ab") as out:
        out.write(b"xx\n")
    return [path]


def _rollup(root: Path) -> list[Path]:
    (path,) = sorted((root / "observability" / "daily").glob("*.json"))
    path.write_bytes(b'{"date": "20')
    return [path]


def _catalog(root: Path) -> list[Path]:
    (path,) = sorted((root / "observability" / "catalog").rglob("*.parquet"))
    with path.open("r+b") as handle:
        handle.truncate(100)
    return [path]


@pytest.mark.parametrize("damage", [_state, _journal, _rollup, _catalog])
def test_a_damaged_cache_is_named_costs_no_turn_and_is_rebuilt(
    cli, vault: Vault, tmp_path: Path, damage: Callable[[Path], list[Path]]
) -> None:
    root = vault.root
    assert cli("--root", root, "save", "--type", "fact", "bob likes oolong tea", "--user", "bob").code == 0
    assert cli("--root", root, "ask", "what tea do I like", "--user", "bob").code == 0
    assert cli("--root", root, "stats", "--since", "7d").code == 0  # the catalog and rollups written
    damaged = [p.relative_to(root).as_posix() for p in damage(root)]
    host = str(tmp_path)

    checked = cli("--root", root, "verify", "--json")
    assert checked.code == 1, checked.out
    named = {p["path"]: p["kind"] for p in checked.json["problems"]}
    assert named == {path: "unreadable" for path in damaged}, checked.out
    assert host not in checked.out

    got = cli("--root", root, "ask", "what tea do I like", "--user", "bob", "--json")
    assert got.code == 0, got.err
    turn = vault.layout.turn_dir("bob", got.json["turn_id"])
    assert "phase_failed" not in [r["type"] for r in read_log(turn / "events.jsonl").records]
    assert host not in got.out + got.err

    if damage is not _catalog:  # the catalog's one part is the stats: one line says to rebuild it
        repaired = cli("--root", root, "verify", "--repair", "--json")
    else:
        stats = cli("--root", root, "stats", "--since", "7d")
        assert stats.code == 1 and stats.err.count("\n") == 1 and damaged[0] in stats.err, stats.err
        assert "Traceback" not in stats.err and host not in stats.err
        repaired = cli("--root", root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out + repaired.err
    assert cli("--root", root, "verify").code == 0
    stats = cli("--root", root, "stats", "--since", "7d", "--json")
    assert stats.code == 0, stats.err


def test_stats_reads_past_a_damaged_rollup(cli, vault: Vault) -> None:
    root = vault.root
    assert cli("--root", root, "save", "--type", "fact", "bob likes oolong tea", "--user", "bob").code == 0
    assert cli("--root", root, "ask", "what tea do I like", "--user", "bob").code == 0
    assert cli("--root", root, "stats", "--since", "7d").code == 0
    good = cli("--root", root, "stats", "--since", "7d", "--json").json
    _rollup(root)
    got = cli("--root", root, "stats", "--since", "7d", "--json")
    assert got.code == 0 and "Traceback" not in got.err, got.err
    assert got.json == good

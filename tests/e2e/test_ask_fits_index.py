"""An ask is answered only for a turn the index takes: a query too large for
`[index] max_file_bytes` is refused before the turn exists, and an answered turn is
found by search."""

from __future__ import annotations

from pathlib import Path

from pandafs.vault import Vault
from tests.support.config import set_setting


def _limit(vault: Vault, max_bytes: int) -> None:
    set_setting(vault.root, "max_file_bytes", max_bytes)


def test_a_query_the_index_could_not_take_is_refused_and_writes_nothing(cli, vault: Vault) -> None:
    _limit(vault, 16_000)
    big = "plumtree " * 300  # 2,700 bytes: more than an eighth of the limit
    got = cli("--root", vault.root, "ask", big, "--user", "alice")
    assert got.code == 2 and "max_file_bytes" in got.err and len(got.err.strip().splitlines()) == 1
    assert not Path(vault.layout.turns_dir("alice")).exists() or not any(
        p.name.startswith("turn_") for p in vault.layout.turns_dir("alice").iterdir()
    )
    small = cli("--root", vault.root, "ask", "my plum tree flowers in April", "--user", "alice", "--json")
    assert small.code == 0
    hits = cli("--root", vault.root, "search", "plum tree", "--user", "alice", "--json").json
    assert any(h["doc_id"] == f"alice/{small.json['turn_id']}" for h in hits)

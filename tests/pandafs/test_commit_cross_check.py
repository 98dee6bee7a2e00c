"""verify holds what a turn says it saved against the memory documents.

A turn whose events say it committed a memory (`memory_committed`) while its document
no longer holds it, with no deletion recorded, is named (`commit_missing`, a warning):
an acknowledged save dropped silently is visible.  A deletion through `pandafs delete`
(the line kept in `archive/expired/…`) and a forget are records, not losses.
"""

from __future__ import annotations

from pandafs.vault import Vault


def _warnings(cli, vault: Vault) -> list[dict[str, str]]:
    got = cli("--root", vault.root, "verify", "--json")
    return [w for w in got.json["warnings"] if w["kind"] == "commit_missing"]


def test_a_committed_statement_gone_from_its_list_is_named(cli, vault: Vault) -> None:
    saved = cli("--root", vault.root, "ask", "remember that I love green tea", "--user", "bob", "--json")
    assert saved.code == 0 and "green tea" in saved.json["answer"]
    turn = saved.json["turn_id"]
    assert _warnings(cli, vault) == []

    prefs = vault.root / "users" / "bob" / "preferences.md"
    prefs.write_text("".join(line for line in prefs.read_text().splitlines(True) if "green tea" not in line))

    (warning,) = _warnings(cli, vault)
    assert warning["path"] == f"users/bob/turns/{turn}/events.jsonl"
    assert "users/bob/preferences.md" in warning["message"] and "green tea" in warning["message"]


def test_a_deleted_or_forgotten_statement_is_a_record_not_a_loss(cli, vault: Vault) -> None:
    for said in ("remember that I love green tea", "remember that my name is Alex"):
        assert cli("--root", vault.root, "ask", said, "--user", "bob").code == 0
    assert cli("--root", vault.root, "delete", "bob/facts", "--entry", "1", "--user", "bob").code == 0
    assert _warnings(cli, vault) == []
    forgot = cli("--root", vault.root, "forget", "green tea", "--user", "bob")
    assert "users/bob/preferences.md" in forgot.out, forgot.out + forgot.err  # (its own check is forget's)
    assert _warnings(cli, vault) == []

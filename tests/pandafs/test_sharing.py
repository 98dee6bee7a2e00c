"""Sharing is an explicit, recorded act; ownership comes from the path (DESIGN §5).

A user's memories never go global by promotion, a hand-written `scope: global` under
`users/{u}/` stays that user's (and verify names it), and only a configured publisher
can put a document before every user — into `knowledge/published/`, with a record.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from events import render_document
from pandafs.memory import Memory
from pandafs.vault import Vault

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SECRET = "purplemoose is the hint for my bank pin"


def _write(vault: Vault, rel: str, front: dict, body: str) -> None:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_document(front, body), encoding="utf-8")


def _ids(memory: Memory, query: str, user: str) -> list[str]:
    return [h["doc_id"] for h in memory.search(query, user=user, now=NOW)]


def test_a_hand_written_global_scope_under_users_stays_the_users(cli, vault: Vault) -> None:
    _write(vault, "users/bob/memories/pin.md", {"scope": "global", "title": "pin"}, SECRET)
    _write(vault, "users/bob/notes/plan.md", {"scope": "global", "user": "alice"}, "purplemoose plan")
    memory = Memory(vault)
    memory.reconcile()
    assert _ids(memory, "purplemoose", "alice") == []
    assert sorted(_ids(memory, "purplemoose", "bob")) == ["bob/memories/pin", "bob/notes/plan"]
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    claims = {(p["path"], p["kind"]) for p in got.json["problems"]}
    assert claims == {
        ("users/bob/memories/pin.md", "scope_claim"),
        ("users/bob/notes/plan.md", "scope_claim"),
    }


def test_research_under_users_may_be_global(vault: Vault) -> None:
    rel = "users/bob/turns/turn_000001/research.md"
    _write(vault, rel, {"scope": "global", "content_types": ["research"]}, "The zephyrine kettle costs $40.")
    memory = Memory(vault)
    memory.reconcile()
    assert _ids(memory, "zephyrine kettle", "alice") == ["bob/turn_000001/research"]


def test_only_a_publisher_publishes_and_the_act_is_recorded(cli, vault: Vault) -> None:
    refused = cli("--root", vault.root, "save", SECRET, "--user", "bob", "--scope", "global")
    assert refused.code == 2 and "may not publish" in refused.err and "[memory] publishers" in refused.err
    assert not (vault.layout.knowledge / "published").exists()
    assert not (vault.root / "observability" / "sharing.jsonl").exists()

    config = vault.layout.config_file
    config.write_text(config.read_text().replace("publishers = []", 'publishers = ["carol"]'))
    tip = "The quarry trail floods after rain; take the ridge path."
    done = cli("--root", vault.root, "save", tip, "--user", "carol", "--scope", "global", "--json")
    assert done.code == 0, done.err
    assert done.json["doc_path"].startswith("knowledge/published/")
    [record] = [
        orjson.loads(x) for x in (vault.root / "observability" / "sharing.jsonl").read_bytes().splitlines()
    ]
    assert record["act"] == "publish" and record["by"] == "carol" and record["doc_id"] == done.json["doc_id"]
    memory = Memory(Vault.open(vault.root))
    assert _ids(memory, "quarry trail ridge", "alice") == [done.json["doc_id"]]
    again = cli("--root", vault.root, "save", tip, "--user", "carol", "--scope", "global", "--json")
    assert (
        again.json["created"] is False
        and len((vault.root / "observability" / "sharing.jsonl").read_bytes().splitlines()) == 1
    )


def test_a_hand_written_id_is_named_by_verify(cli, vault: Vault) -> None:
    _write(vault, "users/alice/memories/boots.md", {"id": "alice/something-else"}, "hiking boots")
    got = cli("--root", vault.root, "verify", "--json")
    assert ("users/alice/memories/boots.md", "id_claim") in {
        (p["path"], p["kind"]) for p in got.json["problems"]
    }
    memory = Memory(vault)
    assert _ids(memory, "hiking boots", "alice") == ["alice/memories/boots"]

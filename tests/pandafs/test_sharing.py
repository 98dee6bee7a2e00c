"""Sharing is an explicit, recorded act; ownership comes from the path (docs/memory.md).

A user's memories never go global by promotion, research only by a promotion recorded
in its owner's events, a hand-written `scope: global` under `users/{u}/` stays that
user's (and verify names it), and only a configured publisher can put a document
before every user — into `knowledge/published/`, with a record.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import orjson
import pytest

from events.documents import render_document
from events.schema import ScopeChanged
from pandafs.assembly import open_memory
from pandafs.learning.maintenance import append_changes
from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.config import set_setting
from tests.support.learning import sync

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


def _promote(vault: Vault, log_owner: str, doc_id: str, rel: str) -> None:
    """Record a promotion to global in `log_owner`'s maintenance log, as `promote` does."""
    change = ScopeChanged(
        doc_id=doc_id, doc_path=rel, old_scope="user", new_scope="global", reason="promoted", usage_count=10
    )
    append_changes(vault, log_owner, [change], NOW)


def test_research_is_global_only_once_its_promotion_is_recorded(cli, vault: Vault) -> None:
    # promotion writes `scope: global` into the file; the file alone shares nothing
    rel, doc = "users/bob/turns/turn_000001/research.md", "bob/turn_000001/research"
    assert cli("--root", vault.root, "ask", "good morning", "--user", "bob").code == 0
    _write(vault, rel, {"scope": "global", "content_types": ["research"]}, "The zephyrine kettle costs $40.")
    memory = open_memory(vault)
    memory.reconcile()
    assert _ids(memory, "zephyrine kettle", "alice") == []
    assert _ids(memory, "zephyrine kettle", "bob") == [doc]
    refused = cli("--root", vault.root, "retrieve", rel, "--user", "alice")
    assert refused.code != 0 and "zephyrine" not in refused.out
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    assert {(p["path"], p["kind"]) for p in got.json["problems"]} == {(rel, "scope_claim")}

    # another user's log cannot share it
    _promote(vault, "alice", doc, rel)
    sync(vault, memory=open_memory(vault))
    assert _ids(open_memory(vault), "zephyrine kettle", "alice") == []

    # its owner's recorded promotion does: the fold indexes the unchanged file again
    _promote(vault, "bob", doc, rel)
    sync(vault, memory=open_memory(vault))
    assert _ids(open_memory(vault), "zephyrine kettle", "alice") == [doc]
    shown = cli("--root", vault.root, "retrieve", rel, "--user", "alice")
    assert shown.code == 0 and "zephyrine" in shown.out
    assert cli("--root", vault.root, "verify").code == 0

    # and a rebuild from nothing (no learning cache, no index) gives the same
    shutil.rmtree(vault.layout.indexes)
    assert cli("--root", vault.root, "rebuild").code == 0
    assert _ids(open_memory(vault), "zephyrine kettle", "alice") == [doc]


def test_only_a_publisher_publishes_and_the_act_is_recorded(cli, vault: Vault) -> None:
    refused = cli("--root", vault.root, "save", SECRET, "--user", "bob", "--scope", "global")
    assert refused.code == 2 and "may not publish" in refused.err and "[memory] publishers" in refused.err
    assert not (vault.layout.knowledge / "published").exists()
    assert not (vault.root / "observability" / "sharing.jsonl").exists()

    set_setting(vault.root, "publishers", ["carol"])
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


def test_a_hand_written_id_is_a_named_warning_unless_it_is_another_documents(cli, vault: Vault) -> None:
    _write(vault, "users/alice/memories/boots.md", {"id": "alice/something-else"}, "hiking boots")
    got = cli("--root", vault.root, "verify", "--json")
    assert "id_claim" not in {p["kind"] for p in got.json["problems"]}
    assert ("users/alice/memories/boots.md", "id_claim") in {
        (p["path"], p["kind"]) for p in got.json["warnings"]
    }
    memory = Memory(vault)
    assert _ids(memory, "hiking boots", "alice") == ["alice/memories/boots"]
    _write(vault, "users/alice/memories/socks.md", {"id": "alice/memories/boots"}, "wool socks")
    got = cli("--root", vault.root, "verify", "--json")
    assert ("users/alice/memories/socks.md", "id_claim") in {
        (p["path"], p["kind"]) for p in got.json["problems"]
    }


def test_a_file_moved_into_published_by_hand_is_named_by_verify(cli, vault: Vault) -> None:
    saved = cli("--root", vault.root, "save", SECRET, "--user", "bob", "--json")
    assert saved.code == 0, saved.err
    moved = vault.layout.knowledge / "published" / "pin.md"
    moved.parent.mkdir(parents=True)
    (vault.root / saved.json["doc_path"]).rename(moved)
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    assert ("knowledge/published/pin.md", "unrecorded_share") in {
        (p["path"], p["kind"]) for p in got.json["problems"]
    }
    # what a publisher publishes is on record, and verify says nothing of it
    moved.unlink()
    set_setting(vault.root, "publishers", ["carol"])
    assert (
        cli("--root", vault.root, "save", "Ridge path tip", "--user", "carol", "--scope", "global").code == 0
    )
    assert cli("--root", vault.root, "verify", "--repair").code == 0  # bob's moved memory left the index
    assert cli("--root", vault.root, "verify").code == 0


def _scores_beside_bob(tmp_path, bob_has_word: int, *, published: bool = False) -> list[tuple[str, float]]:
    """alice's hits for "herpes prescriptions" in a vault where `bob_has_word` of bob's four
    private notes name the word (the others another), and bob changed one note twice."""
    vault, _ = Vault.init(tmp_path / f"vault{bob_has_word}{published}")
    set_setting(vault.root, "publishers", ["carol"])
    vault = Vault.open(vault.root)
    memory = Memory(vault)
    for i in range(4):
        word = "herpes" if i < bob_has_word else "sunburn"
        memory.save(f"bob private {i}: my {word} prescription refill", user="bob", scope="user", now=NOW)
    for text in ("bob's herpes prescriptions, draft", "bob's sunburn lotion, final"):  # a version deleted
        memory.save(text, user="bob", doc_type="fact", key="draft", now=NOW)
    memory.save("probe: herpes prescriptions and refills", user="alice", scope="user", now=NOW)
    memory.save("the pharmacy filled my herpes prescription", user="alice", scope="user", now=NOW)
    memory.save("a prescription for reading glasses", user="alice", scope="user", now=NOW)
    if published:
        memory.save("herpes: what the pharmacy says", user="carol", scope="global", now=NOW)
    return [(h["doc_id"], h["score"]) for h in memory.search("herpes prescriptions", user="alice", now=NOW)]


def test_a_score_says_nothing_of_another_users_documents(tmp_path) -> None:
    """Audit F4: tantivy's BM25 counts a word over every user's documents, so alice's
    score for her own note went 6.86 → 5.27 → 3.44 as bob saved 0, 1, 3 private notes
    holding the word.  Each term's idf is now over what alice may see: her scores are
    the same whatever bob wrote (his words also reach the prefix
    variants of her query words, and his deleted versions tantivy's counts) but for
    tantivy's float32 rounding, while a
    document published to everyone is hers to see and does count."""
    alone = _scores_beside_bob(tmp_path, 0)
    assert len(alone) == 3 and all(doc_id.startswith("alice/") for doc_id, _ in alone)
    for bob_has_word in (1, 4):
        beside = _scores_beside_bob(tmp_path, bob_has_word)
        assert [d for d, _ in beside] == [d for d, _ in alone]
        # tantivy's float32 arithmetic rounds its own idf: ~1e-7 of a score (before: ~0.3)
        assert [s for _, s in beside] == pytest.approx([s for _, s in alone], rel=1e-5)
    shared = _scores_beside_bob(tmp_path, 4, published=True)
    mine = [s for d, s in shared if d.startswith("alice/")]
    assert mine != pytest.approx([s for _, s in alone], rel=1e-2)


def _word_forms_beside_bob(tmp_path, bob_words: int) -> list[tuple[str, float]]:
    """alice's hits for "allergies": one note says it, one says only "allergen" (a form
    sharing its prefix), while bob's two private notes hold twelve words, `bob_words` of
    them with that prefix (as many words either way: tantivy's average length is kept)."""
    memory = Memory(Vault.init(tmp_path / f"forms{bob_words}")[0])
    memory.ranking = memory.ranking._replace(prefix_weight=0.5)  # the longer forms are off by default
    words = " ".join(f"{'allergx' if i < bob_words else 'sunburnx'}{chr(97 + i)}" for i in range(12))
    for i in range(2):
        memory.save(f"bob private {i}: {words}", user="bob", scope="user", now=NOW)
    memory.save("my allergies in spring", user="alice", scope="user", now=NOW)
    memory.save("the allergen in the pollen", user="alice", scope="user", now=NOW)
    return [(h["doc_id"], h["score"]) for h in memory.search("allergies", user="alice", now=NOW)]


def test_another_users_words_do_not_choose_a_users_word_forms(tmp_path) -> None:
    """A query stem's forms are the commonest index terms sharing its prefix, a few at
    most; counted over every user's documents, bob's words pushed alice's own "allergen"
    out of that list, and her note holding it out of her hits."""
    alone = _word_forms_beside_bob(tmp_path, 0)
    assert len(alone) == 2
    beside = _word_forms_beside_bob(tmp_path, 12)
    assert [d for d, _ in beside] == [d for d, _ in alone]
    assert [s for _, s in beside] == pytest.approx([s for _, s in alone], rel=1e-5)


def test_a_kept_word_count_follows_the_users_own_edits(vault: Vault) -> None:
    """The per-user counts are kept between searches; alice's note losing the word by a
    hand edit (tantivy's count of the word stays until a merge drops the old version) is
    seen by the next search of the same process as by a fresh one, not only once someone
    else's document with the word moves tantivy's count."""
    memory = Memory(vault)
    diary = memory.save("my herpes diary", user="alice", scope="user", now=NOW, index=False)
    memory.save("my herpes prescription", user="alice", scope="user", now=NOW, index=False)
    memory.save("herpes and the pharmacy", user="alice", scope="user", now=NOW, index=False)
    memory.reconcile()  # one segment: the diary's old version stays counted in it
    memory.search("herpes", user="alice", now=NOW)  # counts kept
    path = vault.root / diary.doc_path
    path.write_text(path.read_text().replace("herpes", "sunburn"))
    memory.reconcile()
    kept = memory.search("herpes", user="alice", now=NOW)
    fresh = Memory(Vault.open(vault.root)).search("herpes", user="alice", now=NOW)
    assert len(kept) == 2
    assert [(h["doc_id"], h["score"]) for h in kept] == [(h["doc_id"], h["score"]) for h in fresh]

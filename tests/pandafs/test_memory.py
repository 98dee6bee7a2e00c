"""memory.save / memory.retrieve: the documents they write and read."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from events.documents import parse_document
from pandafs.errors import BadInput
from pandafs.memory.api import Memory
from pandafs.memory.store import parse_entries
from pandafs.vault import Vault

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.fixture
def memory(vault: Vault) -> Memory:
    return Memory(vault)


def test_preference_goes_into_preferences_md(memory: Memory, vault: Vault) -> None:
    saved = memory.save(
        "Lenovo",
        user="alice",
        doc_type="preference",
        key="laptop_brand",
        source_turn="turn_000001",
        now=NOW,
        keywords=["laptop"],
    )
    assert (saved.doc_id, saved.doc_path) == ("alice/preferences", "users/alice/preferences.md")
    doc = parse_document((vault.root / saved.doc_path).read_text())
    assert doc.frontmatter["content_types"] == ["preference"]
    assert doc.frontmatter["scope"] == "user" and "expires_at" not in doc.frontmatter
    [entry] = parse_entries(doc.body)
    assert (entry.key, entry.value) == ("laptop_brand", "Lenovo")
    assert "[[users/alice/turns/turn_000001/context|turn_000001]]" in entry.note
    again = memory.save("Lenovo", user="alice", doc_type="preference", key="laptop_brand", now=NOW)
    assert not again.created
    assert len(parse_entries(parse_document((vault.root / saved.doc_path).read_text()).body)) == 1
    hits = memory.search("laptop brand lenovo", user="alice", content_types=["preference"], now=NOW)
    assert [h["doc_id"] for h in hits] == ["alice/preferences"]


def test_hand_edited_preferences_keep_their_lines(memory: Memory, vault: Vault) -> None:
    memory.save("Vegetarian", user="alice", doc_type="preference", key="diet", now=NOW)
    path = vault.root / "users/alice/preferences.md"
    path.write_text(path.read_text() + "- I hate early meetings\n")
    memory.save("window seats", user="alice", doc_type="preference", now=NOW)
    values = [e.value for e in parse_entries(parse_document(path.read_text()).body)]
    assert values == ["Vegetarian", "I hate early meetings", "window seats"]


def test_statements_in_any_script_are_each_kept(memory: Memory, vault: Vault) -> None:
    """A save is skipped only for a statement already there.  Until 2026-11-24 statements
    were compared by their a-z words: one in Russian or Greek had none, so the second such
    preference was acknowledged and never written (and "3 кота" was "3 собаки")."""
    said = [
        "Я люблю зелёный чай",
        "Я не пью кофе",
        "У меня 3 кота",
        "У меня 3 собаки",
        "Μου αρέσει η θάλασσα",
    ]
    for text in said:
        assert memory.save(text, user="alice", doc_type="preference", now=NOW, index=False).created
    again = memory.save("я ЛЮБЛЮ зелёный чай", user="alice", doc_type="preference", now=NOW, index=False)
    assert not again.created  # the same statement (case aside): not written twice
    body = parse_document((vault.root / "users/alice/preferences.md").read_text()).body
    assert [e.value for e in parse_entries(body)] == said


def test_two_memories_a_file_name_would_confuse_are_both_written(memory: Memory, vault: Vault) -> None:
    """A memory's file is named by its first a-z words and 24 bits of its text's hash:
    these two notes (no a-z words; hashes alike in those bits, found by trying) get one
    name.  Until 2026-11-24 the second was reported "already saved" and never written;
    it now gets the name with "-2", and each one saved again is the same file."""
    from pandafs.memory.store import slug

    first, second = "Заметка хшб", "Заметка фйг"
    assert slug(f"memory {first}") == slug(f"memory {second}")  # the collision this test is about
    a = memory.save(first, user="alice", doc_type="memory", now=NOW)
    b = memory.save(second, user="alice", doc_type="memory", now=NOW)
    assert a.created and b.created and b.doc_path == a.doc_path[: -len(".md")] + "-2.md"
    for saved, text in ((a, first), (b, second)):
        assert text in (vault.root / saved.doc_path).read_text()
        again = memory.save(text, user="alice", doc_type="memory", now=NOW)
        assert (again.created, again.doc_path) == (False, saved.doc_path)
    assert {h["doc_id"] for h in memory.search("Заметка", user="alice", now=NOW)} == {a.doc_id, b.doc_id}


def test_concurrent_saves_lose_nothing(memory: Memory, vault: Vault) -> None:
    def save(i: int) -> None:
        Memory(vault).save(f"fact number {i}", user="alice", doc_type="fact", now=NOW, index=False)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    body = parse_document((vault.root / "users/alice/facts.md").read_text()).body
    assert sorted(e.value for e in parse_entries(body)) == sorted(f"fact number {i}" for i in range(20))


def test_memory_document_is_new_with_ttl(memory: Memory, vault: Vault) -> None:
    saved = memory.save(
        "Biscuit likes sunflower seeds",
        user="alice",
        topic="pet.hamster",
        keywords=["hamster", "biscuit"],
        now=NOW,
    )
    assert saved.doc_id.startswith("alice/memories/")
    meta = parse_document((vault.root / saved.doc_path).read_text()).frontmatter
    assert meta["scope"] == "new"
    assert meta["expires_at"] == NOW + timedelta(hours=24)
    assert [h["doc_id"] for h in memory.search("sunflower", user="alice", now=NOW)] == [saved.doc_id]
    later = NOW + timedelta(hours=25)
    assert memory.search("sunflower", user="alice", now=later) == []


def test_saving_an_expired_memory_again_keeps_it(cli, memory: Memory, vault: Vault) -> None:
    text = "parked the car on level 3, zebra floor"
    first = memory.save(text, user="kim", ttl_hours=1, now=NOW)
    later = NOW + timedelta(hours=2)
    assert memory.search("zebra floor", user="kim", now=later) == []  # expired

    kept = memory.save(text, user="kim", ttl_hours=48, now=NOW + timedelta(minutes=30))
    assert (kept.doc_path, kept.created, kept.renewed) == (
        first.doc_path,
        False,
        False,
    )  # not expired: as it is

    again = memory.save(text, user="kim", ttl_hours=48, now=later)
    assert (again.doc_path, again.created, again.renewed) == (first.doc_path, False, True)
    meta = parse_document((vault.root / first.doc_path).read_text()).frontmatter
    assert (meta["scope"], meta["expires_at"]) == ("new", later + timedelta(hours=48))
    assert [h["doc_id"] for h in memory.search("zebra floor", user="kim", now=later)] == [first.doc_id]
    pruned = cli(
        "--root", vault.root, "prune", "--expired", "--now", (later + timedelta(hours=1)).isoformat()
    )
    assert pruned.code == 0, pruned.err
    assert (vault.root / first.doc_path).is_file()

    # saved again as the user's own: it no longer expires
    mine = memory.save(text, user="kim", scope="user", now=later + timedelta(days=3))
    assert mine.renewed and mine.doc_path == first.doc_path
    meta = parse_document((vault.root / first.doc_path).read_text()).frontmatter
    assert meta["scope"] == "user" and meta.get("expires_at") is None


def test_retrieve_by_id_and_path(memory: Memory) -> None:
    saved = memory.save("Paris in spring", user="alice", doc_type="memory", ttl_hours=5, now=NOW)
    by_id = memory.retrieve(saved.doc_id)
    by_path = memory.retrieve(saved.doc_path)
    assert by_id == by_path
    assert "Paris in spring" in by_id.content
    assert by_id.metadata["scope"] == "new" and by_id.archived is False
    with pytest.raises(BadInput, match="no document"):
        memory.retrieve("alice/memories/nope")
    with pytest.raises(BadInput):
        memory.retrieve("../../etc/passwd")


def test_bad_inputs(memory: Memory) -> None:
    with pytest.raises(BadInput, match="empty"):
        memory.save("   ", user="alice")
    with pytest.raises(BadInput, match="scope"):
        memory.save("x", user="alice", scope="forever")
    with pytest.raises(Exception, match="invalid user id"):
        memory.save("x", user="../x")

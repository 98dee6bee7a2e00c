from __future__ import annotations

from pathlib import Path

import pytest

from events.errors import InvalidUserId
from events.layout import Layout, candidate_paths, classify, validate_user_id


@pytest.mark.parametrize(
    "bad", ["../x", "Alice", "a/b", "", "a" * 200, "a\x00b", "-x", ".x", " a", "knowledge", "site"]
)
def test_bad_user_ids_are_refused(bad: str) -> None:
    with pytest.raises(InvalidUserId):
        validate_user_id(bad)


@pytest.mark.parametrize("good", ["alice", "a", "bob_2", "x-y", "0", "a" * 64])
def test_good_user_ids(good: str) -> None:
    assert validate_user_id(good) == good


@pytest.mark.parametrize(
    ("path", "doc_id", "kind", "user"),
    [
        ("users/alice/turns/turn_000001/context.md", "alice/turn_000001", "turn", "alice"),
        (
            "users/alice/turns/turn_000001/research.md",
            "alice/turn_000001/research",
            "research",
            "alice",
        ),
        ("users/alice/preferences.md", "alice/preferences", "preferences", "alice"),
        ("users/alice/facts.md", "alice/facts", "facts", "alice"),
        ("users/alice/memories/pets/hamster.md", "alice/memories/pets/hamster", "memory", "alice"),
        ("knowledge/laptops.md", "knowledge/laptops", "knowledge", None),
        ("site_knowledge/example.com.md", "site/example.com", "site", None),
        ("archive/stubs/alice/turn_000007.md", "alice/turn_000007", "archived_turn", "alice"),
    ],
)
def test_classify(path: str, doc_id: str, kind: str, user: str | None) -> None:
    ref = classify(path)
    assert ref is not None
    assert (ref.doc_id, ref.kind, ref.user) == (doc_id, kind, user)


@pytest.mark.parametrize(
    "path",
    [
        "users/alice/turns/turn_000001/ticket.md",
        "users/Alice/preferences.md",
        ".obsidian/x.md",
        "indexes/x.md",
        "inbox/q.md",
        "outbox/alice/q.md",
        "Home.md",
        "users/alice/turns/turn_000001/events.jsonl",
        "knowledge/.hidden.md",
        "users/knowledge/facts.md",
        "users/site/preferences.md",
        "archive/stubs/knowledge/turn_000001.md",
        "users/alice/turn_000001.md",
        "users/alice/turn_000001/research.md",
    ],
)
def test_not_documents(path: str) -> None:
    assert classify(path) is None


def test_no_two_documents_share_an_id_but_a_turn_and_its_archive_stub() -> None:
    """Ids decide what a document is to the index, the learning counts and `retrieve`:
    until 2026-11-25 a user named `knowledge` had `users/knowledge/facts.md` under the id
    of the global `knowledge/facts.md`, and another user could read it as that one; a
    note `users/alice/turn_000001.md` took the id of alice's first turn.  Every path of
    every shape, spelled with every name that could collide, has an id of its own, and is
    found again from it (`candidate_paths`)."""
    names = ["alice", "knowledge", "site", "turns", "memories", "turn_000001", "facts", "preferences"]
    paths = {"knowledge/facts.md", "site_knowledge/preferences.md", "knowledge/alice/facts.md"}
    for user in names:
        paths |= {f"users/{user}/turns/turn_000001/context.md", f"users/{user}/turns/turn_000001/research.md"}
        paths |= {f"archive/stubs/{user}/turn_000001.md", f"knowledge/{user}.md", f"site_knowledge/{user}.md"}
        for a in names:
            paths |= {f"users/{user}/{a}.md", f"knowledge/{user}/{a}.md"}
            paths |= {f"users/{user}/{a}/{b}.md" for b in [*names, "research", "context"]}
    owners: dict[str, set[str]] = {}
    for path in sorted(paths):
        ref = classify(path)
        if ref is not None:
            owners.setdefault(ref.doc_id, set()).add(path)
            assert path in candidate_paths(ref.doc_id), (path, ref.doc_id)
    shared = {doc_id: found for doc_id, found in owners.items() if len(found) > 1}
    assert shared == {
        f"{user}/turn_000001": {
            f"users/{user}/turns/turn_000001/context.md",
            f"archive/stubs/{user}/turn_000001.md",
        }
        for user in names
        if user not in ("knowledge", "site")
    }


def test_a_linked_user_folder_lists_none_of_its_targets_turns(tmp_path: Path) -> None:
    """`turn_dirs` listed `users/alice/turns` by path, checking only that `turns/` itself
    was no link: with `users/alice` a link to bob's folder, bob's turn folders were listed
    as alice's (replay and verify of alice's turns then named them).  Listed by descriptor
    from the folder as opened and checked from the root, a linked folder lists nothing."""
    layout = Layout(tmp_path)
    for name in ("turn_000002", "turn_000010", "turn_000001"):
        (tmp_path / "users" / "bob" / "turns" / name).mkdir(parents=True)
    (tmp_path / "users" / "bob" / "turns" / "turn_000003").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "users" / "alice").symlink_to(tmp_path / "users" / "bob", target_is_directory=True)
    assert [p.name for p in layout.turn_dirs("bob")] == ["turn_000001", "turn_000002", "turn_000010"]
    assert layout.turn_dirs("alice") == []
    assert layout.turn_numbers("alice") == set()
    assert layout.turn_dirs("carol") == []

"""The CLI door of edit, delete and forget: --json shapes, exit codes, a refused call changes nothing."""

from __future__ import annotations

from pathlib import Path

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.conftest import run_pandafs


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")  # (locks: who held them last)
    }


def _setup(vault: Vault) -> str:
    memory = Memory(vault)
    memory.save("Prefers window seats", user="alice", doc_type="preference", key="seat")
    memory.save("Drinks oat milk", user="alice", doc_type="preference")
    saved = memory.save("The wobbleduck lives in the pond by the mill", user="alice")
    memory.save("Bob's hamster is called Kiwi", user="bob", doc_type="fact", key="hamster")
    return saved.doc_id


def test_edit_an_entry_and_a_memory(cli, vault: Vault) -> None:
    memory_id = _setup(vault)
    root = vault.root
    result = cli(
        "--root",
        root,
        "edit",
        "alice/preferences",
        "--user",
        "alice",
        "--entry",
        "seat",
        "--text",
        "Prefers aisle seats",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json == {
        "doc_id": "alice/preferences",
        "doc_path": "users/alice/preferences.md",
        "action": "edited",
        "entry": 1,
        "moved_to": None,
        "fields": ["text"],
    }
    prefs = (root / "users/alice/preferences.md").read_text()
    assert "- **seat:** Prefers aisle seats _(saved" in prefs and "window" not in prefs
    result = cli(
        "--root",
        root,
        "edit",
        memory_id,
        "--user",
        "alice",
        "--text",
        "The wobbleduck moved.",
        "--topic",
        "pets.duck",
        "--json",
    )
    # the title was made from the old text: it follows the new one, so the old words
    # ("the pond by the mill") are no longer in the memory
    assert result.code == 0 and result.json["fields"] == ["text", "title", "topic"]
    hits = Memory(vault).search("wobbleduck moved", user="alice")
    assert hits[0]["doc_id"] == memory_id and hits[0]["primary_topic"] == "pets.duck"
    assert hits[0]["title"] == "The wobbleduck moved."
    assert Memory(vault).search("pond mill", user="alice") == []
    # a title of the person's own stays when only the text changes
    cli("--root", root, "edit", memory_id, "--user", "alice", "--title", "Where the duck is")
    result = cli("--root", root, "edit", memory_id, "--user", "alice", "--text", "By the weir.", "--json")
    assert result.code == 0 and result.json["fields"] == ["text"]
    assert Memory(vault).search("weir", user="alice")[0]["title"] == "Where the duck is"


def test_delete_moves_to_expired_and_out_of_search(cli, vault: Vault) -> None:
    memory_id = _setup(vault)
    root = vault.root
    result = cli("--root", root, "delete", memory_id, "--user", "alice", "--json")
    assert result.code == 0 and result.json["moved_to"] == f"archive/expired/users/{memory_id}.md"
    assert (root / result.json["moved_to"]).is_file() and not (root / f"users/{memory_id}.md").exists()
    assert Memory(vault).search("wobbleduck", user="alice", include_expired=True) == []
    result = cli("--root", root, "delete", "alice/preferences", "--user", "alice", "--entry", "2", "--json")
    assert result.code == 0 and result.json["entry"] == 2
    assert "oat milk" not in (root / "users/alice/preferences.md").read_text()
    assert "Drinks oat milk" in (root / "archive/expired/users/alice/preferences.md").read_text()
    assert Memory(vault).search("oat milk", user="alice") == [] or all(
        "oat" not in h["snippet"] for h in Memory(vault).search("oat milk", user="alice")
    )


def test_refused_calls_change_nothing(cli, vault: Vault) -> None:
    memory_id = _setup(vault)
    before = _tree(vault.root)
    for args in (
        ["edit", "bob/facts", "--user", "alice", "--entry", "1", "--text", "x"],
        ["edit", "users/bob/facts.md", "--user", "alice", "--entry", "hamster", "--text", "x"],
        ["delete", "bob/facts", "--user", "alice", "--entry", "1"],
        ["delete", memory_id, "--user", "bob"],
        ["edit", "alice/preferences", "--user", "alice", "--text", "no entry named"],
        ["edit", "alice/preferences", "--user", "alice", "--entry", "9", "--text", "x"],
        ["edit", memory_id, "--user", "alice", "--text", "   "],
        ["delete", "alice/turn_000001", "--user", "alice"],
        ["forget", "bob/facts#1", "--user", "alice"],
        ["forget", "the of and", "--user", "alice"],
        ["forget", "nowhere-said-word", "--user", "alice"],
    ):
        result = cli("--root", vault.root, *args)
        assert result.code == 2, (args, result.err)
        assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert _tree(vault.root) == before


def test_forget_dry_run_then_forget_in_a_real_process(vault: Vault) -> None:
    memory_id = _setup(vault)
    root = vault.root
    before = _tree(root)
    dry = run_pandafs("--root", root, "forget", "wobbleduck", "--user", "alice", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert dry.json["dry_run"] is True and f"users/{memory_id}.md" in dry.json["files"]
    assert _tree(root) == before  # a dry run changes nothing
    done = run_pandafs("--root", root, "forget", "wobbleduck", "--user", "alice", "--json")
    assert done.code == 0, done.err
    assert done.json["ok"] is True and done.json["files"] == dry.json["files"]
    assert not any(b"wobbleduck" in data.lower() for rel, data in _tree(root).items() if "alice" in rel)
    proof = run_pandafs("--root", root, "verify", "--forgotten", "alice", "--json")
    assert proof.code == 0 and proof.json == {"ok": True, "problems": []}
    assert run_pandafs("--root", root, "verify").code == 0  # every log's chain holds
    (root / "users/alice/memories/again.md").write_text("# again\n\nThe wobbleduck is back.\n")
    proof = run_pandafs("--root", root, "verify", "--forgotten", "--json")
    assert proof.code == 1 and proof.json["problems"][0]["path"] == "users/alice/memories/again.md"


def test_a_memory_deleted_again_under_the_same_name_keeps_the_first_deleted_copy(cli, vault: Vault) -> None:
    root = vault.root
    moved = []
    for _ in range(2):  # the same text saved again is the same file name
        saved = Memory(vault).save("The wobbleduck lives by the mill pond.", user="alice", topic="pet")
        result = cli("--root", root, "delete", saved.doc_id, "--user", "alice", "--json")
        assert result.code == 0, result
        moved.append(result.json["moved_to"])
    assert moved[0] == f"archive/expired/{saved.doc_path}" and moved[1] != moved[0]
    assert all("wobbleduck" in (root / path).read_text() for path in moved)

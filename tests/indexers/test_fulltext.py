"""The tantivy index: mapping, filters, ranking properties, upkeep, concurrency."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from events.documents import DocumentMetadata, render_document
from events.fsio import HARD_LINK
from indexers.errors import IndexBusy
from indexers.sync import scan_documents
from pandafs.memory.api import Memory
from pandafs.vault import Vault

from ..conftest import REPO

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def write_doc(vault: Vault, rel: str, body: str, **meta: object) -> Path:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {"id": "x", "created_at": NOW - timedelta(days=1), **meta}
    path.write_text(render_document(DocumentMetadata.model_validate(fields), body))
    return path


def ids(hits: list[dict]) -> list[str]:
    return [h["doc_id"] for h in hits]


@pytest.fixture
def memory(vault: Vault) -> Memory:
    return Memory(vault)


@pytest.fixture
def corpus(vault: Vault, memory: Memory) -> Memory:
    write_doc(
        vault,
        "users/alice/memories/syrian.md",
        "Syrian hamster care: big cage, deep bedding.",
        primary_topic="pet.hamster.syrian",
        content_types=["memory"],
        quality=0.7,
    )
    write_doc(
        vault,
        "users/alice/memories/dwarf.md",
        "Dwarf hamster care: small cage, sand bath.",
        primary_topic="pet.hamster.dwarf",
        content_types=["memory"],
        quality=0.7,
    )
    write_doc(
        vault,
        "users/alice/memories/laptop.md",
        "Lenovo laptop with RTX GPU under budget.",
        primary_topic="electronics.laptop",
        content_types=["vendor_info", "pricing"],
        quality=0.9,
    )
    write_doc(
        vault,
        "users/bob/memories/hamster.md",
        "Bob's hamster secret: hamster likes carrots.",
        primary_topic="pet.hamster",
        content_types=["memory"],
    )
    write_doc(
        vault,
        "knowledge/hamsters.md",
        "General hamster knowledge for everyone.",
        primary_topic="pet.hamster",
        scope="global",
    )
    write_doc(
        vault,
        "users/alice/memories/old.md",
        "Expired hamster coupon.",
        primary_topic="pet.hamster",
        scope="new",
        expires_at=NOW - timedelta(hours=1),
    )
    write_doc(
        vault,
        "users/alice/memories/lowq.md",
        "Low quality hamster rumour.",
        primary_topic="pet.hamster",
        quality=0.1,
    )
    memory.reconcile()
    return memory


def test_every_kind_is_indexed(corpus: Memory) -> None:
    assert corpus.index.reader.count() == 7


def test_user_isolation(corpus: Memory) -> None:
    alice = ids(corpus.search("hamster", user="alice", now=NOW, limit=50))
    bob = ids(corpus.search("hamster", user="bob", now=NOW, limit=50))
    assert "bob/memories/hamster" not in alice
    assert "knowledge/hamsters" in alice and "knowledge/hamsters" in bob
    assert set(bob) == {"bob/memories/hamster", "knowledge/hamsters"}


def test_topic_filter_is_hierarchical(corpus: Memory) -> None:
    hits = ids(corpus.search("hamster care", user="alice", topic_filter="pet.hamster", now=NOW))
    assert "alice/memories/syrian" in hits and "alice/memories/dwarf" in hits
    only = ids(corpus.search("hamster care", user="alice", topic_filter="pet.hamster.syrian", now=NOW))
    assert only == ["alice/memories/syrian"]
    assert corpus.search("care", user="alice", topic_filter="pet.ham", now=NOW) == []


def test_content_type_scope_quality_filters(corpus: Memory) -> None:
    assert ids(corpus.search("lenovo hamster", user="alice", content_types=["pricing"], now=NOW)) == [
        "alice/memories/laptop"
    ]
    assert ids(corpus.search("hamster", scope="global", now=NOW)) == ["knowledge/hamsters"]
    rumours = ids(corpus.search("hamster rumour", user="alice", now=NOW))
    assert "alice/memories/lowq" in rumours
    assert "alice/memories/lowq" not in ids(
        corpus.search("hamster rumour", user="alice", min_quality=0.5, now=NOW)
    )


def test_expired_hidden_unless_asked(corpus: Memory) -> None:
    assert "alice/memories/old" not in ids(corpus.search("coupon", user="alice", now=NOW))
    assert ids(corpus.search("coupon", user="alice", include_expired=True, now=NOW)) == ["alice/memories/old"]
    earlier = NOW - timedelta(days=1)
    assert ids(corpus.search("coupon", user="alice", now=earlier)) == ["alice/memories/old"]


def test_hits_carry_the_contract_fields(corpus: Memory) -> None:
    hit = corpus.search("syrian bedding", user="alice", now=NOW)[0]
    for key in (
        "doc_id",
        "doc_path",
        "title",
        "score",
        "primary_topic",
        "content_types",
        "scope",
        "quality",
        "created_at",
        "archived",
        "snippet",
        "meta",
    ):
        assert key in hit
    assert hit["doc_path"] == "users/alice/memories/syrian.md"
    assert "**bedding**" in hit["snippet"]
    assert hit["created_at"].endswith("Z")


def test_snippets_are_cut_for_as_many_hits_as_asked(corpus: Memory) -> None:
    """A caller that shows only its first hits' snippets (the turn's gatherer) asks for
    those alone: the same hits in the same order, the rest with an empty snippet."""
    every = corpus.search("hamster", user="alice", now=NOW, limit=5)
    first = corpus.search("hamster", user="alice", now=NOW, limit=5, snippets=1)
    none = corpus.search("hamster", user="alice", now=NOW, limit=5, snippets=False)
    assert len(every) >= 3
    assert [h["doc_path"] for h in first] == [h["doc_path"] for h in every] == [h["doc_path"] for h in none]
    assert first[0]["snippet"] == every[0]["snippet"] and "**hamster**" in first[0]["snippet"].lower()
    assert [h["snippet"] for h in first[1:]] == [""] * (len(every) - 1) == [h["snippet"] for h in none[1:]]
    assert all(h["snippet"] for h in every)


def test_fresher_higher_quality_wins_a_tie(vault: Vault, memory: Memory) -> None:
    text = "Identical note about sourdough starters."
    write_doc(vault, "users/alice/memories/a.md", text, quality=0.5, created_at=NOW - timedelta(days=200))
    write_doc(vault, "users/alice/memories/b.md", text, quality=0.5, created_at=NOW - timedelta(days=2))
    write_doc(vault, "users/alice/memories/c.md", text, quality=0.9, created_at=NOW - timedelta(days=200))
    memory.reconcile()
    order = ids(memory.search("sourdough starters", user="alice", now=NOW))
    assert order.index("alice/memories/b") < order.index("alice/memories/a")
    assert order.index("alice/memories/c") < order.index("alice/memories/a")


def test_exact_topic_beats_sibling(vault: Vault, memory: Memory) -> None:
    text = "Feeding schedule for a small pet."
    write_doc(vault, "users/alice/memories/s.md", text, primary_topic="pet.hamster.syrian")
    write_doc(vault, "users/alice/memories/d.md", text, primary_topic="pet.hamster.dwarf")
    memory.reconcile()
    for preferred, other in (("syrian", "dwarf"), ("dwarf", "syrian")):
        order = ids(
            memory.search("feeding schedule", user="alice", topic=f"pet.hamster.{preferred}", now=NOW)
        )
        assert order.index(f"alice/memories/{preferred[0]}") < order.index(f"alice/memories/{other[0]}")


def test_edit_and_delete_by_path(vault: Vault, memory: Memory) -> None:
    path = write_doc(vault, "users/alice/memories/n.md", "The wifi password is mango.")
    memory.index_paths(["users/alice/memories/n.md"])
    assert ids(memory.search("mango", user="alice", now=NOW)) == ["alice/memories/n"]
    write_doc(vault, "users/alice/memories/n.md", "The wifi password is papaya.")
    memory.index_paths(["users/alice/memories/n.md"])
    assert memory.search("mango", user="alice", now=NOW) == []
    assert ids(memory.search("papaya", user="alice", now=NOW)) == ["alice/memories/n"]
    path.unlink()
    memory.index_paths(["users/alice/memories/n.md"])
    assert memory.search("papaya", user="alice", now=NOW) == []


def test_reconcile_touches_only_what_changed(vault: Vault, memory: Memory) -> None:
    for i in range(5):
        write_doc(vault, f"users/alice/memories/m{i}.md", f"note {i}")
    assert memory.reconcile().indexed == 5
    again = memory.reconcile()
    assert (again.indexed, again.deleted) == (0, 0)
    path = vault.root / "users/alice/memories/m1.md"
    path.write_text(path.read_text())  # same bytes, new mtime: re-stamped, not re-indexed
    report = memory.reconcile()
    assert (report.indexed, report.unchanged) == (0, 5)
    write_doc(vault, "users/alice/memories/m2.md", "note two changed")
    (vault.root / "users/alice/memories/m3.md").unlink()
    report = memory.reconcile()
    assert (report.indexed, report.deleted) == (1, 1)


def test_bad_files_are_skipped_with_reasons(vault: Vault, memory: Memory) -> None:
    write_doc(vault, "users/alice/memories/good.md", "A fine note about tulips.")
    broken = vault.root / "users/alice/memories/broken.md"
    broken.write_text("---\nid: x\nkeywords: [a, b\n---\nbody about tulips\n")
    # a PNG renamed .md: not UTF-8 (a NUL in UTF-8 text is not binary: see test_documents)
    (vault.root / "users/alice/memories/binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00tulips" * 10)
    big = vault.root / "knowledge/huge.md"
    big.write_bytes(b"tulips " * 800_000)
    before = broken.read_bytes()
    report = memory.rebuild()
    reasons = {s.path: s.reason for s in report.skipped}
    assert set(reasons) == {
        "users/alice/memories/broken.md",
        "users/alice/memories/binary.md",
        "knowledge/huge.md",
    }
    assert "broken frontmatter" in reasons["users/alice/memories/broken.md"]
    assert "binary" in reasons["users/alice/memories/binary.md"]
    assert "too large" in reasons["knowledge/huge.md"]
    assert ids(memory.search("tulips", user="alice", now=NOW)) == ["alice/memories/good"]
    assert broken.read_bytes() == before


def test_rebuild_after_deleting_indexes_gives_identical_results(corpus: Memory, vault: Vault) -> None:
    queries = ["hamster", "hamster care cage", "lenovo gpu budget", "carrots", "coupon"]
    before = [corpus.search(q, user="alice", now=NOW, limit=20) for q in queries]
    shutil.rmtree(vault.layout.indexes)
    corpus.rebuild()
    after = [corpus.search(q, user="alice", now=NOW, limit=20) for q in queries]
    assert after == before
    fresh = Memory(vault)  # another process opening the rebuilt index
    assert [fresh.search(q, user="alice", now=NOW, limit=20) for q in queries] == before


def test_the_index_keeps_word_frequencies_but_no_positions(vault: Vault, memory: Memory) -> None:
    """No query reads where a word stands (there is no phrase query); the positions were
    half of the index's bytes.  The frequencies BM25 scores by are kept: of two documents
    of one length, the one that says the word more often ranks first."""
    garden = " ".join(f"bed{i} row{i % 7}" for i in range(300))  # positions, were they kept
    prose = f"Tulips want a cold winter before they flower in spring. {garden}. I planted "
    write_doc(vault, "users/alice/memories/often.md", prose + "tulips, more tulips, tulips by the door.")
    write_doc(vault, "users/alice/memories/once.md", prose + "roses, more roses, lilies by the door.")
    memory.reconcile()
    memory.ranking = memory.ranking._replace(feedback_docs=0)  # BM25's own order: no RM3 round
    hits = memory.search("tulips", user="alice", now=NOW)
    assert ids(hits) == ["alice/memories/often", "alice/memories/once"]
    folder = vault.layout.indexes / "fulltext" / "tantivy"
    positions = sum(p.stat().st_size for p in folder.glob("*.pos"))
    postings = sum(p.stat().st_size for p in folder.glob("*.idx"))
    assert positions <= 256 * len(list(folder.glob("*.pos"))) < postings, (positions, postings)


def test_an_index_of_version_5_serves_until_a_rebuild_makes_it_6(corpus: Memory, vault: Vault) -> None:
    """Version 6 only stopped keeping word positions: an upgrade does not make anyone
    rebuild before their next search or save (version 4 still must: see test_verify_truth)."""
    schema = vault.layout.indexes / "fulltext" / "schema.json"
    before = corpus.search("hamster care", user="alice", now=NOW)
    schema.write_text('{"schema_version": 5}')
    opened = Memory(vault)  # another process, after the upgrade
    assert opened.search("hamster care", user="alice", now=NOW) == before
    write_doc(vault, "users/alice/memories/roborovski.md", "Roborovski hamster: the smallest.")
    opened.reconcile()
    assert "alice/memories/roborovski" in ids(opened.search("roborovski", user="alice", now=NOW))
    opened.rebuild()
    assert orjson.loads(schema.read_bytes()) == {"schema_version": 6}


def test_a_rebuild_that_writes_its_state_in_pieces_keeps_every_entry(
    corpus: Memory, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild's batch writes its state lines every SPILL_EVERY changes (so it holds none
    of them for a big vault): with pieces of two, every document is still known, and a
    reconcile afterwards finds nothing to redo."""
    import indexers.writer

    monkeypatch.setattr(indexers.writer, "SPILL_EVERY", 2)
    before = dict(corpus.index.state())
    shutil.rmtree(vault.layout.indexes)
    report = corpus.rebuild()
    assert report.indexed == len(before) == 7
    assert dict(corpus.index.state()) == before
    assert len(corpus.index.folder.state_path.read_bytes().splitlines()) == 7
    assert corpus.reconcile().unchanged == 7


def test_a_rebuild_walks_names_alone_and_refuses_what_is_not_a_plain_file(
    corpus: Memory, vault: Vault
) -> None:
    """A rebuild's walk keeps only the paths (no stat per document, one string for all of
    them): a fifo named like a document is still refused, the rebuild does not block on
    it, and it indexes exactly the documents the stat-taking walk of reconcile finds."""
    memories = vault.root / "users/alice/memories"
    os.mkfifo(memories / "pipe.md")
    (memories / "z-last.md").write_text("Zebra finches need a wide cage\n")
    report = corpus.rebuild()
    assert {s.path: s.reason for s in report.skipped} == {
        "users/alice/memories/pipe.md": "is not a regular file"
    }
    assert report.indexed == report.documents == 8
    assert sorted(corpus.index.state()) == sorted(scan_documents(vault.root))
    assert corpus.reconcile().unchanged == 8
    assert ids(corpus.search("zebra finches", user="alice", now=NOW)) == ["alice/memories/z-last"]


def test_a_rebuild_reads_turn_folders_by_descriptor_and_refuses_what_is_not_theirs(
    corpus: Memory, vault: Vault, tmp_path: Path
) -> None:
    """A rebuild reads each turn folder's documents by name in the folder's descriptor
    (`indexers.walk.read_turn_folders`), not by path from the root: what it indexes and
    refuses is what the path reader would.  A context.md that is a symbolic link, a turn
    folder that is one, a context.md with another name (a hard link) and one that is a
    fifo are refused and named; a folder named research.md is no document; a turn's
    research.md is indexed beside its context.md; the progress bar counts each turn
    folder once."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "context.md").write_text("---\nid: x\n---\nplatypus secret\n")
    turns = vault.root / "users/alice/turns"
    write_doc(vault, "users/alice/turns/turn_000001/context.md", "Quokka photos from the trip.")
    write_doc(vault, "users/alice/turns/turn_000001/research.md", "Quokka habitats, researched.")
    (turns / "turn_000002").mkdir()
    (turns / "turn_000002/context.md").symlink_to(outside / "context.md")
    (turns / "turn_000003").symlink_to(outside, target_is_directory=True)
    (turns / "turn_000004").mkdir()
    os.link(outside / "context.md", turns / "turn_000004/context.md")
    (turns / "turn_000005/research.md").mkdir(parents=True)  # a folder: no document, nothing said
    os.mkfifo(turns / "turn_000005/context.md")
    totals: list[int] = []
    steps: list[int] = []
    report = corpus.rebuild(on_total=totals.append, progress=steps.append)
    assert {s.path: s.reason for s in report.skipped} == {
        "users/alice/turns/turn_000002/context.md": "is a symbolic link (never followed)",
        "users/alice/turns/turn_000003": "is a symbolic link (never followed)",
        "users/alice/turns/turn_000004/context.md": HARD_LINK,
        "users/alice/turns/turn_000005/context.md": "is not a regular file (a FIFO)",
    }
    assert report.indexed == report.documents == 9
    assert totals == [7 + 4] and sum(steps) == 11  # four turn folders (the link is not one)
    assert set(ids(corpus.search("quokka", user="alice", now=NOW))) == {
        "alice/turn_000001",
        "alice/turn_000001/research",
    }
    assert corpus.search("platypus", now=NOW) == []


def test_a_rebuild_tells_its_progress_bar_how_many_documents_to_expect(corpus: Memory, vault: Vault) -> None:
    """The bar's length is the number of documents the rebuild's walk found, with an
    index or without one (deleted, as a user does to start over); each advances it once."""
    totals: list[int] = []
    steps: list[int] = []
    corpus.rebuild(on_total=totals.append, progress=steps.append)
    shutil.rmtree(vault.root / "indexes")
    (vault.root / "users/alice/memories/z-last.md").write_text("Zebra finches need a wide cage\n")
    Memory(vault).rebuild(on_total=totals.append, progress=steps.append)
    assert totals == [7, 8]
    assert sum(steps) == 15


def test_a_memory_saved_while_the_index_is_rebuilt_is_in_the_rebuilt_index(
    corpus: Memory, vault: Vault
) -> None:
    """Another writer saves while a rebuild is filling its new index (the live one keeps
    taking writes): the rebuild redoes that write on the new index before swapping it in."""
    other = Memory(vault)  # a second writer, with its own index handle, as another process has
    saved: list[str] = []

    def save_once(_: int) -> None:
        if not saved:
            saved.append(other.save("Quokka sightings on Rottnest", user="alice", topic="travel").doc_id)

    corpus.rebuild(progress=save_once)
    assert ids(Memory(vault).search("quokka", user="alice", now=NOW)) == saved
    assert saved[0].startswith("alice/")


def test_rebuild_one_user(corpus: Memory, vault: Vault) -> None:
    (vault.root / "users/alice/memories/laptop.md").unlink()
    report = corpus.rebuild(user="alice")
    assert (report.indexed, report.documents) == (4, 6)
    assert corpus.search("lenovo", user="alice", now=NOW) == []
    assert ids(corpus.search("carrots", user="bob", now=NOW)) == ["bob/memories/hamster"]


HOLD = """
import sys, time
from pandafs.vault import Vault
from pandafs.memory.api import Memory
m = Memory(Vault.open(sys.argv[1]))
with m.index.batch():
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_second_writer_waits_then_names_the_holder(vault: Vault, memory: Memory) -> None:
    memory.reconcile()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(vault.root), "3"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    memory.index.folder.wait_s = 0.3
    with pytest.raises(IndexBusy, match=f"held by pid {proc.pid}"), memory.index.batch():
        pass
    assert memory.search("anything", user="alice", now=NOW) == []  # readers never wait
    memory.index.folder.wait_s = 10
    with memory.index.batch():
        pass  # waited for the holder to finish
    proc.wait()
    proc.stdout.close()


def test_searches_run_while_a_writer_commits(vault: Vault, memory: Memory) -> None:
    for i in range(50):
        write_doc(vault, f"users/alice/memories/base{i}.md", f"baseline zebra note {i}")
    memory.reconcile()
    stop = threading.Event()
    seen: list[int] = []

    def reader() -> None:
        other = Memory(vault)
        while not stop.is_set():
            seen.append(len(other.search("zebra", user="alice", limit=100, now=NOW)))

    thread = threading.Thread(target=reader)
    thread.start()
    for round_ in range(5):
        for i in range(20):
            write_doc(vault, f"users/alice/memories/more{round_}-{i}.md", f"zebra extra {i}")
        memory.reconcile()
    stop.set()
    thread.join()
    assert seen and min(seen) >= 50 and max(seen) <= 100


def test_a_skipped_file_is_remembered_until_it_changes(vault: Vault, memory: Memory) -> None:
    from pandafs.verify import check_index

    broken = vault.root / "users/alice/memories/broken.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nid: x\nkeywords: [a, b\n---\nbody about tulips\n")
    assert [s.path for s in memory.rebuild().skipped] == ["users/alice/memories/broken.md"]
    named = [(p.path, p.kind) for p in check_index(vault, False)]
    assert named == [("users/alice/memories/broken.md", "skipped")]  # named with its reason, not "stale"
    assert memory.reconcile().skipped == []  # an unchanged broken file is not re-read
    broken.write_text("---\nid: x\nkeywords: [a, b]\n---\nbody about tulips\n")
    assert memory.reconcile().indexed == 1
    assert ids(memory.search("tulips", user="alice", now=NOW)) == ["alice/memories/broken"]


def test_state_log_compaction_keeps_what_was_indexed(vault: Vault, memory: Memory) -> None:
    path = vault.root / "users/alice/memories/n.md"
    for i in range(5):
        write_doc(vault, "users/alice/memories/n.md", f"note version {i} about quinces")
        memory.index_paths(["users/alice/memories/n.md"])
    before = dict(memory.index.state())
    lines = memory.index.folder.state_path.read_bytes().count(b"\n")
    assert memory.index.compact_state() is False  # small logs are left alone
    assert memory.index.compact_state(force=True) is True
    assert memory.index.folder.state_path.read_bytes().count(b"\n") == 1 < lines
    assert dict(Memory(vault).index.state()) == before == dict(memory.index.state())
    assert path.exists() and memory.reconcile().indexed == 0


def test_a_half_done_swap_is_finished_only_by_whoever_holds_the_index_lock(corpus: Memory) -> None:
    from events.fsio import held_lock

    corpus.rebuild()
    live = corpus.index.folder.dir
    new, old = live.with_name(live.name + ".new"), live.with_name(live.name + ".old")
    live.rename(old)  # a rebuild between its two renames: live aside, the new one complete
    shutil.copytree(old, new)
    (new / "complete").write_bytes(b"")
    reader = Memory(corpus.vault)
    with held_lock(corpus.index.folder.lock_path, wait_s=None, on_busy=RuntimeError):
        assert not reader.index.folder.exists()  # the swap is in progress: a reader does not finish it
        assert new.exists() and old.exists() and not live.exists()
    assert reader.index.folder.exists()  # the rebuild was killed there: the next reader finishes it
    assert live.exists() and not new.exists() and not old.exists()
    assert ids(reader.search("hamster", user="alice", now=NOW))


@pytest.mark.parametrize("seed", range(10))
def test_prose_folds_white_space_as_str_split_does(seed: int) -> None:
    """`prose_of` skips folding text that is already folded; the result is the same."""
    import random

    from indexers.snippets import _NOT_PROSE, PROSE_CHARS, prose_of

    rng = random.Random(seed)
    pieces = [
        "word",
        "two words",
        " ",
        "  ",
        "\t",
        "\r",
        "\x0b",
        "\x1f",
        "\u00a0",
        "\u2003",
        "\u2028",
        "\x85",
        "\u200d",  # a zero-width joiner: not printable, not white space
        "é",
        "—",
        "\n",
        "\n\n",
        "# h\n",
    ]
    for _ in range(200):
        body = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        kept = [line for line in body.split("\n") if not line.startswith(_NOT_PROSE)]
        flat = " ".join(" ".join(kept).split())
        assert prose_of(body) == (flat if len(flat) <= PROSE_CHARS else flat[:PROSE_CHARS] + "\x1f")


@pytest.mark.parametrize("seed", range(10))
def test_a_turns_prose_is_that_of_its_question_and_answer(seed: int) -> None:
    """`conversation_prose` is `prose_of` §0 and §5 joined, whichever way it reads them:
    imported turns (a title, §0, §5), pipeline turns (§0–§6), answers with their own `## `
    headings, text before the sections, sections out of order or repeated, none."""
    import random

    from events.documents import split_sections
    from indexers.snippets import conversation_prose, prose_of

    rng = random.Random(seed)
    lines = [
        "# Turn 000001 — a title…",
        "## 0. User Query",
        "## 5. Synthesis",
        "## 2. Gathered Context",
        "## 6. Validation",
        "## An answer's own heading",
        "asked or answered, café — “quoted”",
        "more text",
        "",
        "",
        "```",
        "| a | b |",
        "|---|---|",
        "#not a heading",
        "in C#",
        "not at a line's start: ## 5. x",
        "text\x00with a NUL",
        "\x00",
    ]
    bodies = ["## 5. Synthesis\n## 0. User Query\nq\n## 5. Synthesis\na"]  # §5 first, then again
    for _ in range(300):
        body = "\n".join(rng.choice(lines) for _ in range(rng.randrange(0, 14)))
        if rng.random() < 0.5:  # the shape the importer writes
            body = f"# Turn 1 — t\n\n## 0. User Query\n\n{rng.choice(lines)}\n\n## 5. Synthesis\n\n{body}"
        bodies.append(body)
    for body in bodies:
        sections = split_sections(body, numbers=(0, 5))
        assert conversation_prose(body) == prose_of("\n".join(sections.values()) if sections else body), body


def test_a_question_in_any_script_finds_the_note_that_says_it(vault: Vault, memory: Memory) -> None:
    """A query's words are split as the index splits a document's (`words.words_of`):
    until 2026-11-24 only Latin-1 letters made words, so a question in Russian, Greek or
    Japanese had none (nothing was searched for) and "Łodzi" became "odzi"."""
    notes = {
        "ru": "Мой хомяк любит морковку и спит днём.",
        "el": "Το ταξίδι στην Αθήνα ήταν υπέροχο.",
        "pl": "Wycieczka do Łodzi była w maju.",
        "ja": "東京 旅行 の 計画",
        "hi": "मुझे हिन्दी सीखना है",
        "en": "My hamster loves carrots and sleeps all day.",
    }
    for name, text in notes.items():
        write_doc(vault, f"users/alice/memories/{name}.md", text)
    memory.index_paths([f"users/alice/memories/{name}.md" for name in notes])
    asked = {
        "ru": "Что любит мой хомяк?",
        "el": "Πώς ήταν η Αθήνα;",
        "pl": "Kiedy była wycieczka do Łodzi?",
        "ja": "東京",
        "hi": "हिन्दी",
    }
    for name, question in asked.items():
        hits = memory.search(question, user="alice", now=NOW)
        assert ids(hits)[:1] == [f"alice/memories/{name}"], (question, ids(hits))
        assert "**" in hits[0]["snippet"]  # the question's word is found in the snippet too
    assert memory.search("хомяк", user="bob", now=NOW) == []  # and still only alice's


@pytest.mark.parametrize("seed", range(10))
def test_snippet_words_are_found_alike_in_any_script(seed: int) -> None:
    """Snippets find the query's words with `str.find` on the case-folded prose whenever
    folding keeps its length (not only in ASCII: every turn holds an em dash, real chat
    text curly quotes); the words found are the ones the case-blind word-boundary
    pattern finds, in every script, and each one bolded begins with a query word."""
    import random
    import re

    from indexers.snippets import _find_words, _snippet_pattern, snippet_of, snippet_stem

    rng = random.Random(seed)
    words = [
        "Café",
        "café",
        "cafés",
        "naïve",
        "NAÏVE",
        "ΟΔΟΣ",
        "οδοσ",
        "οδος",
        "hamster",
        "Hamsters",
        "x_hamster",
        "2hamster",
        "über",
        "Über—alles",
        "l’hamster",
        "«café»",
        "日本語",
        "東京",
        "ſtem",
    ]
    stems = ("café", "naïv", "οδοσ", "hamster", "über", "日本", "stem")
    pattern = _snippet_pattern(tuple(sorted(stems, key=len, reverse=True)))
    for _ in range(100):
        prose = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 40)))
        folded = prose.casefold()
        assert len(folded) == len(prose)
        expected = [m.start() for m in pattern.finditer(prose)]
        assert [start for start, _ in _find_words(folded, stems)] == expected
        for word in re.findall(r"\*\*(.+?)\*\*", snippet_of(prose, stems)):
            assert word.casefold().startswith(tuple(snippet_stem(s).casefold() for s in stems)), word
    # a character that folds to two moves the offsets: the pattern finds the words there
    assert snippet_of("Die Straße — the hamster café", ["hamster"]) == "Die Straße — the **hamster** café"
    assert snippet_of("İstanbul: HAMSTERS", ["hamster"]) == "İstanbul: **HAMSTERS**"


def test_a_document_read_before_another_writer_changed_it_does_not_replace_the_newer_one(
    vault: Vault, memory: Memory
) -> None:
    """A writer hands over documents it read earlier (a Save's trust updates, committed with
    its turn): if another writer changed and indexed the file meanwhile, the older copy is
    read again under the index lock instead of replacing the newer one."""
    from indexers.documents import load_index_doc

    memory.save("I prefer window seats", user="alice", doc_type="preference")
    path = vault.rel(vault.layout.preferences("alice"))
    early = load_index_doc(vault.root, path, max_bytes=vault.config.index.max_file_bytes)
    Memory(vault).save("I prefer oat milk", user="alice", doc_type="preference")  # another writer
    memory.index_docs([early])
    assert ids(memory.search("oat milk", user="alice", now=NOW)) == ["alice/preferences"]
    assert memory.reconcile().unchanged == memory.index.reader.count()


def test_a_commit_a_killed_writer_broke_is_redone_not_refused_as_busy(vault: Vault, memory: Memory) -> None:
    """A writer killed mid-commit can leave `{segment}.{opstamp}.del`: the next writer
    doing the same operations reaches the same opstamp and tantivy refuses to overwrite
    the file.  The batch then rolls back, commits an empty batch to move the opstamp on
    and redoes its operations; the rolled-back writer still held tantivy's lock, so the
    empty batch's writer was refused ("index is busy ... LockBusy") and so was every
    command after it, until someone deleted the file by hand."""
    import json

    write_doc(vault, "users/alice/memories/a.md", "The wifi password is mango.")
    write_doc(vault, "users/alice/memories/b.md", "The door code is 4242.")
    memory.index_paths(["users/alice/memories/a.md", "users/alice/memories/b.md"])
    folder = memory.index.folder.tantivy_dir
    meta = json.loads((folder / "meta.json").read_text())
    [segment] = [s["segment_id"].replace("-", "") for s in meta["segments"]]
    # an upsert is a delete and an add; the commit takes the next opstamp: 3 on
    (folder / f"{segment}.{meta['opstamp'] + 3}.del").write_bytes(b"torn by a kill")
    write_doc(vault, "users/alice/memories/a.md", "The wifi password is papaya.")
    memory.index_paths(["users/alice/memories/a.md"])
    assert ids(memory.search("papaya", user="alice", now=NOW)) == ["alice/memories/a"]
    assert memory.search("mango", user="alice", now=NOW) == []
    assert ids(memory.search("door code", user="alice", now=NOW)) == ["alice/memories/b"]


FAILED_COMMIT = """
import errno, sys
from datetime import UTC, datetime
from pathlib import Path
from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.faults import writes_refused_past
memory, now = Memory(Vault(Path(sys.argv[1]))), datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
memory.index_paths(["users/alice/memories/a.md"])
with writes_refused_past(20_000):
    try:
        memory.index_paths(["users/alice/memories/b.md"])
    except OSError as exc:  # what every long-lived loop retries (IndexIOError)
        kept = exc  # held, as a caller that logs or reports its errors holds it
        print("commit failed:", exc.errno == errno.EFBIG, type(exc).__name__, "|", exc)
memory.index_paths(["users/alice/memories/b.md"])
print(*(h["doc_id"] for w in ("papaya", "mango") for h in memory.search(w, user="alice", now=now)))
"""


def test_a_commit_that_fails_gives_its_writer_up_before_the_error_goes_on(vault: Vault) -> None:
    """A commit that fails (here a segment file past the file-size limit, as a full disk
    would) releases tantivy's writer lock at once.  Before, the failed writer lived as
    long as its error did, and a long-lived process that kept the error (the watcher
    logging it) had every later batch refused as busy.  The error is an `OSError` with
    the system's errno, which the watcher retries; it was tantivy's `ValueError`, which
    ended `pandafs watch`, and the CLI called it an internal error."""
    write_doc(vault, "users/alice/memories/a.md", "The wifi password is mango.")
    words = " ".join(f"w{i}" for i in range(40_000))  # ~250 KB of terms: segments past 20 KB
    write_doc(vault, "users/alice/memories/b.md", f"The door code is papaya. {words}")
    done = subprocess.run(
        [sys.executable, "-c", FAILED_COMMIT, str(vault.root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    failed, found = done.stdout.splitlines()
    assert failed.startswith("commit failed: True IndexIOError | the index could not be written"), failed
    assert found == "alice/memories/b alice/memories/a", done.stderr


def test_a_rebuild_never_swaps_folders_through_a_swapped_indexes_folder(tmp_path: Path) -> None:
    """A rebuild marks its new folder complete and swaps it in with two renames and a
    removal.  Those went by path after the lock's folder check: `indexes/` swapped for a
    link meanwhile, the marker was written out there and the link target's `fulltext/`
    was renamed aside and deleted, its `fulltext.new/` renamed in its place.  Now they go
    through the folder opened and checked from the vault root: refused, nothing moves."""
    from events.errors import NotInVault
    from indexers.fulltext import FullTextIndex

    indexes = tmp_path / "vault" / "indexes"
    indexes.mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "fulltext").mkdir(parents=True)
    (outside / "fulltext" / "keep.txt").write_text("not the vault's\n")
    (outside / "fulltext.new").mkdir()
    index = FullTextIndex(indexes)

    def swap(open_batch: object, built: object) -> None:
        indexes.rename(indexes.with_name("indexes.moved"))
        indexes.symlink_to(outside, target_is_directory=True)

    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        with index.rebuild(catch_up=swap):
            pass
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == [
        "fulltext",
        "fulltext.new",
        "fulltext/keep.txt",
    ]
    assert (indexes.with_name("indexes.moved") / "fulltext.new" / "schema.json").is_file()


class _SlowMerges:
    """Stands in for tantivy's writer after a commit: its merges end when `done` is set."""

    def __init__(self, error: Exception | None = None) -> None:
        self.done = threading.Event()
        self.error = error

    def wait_merging_threads(self) -> None:
        assert self.done.wait(10)
        if self.error is not None:
            raise self.error


def test_merges_end_on_their_own_thread_which_releases_the_lock_after_them() -> None:
    from functools import partial

    from indexers.behind import WrittenBehind
    from indexers.fulltext import _merged

    merges, writer, released = WrittenBehind("merges"), _SlowMerges(), threading.Event()
    merges.start(partial(_merged, writer, released.set))  # returns while the merges still run
    assert not released.wait(0.05)  # the lock stays held until they end
    writer.done.set()
    merges.settle()
    assert released.is_set()
    failing = _SlowMerges(ValueError("merge: disk full"))
    merges.start(partial(_merged, failing, released.clear))
    failing.done.set()
    with pytest.raises(ValueError, match="disk full"):  # told to the next writer of this process
        merges.settle()
    assert not released.is_set()  # the lock went anyway
    merges.settle()  # told once


EACH_IN_ITS_BATCH = """
import sys
from pathlib import Path
from pandafs.memory.api import Memory
from pandafs.vault import Vault
memory = Memory(Vault(Path(sys.argv[1])))
for rel in sys.argv[2:]:
    memory.index_paths([rel])
"""


def test_merges_a_commit_started_end_before_the_process_does(vault: Vault) -> None:
    """Tantivy merges small segments (here eight one-document commits) on its own threads.
    A batch no longer waits for them; they still end (on the thread `IndexFolder.merges`
    starts), so the merged segment replaces the small ones, nothing committed is lost and
    the lock is free afterwards.  A batch that let its writer go without waiting left the
    eight segments: tantivy drops a merge whose writer is dropped."""
    from events.fsio import lock_is_held

    for i in range(12):
        write_doc(vault, f"users/alice/memories/n{i}.md", f"zebra note number {i}")
    notes = [f"users/alice/memories/n{i}.md" for i in range(12)]
    subprocess.run(
        [sys.executable, "-c", EACH_IN_ITS_BATCH, str(vault.root), *notes], check=True, cwd=REPO, timeout=120
    )
    memory = Memory(vault)
    meta = orjson.loads((memory.index.folder.tantivy_dir / "meta.json").read_bytes())
    assert len(meta["segments"]) < 8, meta["segments"]
    assert not lock_is_held(memory.index.folder.lock_path)
    assert len(memory.search("zebra", user="alice", limit=20, now=NOW)) == 12
    write_doc(vault, "users/alice/memories/n0.md", "zebra note rewritten")
    memory.index_paths(["users/alice/memories/n0.md"])  # the next writer is not refused as busy
    assert len(memory.search("rewritten", user="alice", now=NOW)) == 1


KILLED_BEFORE_ITS_MERGE = """
import os, signal, sys
from pathlib import Path
from pandafs.memory.api import Memory
from pandafs.vault import Vault
memory = Memory(Vault(Path(sys.argv[1])))
for i in range(7):  # seven segments of three documents
    memory.index_paths([f"users/alice/memories/{x}{i}.md" for x in "kmn"])
Path(sys.argv[1], "users/alice/memories/n3.md").write_text(sys.argv[2])
# the 8th segment; n3's old version is deleted in the 3rd at this commit's opstamp
memory.index_paths(["users/alice/memories/n3.md", "users/alice/memories/n7.md"])
os.kill(os.getpid(), signal.SIGKILL)  # before the merge of the eight ends
"""


def _left_unmerged(memory: Memory) -> bool:
    """Eight committed segments, one with deletes written at the last commit's opstamp:
    what a writer killed after its commit, before the merge it started ended, leaves."""
    meta = orjson.loads((memory.index.folder.tantivy_dir / "meta.json").read_bytes())
    deleted_at = [s["deletes"]["opstamp"] for s in meta["segments"] if s["deletes"]]
    return len(meta["segments"]) >= 8 and meta["opstamp"] in deleted_at


def test_the_first_delete_after_a_writer_was_killed_before_its_merge_is_not_lost(vault: Vault) -> None:
    """A writer killed before its merge ended leaves eight segments; the next writer's
    commit starts their merge.  Tantivy stamped that writer's first operation with the
    last commit's opstamp, and the merge skipped it in a segment whose deletes carry that
    opstamp: a path's old version stayed beside the new one (a restored turn's stub
    stayed in the index).  Each writer's first operation is a no-op."""
    for _ in range(5):  # the child's kill must come before its merge ends (~ms)
        shutil.rmtree(vault.root / "indexes", ignore_errors=True)
        for i in range(8):
            write_doc(vault, f"users/alice/memories/n{i}.md", f"zebra note number {i}")
            write_doc(vault, f"users/alice/memories/m{i}.md", f"zebra memo number {i} walrus")
            write_doc(vault, f"users/alice/memories/k{i}.md", f"zebra keepsake number {i}")
        again = render_document(DocumentMetadata(id="x", created_at=NOW), "zebra note three again")
        child = subprocess.run(
            [sys.executable, "-c", KILLED_BEFORE_ITS_MERGE, str(vault.root), again], cwd=REPO, timeout=120
        )
        assert child.returncode == -9
        memory = Memory(vault)
        if _left_unmerged(memory):
            break
    else:
        pytest.fail("the child's merge ended before its kill, five times")
    # m3 shares its segment with n3's deleted old version: its deletes carry that opstamp
    write_doc(vault, "users/alice/memories/m3.md", "zebra memo three rewritten")
    # its first operation deletes m3's old version; the process ends when the merge has
    subprocess.run(
        [sys.executable, "-c", EACH_IN_ITS_BATCH, str(vault.root), "users/alice/memories/m3.md"],
        check=True,
        cwd=REPO,
        timeout=120,
    )
    assert memory.index.reader.count() == 22  # k0–k6, m0–m6, n0–n7
    assert "alice/memories/m3" not in ids(memory.search("walrus", user="alice", limit=20, now=NOW))

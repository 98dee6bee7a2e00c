"""internet.research inside real turns: visit records, reuse, reliability, site knowledge."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest

from events.documents import parse_document
from events.log import read_events
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from pandafs.verify import default_checks, verify_vault
from tests.support.web_fixtures import WebFixtures, configure


def test_research_turn_then_follow_up_from_visit_records(vault: Vault) -> None:
    with WebFixtures() as web:
        vault = configure(vault, web)
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            first = pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="alice")
            folder = vault.layout.turn_dir("alice", first.turn)
            assert (folder / "research.md").exists() and (folder / "research.json").exists()
            visits = sorted((folder / "webpage_cache").iterdir())
            assert visits and all((v / "manifest.json").exists() for v in visits)
            assert all(
                (v / "extracted_data.json").exists() and (v / "page_content.md").exists() for v in visits
            )
            assert first.outcome == "APPROVE" and "$697" in first.answer
            events = read_events(folder / "events.jsonl")
            extractions = [e.data for e in events if e.type == "extraction_recorded"]
            assert {x.domain for x in extractions} == {"127.0.0.1", "localhost"}
            hits = Memory(vault).search("Lenovo LOQ", user="alice", content_types=["research"])
            assert [h["doc_id"] for h in hits] == [f"alice/{first.turn}/research"]
            front = parse_document((folder / "research.md").read_text()).frontmatter
            assert front["scope"] == "new" and "research" in front["content_types"]

            before = web.snapshot()
            follow = pipeline.ask("How much was that one?", user="alice")
            assert web.snapshot() == before  # answered from the visit records: no request
            assert follow.outcome == "APPROVE" and "$697" in follow.answer
            follow_events = read_events(vault.layout.turn_dir("alice", follow.turn) / "events.jsonl")
            assert not [e for e in follow_events if e.type == "tool_executed"]
            context = next(e.data for e in follow_events if e.type == "context_synthesized")
            assert any("/visit/" in s.doc_id for s in context.sources)
    assert verify_vault(vault, checks=default_checks()).ok


def test_failing_domain_is_recorded_and_skipped(vault: Vault) -> None:
    failing = [
        {"url": "{alt}/missing", "title": "Lenovo LOQ 15 deal", "content": "laptop"},
        {"url": "{alt}/article", "title": "Lenovo LOQ 15 review", "content": "laptop"},
        {"url": "{base}/product/microdata", "title": "Lenovo LOQ 15 at ShopA", "content": "laptop"},
    ]
    with WebFixtures(results=failing) as web:
        vault = configure(vault, web)
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="bob")
            rows = pq.read_table(vault.layout.indexes / "source_reliability.parquet").to_pylist()
            table = {r["domain"]: r for r in rows}
            assert (table["localhost"]["attempts"], table["localhost"]["successes"]) == (2, 0)
            assert table["localhost"]["reliability"] < vault.config.research.min_reliability
            assert table["127.0.0.1"]["successes"] == 1
            note = vault.root / "site_knowledge" / "localhost.md"
            assert note.exists() and "| 2 | 0 |" in note.read_text()
            before = web.snapshot()
            # another user, nothing remembered: researches again, but skips the failing domain
            again = pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="bill")
            after = web.snapshot()
            assert after["/missing"] == before["/missing"] and after["/article"] == before["/article"]
            assert after["/product/microdata"] == before["/product/microdata"] + 1
            events = read_events(vault.layout.turn_dir("bill", again.turn) / "events.jsonl")
            tool = next(
                e.data for e in events if e.type == "tool_executed" and e.data.tool == "internet_research"
            )
            assert "localhost" in tool.result["skipped_domains"]
            assert again.outcome == "APPROVE"
    hits = Memory(vault).search("localhost reliability", content_types=["site_pattern"])
    assert hits and hits[0]["doc_id"] == "site/localhost"


def test_site_knowledge_records_what_worked_after_a_failure(vault: Vault) -> None:
    with WebFixtures(results=[{"url": "{alt}/article", "title": "Lenovo LOQ 15", "content": "x"}]) as web:
        vault = configure(vault, web, revisions=0)  # one research call per turn
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="carol")
            web.results = [{"url": "{alt}/product/plain", "title": "HP Victus 15", "content": "laptop"}]
            pipeline.ask("What is the price of an HP Victus 15 laptop?", user="cleo")
    note = (vault.root / "site_knowledge" / "localhost.md").read_text()
    assert "## What worked" in note and "/product/plain" in note


@pytest.mark.parametrize("query", ["What is the price of a Lenovo LOQ 15 gaming laptop?"])
def test_research_unavailable_without_search_url(vault: Vault, query: str) -> None:
    with Pipeline(vault, backend=OfflineBackend()) as pipeline:
        result = pipeline.ask(query, user="dave")
    events = read_events(vault.layout.turn_dir("dave", result.turn) / "events.jsonl")
    assert not [e for e in events if e.type == "tool_executed" and e.data.tool == "internet_research"]
    plans = [e.data for e in events if e.type == "plan_created"]
    assert all(r.tool != "internet_research" for p in plans for r in p.tool_requests)


def test_a_rebuild_makes_the_reliability_table_again_from_what_the_fold_read(vault: Vault) -> None:
    """`pandafs rebuild` reads each turn's events once, in the learning fold, and builds the
    reliability table from what the fold kept: the extractions of the turns that have some,
    and one bit for each turn read.  Deleted, the table comes back as the turns made it,
    times included: a turn folds in at its own time live too (it took the clock at Save,
    which no rebuild can know)."""
    from pandafs.rebuild import rebuild_all

    with WebFixtures() as web:
        vault = configure(vault, web)
        with Pipeline(vault, backend=OfflineBackend()) as pipeline:
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="alice")
            pipeline.ask("Thanks, that is all for today", user="alice")
            pipeline.ask("What is the price of a Lenovo LOQ 15 gaming laptop?", user="bob")
    table = vault.layout.indexes / "source_reliability.parquet"
    before = sorted(pq.read_table(table).to_pylist(), key=lambda r: r["domain"])
    assert {r["domain"] for r in before} == {"127.0.0.1", "localhost"}
    table.unlink()
    rebuild_all(vault)
    assert sorted(pq.read_table(table).to_pylist(), key=lambda r: r["domain"]) == before


def test_what_the_fold_read_is_told_apart_turn_by_turn_and_user_by_user() -> None:
    from pandafs.research.reliability import TurnsRead

    read = TurnsRead()
    when = datetime(2026, 11, 21, tzinfo=UTC)
    read.add("alice", "turn_000007", None)
    read.add("alice", "turn_000008", ((), when))
    read.add("bob", "turn_001000", None)
    assert [read.has_read("alice", f"turn_{n:06d}") for n in (6, 7, 8, 9, 1000)] == [
        False,
        True,
        True,
        False,
        False,
    ]
    assert [read.has_read("bob", f"turn_{n:06d}") for n in (7, 999, 1000, 1001)] == [
        False,
        False,
        True,
        False,
    ]
    assert not read.has_read("carol", "turn_000007")
    assert read.found == {"alice/turn_000008": ((), when)}

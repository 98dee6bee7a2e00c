"""`internet.research`: search, pick reliable sources, fetch politely, extract, record.

One call leaves in the turn folder:

    research.md       the research document: summary, findings table, sources
    research.json     machine-readable: query, hits, visits, findings, outcomes
    webpage_cache/    one visit record per fetched page (`visits.py`)

Each page attempted yields an `ExtractionRecorded` event, which the caller records and folds
into the reliability table that ranks the next search."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from events.documents import DocumentMetadata, render_document, shorten
from events.fsio import atomic_write
from events.layout import validate_user_id
from events.render import wikilink
from events.schema import ExtractionRecorded
from events.stamps import format_ts
from pandafs.config import ResearchConfig

from .extract import Extraction, extract_page
from .fetch import FetchResult, PoliteFetcher, SearchFailed, SearchHit
from .visits import PAGE, VisitRecord, write_visit

__all__ = ["ResearchResult", "ResearchTool"]

DEFAULT_RELIABILITY = 0.5
FETCH_WORKERS = 4
MIN_TEXT_CHARS = 200
PRICING_WORDS = frozenset(
    "price prices pricing cost costs cheap cheaper cheapest buy deal deals budget under "
    "afford affordable usd eur gbp $ € £".split()
)
LISTING_ROWS = 10
RESEARCH_MD = "research.md"
RESEARCH_JSON = "research.json"
RESEARCH_VERSION = 1


@dataclass
class ResearchResult:
    query: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    visits: list[VisitRecord] = field(default_factory=list)
    outcomes: list[ExtractionRecorded] = field(default_factory=list)  # how each page went
    skipped_domains: list[str] = field(default_factory=list)
    summary: str = ""
    quality: float = 0.0
    error: str | None = None


@dataclass
class Candidate:
    hit: SearchHit
    reliability: float
    status: str = "not_fetched"  # fetched | failed | skipped


def required_fields_for(query: str, keywords: Sequence[str] = ()) -> tuple[str, ...]:
    """Fields a page must yield to count as a success: a price when money is asked about."""
    words = set(re.findall(r"[\w$€£]+", " ".join([query, *keywords]).lower()))
    if words & PRICING_WORDS or re.search(r"[$€£]\s?\d", query):
        return ("title", "price")
    return ("title",)


class ResearchTool:
    """Run `internet.research` calls (each with its own HTTP client, closed when it returns)."""

    def __init__(
        self, config: ResearchConfig, *, reliability: Callable[[str], float | None] | None = None
    ) -> None:
        self.config = config
        self._reliability = reliability

    def run(
        self,
        query: str,
        turn_dir: Path,
        *,
        user: str,
        topic: str,
        keywords: list[str],
        now: datetime,
        root: Path | None = None,
    ) -> ResearchResult:
        """Research `query` for `user` and write the results into `turn_dir` (inside the
        vault `root`, when given: each write is checked where it lands).  Without `[research]
        search_url` the search fails, and says so (the tool is offered only with one)."""
        validate_user_id(user)
        required = required_fields_for(query, keywords)
        with closing(PoliteFetcher(self.config)) as fetcher:
            try:
                hits = fetcher.search(query)
            except SearchFailed as exc:
                result = ResearchResult(query=query, summary=f"Search failed: {exc}", error=str(exc))
                write_record(turn_dir, result, [], user, topic, keywords, now, root=root, markdown=False)
                return result

            candidates, skipped = self._rank(hits)
            chosen = [c for c in candidates if c.status != "skipped"][: self.config.max_results]
            pages = self._fetch_all(fetcher, [c.hit.url for c in chosen])

        result = ResearchResult(query=query, skipped_domains=skipped)
        for candidate, (fetched, extraction) in zip(chosen, pages, strict=True):
            candidate.status = "fetched" if fetched.ok else "failed"
            page = {"domain": candidate.hit.domain, "url": fetched.url}
            if extraction is None:
                result.outcomes.append(ExtractionRecorded(**page, success=False, error=fetched.error))
                continue
            visit = write_visit(turn_dir, fetched, extraction, now, root=root)
            result.visits.append(visit)
            success = all(name in extraction.fields for name in required) and (
                extraction.items > 0 or len(extraction.text) >= MIN_TEXT_CHARS
            )
            fields = {"items": extraction.items, "fields_present": extraction.fields_present}
            outcome = ExtractionRecorded(**page, **fields, success=success, confidence=extraction.confidence)
            result.outcomes.append(outcome)
            result.findings.extend(findings(candidate, fetched, extraction, visit))

        good = [o.confidence for o in result.outcomes if o.success]
        result.quality = round(sum(good) / len(good), 3) if good else 0.0
        result.summary = summary(hits, chosen, result)
        write_record(turn_dir, result, candidates, user, topic, keywords, now, root=root)
        return result

    def _rank(self, hits: list[SearchHit]) -> tuple[list[Candidate], list[str]]:
        """Hits of reliable domains, most reliable first (search order breaks ties), then the
        others; and the domains skipped (one it does not know scores `DEFAULT_RELIABILITY`)."""
        scores: dict[str, float] = {}
        for domain in dict.fromkeys(hit.domain for hit in hits):
            score = self._reliability(domain) if self._reliability is not None else None
            scores[domain] = DEFAULT_RELIABILITY if score is None else float(score)
        skipped = [domain for domain, score in scores.items() if score < self.config.min_reliability]
        usable = [Candidate(hit, scores[hit.domain]) for hit in hits if hit.domain not in skipped]
        unused = [Candidate(hit, scores[hit.domain], "skipped") for hit in hits if hit.domain in skipped]
        return sorted(usable, key=lambda c: -c.reliability) + unused, skipped

    def _fetch_all(
        self, fetcher: PoliteFetcher, urls: list[str]
    ) -> list[tuple[FetchResult, Extraction | None]]:
        def one(url: str) -> tuple[FetchResult, Extraction | None]:
            fetched = fetcher.fetch(url)
            return fetched, extract_page(fetched.text) if fetched.ok else None

        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(urls)) or 1) as pool:  # no url: no thread
            return list(pool.map(one, urls))


# --- what a call leaves in the turn folder ---------------------------------------------------


def findings(
    candidate: Candidate, fetched: FetchResult, extraction: Extraction, visit: VisitRecord
) -> list[dict[str, Any]]:
    """One row per page, or one per product of a listing page (at most `LISTING_ROWS`)."""
    fields = extraction.fields
    page = {
        "domain": candidate.hit.domain,
        "url": fetched.url,
        "final_url": fetched.final_url,
        "page_type": extraction.page_type,
        "page_title": extraction.title or candidate.hit.title or fetched.final_url,
        "items": extraction.items,
        "confidence": extraction.confidence,
        "visit_id": visit.visit_id,
        "visit_path": visit.rel_path,
    }
    products = fields.get("products") or []
    if products:
        return [
            {
                "title": product.get("title") or page["page_title"],
                "price": product.get("price"),
                "availability": product.get("availability"),
                **page,
            }
            for product in products[:LISTING_ROWS]
        ]
    return [
        {
            "title": page["page_title"],
            "price": fields.get("price"),
            "price_value": fields.get("price_value"),
            "currency": fields.get("currency"),
            "availability": fields.get("availability"),
            **page,
        }
    ]


def summary(hits: list[SearchHit], chosen: list[Candidate], result: ResearchResult) -> str:
    if not hits:
        return f"The search for “{result.query}” returned no results."
    sites = {v.domain for v in result.visits}
    priced = sum(1 for f in result.findings if f.get("price"))
    parts = [
        f"Fetched {len(result.visits)} of {len(chosen)} pages from "
        f"{len(sites)} site{'s' if len(sites) != 1 else ''} for “{result.query}”; "
        f"{priced} price{'s' if priced != 1 else ''} found."
    ]
    failed = [o for o in result.outcomes if o.error]
    if failed:
        reasons = ", ".join(f"{o.domain} ({o.error})" for o in failed)
        parts.append(f"Failed: {reasons}.")
    if result.skipped_domains:
        parts.append(f"Skipped as unreliable: {', '.join(result.skipped_domains)}.")
    return " ".join(parts)


def write_record(
    turn_dir: Path,
    result: ResearchResult,
    candidates: list[Candidate],
    user: str,
    topic: str,
    keywords: list[str],
    now: datetime,
    *,
    root: Path | None = None,
    markdown: bool = True,
) -> None:
    """research.md (`markdown`: frontmatter, summary, findings table, sources), then
    research.json: everything the call saw (quality_score, summary, claims and webpage_cache
    among its keys); `root`: the vault, for the after-open check."""
    if markdown:
        content_types = ["research"]
        if any(v.page_type in ("product", "listing") for v in result.visits):
            content_types.append("vendor_info")
        if any(f.get("price") for f in result.findings):
            content_types.append("pricing")
        metadata = DocumentMetadata(
            id=f"{user}/{turn_dir.name}/research",
            user=user,
            title=shorten(f"Research: {result.query}", 100),
            primary_topic=topic or "general",
            keywords=list(keywords),
            content_types=content_types,
            scope="new",
            quality=result.quality,
            created_at=now,
            query=result.query,
            sources=sorted({v.domain for v in result.visits}),
        )
        atomic_write(turn_dir / RESEARCH_MD, render_document(metadata, _body(result)), root=root)
    data = {
        "version": RESEARCH_VERSION,
        "query": result.query,
        "user": user,
        "turn": turn_dir.name,
        "topic": topic,
        "keywords": list(keywords),
        "created_at": format_ts(now),
        "available": True,  # kept for readers of the format: a call without an endpoint has an `error`
        "error": result.error,
        "quality_score": result.quality,
        "summary": result.summary,
        "claims": [
            {"claim": f"{f['title']} @ {f['price']}", "source": f["domain"], "confidence": f["confidence"]}
            for f in result.findings
            if f.get("price")
        ],
        "webpage_cache": [v.visit_id for v in result.visits],
        "hits": [
            {**asdict(c.hit), "domain": c.hit.domain, "reliability": c.reliability, "status": c.status}
            for c in candidates
        ],
        "visits": [v.to_json() for v in result.visits],
        "findings": result.findings,
        "outcomes": [o.model_dump() for o in result.outcomes],
        "skipped_domains": result.skipped_domains,
    }
    atomic_write(turn_dir / RESEARCH_JSON, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n", root=root)


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "—"
    return " ".join(str(value).split()).replace("|", "\\|")


def _link(label: str, url: str) -> str:
    label = _cell(label).replace("[", "\\[").replace("]", "\\]")
    target = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"[{label}]({target})"


def _body(result: ResearchResult) -> str:
    lines = [f"# Research: {shorten(result.query, 200)}", "", result.summary, ""]
    if result.findings:
        lines += [
            "## Findings",
            "",
            "| # | Title | Price | Availability | Source |",
            "|---|---|---|---|---|",
        ]
        for number, f in enumerate(result.findings, 1):
            lines.append(
                f"| {number} | {_link(f['title'], f['final_url'])} | {_cell(f['price'])} "
                f"| {_cell(f['availability'])} | {_cell(f['domain'])} |"
            )
        lines.append("")
    if result.visits:
        lines += ["## Sources", ""]
        for number, visit in enumerate(result.visits, 1):
            cached = wikilink(f"{visit.rel_path}/{PAGE}", "cached page")
            label = visit.title or visit.final_url
            lines.append(
                f"{number}. {_link(label, visit.final_url)} — {visit.domain}, {visit.page_type}, "
                f"extraction quality {visit.extraction_quality:.2f}, {cached}"
            )
        lines.append("")
    failed = [o for o in result.outcomes if o.error]
    if failed or result.skipped_domains:
        lines += ["## Not used", ""]
        lines += [f"- <{o.url}> — {o.error}" for o in failed]
        lines += [f"- `{d}` — source reliability below threshold" for d in result.skipped_domains]
        lines.append("")
    return "\n".join(lines)

"""`internet.research`: search, pick reliable sources, fetch politely, extract, record.

One call leaves in the turn folder:

    research.md       the research document: summary, findings table, sources
    research.json     machine-readable: query, hits, visits, findings, outcomes
    webpage_cache/    one visit record per fetched page (`visits.py`)

Each page attempted yields an `ExtractionOutcome`, which the caller records and folds into
the reliability table that ranks the next search."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from events.layout import validate_user_id
from pandafs.config import ResearchConfig

from .extract import Extraction, extract_page
from .fetch import FetchResult, PoliteFetcher, SearchFailed, SearchHit
from .report import (
    Candidate,
    ExtractionOutcome,
    ResearchResult,
    findings,
    summary,
    write_json,
    write_markdown,
)
from .visits import write_visit

__all__ = ["NOT_CONFIGURED", "ResearchTool"]

NOT_CONFIGURED = "internet.research is not configured (set [research] search_url in pandafs.toml)"
DEFAULT_RELIABILITY = 0.5
FETCH_WORKERS = 4
MIN_TEXT_CHARS = 200
PRICING_WORDS = frozenset(
    "price prices pricing cost costs cheap cheaper cheapest buy deal deals budget under "
    "afford affordable usd eur gbp $ € £".split()
)


def required_fields_for(query: str, keywords: Sequence[str] = ()) -> tuple[str, ...]:
    """Fields a page must yield to count as a success: a price when money is asked about."""
    words = set(re.findall(r"[\w$€£]+", " ".join([query, *keywords]).lower()))
    if words & PRICING_WORDS or re.search(r"[$€£]\s?\d", query):
        return ("title", "price")
    return ("title",)


class ResearchTool:
    """Run `internet.research` calls.  Close it (or use `with`)."""

    def __init__(
        self, config: ResearchConfig, *, reliability: Callable[[str], float | None] | None = None
    ) -> None:
        self.config = config
        self._fetcher: PoliteFetcher | None = None
        self._reliability = reliability

    @property
    def available(self) -> bool:
        return bool(self.config.search_url)

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None

    def __enter__(self) -> ResearchTool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _get_fetcher(self) -> PoliteFetcher:
        if self._fetcher is None:
            self._fetcher = PoliteFetcher(self.config)
        return self._fetcher

    def reliability_of(self, domain: str) -> float:
        """`reliability(domain)`, or `DEFAULT_RELIABILITY` for a domain it does not know."""
        score = self._reliability(domain) if self._reliability is not None else None
        return DEFAULT_RELIABILITY if score is None else float(score)

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
        vault `root`, when given: each write is checked where it lands)."""
        if not self.available:
            return ResearchResult(available=False, query=query, summary=NOT_CONFIGURED)
        validate_user_id(user)
        required = required_fields_for(query, keywords)
        fetcher = self._get_fetcher()
        try:
            hits = fetcher.search(query)
        except SearchFailed as exc:
            result = ResearchResult(
                available=True, query=query, summary=f"Search failed: {exc}", error=str(exc)
            )
            result.research_json = write_json(turn_dir, result, [], user, topic, keywords, now, root=root)
            return result

        candidates, skipped = self._rank(hits)
        usable = [c for c in candidates if c.status != "skipped"]
        chosen = usable[: self.config.max_results]
        pages = self._fetch_all(fetcher, [c.hit.url for c in chosen])

        result = ResearchResult(available=True, query=query, skipped_domains=skipped)
        for candidate, (fetched, extraction) in zip(chosen, pages, strict=True):
            candidate.status = "fetched" if fetched.ok else "failed"
            if extraction is None:
                failed = ExtractionOutcome(candidate.domain, fetched.url, False, 0, [], 0.0, fetched.error)
                result.outcomes.append(failed)
                continue
            visit = write_visit(turn_dir, fetched, extraction, now, root=root)
            result.visits.append(visit)
            success = all(name in extraction.fields for name in required) and (
                extraction.items > 0 or len(extraction.text) >= MIN_TEXT_CHARS
            )
            fields = list(extraction.fields_present)
            outcome = ExtractionOutcome(
                candidate.domain, fetched.url, success, extraction.items, fields, extraction.confidence
            )
            result.outcomes.append(outcome)
            result.findings.extend(findings(candidate, fetched, extraction, visit))

        good = [o.confidence for o in result.outcomes if o.success]
        result.quality = round(sum(good) / len(good), 3) if good else 0.0
        result.summary = summary(hits, chosen, result)
        result.research_md = write_markdown(turn_dir, result, user, topic, keywords, now, root=root)
        result.research_json = write_json(turn_dir, result, candidates, user, topic, keywords, now, root=root)
        return result

    def _rank(self, hits: list[SearchHit]) -> tuple[list[Candidate], list[str]]:
        """Hits of reliable domains, most reliable first (search order breaks ties)."""
        candidates: list[Candidate] = []
        skipped: list[str] = []
        scores: dict[str, float] = {}
        for hit in hits:
            domain = hit.domain
            if domain not in scores:
                scores[domain] = self.reliability_of(domain)
            candidate = Candidate(hit, domain, scores[domain])
            if candidate.reliability < self.config.min_reliability:
                candidate.status = "skipped"
                if domain not in skipped:
                    skipped.append(domain)
            candidates.append(candidate)
        usable = [c for c in candidates if c.status != "skipped"]
        usable.sort(key=lambda c: -c.reliability)
        return usable + [c for c in candidates if c.status == "skipped"], skipped

    def _fetch_all(
        self, fetcher: PoliteFetcher, urls: list[str]
    ) -> list[tuple[FetchResult, Extraction | None]]:
        def one(url: str) -> tuple[FetchResult, Extraction | None]:
            fetched = fetcher.fetch(url)
            if not fetched.ok:
                return fetched, None
            return fetched, extract_page(fetched.text)

        if not urls:
            return []
        with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(urls))) as pool:
            return list(pool.map(one, urls))

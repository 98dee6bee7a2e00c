"""What one research call found: how each page went, one finding row per page or product,
and the result with its one-line summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .extract import Extraction
from .fetch import FetchResult, SearchHit
from .visits import VisitRecord

__all__ = ["Candidate", "ExtractionOutcome", "ResearchResult", "findings", "summary"]

LISTING_ROWS = 10


@dataclass(frozen=True)
class ExtractionOutcome:
    """How one page went: the unit of per-domain source reliability."""

    domain: str
    url: str
    success: bool
    items: int
    fields_present: list[str]
    confidence: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "url": self.url,
            "success": self.success,
            "items": self.items,
            "fields_present": self.fields_present,
            "confidence": self.confidence,
            "error": self.error,
        }


@dataclass
class ResearchResult:
    available: bool
    query: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    visits: list[VisitRecord] = field(default_factory=list)
    outcomes: list[ExtractionOutcome] = field(default_factory=list)
    skipped_domains: list[str] = field(default_factory=list)
    research_md: Path | None = None
    summary: str = ""
    research_json: Path | None = None
    quality: float = 0.0
    error: str | None = None


@dataclass
class Candidate:
    hit: SearchHit
    domain: str
    reliability: float
    status: str = "not_fetched"


def findings(
    candidate: Candidate, fetched: FetchResult, extraction: Extraction, visit: VisitRecord
) -> list[dict[str, Any]]:
    """One row per page, or one per product of a listing page (at most `LISTING_ROWS`)."""
    fields = extraction.fields
    page = {
        "domain": candidate.domain,
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

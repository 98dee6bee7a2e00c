"""`internet.research`: polite fetching, page extraction, visit records, the tool.

fetch.py     PoliteFetcher (SearxNG search, bounded and per-domain-polite GETs)
extract.py   extract_page (readable text, title / price / availability)
visits.py    visit records in turn_N/webpage_cache/{url_slug}/, find_visits for reuse
tool.py      ResearchTool.run → research.md, research.json, ExtractionOutcome per page
"""

from .extract import Extraction, extract_page, format_price, parse_amount
from .fetch import FetchResult, PoliteFetcher, ResearchError, SearchFailed, SearchHit, domain_of
from .tool import (
    DEFAULT_RELIABILITY,
    NOT_CONFIGURED,
    ExtractionOutcome,
    ResearchResult,
    ResearchTool,
    required_fields_for,
)
from .visits import VisitRecord, find_visits, load_visits, url_slug, write_visit

__all__ = [
    "DEFAULT_RELIABILITY",
    "NOT_CONFIGURED",
    "Extraction",
    "ExtractionOutcome",
    "FetchResult",
    "PoliteFetcher",
    "ResearchError",
    "ResearchResult",
    "ResearchTool",
    "SearchFailed",
    "SearchHit",
    "VisitRecord",
    "domain_of",
    "extract_page",
    "find_visits",
    "format_price",
    "load_visits",
    "parse_amount",
    "required_fields_for",
    "url_slug",
    "write_visit",
]

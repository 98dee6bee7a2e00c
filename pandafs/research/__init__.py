"""`internet.research`: polite fetching, page extraction, visit records, the tool.

fetch.py     PoliteFetcher (SearxNG search, bounded and per-domain-polite GETs)
extract.py   extract_page (readable text, title / price / availability, confidence)
markup.py    the HTML reader: text blocks, meta tags, microdata, JSON-LD
prices.py    prices and availability from markup or text, one display form
visits.py    visit records in turn_N/webpage_cache/{url_slug}/, find_visits for reuse
tool.py      ResearchTool.run: search, rank by reliability, fetch, extract, record
result.py    ExtractionOutcome per page, finding rows, ResearchResult
report.py    research.md and research.json in the turn folder
"""

from .extract import Extraction, extract_page
from .fetch import FetchResult, PoliteFetcher, ResearchError, SearchFailed, SearchHit, domain_of
from .prices import format_price, parse_amount
from .result import ExtractionOutcome, ResearchResult
from .tool import DEFAULT_RELIABILITY, NOT_CONFIGURED, ResearchTool, required_fields_for
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

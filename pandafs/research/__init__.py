"""`internet.research`: polite fetching, page extraction, visit records, the tool.

fetch.py     PoliteFetcher (SearxNG search, bounded and per-domain-polite GETs)
extract.py   extract_page (readable text, title / price / availability, confidence)
markup.py    the HTML reader: text blocks, meta tags, microdata, JSON-LD
prices.py    prices and availability from markup or text, one display form
visits.py    visit records in turn_N/webpage_cache/{url_slug}/, find_visits for reuse
tool.py      ResearchTool.run: search, rank by reliability, fetch, extract, record
result.py    ExtractionOutcome per page, finding rows, ResearchResult
report.py    research.md and research.json in the turn folder

Exports load on first use (`events.lazy`): a rebuild reads the reliability table
(`research.reliability`) and needs neither httpx nor the page reader.
"""

from events.lazy import lazy_exports

_EXPORTS = {
    "Extraction": ".extract",
    "extract_page": ".extract",
    "FetchResult": ".fetch",
    "PoliteFetcher": ".fetch",
    "ResearchError": ".fetch",
    "SearchFailed": ".fetch",
    "SearchHit": ".fetch",
    "domain_of": ".fetch",
    "format_price": ".prices",
    "parse_amount": ".prices",
    "ExtractionOutcome": ".result",
    "ResearchResult": ".result",
    "DEFAULT_RELIABILITY": ".tool",
    "NOT_CONFIGURED": ".tool",
    "ResearchTool": ".tool",
    "required_fields_for": ".tool",
    "VisitRecord": ".visits",
    "find_visits": ".visits",
    "load_visits": ".visits",
    "url_slug": ".visits",
    "write_visit": ".visits",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

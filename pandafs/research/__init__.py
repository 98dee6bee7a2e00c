"""`internet.research`: polite fetching, page extraction, visit records, the tool.

fetch.py     PoliteFetcher (SearxNG search, bounded and per-domain-polite GETs)
extract.py   extract_page (readable text, title / price / availability, confidence)
markup.py    the HTML reader: text blocks, meta tags, microdata, JSON-LD
prices.py    prices and availability from markup or text, one display form
visits.py    visit records in turn_N/webpage_cache/{url_slug}/, find_visits for reuse
tool.py      ResearchTool.run: search, rank by reliability, fetch, extract, record
result.py    ExtractionOutcome per page, finding rows, ResearchResult
report.py    research.md and research.json in the turn folder

Import from the module that defines each name: a rebuild reads the reliability table
(`research.reliability`) and needs neither httpx nor the page reader.
"""

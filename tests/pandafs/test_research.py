"""internet.research against a real loopback web (tests/support/web_fixtures.py)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from events.documents import DocumentMetadata, parse_document
from events.layout import Layout
from pandafs.config import ResearchConfig
from pandafs.research.extract import extract_page, parse_amount
from pandafs.research.fetch import CHUNK_BYTES, PoliteFetcher, SearchFailed
from pandafs.research.tool import ResearchResult, ResearchTool
from pandafs.research.visits import CACHE_DIR, find_visits, load_visits, url_slug
from tests.support.web_fixtures import ARTICLE, LISTING, MICRODATA, WebFixtures

NOW = datetime(2026, 11, 21, 22, 0, tzinfo=UTC)
TIMEOUT_S = 0.5


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def web() -> Iterator[WebFixtures]:
    with WebFixtures(slow_s=10.0) as server:
        yield server


def make_config(web: WebFixtures, **overrides: object) -> ResearchConfig:
    values: dict[str, object] = {
        "search_url": web.search_url,
        "timeout_s": TIMEOUT_S,
        "max_page_bytes": 100_000,
        "per_domain_interval_s": 0.02,
        "user_agent": "PandaFS-research/test (+https://example.invalid/pandafs)",
    }
    values.update(overrides)
    return ResearchConfig.model_validate(values)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "vault")


# -- search ----------------------------------------------------------------------------


def test_search_parses_searxng_json(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        hits = fetcher.search("gaming laptop")
    assert [h.url for h in hits] == [
        web.url("/product/microdata"),
        web.url("/product/og"),
        web.url("/product/plain", alt=True),
    ]
    assert hits[0].title == "Lenovo LOQ 15 at ShopA"
    assert hits[0].snippet == "Lenovo LOQ 15 gaming laptop with RTX 4050"
    assert hits[0].engine == "fixture"
    assert [h.domain for h in hits] == ["127.0.0.1", "127.0.0.1", "localhost"]
    (request,) = web.requests
    assert "format=json" in request.query and "q=gaming+laptop" in request.query


def test_search_drops_duplicates_and_non_http_results(web: WebFixtures) -> None:
    web.results = [
        {"url": "{base}/article", "title": "A", "content": "a"},
        {"url": "{base}/article#top", "title": "A again", "content": "a"},
        {"url": "ftp://example.invalid/file", "title": "ftp", "content": ""},
        {"title": "no url"},
    ]
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        hits = fetcher.search("anything")
    assert [h.url for h in hits] == [web.url("/article")]


def test_search_endpoint_errors_raise_search_failed(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web, search_url=web.url("/missing")))) as fetcher:
        with pytest.raises(SearchFailed, match="HTTP 404"):
            fetcher.search("x")
    with closing(PoliteFetcher(make_config(web, search_url=web.url("/article")))) as fetcher:
        with pytest.raises(SearchFailed, match="JSON"):
            fetcher.search("x")
    with closing(PoliteFetcher(make_config(web, search_url=web.url("/huge")))) as fetcher:
        with pytest.raises(SearchFailed, match="larger than max_page_bytes"):
            fetcher.search("x")


# -- fetch + extract -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "title", "price", "currency", "availability"),
    [
        ("/product/microdata", "Lenovo LOQ 15 Gaming Laptop", "$697.00", "USD", "In stock"),
        ("/product/og", "ASUS TUF Gaming A15", "$749.99", "USD", "Out of stock"),
        ("/product/plain", "HP Victus 15", "€799.00", "EUR", "In stock"),
    ],
)
def test_fetch_and_extract_each_page_shape(
    web: WebFixtures, path: str, title: str, price: str, currency: str, availability: str
) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        result = fetcher.fetch(web.url(path))
    assert result.ok, result.error
    assert (result.status, result.truncated) == (200, False)
    assert result.content_type.startswith("text/html")
    assert result.bytes_read == len(result.text.encode("utf-8"))
    extraction = extract_page(result.text)
    assert extraction.title == title
    assert extraction.fields["price"] == price
    assert extraction.fields["currency"] == currency
    assert extraction.fields["availability"] == availability
    assert extraction.page_type == "product"
    assert {"title", "price", "availability"} <= set(extraction.fields_present)
    assert 0.6 <= extraction.confidence <= 1.0


def test_extraction_drops_navigation_scripts_and_footer() -> None:
    extraction = extract_page(MICRODATA)
    assert extraction.text.startswith("# Lenovo LOQ 15 Gaming Laptop")
    assert "## Specifications" in extraction.text
    assert "- GPU: NVIDIA RTX 4050\n- RAM: 16GB DDR5" in extraction.text
    for dropped in ("Deals from", "Gift cards", "tracking", "$999", "color: red"):
        assert dropped not in extraction.text
    assert extraction.items == 1


def test_extraction_of_a_listing_counts_its_products() -> None:
    extraction = extract_page(LISTING)
    assert extraction.page_type == "listing"
    assert extraction.title == "Gaming laptops under $1000"
    assert extraction.items == 3
    assert [p["price"] for p in extraction.fields["products"]] == ["$649.99", "$599.00", "$899.00"]
    assert extraction.fields["products"][1]["availability"] == "Out of stock"


@pytest.mark.parametrize(
    ("snippet", "price", "currency"),
    [
        ("<p>Only 12.34 USD today</p>", "$12.34", "USD"),
        ("<p>Jetzt €12,34</p>", "€12.34", "EUR"),
        ("<p>Preis: 1.299,99 €</p>", "€1,299.99", "EUR"),
        ("<p>Now $1,299.99 (was $1,499.99)</p>", "$1,299.99", "USD"),
        ('<span itemprop="price" content="42">42</span>', "$42.00", "USD"),
    ],
)
def test_price_patterns(snippet: str, price: str, currency: str) -> None:
    html = f"<html><head><title>Thing</title></head><body><h1>Thing</h1>{snippet}</body></html>"
    if "itemprop" in snippet:
        html = html.replace("<h1>", '<meta itemprop="priceCurrency" content="USD"><h1>')
    extraction = extract_page(html)
    assert extraction.fields["price"] == price
    assert extraction.fields["currency"] == currency


def test_parse_amount() -> None:
    assert parse_amount("1,299") == 1299.0
    assert parse_amount("12,5") == 12.5
    assert parse_amount("1.234.567,89") == 1234567.89
    assert parse_amount("abc") is None


def test_extraction_of_text_without_product_fields() -> None:
    extraction = extract_page("<html><body><h1>Notes</h1><p>" + "words " * 80)
    assert extraction.fields_present == ["title"]
    assert extraction.items == 0
    assert extraction.page_type == "article"
    assert extraction.confidence < 0.4
    assert extract_page("").confidence == 0.0


def test_slow_page_times_out_within_the_timeout(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        started = time.monotonic()
        result = fetcher.fetch(web.url("/slow"))
        took = time.monotonic() - started
    assert result.error == "timeout"
    assert result.text == ""
    assert TIMEOUT_S * 0.9 <= took < TIMEOUT_S + 1.0


def test_http_error_is_reported_not_raised(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        result = fetcher.fetch(web.url("/missing"))
    assert (result.error, result.status, result.text) == ("HTTP 404", 404, "")


def test_redirects_are_followed_and_loops_detected(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        moved = fetcher.fetch(web.url("/redirect"))
        loop = fetcher.fetch(web.url("/loop-a"))
    assert moved.ok and moved.final_url == web.url("/product/og")
    assert moved.url == web.url("/redirect")
    assert loop.error == "redirect loop"
    assert web.hits["/loop-a"] == 1 and web.hits["/loop-b"] == 1


def test_too_many_redirects(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web, max_redirects=0))) as fetcher:
        result = fetcher.fetch(web.url("/redirect"))
    assert result.error == "too many redirects"
    assert web.hits["/product/og"] == 0


def test_huge_page_is_cut_at_the_size_limit(web: WebFixtures) -> None:
    limit = 100_000
    with closing(PoliteFetcher(make_config(web, max_page_bytes=limit))) as fetcher:
        result = fetcher.fetch(web.url("/huge"))
    assert result.ok and result.truncated
    assert limit - CHUNK_BYTES <= result.bytes_read <= limit + CHUNK_BYTES
    assert len(result.text) <= limit + CHUNK_BYTES
    assert extract_page(result.text).title == "Huge page"


def test_page_of_exactly_the_limit_is_not_truncated(web: WebFixtures) -> None:
    size = len(ARTICLE.encode())
    with closing(PoliteFetcher(make_config(web, max_page_bytes=size))) as fetcher:
        exact = fetcher.fetch(web.url("/article"))
    with closing(PoliteFetcher(make_config(web, max_page_bytes=size - 1))) as fetcher:
        short = fetcher.fetch(web.url("/article"))
    assert (exact.truncated, exact.bytes_read) == (False, size)
    assert (short.truncated, short.bytes_read) == (True, size - 1)


def test_non_html_is_refused(web: WebFixtures) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        result = fetcher.fetch(web.url("/file.pdf"))
        bad = fetcher.fetch("ftp://example.invalid/x")
    assert result.error == "not HTML (application/pdf)"
    assert result.text == "" and result.bytes_read == 0
    assert bad.error == "unsupported scheme ftp"


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://[::1", "bad url"),
        ("http://", "bad url"),
        ("not a url", "unsupported scheme (none)"),
        ("file:///etc/passwd", "unsupported scheme file"),
    ],
)
def test_bad_urls_are_reported_not_raised(web: WebFixtures, url: str, error: str) -> None:
    with closing(PoliteFetcher(make_config(web))) as fetcher:
        result = fetcher.fetch(url)
    assert (result.error, result.url, result.text) == (error, url, "")


def test_connection_refused_is_reported(web: WebFixtures) -> None:
    config = make_config(web, timeout_s=2.0)
    port = web.port
    web.stop()
    with closing(PoliteFetcher(config)) as fetcher:
        result = fetcher.fetch(f"http://127.0.0.1:{port}/article")
    assert result.error == "connection failed"


def test_every_request_carries_the_configured_user_agent(web: WebFixtures) -> None:
    config = make_config(web)
    with closing(PoliteFetcher(config)) as fetcher:
        fetcher.search("laptop")
        fetcher.fetch(web.url("/redirect"))
        fetcher.fetch(web.url("/article", alt=True))
    assert len(web.requests) == 4
    assert {r.user_agent for r in web.requests} == {config.user_agent}


def _fetch_together(fetcher: PoliteFetcher, urls: list[str]) -> None:
    threads = [threading.Thread(target=fetcher.fetch, args=(url,)) for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)


def test_requests_to_one_domain_are_spaced_by_the_interval(web: WebFixtures) -> None:
    interval = 0.5
    config = make_config(web, per_domain_interval_s=interval)
    with closing(PoliteFetcher(config)) as fetcher:
        _fetch_together(fetcher, [web.url("/article"), web.url("/article")])
    with closing(PoliteFetcher(config)) as fetcher:
        _fetch_together(fetcher, [web.url("/listing"), web.url("/listing", alt=True)])
    first, second = web.times("/article")
    assert second - first >= interval - 0.05
    # another domain has its own clock: no wait between 127.0.0.1 and localhost
    here, there = web.times("/listing")
    assert abs(there - here) < interval / 2


def test_per_domain_concurrency_limit(web: WebFixtures) -> None:
    config = make_config(web, per_domain_interval_s=0.0, timeout_s=0.4)
    with closing(PoliteFetcher(config)) as fetcher:
        _fetch_together(fetcher, [web.url("/slow"), web.url("/slow")])
        same_host = web.times("/slow")
        _fetch_together(fetcher, [web.url("/slow"), web.url("/slow", alt=True)])
        two_hosts = web.times("/slow")[2:]
    # one request in flight per domain: the second waits for the first to time out
    assert same_host[1] - same_host[0] >= 0.35
    assert abs(two_hosts[1] - two_hosts[0]) < 0.2


# -- the tool --------------------------------------------------------------------------


def run_tool(
    web: WebFixtures,
    layout: Layout,
    *,
    turn: str = "turn_000001",
    query: str = "cheap gaming laptop price",
    config: ResearchConfig | None = None,
    reliability: Callable[[str], float | None] | None = None,
) -> ResearchResult:
    return ResearchTool(config or make_config(web), reliability=reliability).run(
        query,
        layout.turn_dir("alice", turn),
        user="alice",
        topic="electronics.laptop",
        keywords=["laptop", "gaming"],
        now=NOW,
    )


def test_tool_run_writes_research_documents_and_visit_records(web: WebFixtures, layout: Layout) -> None:
    result = run_tool(web, layout)
    turn_dir = layout.turn_dir("alice", "turn_000001")
    assert result.error is None
    assert [o.success for o in result.outcomes] == [True, True, True]
    assert [f["price"] for f in result.findings] == ["$697.00", "$749.99", "€799.00"]
    assert [f["domain"] for f in result.findings] == ["127.0.0.1", "127.0.0.1", "localhost"]

    text = (turn_dir / "research.md").read_text(encoding="utf-8")
    parsed = parse_document(text, turn_dir / "research.md")
    meta = DocumentMetadata.model_validate(parsed.frontmatter)
    assert meta.id == "alice/turn_000001/research"
    assert (meta.user, meta.scope, meta.primary_topic) == ("alice", "new", "electronics.laptop")
    assert meta.keywords == ["laptop", "gaming"]
    assert meta.content_types == ["research", "vendor_info", "pricing"]
    assert meta.created_at == NOW
    expected_quality = sum(o.confidence for o in result.outcomes) / 3
    assert meta.quality == pytest.approx(expected_quality, abs=0.001)
    body = parsed.body
    assert "| Title | Price | Availability | Source |" in body
    assert f"[Lenovo LOQ 15 Gaming Laptop]({web.url('/product/microdata')})" in body
    assert "| $749.99 | Out of stock | 127.0.0.1 |" in body
    assert "[[users/alice/turns/turn_000001/webpage_cache/" in body

    data = orjson.loads((turn_dir / "research.json").read_bytes())
    assert data["query"] == "cheap gaming laptop price"
    assert data["quality_score"] == result.quality
    assert len(data["hits"]) == 3 and {h["status"] for h in data["hits"]} == {"fetched"}
    assert data["webpage_cache"] == [v.visit_id for v in result.visits]
    assert data["claims"][0] == {
        "claim": "Lenovo LOQ 15 Gaming Laptop @ $697.00",
        "source": "127.0.0.1",
        "confidence": result.outcomes[0].confidence,
    }
    assert len(data["outcomes"]) == 3 and len(data["findings"]) == 3

    visits = load_visits(turn_dir, root=layout.root)
    assert {v.visit_id for v in visits} == {v.visit_id for v in result.visits}
    first = result.visits[0]
    assert first.rel_path.startswith("users/alice/turns/turn_000001/webpage_cache/")
    assert first.extracted_data["availability"] == "In stock"
    assert sorted(p.name for p in first.path.iterdir()) == [
        "extracted_data.json",
        "manifest.json",
        "page_content.md",
    ]
    seed_record = orjson.loads((first.path / "extracted_data.json").read_bytes())
    assert set(seed_record) == {
        "visit_id",
        "url",
        "visited_at",
        "page_type",
        "extracted_data",
        "extraction_quality",
    }
    assert seed_record["extracted_data"]["price"] == "$697.00"
    page = parse_document((first.path / "page_content.md").read_text(encoding="utf-8"))
    assert page.frontmatter["url"] == web.url("/product/microdata")
    assert "RTX 4050" in page.body


def test_a_follow_up_in_russian_reuses_the_page_it_visited(web: WebFixtures, layout: Layout) -> None:
    """Visit records are matched by the words of their titles; until 2026-11-24 only a-z
    made words, so a follow-up in Russian had none and fetched the page again."""
    web.results = [
        {"url": "{base}/product/ru", "title": "Игровой ноутбук", "content": "", "engine": "fixture"}
    ]
    first = run_tool(web, layout, query="игровой ноутбук цена")
    assert [o.error for o in first.outcomes] == [None] and len(first.visits) == 1
    found = find_visits(layout, "alice", "Игровой ноутбук?")
    assert [v.visit_id for v in found] == [first.visits[0].visit_id]
    assert find_visits(layout, "alice", "стиральная машина") == []


def test_failed_pages_become_outcomes_not_exceptions(web: WebFixtures, layout: Layout) -> None:
    web.results = [
        {"url": "{base}/missing", "title": "gone", "content": ""},
        {"url": "{base}/loop-a", "title": "loop", "content": ""},
        {"url": "{alt}/file.pdf", "title": "pdf", "content": ""},
        {"url": "{alt}/article", "title": "article", "content": ""},
    ]
    result = run_tool(web, layout, query="how to pick a laptop")
    errors = {o.url.rsplit("/", 1)[1]: o.error for o in result.outcomes}
    assert errors == {
        "missing": "HTTP 404",
        "loop-a": "redirect loop",
        "file.pdf": "not HTML (application/pdf)",
        "article": None,
    }
    assert [o.success for o in result.outcomes] == [False, False, False, True]
    assert len(result.visits) == 1 and result.visits[0].page_type in ("article", "page")
    assert result.findings[0]["price"] is None
    research_md = layout.turn_dir("alice", "turn_000001") / "research.md"
    meta = parse_document(research_md.read_text(encoding="utf-8")).frontmatter
    assert meta["content_types"] == ["research"]
    assert "HTTP 404" in result.summary and "## Not used" in research_md.read_text()


def test_unreliable_domain_is_skipped(web: WebFixtures, layout: Layout) -> None:
    scores = {"localhost": 0.1}  # 127.0.0.1 is unknown: 0.5
    result = run_tool(web, layout, reliability=scores.get)
    assert result.skipped_domains == ["localhost"]
    assert web.hits["/product/plain"] == 0
    assert {o.domain for o in result.outcomes} == {"127.0.0.1"}
    data = orjson.loads((layout.turn_dir("alice", "turn_000001") / "research.json").read_bytes())
    skipped = [h for h in data["hits"] if h["status"] == "skipped"]
    assert [(h["domain"], h["reliability"]) for h in skipped] == [("localhost", 0.1)]
    assert {h["reliability"] for h in data["hits"] if h["status"] == "fetched"} == {0.5}
    assert "Skipped as unreliable: localhost." in result.summary


def test_more_reliable_domains_are_fetched_first(web: WebFixtures, layout: Layout) -> None:
    scores = {"127.0.0.1": 0.3, "localhost": 0.95}
    config = make_config(web, max_results=1)
    result = run_tool(web, layout, config=config, reliability=scores.__getitem__)
    assert [f["title"] for f in result.findings] == ["HP Victus 15"]
    assert web.hits["/product/microdata"] == 0 and web.hits["/product/og"] == 0
    data = orjson.loads((layout.turn_dir("alice", "turn_000001") / "research.json").read_bytes())
    assert [h["status"] for h in data["hits"]] == ["fetched", "not_fetched", "not_fetched"]


def test_a_call_without_a_search_endpoint_says_so_and_fetches_nothing(tmp_path: Path) -> None:
    turn_dir = tmp_path / "users" / "alice" / "turns" / "turn_000001"
    result = ResearchTool(ResearchConfig()).run(
        "laptops", turn_dir, user="alice", topic="t", keywords=[], now=NOW
    )
    assert result.error == "no search endpoint configured ([research] search_url)"
    assert result.visits == [] and not (turn_dir / "research.md").exists()


def test_search_failure_is_recorded(web: WebFixtures, layout: Layout) -> None:
    config = make_config(web, search_url=web.url("/missing"))
    result = run_tool(web, layout, config=config)
    assert result.error == "search endpoint answered HTTP 404"
    assert not (layout.turn_dir("alice", "turn_000001") / "research.md").exists()
    data = orjson.loads((layout.turn_dir("alice", "turn_000001") / "research.json").read_bytes())
    assert data["error"] == result.error and data["hits"] == []


def test_follow_up_reuses_visit_records_without_requests(web: WebFixtures, layout: Layout) -> None:
    first = run_tool(web, layout)
    layout.turn_dir("alice", "turn_000002").mkdir(parents=True)  # a later turn, no research
    before = web.snapshot()

    by_words = find_visits(layout, "alice", "is that Lenovo LOQ still in stock?")
    by_list = find_visits(layout, "alice", ["asus", "tuf"])

    assert web.snapshot() == before  # answered from disk: no new request
    assert [v.visit_id for v in by_words] == [first.visits[0].visit_id]
    assert by_words[0].extracted_data["price"] == "$697.00"
    assert by_words[0].extracted_data["availability"] == "In stock"
    assert [v.title for v in by_list] == ["ASUS TUF Gaming A15"]
    assert find_visits(layout, "alice", "dishwasher reviews") == []
    assert find_visits(layout, "bob", "Lenovo") == []
    assert find_visits(layout, "alice", "Lenovo", recent_turns=1) == []  # only turn 2 scanned


def test_find_visits_returns_the_newest_visit_of_a_url(web: WebFixtures, layout: Layout) -> None:
    run_tool(web, layout, turn="turn_000001")
    second = run_tool(web, layout, turn="turn_000003")
    found = find_visits(layout, "alice", "Lenovo LOQ")
    assert [v.visit_id for v in found] == [second.visits[0].visit_id]  # once, the newer visit
    assert "turn_000003" in found[0].rel_path


def test_url_slug_is_stable_safe_and_short() -> None:
    url = "https://www.bestbuy.com/site/lenovo-loq-15/6575?skuId=6575&intl=nosplash#reviews"
    slug = url_slug(url)
    assert slug == url_slug(url)
    assert slug.startswith("bestbuy.com_site-lenovo-loq-15-6575-skuid")
    assert len(slug) <= 80
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-")
    long = url_slug("http://example.com/" + "a/" * 500)
    assert len(long) <= 80
    assert url_slug("http://example.com/a") != url_slug("http://example.com/A")
    odd = url_slug("http://[::1]:8080/../x")
    assert ".." not in odd and "/" not in odd and not odd.startswith(".")


def test_find_visits_never_follows_a_link(web: WebFixtures, layout: Layout, tmp_path: Path) -> None:
    """A link in alice's turns — to bob's turn, to a folder outside the vault, or a linked
    cache, visit folder or manifest inside her own turn — brings no visit back."""
    bob = layout.turn_dir("bob", "turn_000001")
    ResearchTool(make_config(web)).run(
        "cheap gaming laptop price", bob, user="bob", topic="electronics.laptop", keywords=[], now=NOW
    )
    outside = tmp_path / "outside"
    shutil.copytree(bob, outside)
    turns = layout.turns_dir("alice")
    turns.mkdir(parents=True)
    (turns / "turn_000001").symlink_to(bob, target_is_directory=True)
    (turns / "turn_000002").symlink_to(outside, target_is_directory=True)
    own = turns / "turn_000003"
    (own / CACHE_DIR).mkdir(parents=True)
    visit = next((bob / CACHE_DIR).iterdir())
    (own / CACHE_DIR / "linked-visit").symlink_to(visit, target_is_directory=True)
    (own / CACHE_DIR / "real-visit").mkdir()
    (own / CACHE_DIR / "real-visit" / "manifest.json").symlink_to(visit / "manifest.json")
    fourth = turns / "turn_000004"
    fourth.mkdir()
    (fourth / CACHE_DIR).symlink_to(bob / CACHE_DIR, target_is_directory=True)
    (turns / ".counter").write_text("5")

    assert find_visits(layout, "bob", "Lenovo")  # bob's own visits are found
    assert find_visits(layout, "alice", "Lenovo") == []
    assert find_visits(layout, "alice", web.url("/product/microdata")) == []
    (turns / ".counter").unlink()  # the listing path too
    assert find_visits(layout, "alice", "Lenovo") == []
    assert load_visits(own, root=layout.root) == [] and load_visits(fourth, root=layout.root) == []

"""A real little web for tests: a SearxNG-like search and the pages it points at.

    with WebFixtures() as web:
        config = ResearchConfig(search_url=web.search_url, timeout_s=0.5)
        ...
        assert web.hits["/product/microdata"] == 1

It listens on 127.0.0.1 in a thread; `web.url(path)` is on host `127.0.0.1` and
`web.url(path, alt=True)` on `localhost`, which reaches the same server but is
another domain to a client — enough for per-domain politeness and reliability.

Routes (anything else is a 404):

    /search?q=..&format=json   {"query", "results"}: `web.results`, with `{base}` and
                               `{alt}` in their URLs replaced; 403 without format=json
    /product/microdata         schema.org Product microdata (Lenovo LOQ 15, $697.00, InStock)
    /product/og                Open Graph product tags (ASUS TUF A15, $749.99, out of stock)
    /product/plain             plain text (HP Victus 15, €799,00, "In stock")
    /listing                   JSON-LD ItemList with three products
    /article                   text without prices
    /redirect                  301 → /product/og
    /loop-a ↔ /loop-b          302 to each other
    /slow                      answers after `slow_s` (cut short by `stop()`)
    /huge                      `huge_bytes` of HTML, streamed without Content-Length
    /file.pdf                  application/pdf
    /missing                   404

Every request is counted per path (`hits`, query string excluded) and recorded
with its host, User-Agent and arrival time (`time.monotonic()`) in `requests`.
A route that raises answers 500 and leaves the exception in `errors`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.support.config import set_setting

from .loopback import LoopbackServer, QuietHandler

if TYPE_CHECKING:
    from pandafs.vault import Vault

__all__ = ["PAGES", "SeenRequest", "WebFixtures", "configure", "default_results"]

MICRODATA = """<!doctype html>
<html><head><title>Lenovo LOQ 15 Gaming Laptop | ShopA</title>
<style>.price { color: red } /* $1.00 */</style></head>
<body>
<nav><a href="/">Home</a> <a href="/deals">Deals from $5</a></nav>
<main>
<div itemscope itemtype="https://schema.org/Product">
  <h1 itemprop="name">Lenovo LOQ 15 Gaming Laptop</h1>
  <p itemprop="description">15.6" FHD 144Hz, NVIDIA RTX 4050, 16GB DDR5, 512GB SSD.</p>
  <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
    <meta itemprop="priceCurrency" content="USD">
    <span itemprop="price" content="697.00">$697.00</span>
    <link itemprop="availability" href="https://schema.org/InStock">In stock, ships today
  </div>
</div>
<h2>Specifications</h2>
<ul><li>GPU: NVIDIA RTX 4050</li><li>RAM: 16GB DDR5</li><li>Storage: 512GB SSD</li></ul>
<p>A capable budget gaming laptop with a good keyboard and a bright display.</p>
</main>
<footer>&copy; ShopA. Gift cards from $10.</footer>
<script>window.tracking = {price: "$999.00"};</script>
</body></html>
"""

OPEN_GRAPH = """<!doctype html>
<html><head>
<title>ASUS TUF A15 - ShopB</title>
<meta property="og:type" content="product">
<meta property="og:title" content="ASUS TUF Gaming A15">
<meta property="og:description" content="AMD Ryzen 7, RTX 4060, 16GB RAM">
<meta property="og:price:amount" content="749.99">
<meta property="og:price:currency" content="USD">
<meta property="og:availability" content="out of stock">
</head><body>
<h1>ASUS TUF Gaming A15 (2024)</h1>
<p>Durable gaming laptop with a military-grade chassis and a 144Hz screen.</p>
<p>Currently unavailable online; check your local store.</p>
</body></html>
"""

PLAIN = """<!doctype html>
<html><head><title>HP Victus 15 – ShopC</title></head>
<body>
<header><p>ShopC — free shipping over $35</p></header>
<h1>HP Victus 15</h1>
<p>Price: €799,00</p>
<p>Availability: In stock</p>
<p>The Victus 15 pairs an RTX 3050 with a 15.6 inch display and 8 GB of memory.</p>
</body></html>
"""

LISTING = """<!doctype html>
<html><head><title>Gaming laptops under $1000 | ShopD</title>
<script type="application/ld+json">
{"@context": "https://schema.org", "@type": "ItemList", "itemListElement": [
  {"@type": "ListItem", "position": 1, "item": {"@type": "Product", "name": "Acer Nitro V",
    "offers": {"@type": "Offer", "price": "649.99", "priceCurrency": "USD",
               "availability": "https://schema.org/InStock"}}},
  {"@type": "ListItem", "position": 2, "item": {"@type": "Product", "name": "MSI Thin GF63",
    "offers": {"@type": "Offer", "price": 599, "priceCurrency": "USD",
               "availability": "https://schema.org/OutOfStock"}}},
  {"@type": "ListItem", "position": 3, "item": {"@type": "Product", "name": "Dell G15",
    "offers": {"@type": "Offer", "price": "899.00", "priceCurrency": "USD"}}}
]}
</script></head>
<body><h1>Gaming laptops under $1000</h1>
<ul><li>Acer Nitro V — $649.99</li><li>MSI Thin GF63 — $599.00</li><li>Dell G15 — $899.00</li></ul>
</body></html>
"""

ARTICLE = """<!doctype html>
<html><head><title>How to pick a laptop</title></head>
<body><h1>How to pick a laptop</h1>
<p>Decide what you need first: battery life, weight, a good keyboard, enough memory.</p>
<h2>Screens</h2><p>A bright, matte screen matters more than resolution for most people.</p>
<h2>Keyboards</h2><p>Try the keyboard in a shop if you can: travel and layout vary a lot,
and you will type on it every day for years.</p>
</body></html>
"""

SLOW = "<html><head><title>Slow</title></head><body><h1>Finally</h1></body></html>"

RUSSIAN = """<!doctype html>
<html><head><title>Игровой ноутбук Lenovo LOQ 15 | МагазинА</title></head>
<body><h1>Игровой ноутбук Lenovo LOQ 15</h1><p>Цена: 64 990 ₽. В наличии.</p></body></html>
"""

PAGES: dict[str, str] = {
    "/product/microdata": MICRODATA,
    "/product/og": OPEN_GRAPH,
    "/product/plain": PLAIN,
    "/listing": LISTING,
    "/article": ARTICLE,
    "/product/ru": RUSSIAN,
}

REDIRECTS = {
    "/redirect": (301, "/product/og"),
    "/loop-a": (302, "/loop-b"),
    "/loop-b": (302, "/loop-a"),
}


def default_results() -> list[dict[str, str]]:
    """Three product pages: two on `{base}` (127.0.0.1), one on `{alt}` (localhost)."""
    return [
        {"url": "{base}/product/microdata", "title": "Lenovo LOQ 15 at ShopA",
         "content": "Lenovo LOQ 15 gaming laptop with RTX 4050", "engine": "fixture"},
        {"url": "{base}/product/og", "title": "ASUS TUF A15 at ShopB",
         "content": "ASUS TUF Gaming A15", "engine": "fixture"},
        {"url": "{alt}/product/plain", "title": "HP Victus 15 at ShopC",
         "content": "HP Victus 15 laptop", "engine": "fixture"},
    ]  # fmt: skip


@dataclass(frozen=True)
class SeenRequest:
    path: str
    query: str
    host: str
    user_agent: str
    at: float


class WebFixtures(LoopbackServer):
    def __init__(
        self,
        *,
        results: list[dict[str, str]] | None = None,
        slow_s: float = 10.0,
        huge_bytes: int = 5_000_000,
    ) -> None:
        super().__init__()
        self.results = default_results() if results is None else results
        self.slow_s = slow_s
        self.huge_bytes = huge_bytes
        self.hits: Counter[str] = Counter()
        self.requests: list[SeenRequest] = []
        self.errors: list[BaseException] = []  # exceptions raised while answering
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alt_base_url(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def search_url(self) -> str:
        return f"{self.base_url}/search"

    def url(self, path: str, *, alt: bool = False) -> str:
        return (self.alt_base_url if alt else self.base_url) + path

    def times(self, path: str) -> list[float]:
        """Arrival times of the requests for `path`, in order."""
        with self.lock:
            return [r.at for r in self.requests if r.path == path]

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.hits)

    def _search_payload(self, query: str) -> dict[str, Any]:
        results = []
        for item in self.results:
            entry = dict(item)
            if isinstance(entry.get("url"), str):
                entry["url"] = entry["url"].format(base=self.base_url, alt=self.alt_base_url)
            results.append(entry)
        return {"query": query, "number_of_results": len(results), "results": results}


class _Handler(QuietHandler):
    def do_GET(self) -> None:
        web = self.server.owner
        parts = urlsplit(self.path)
        path = parts.path
        with web.lock:
            web.hits[path] += 1
            web.requests.append(
                SeenRequest(
                    path=path,
                    query=parts.query,
                    host=self.headers.get("Host", ""),
                    user_agent=self.headers.get("User-Agent", ""),
                    at=time.monotonic(),
                )
            )
        try:
            self._route(web, path, parse_qs(parts.query))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # a bug in the fixture: keep it for the test to see
            with web.lock:
                web.errors.append(exc)
            self._send(500, repr(exc).encode(), "text/plain")

    def _route(self, web: WebFixtures, path: str, params: dict[str, list[str]]) -> None:
        if path == "/search":
            if params.get("format") != ["json"]:
                self._send(403, b"Forbidden", "text/plain")
                return
            payload = web._search_payload((params.get("q") or [""])[0])
            self._send(200, json.dumps(payload).encode(), "application/json")
        elif path in PAGES:
            self._send(200, PAGES[path].encode("utf-8"), "text/html; charset=utf-8")
        elif path in REDIRECTS:
            status, target = REDIRECTS[path]
            self.send_response(status)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/slow":
            if web.stopping.wait(web.slow_s):
                return
            self._send(200, SLOW.encode(), "text/html")
        elif path == "/huge":
            self._huge(web.huge_bytes)
        elif path == "/file.pdf":
            self._send(200, b"%PDF-1.4\n" + b"0" * 1000, "application/pdf")
        else:
            self._send(404, b"<html><body><h1>Not found</h1></body></html>", "text/html")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, size: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        head = b"<html><head><title>Huge</title></head><body><h1>Huge page</h1>\n"
        line = b"<p>" + b"lorem ipsum dolor sit amet " * 36 + b"</p>\n"
        self.wfile.write(head)
        sent = len(head)
        while sent < size and not self.server.owner.stopping.is_set():
            self.wfile.write(line)
            sent += len(line)
        self.wfile.write(b"</body></html>\n")


WebFixtures.handler = _Handler


def configure(vault: Vault, web: WebFixtures, *, revisions: int = 2) -> Vault:
    """`vault` researching on `web`: its search URL, no politeness wait, short timeouts."""
    from pandafs.vault import Vault

    set_setting(vault.root, "max_revisions", revisions)
    set_setting(vault.root, "search_url", f'"{web.search_url}"')
    set_setting(vault.root, "per_domain_interval_s", 0.0)
    set_setting(vault.root, "timeout_s", 2.0, section="research")
    return Vault.open(vault.root)

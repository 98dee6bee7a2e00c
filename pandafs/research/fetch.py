"""A polite HTTP client for `internet.research`: search through SearxNG, fetch pages.

Every request carries the `[research]` User-Agent, waits for its domain's turn (at most
`per_domain_concurrency` in flight, starts `per_domain_interval_s` apart) and is bounded
in time and size.  `fetch` never raises: a failure is a `FetchResult.error`.  `search`
raises `SearchFailed` (a `PandaError`)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
import orjson

from pandafs.config import ResearchConfig
from pandafs.errors import PandaError

from .visits import domain_of

__all__ = ["FetchResult", "PoliteFetcher", "SearchFailed", "SearchHit"]

HTML_TYPES = ("text/html", "application/xhtml+xml")
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
CHUNK_BYTES = 64 * 1024
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([a-zA-Z0-9_.:-]+)""", re.I)


class SearchFailed(PandaError):
    pass


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    snippet: str
    engine: str | None = None

    @property
    def domain(self) -> str:
        return domain_of(self.url)


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int | None
    content_type: str
    elapsed_ms: float
    text: str = ""
    bytes_read: int = 0
    truncated: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class _DomainGate:
    """At most `concurrency` requests in flight; request starts `interval` seconds apart."""

    def __init__(self, concurrency: int, interval: float) -> None:
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._interval = max(0.0, interval)
        self._lock = threading.Lock()
        self._next_start = 0.0

    @contextmanager
    def turn(self) -> Iterator[None]:
        with self._slots:
            with self._lock:
                now = time.monotonic()
                start = max(now, self._next_start)
                self._next_start = start + self._interval
            if start > now:
                time.sleep(start - now)
            yield


class _Failed(Exception):
    """Internal: a hop ended with a reason that goes into `FetchResult.error`."""

    def __init__(self, reason: str, status: int | None = None, content_type: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.content_type = content_type


class PoliteFetcher:
    """Search and fetch under the `[research]` limits.  Close it (`with closing(…)`)."""

    def __init__(self, config: ResearchConfig) -> None:
        self.config = config
        self._client = httpx.Client(
            timeout=httpx.Timeout(config.timeout_s),
            follow_redirects=False,
            headers={"User-Agent": config.user_agent},
        )
        self._gates: dict[str, _DomainGate] = {}
        self._gates_lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def _gate(self, url: str) -> _DomainGate:
        host = domain_of(url)
        with self._gates_lock:
            if host not in self._gates:
                self._gates[host] = _DomainGate(
                    self.config.per_domain_concurrency, self.config.per_domain_interval_s
                )
            return self._gates[host]

    def search(self, query: str) -> list[SearchHit]:
        """Ask the SearxNG-compatible endpoint; hits in its order, duplicates dropped."""
        if not self.config.search_url:
            raise SearchFailed("no search endpoint configured ([research] search_url)")
        try:
            with self._gate(self.config.search_url).turn():
                with self._client.stream(
                    "GET",
                    self.config.search_url,
                    params={"q": query, "format": "json"},
                    headers={"Accept": "application/json"},
                ) as response:
                    status = response.status_code
                    body, cut = _read_body(response, self.config.max_page_bytes)
        except httpx.TimeoutException:
            raise SearchFailed("search endpoint timed out") from None
        except httpx.HTTPError as exc:
            raise SearchFailed(f"search endpoint unreachable: {_reason(exc)}") from exc
        if status != 200:
            hint = " (is format=json enabled in SearxNG?)" if status == 403 else ""
            raise SearchFailed(f"search endpoint answered HTTP {status}{hint}")
        if cut:
            raise SearchFailed("search answer is larger than max_page_bytes")
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise SearchFailed("search endpoint did not answer JSON") from None
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list):
            raise SearchFailed("search answer has no 'results' list")
        return _parse_hits(results)

    def fetch(self, url: str) -> FetchResult:
        """GET `url` following redirects by hand; problems are reported, never raised."""
        started = time.monotonic()
        trail = [url]
        try:
            page = self._follow(trail)
        except _Failed as failed:
            page = FetchResult(url, url, failed.status, failed.content_type, 0.0, error=str(failed))
        elapsed_ms = round((time.monotonic() - started) * 1000, 1)
        return replace(page, url=url, final_url=trail[-1], elapsed_ms=elapsed_ms)

    def _follow(self, trail: list[str]) -> FetchResult:
        """Request `trail[-1]`, appending each redirect target to `trail` (loops refused)."""
        try:
            seen = {_canonical(trail[-1])}
        except ValueError:
            raise _Failed("bad url") from None
        status: int | None = None
        for hop in range(self.config.max_redirects + 1):
            current = trail[-1]
            scheme = current.split(":", 1)[0].lower() if ":" in current else ""
            if scheme not in ("http", "https"):
                raise _Failed(f"unsupported scheme {scheme or '(none)'}")
            outcome = self._hop(current)
            if isinstance(outcome, FetchResult):
                return outcome
            status, location = outcome
            try:
                target = urljoin(current, location)
                key = _canonical(target)
            except ValueError:
                raise _Failed("bad redirect", status) from None
            if key in seen:
                raise _Failed("redirect loop", status)
            if hop == self.config.max_redirects:
                break
            seen.add(key)
            trail.append(target)
        raise _Failed("too many redirects", status)

    def _hop(self, url: str) -> FetchResult | tuple[int, str]:
        """One request: the page (`fetch` fills in where it began and how long it took), or
        (status, Location) of a redirect to follow."""
        deadline = time.monotonic() + self.config.timeout_s
        try:
            with self._gate(url).turn():
                with self._client.stream("GET", url, headers={"Accept": _ACCEPT}) as response:
                    return self._read(response, deadline)
        except httpx.TimeoutException:
            raise _Failed("timeout") from None
        except (httpx.InvalidURL, ValueError, UnicodeError):
            raise _Failed("bad url") from None
        except httpx.HTTPError as exc:
            raise _Failed(_reason(exc)) from None

    def _read(self, response: httpx.Response, deadline: float) -> FetchResult | tuple[int, str]:
        status = response.status_code
        content_type = response.headers.get("content-type", "")
        if status in REDIRECT_CODES:
            location = response.headers.get("location")
            if not location:
                raise _Failed(f"HTTP {status} without Location", status, content_type)
            return status, location
        if status >= 400:
            raise _Failed(f"HTTP {status}", status, content_type)
        if status != 200:
            raise _Failed(f"unexpected HTTP {status}", status, content_type)
        mime = content_type.split(";", 1)[0].strip().lower()
        if mime and mime not in HTML_TYPES:
            raise _Failed(f"not HTML ({mime})", status, content_type)
        data, truncated = _read_body(response, self.config.max_page_bytes, deadline)
        text = _decode(data, response.charset_encoding)
        url = str(response.url)
        return FetchResult(url, url, status, content_type, 0.0, text, len(data), truncated)


def _read_body(response: httpx.Response, limit: int, deadline: float = float("inf")) -> tuple[bytes, bool]:
    """The body's first `limit` bytes, and whether there was more (`_Failed` past `deadline`)."""
    chunks: list[bytes] = []
    room = limit
    for chunk in response.iter_bytes(CHUNK_BYTES):
        if time.monotonic() > deadline:
            raise _Failed("timeout", response.status_code, response.headers.get("content-type", ""))
        chunks.append(chunk[:room])
        if len(chunk) > room:
            return b"".join(chunks), True
        room -= len(chunk)
    return b"".join(chunks), False


def _parse_hits(results: list[object]) -> list[SearchHit]:
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for item in results:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or urlsplit(url).scheme.lower() not in ("http", "https"):
            continue
        key = _canonical(url)
        if key in seen:
            continue
        seen.add(key)
        engine = item.get("engine")
        if not isinstance(engine, str):
            engines = item.get("engines")
            engine = engines[0] if isinstance(engines, list) and engines else None
        title, snippet = _text(item.get("title")), _text(item.get("content"))
        hits.append(SearchHit(url, title, snippet, engine if isinstance(engine, str) else None))
    return hits


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _canonical(url: str) -> str:
    """Comparable form of a URL: no fragment, lower-case scheme and host."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


def _decode(data: bytes, charset: str | None) -> str:
    if not charset:
        match = _META_CHARSET.search(data[:4096])
        charset = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


_REASONS = (
    (httpx.UnsupportedProtocol, "bad url"),
    (httpx.ConnectError, "connection failed"),
    (httpx.RemoteProtocolError, "protocol error"),
)


def _reason(exc: httpx.HTTPError) -> str:
    return next((why for kind, why in _REASONS if isinstance(exc, kind)), type(exc).__name__)

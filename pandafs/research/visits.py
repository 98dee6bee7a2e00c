"""Visit records: what a research call saw on each page, kept with the turn so a
follow-up ("is it still in stock?") reuses the page instead of fetching it again.

    users/{user}/turns/turn_N/webpage_cache/{url_slug}/
        manifest.json        everything `load_visits` needs (one read per visit)
        page_content.md      the readable text, with the source in its frontmatter
        extracted_data.json  title, price, availability, quality"""

import hashlib
import os
import re
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import orjson

from events.documents import render_document
from events.errors import NotInVault
from events.fsio import atomic_write, is_real_dir, read_vault_file
from events.layout import TURN_DIR_RE, Layout, turn_name
from events.stamps import format_ts

if TYPE_CHECKING:  # httpx and the page reader: a turn reads its visits without fetching
    from .extract import Extraction
    from .fetch import FetchResult

__all__ = ["CACHE_DIR", "VisitRecord", "find_visits", "load_visits", "read_visit", "url_slug", "write_visit"]

CACHE_DIR = "webpage_cache"
MANIFEST = "manifest.json"
PAGE = "page_content.md"
EXTRACTED = "extracted_data.json"
MANIFEST_VERSION = 1
SLUG_CHARS = 80
HASH_CHARS = 10
PAGE_TEXT_CHARS = 200_000
RECENT_TURNS = 20
MANIFEST_BYTES = 1 << 20
"""A manifest longer than this is not a visit record we wrote: it is skipped."""

_UNSAFE = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script
_STOP = frozenset(
    "a an and are at be by do for from how i in is it me my of on or that the this "
    "to was what which with you your there still more about tell".split()
)


def domain_of(url: str) -> str:
    """Lower-case host without a leading `www.`: the unit of politeness and reliability."""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host


def url_slug(url: str) -> str:
    """`bestbuy.com_site-lenovo-loq-15_3f2a9c1b7d`: readable, filesystem-safe, ≤ 80
    characters, and unique per URL thanks to the hash of the whole URL."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:HASH_CHARS]
    parts = urlsplit(url)
    host = re.sub(r"[^a-z0-9.-]+", "-", domain_of(url)).strip(".-") or "page"
    path = _UNSAFE.sub("-", f"{parts.path} {parts.query}".lower()).strip("-")
    room = SLUG_CHARS - HASH_CHARS - 1
    head = f"{host}_{path}" if path else host
    head = head[:room].rstrip("-_.")
    return f"{head}_{digest}"


class VisitRecord(NamedTuple):
    """One visit of the research tool to a page: where it went, what it extracted, how well."""

    visit_id: str
    url: str
    final_url: str
    visited_at: datetime
    page_type: str
    extracted_data: dict[str, Any]
    extraction_quality: float
    path: Path
    title: str = ""

    @property
    def domain(self) -> str:
        return domain_of(self.final_url or self.url)

    @property
    def rel_path(self) -> str:
        """Vault-relative folder (`users/u/turns/turn_N/webpage_cache/slug`) when the
        record lives in a vault turn folder; otherwise the folder as given."""
        parts = self.path.parts
        if len(parts) >= 6 and parts[-6] == "users" and parts[-4] == "turns":
            if TURN_DIR_RE.fullmatch(parts[-3]) and parts[-2] == CACHE_DIR:
                return PurePosixPath(*parts[-6:]).as_posix()
        return self.path.as_posix()

    def to_json(self) -> dict[str, Any]:
        return {**self._asdict(), "visited_at": format_ts(self.visited_at), "path": self.rel_path}


def _visit_id(url: str, visited_at: datetime) -> str:
    digest = hashlib.sha256(f"{url}\n{format_ts(visited_at)}".encode()).hexdigest()
    return f"visit_{digest[:12]}"


def _json(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def write_visit(
    turn_dir: Path,
    fetch_result: "FetchResult",
    extraction: "Extraction",
    visited_at: datetime,
    *,
    root: Path | None = None,
) -> VisitRecord:
    """Write the three files of one visit (atomically, checked under `root` when given)
    and return its record."""
    url = fetch_result.url
    folder = turn_dir / CACHE_DIR / url_slug(url)
    record = VisitRecord(
        visit_id=_visit_id(url, visited_at),
        url=url,
        final_url=fetch_result.final_url,
        visited_at=visited_at,
        page_type=extraction.page_type,
        extracted_data=dict(extraction.fields),
        extraction_quality=extraction.confidence,
        path=folder,
        title=extraction.title,
    )
    manifest = {
        "version": MANIFEST_VERSION,
        **record.to_json(),
        "status": fetch_result.status,
        "content_type": fetch_result.content_type,
        "bytes_read": fetch_result.bytes_read,
        "truncated": fetch_result.truncated,
        "elapsed_ms": fetch_result.elapsed_ms,
        "items": extraction.items,
        "fields_present": extraction.fields_present,
        "files": [PAGE, EXTRACTED],
    }
    seeded = ("visit_id", "url", "visited_at", "page_type", "extracted_data", "extraction_quality")
    seed_record = {key: manifest[key] for key in seeded}
    text = extraction.text
    if len(text) > PAGE_TEXT_CHARS:
        text = text[:PAGE_TEXT_CHARS].rstrip() + "\n\n*[cut: page text was longer]*"
    front = {
        "visit_id": record.visit_id,
        "title": extraction.title or None,
        "url": url,
        "final_url": fetch_result.final_url,
        "visited_at": visited_at,
        "page_type": record.page_type,
        "truncated": fetch_result.truncated or None,
    }
    heading = "" if text.startswith("# ") else f"# {extraction.title or fetch_result.final_url}\n\n"
    body = f"{heading}Source: <{fetch_result.final_url}>\n\n{text}\n"
    atomic_write(folder / PAGE, render_document({k: v for k, v in front.items() if v}, body), root=root)
    atomic_write(folder / EXTRACTED, _json(seed_record), root=root)
    atomic_write(folder / MANIFEST, _json(manifest), root=root)
    return record


def read_visit(root: Path, rel: str) -> VisitRecord | None:
    """The visit whose folder is `root/rel` (None if its manifest is missing or unreadable),
    read only if the manifest is plainly a file under `root` (no link on the way)."""
    try:
        data = orjson.loads(read_vault_file(root, f"{rel}/{MANIFEST}", limit=MANIFEST_BYTES)[0])
        return VisitRecord(
            visit_id=data["visit_id"],
            url=data["url"],
            final_url=data.get("final_url") or data["url"],
            visited_at=datetime.fromisoformat(data["visited_at"].replace("Z", "+00:00")),
            page_type=data.get("page_type", "page"),
            extracted_data=dict(data.get("extracted_data") or {}),
            extraction_quality=float(data.get("extraction_quality", 0.0)),
            path=root / rel,
            title=data.get("title") or "",
        )
    except (OSError, NotInVault, orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


def load_visits(turn_dir: Path, *, root: Path) -> list[VisitRecord]:
    """Every readable visit record of a turn of the vault `root`, oldest first (no link followed)."""
    cache = f"{turn_dir.relative_to(root).as_posix()}/{CACHE_DIR}"
    if not is_real_dir(root / cache):
        return []
    with os.scandir(root / cache) as entries:
        names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    records = [r for name in names if (r := read_visit(root, f"{cache}/{name}")) is not None]
    return sorted(records, key=lambda r: (r.visited_at, r.url))


def _comparable(url: str) -> str:
    parts = urlsplit(url.strip())
    host = domain_of(url)
    port = f":{parts.port}" if parts.port else ""
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{host}{port}{path}{query}"


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOP}


def _haystack(record: VisitRecord) -> set[str]:
    data = record.extracted_data
    values = [record.title, record.url, record.final_url, str(data.get("title", ""))]
    for product in data.get("products") or []:
        if isinstance(product, dict):
            values.append(str(product.get("title", "")))
    return _words(" ".join(values))


def find_visits(
    layout: Layout, user: str, terms: str | list[str], *, recent_turns: int = RECENT_TURNS, limit: int = 10
) -> list[VisitRecord]:
    """Earlier visits of `user` whose title or URL holds half the words of `terms` or more,
    the best match first, then the newest; each URL once, from the `recent_turns` latest turns."""
    wanted = _words(terms if isinstance(terms, str) else " ".join(terms))
    if not wanted:
        return []
    counter = layout.turn_counter(user)
    if counter is not None:  # probing down from the counter costs `recent_turns` stats, whatever the size
        turn_dirs = layout.recent_turn_dirs(
            user, turn_name(counter), recent_turns, probe=recent_turns * 10 + 50
        )
    else:
        turn_dirs = layout.turn_dirs(user)[::-1][: max(0, recent_turns)]
    scored: list[tuple[float, datetime, VisitRecord]] = []
    for turn_dir in turn_dirs[: max(0, recent_turns)]:
        for record in load_visits(turn_dir, root=layout.root):
            share = len(wanted & _haystack(record)) / len(wanted)
            if share >= 0.5:
                scored.append((share, record.visited_at, record))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    best: dict[str, VisitRecord] = {}  # each URL's best record
    for _, _, record in scored:
        best.setdefault(_comparable(record.final_url or record.url), record)
    return list(best.values())[:limit]

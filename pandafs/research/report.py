"""What one research call leaves in the turn folder: research.md for the reader and
research.json for machines (query, hits, visits, findings, outcomes)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from events.documents import DocumentMetadata, render_document
from events.fsio import atomic_write
from events.render import wikilink
from events.stamps import format_ts

from .result import Candidate, ResearchResult
from .visits import PAGE

__all__ = ["write_json", "write_markdown"]

RESEARCH_MD = "research.md"
RESEARCH_JSON = "research.json"
RESEARCH_VERSION = 1


def write_markdown(
    turn_dir: Path,
    result: ResearchResult,
    user: str,
    topic: str,
    keywords: list[str],
    now: datetime,
    *,
    root: Path | None = None,
) -> Path:
    """research.md: frontmatter (`DocumentMetadata`), summary, findings table, sources
    (`root`: the vault root, for the writers' after-open check)."""
    content_types = ["research"]
    if any(v.page_type in ("product", "listing") for v in result.visits):
        content_types.append("vendor_info")
    if any(f.get("price") for f in result.findings):
        content_types.append("pricing")
    metadata = DocumentMetadata(
        id=f"{user}/{turn_dir.name}/research",
        user=user,
        title=_shorten(f"Research: {result.query}", 100),
        primary_topic=topic or "general",
        keywords=list(keywords),
        content_types=content_types,
        scope="new",
        quality=result.quality,
        created_at=now,
        query=result.query,
        sources=sorted({v.domain for v in result.visits}),
    )
    path = turn_dir / RESEARCH_MD
    atomic_write(path, render_document(metadata, _body(result)), root=root)
    return path


def write_json(
    turn_dir: Path,
    result: ResearchResult,
    candidates: list[Candidate],
    user: str,
    topic: str,
    keywords: list[str],
    now: datetime,
    *,
    root: Path | None = None,
) -> Path:
    """research.json: everything the call saw (quality_score, summary, claims and
    webpage_cache among its keys), for the turn's record and for tools that read it."""
    data = {
        "version": RESEARCH_VERSION,
        "query": result.query,
        "user": user,
        "turn": turn_dir.name,
        "topic": topic,
        "keywords": list(keywords),
        "created_at": format_ts(now),
        "available": result.available,
        "error": result.error,
        "quality_score": result.quality,
        "summary": result.summary,
        "claims": [
            {
                "claim": f"{f['title']} @ {f['price']}",
                "source": f["domain"],
                "confidence": f["confidence"],
            }
            for f in result.findings
            if f.get("price")
        ],
        "webpage_cache": [v.visit_id for v in result.visits],
        "hits": [
            {
                "url": c.hit.url,
                "title": c.hit.title,
                "snippet": c.hit.snippet,
                "engine": c.hit.engine,
                "domain": c.domain,
                "reliability": c.reliability,
                "status": c.status,
            }
            for c in candidates
        ],
        "visits": [v.to_json() for v in result.visits],
        "findings": result.findings,
        "outcomes": [o.to_json() for o in result.outcomes],
        "skipped_domains": result.skipped_domains,
    }
    path = turn_dir / RESEARCH_JSON
    atomic_write(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n", root=root)
    return path


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "—"
    return " ".join(str(value).split()).replace("|", "\\|")


def _link(label: str, url: str) -> str:
    label = _cell(label).replace("[", "\\[").replace("]", "\\]")
    target = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"[{label}]({target})"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _body(result: ResearchResult) -> str:
    lines = [f"# Research: {_shorten(result.query, 200)}", "", result.summary, ""]
    if result.findings:
        lines += [
            "## Findings",
            "",
            "| # | Title | Price | Availability | Source |",
            "|---|---|---|---|---|",
        ]
        for number, f in enumerate(result.findings, 1):
            lines.append(
                f"| {number} | {_link(f['title'], f['final_url'])} | {_cell(f['price'])} "
                f"| {_cell(f['availability'])} | {_cell(f['domain'])} |"
            )
        lines.append("")
    if result.visits:
        lines += ["## Sources", ""]
        for number, visit in enumerate(result.visits, 1):
            cached = wikilink(f"{visit.rel_path}/{PAGE}", "cached page")
            label = visit.title or visit.final_url
            lines.append(
                f"{number}. {_link(label, visit.final_url)} — {visit.domain}, {visit.page_type}, "
                f"extraction quality {visit.extraction_quality:.2f}, {cached}"
            )
        lines.append("")
    failed = [o for o in result.outcomes if o.error]
    if failed or result.skipped_domains:
        lines += ["## Not used", ""]
        lines += [f"- <{o.url}> — {o.error}" for o in failed]
        lines += [f"- `{d}` — source reliability below threshold" for d in result.skipped_domains]
        lines.append("")
    return "\n".join(lines)

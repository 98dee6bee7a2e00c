"""The text of a source as the pipeline reads it: a turn's question and answer, a page
visit's extracted fields, any other document whole; plus the small text helpers the
Context Gatherer's two steps and Synthesis share."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from events.documents import split_sections
from events.stamps import format_ts

from ..errors import BadInput, Unreadable
from ..research.visits import read_visit
from .context import TurnContext

__all__ = ["age_days", "plain_text", "source_text", "turn_text", "visit_text"]


def age_days(created: str, now: datetime) -> float:
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (now - when).total_seconds() / 86400.0)


def turn_text(content: str) -> str:
    """What a turn's context.md teaches: the question (§0) and the answer (§5)."""
    sections = split_sections(content)
    if not sections:
        return content
    asked = sections.get(0, "").split("\n\n")[0].strip()
    answered = sections.get(5, "").strip()
    return f"Asked: {asked}\nAnswered: {answered}".strip()


def source_text(ctx: TurnContext, doc_path: str, kind: str) -> str:
    """The text of a document as the pipeline reads it (a turn: its question and answer;
    a visit record: the fields extracted from the page)."""
    if kind == "visit":
        return visit_text(ctx.vault.root, doc_path)
    try:
        content = ctx.read(doc_path).content
    except (BadInput, Unreadable):
        return ""
    return turn_text(content) if kind == "turn" else content


def visit_text(root: Path, page: str) -> str:
    """The fields of the visit whose page is `page` (vault-relative), from its manifest;
    "" when that is missing, unreadable, or not plainly a file of the vault."""
    record = read_visit(root, page.rpartition("/")[0])
    if record is None:
        return ""
    fields = record.extracted_data
    lines = [f"{fields.get('title') or record.title}."]
    for key in ("price", "availability", "description"):
        if fields.get(key):
            lines.append(f"{key.capitalize()}: {fields[key]}.")
    lines.append(f"Visited {format_ts(record.visited_at)} at {record.final_url}.")
    return "\n".join(lines)


def plain_text(text: str) -> str:
    return " ".join(re.sub(r"(?<!\S)#identity\b", "", text, flags=re.I).split()).lower()

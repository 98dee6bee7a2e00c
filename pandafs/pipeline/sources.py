"""The text of a source as the pipeline reads it: a turn's question and answer, a page
visit's extracted fields, any other document whole; plus the small text helpers the
Context Gatherer's two steps and Synthesis share."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import orjson

from events import NotInVault, read_vault_file, split_sections

from ..errors import BadInput
from ..research.visits import MANIFEST_BYTES
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
    except BadInput:
        return ""
    return turn_text(content) if kind == "turn" else content


def visit_text(root: Path, page: str) -> str:
    """The fields of the visit whose page is `page` (vault-relative); "" when its files are
    missing, unreadable, or not plainly files of the vault (a link is not read)."""
    folder = page.rpartition("/")[0]
    try:
        manifest = orjson.loads(read_vault_file(root, f"{folder}/manifest.json", limit=MANIFEST_BYTES)[0])
        data = orjson.loads(read_vault_file(root, f"{folder}/extracted_data.json", limit=MANIFEST_BYTES)[0])
    except (OSError, NotInVault, orjson.JSONDecodeError):
        return ""
    if not isinstance(manifest, dict):
        return ""
    fields = data.get("extracted_data", data) if isinstance(data, dict) else {}
    lines = [f"{fields.get('title') or manifest.get('title', '')}."]
    for key in ("price", "availability", "description"):
        if fields.get(key):
            lines.append(f"{key.capitalize()}: {fields[key]}.")
    lines.append(
        f"Visited {manifest.get('visited_at', '')} at {manifest.get('final_url') or manifest.get('url')}."
    )
    return "\n".join(lines)


def plain_text(text: str) -> str:
    return " ".join(re.sub(r"(?<!\S)#identity\b", "", text, flags=re.I).split()).lower()

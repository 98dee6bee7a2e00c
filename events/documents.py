"""Markdown documents with YAML frontmatter (Obsidian "properties").

`DocumentMetadata` is the one schema of document metadata (DESIGN.md §3); the
tantivy schema and the Parquet catalog are derived from it.  Unknown keys are kept
(`extra="allow"`) so a round trip through PandaFS never loses what a person or a
newer version wrote.

`parse_document` splits frontmatter from body and raises `FrontmatterError` naming
file and line when the YAML is broken — the caller reports it and leaves the file
alone.  `render_document` writes Obsidian-valid properties: block-style lists, ISO
timestamps, plain scalars; `tags` and `aliases` are ordinary list properties.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import FrontmatterError
from .log import format_ts

__all__ = [
    "DocumentMetadata",
    "ParsedDocument",
    "Scope",
    "SECTION_TITLES",
    "dump_frontmatter",
    "get_section",
    "parse_document",
    "render_document",
    "split_sections",
]

Scope = Literal["new", "user", "global"]

SECTION_TITLES = {
    0: "User Query",
    1: "Reflection Decision",
    2: "Gathered Context",
    3: "Task Plan",
    4: "Tool Execution",
    5: "Synthesis",
    6: "Validation",
}

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class DocumentMetadata(BaseModel):
    """Shared metadata of every document (frontmatter keys)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    id: str
    user: str | None = None
    title: str | None = None
    primary_topic: str = "general"
    keywords: list[str] = Field(default_factory=list)
    content_types: list[str] = Field(default_factory=list)
    scope: Scope = "user"
    quality: float = Field(default=0.5, ge=0.0, le=1.0)
    created_at: datetime
    expires_at: datetime | None = None
    user_purpose: str | None = None
    data_requirements: list[str] = Field(default_factory=list)
    usage_count: int = 0
    validation_count: int = 0
    validation_success: int = 0
    trust: float | None = None
    archived: bool = False
    tags: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)

    @field_validator("created_at", "expires_at", mode="after")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("keywords", "content_types", "tags", "aliases", "data_requirements", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def to_frontmatter(self) -> dict[str, Any]:
        """Known fields that are set (declared order) followed by unknown keys."""
        data = self.model_dump(mode="python", exclude_unset=False)
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = data.get(name)
            if value is None or value == [] or (name == "archived" and value is False):
                continue
            if name in ("usage_count", "validation_count", "validation_success") and not value:
                continue
            out[name] = value
        for key, value in (self.model_extra or {}).items():
            out[key] = value
        return out


class ParsedDocument(BaseModel):
    model_config = ConfigDict(frozen=True)
    frontmatter: dict[str, Any]
    body: str
    has_frontmatter: bool


_FENCE = re.compile(r"\A---[ \t]*\r?\n")
_END = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def parse_document(text: str, path: Path | str = "<text>") -> ParsedDocument:
    """Split `text` into frontmatter (a dict) and body; broken YAML raises with the line."""
    if not _FENCE.match(text):
        return ParsedDocument(frontmatter={}, body=text, has_frontmatter=False)
    start = _FENCE.match(text).end()  # type: ignore[union-attr]
    end = _END.search(text, start)
    if end is None:
        raise FrontmatterError(path, 1, "opening '---' has no closing '---'")
    raw = text[start : end.start()]
    body = text[end.end() :]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    try:
        loaded = yaml.load(raw, Loader=_Loader) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = (mark.line + 2) if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(path, line, problem) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise FrontmatterError(path, 2, "frontmatter is not a mapping of properties")
    return ParsedDocument(frontmatter=loaded, body=body, has_frontmatter=True)


class _Dumper(_BaseDumper):  # type: ignore[misc,valid-type]
    def ignore_aliases(self, data: Any) -> bool:  # Obsidian does not understand &id001 anchors
        return True


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_ts(value))


def _represent_date(dumper: yaml.SafeDumper, value: date) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", value.isoformat())


_Dumper.add_representer(datetime, _represent_datetime)
_Dumper.add_representer(date, _represent_date)


def dump_frontmatter(data: dict[str, Any]) -> str:
    """YAML for a frontmatter block (without the fences): block lists, ISO timestamps."""
    if not data:
        return ""
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=10_000,
    )


def render_document(frontmatter: dict[str, Any] | DocumentMetadata, body: str) -> str:
    if isinstance(frontmatter, DocumentMetadata):
        frontmatter = frontmatter.to_frontmatter()
    if not frontmatter:
        return body
    return f"---\n{dump_frontmatter(frontmatter)}---\n{body}"


_SECTION = re.compile(r"^## (\d)\. .*$", re.MULTILINE)


def split_sections(body: str) -> dict[int, str]:
    """Map section number (0-6) to its text (heading excluded) for a context.md body."""
    matches = list(_SECTION.finditer(body))
    sections: dict[int, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(body)
        sections[int(match.group(1))] = body[match.end() : end].strip("\n")
    return sections


def get_section(body: str, number: int) -> str | None:
    return split_sections(body).get(number)

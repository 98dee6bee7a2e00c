"""Markdown documents with YAML frontmatter (Obsidian "properties").

`DocumentMetadata` is the one schema of document metadata; the tantivy schema and the
catalog derive from it, and unknown keys are kept so a round trip loses nothing.
`parse_document` raises `FrontmatterError` naming file and line; `render_document`
writes Obsidian-valid properties (block lists, ISO timestamps, plain scalars)."""

import re
from collections.abc import Container, Iterator
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import FrontmatterError
from .stamps import format_ts
from .yaml_subset import fast_dump, fast_frontmatter

__all__ = [
    "DocumentMetadata",
    "SECTION_TITLES",
    "dump_frontmatter",
    "parse_document",
    "render_document",
    "shorten",
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


def _no_items() -> list[str]:
    """A list field's default: a new list for each document, where a `[]` default is deep-copied
    for each (and `list` as the factory would have its signature parsed from its text)."""
    return []


_LEFT_OUT_UNSET = frozenset({"archived", "usage_count", "validation_count", "validation_success"})  # while 0


class DocumentMetadata(BaseModel):
    """Shared metadata of every document (frontmatter keys)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    id: str
    user: str | None = None
    title: str | None = None
    primary_topic: str = "general"
    keywords: list[str] = Field(default_factory=_no_items)
    content_types: list[str] = Field(default_factory=_no_items)
    scope: Scope = "user"
    quality: float = Field(default=0.5, ge=0.0, le=1.0)
    created_at: datetime
    expires_at: datetime | None = None
    user_purpose: str | None = None
    data_requirements: list[str] = Field(default_factory=_no_items)
    usage_count: int = 0
    validation_count: int = 0
    validation_success: int = 0
    trust: float | None = None
    archived: bool = False
    tags: list[str] = Field(default_factory=_no_items)
    aliases: list[str] = Field(default_factory=_no_items)

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

    @classmethod
    def fields_of(cls, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(every declared field, the unknown keys) of `data`, validated as `model_validate` does
        (its validator called without the wrapper; the fields are the model's own `__dict__`,
        which holds the declared fields in order)."""
        meta = cls.__pydantic_validator__.validate_python(data)
        return meta.__dict__, dict(meta.__pydantic_extra__ or {})

    def to_frontmatter(self) -> dict[str, Any]:
        """Known fields that are set (declared order) followed by unknown keys."""
        data = self.model_dump()
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = data.get(name)
            if value is None or value == [] or (name in _LEFT_OUT_UNSET and not value):
                continue
            out[name] = value
        out.update(self.model_extra or {})
        return out


class ParsedDocument(NamedTuple):
    frontmatter: dict[str, Any]
    body: str
    has_frontmatter: bool


_FENCE = re.compile(r"\A---[ \t]*\r?\n")
_END = re.compile(r"\n(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
"""The closing `---` (or `...`) line with the newline before it: a pattern that opens with a
literal is searched for that character, one that opens with `^` is tried at every position."""


TITLE_CHARS = 80
"""The longest title PandaFS makes of a text (a turn's query, a memory's first words)."""


def shorten(text: str, limit: int = TITLE_CHARS) -> str:
    """`text` on one line (each run of white space one space), cut to `limit` characters
    with "…" where it is longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def wikilink(doc_path: str, label: str | None = None) -> str:
    """Obsidian wikilink with a vault-relative path, so same-named files resolve."""
    target = doc_path[:-3] if doc_path.endswith(".md") else doc_path
    label = (label or "").replace("|", "/").replace("]", ")").replace("\n", " ").strip()
    return f"[[{target}|{label}]]" if label else f"[[{target}]]"


def parse_document(text: str, path: Path | str = "<text>") -> ParsedDocument:
    """Split `text` into frontmatter (a dict) and body; broken YAML raises with the line."""
    fence = _FENCE.match(text)
    if fence is None:
        return ParsedDocument({}, text, False)
    end = _END.search(text, fence.end() - 1)  # (the fence's own newline: an empty frontmatter)
    if end is None:
        raise FrontmatterError(path, 1, "opening '---' has no closing '---'")
    raw, body = text[fence.end() : end.start() + 1], text[end.end() :]
    body = body[2:] if body.startswith("\r\n") else body.removeprefix("\n")
    loaded = fast_frontmatter(raw)
    if loaded is None and raw.strip():
        yaml, loader, _ = _pyyaml()
        try:
            loaded = yaml.load(raw, Loader=loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = (mark.line + 2) if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise FrontmatterError(path, line, problem) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise FrontmatterError(path, 2, "frontmatter is not a mapping of properties")
    return ParsedDocument(loaded, body, True)


@cache
def _pyyaml() -> tuple[Any, Any, Any]:
    """PyYAML, its C loader and our dumper, imported the first time a frontmatter is read
    or written beyond the subset `yaml_subset` handles (most commands never need it)."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:  # Obsidian does not understand &id001 anchors
            return True

    def timestamp(dumper: Any, value: datetime | date) -> Any:
        text = format_ts(value) if isinstance(value, datetime) else value.isoformat()
        return dumper.represent_scalar("tag:yaml.org,2002:timestamp", text)

    Dumper.add_representer(datetime, timestamp)
    Dumper.add_representer(date, timestamp)
    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader), Dumper


def _slow_dump(data: Any, **options: Any) -> str:
    """`yaml.dump` of `data` as PandaFS writes frontmatter (`options` added)."""
    yaml, _, dumper = _pyyaml()
    text: str = yaml.dump(data, Dumper=dumper, allow_unicode=True, width=10_000, **options)
    return text


def _quoted(value: str) -> str | None:
    """PyYAML's spelling of a one-line string it would quote, or None if that is not one line."""
    text = _slow_dump(value)
    if text.startswith(("'", '"')) and text.endswith("\n") and text.count("\n") == 1:
        return text[:-1]
    return None


def dump_frontmatter(data: dict[str, Any]) -> str:
    """YAML for a frontmatter block (without the fences): simple shapes written directly (the
    bytes PyYAML would write; a test holds them together), the rest by PyYAML."""
    if not data:
        return ""
    fast = fast_dump(data, _quoted)
    if fast is not None:
        return fast
    return _slow_dump(data, sort_keys=False, default_flow_style=False)


def render_document(frontmatter: dict[str, Any] | DocumentMetadata, body: str) -> str:
    if isinstance(frontmatter, DocumentMetadata):
        frontmatter = frontmatter.to_frontmatter()
    if not frontmatter:
        return body
    return f"---\n{dump_frontmatter(frontmatter)}---\n{body}"


def _section_spans(body: str, start: int = 0) -> Iterator[tuple[int, int, int]]:
    """(number, start, end) of the text under each `## N. ` heading line of a context.md
    body; a section runs to the next such heading (an answer's own `## ` headings stay in it)."""
    previous: tuple[int, int] | None = None
    at = start
    while True:
        if body.startswith("## ", at) and body[at + 3 : at + 4].isdecimal() and body.startswith(". ", at + 4):
            if previous is not None:
                yield (*previous, at)
            line_end = body.find("\n", at)
            previous = (int(body[at + 3]), len(body) if line_end < 0 else line_end)
        found = body.find("\n## ", at)
        if found < 0:
            break
        at = found + 1
    if previous is not None:
        yield (*previous, len(body))


def split_sections(body: str, *, start: int = 0, numbers: Container[int] | None = None) -> dict[int, str]:
    """Map section number (0-6) to its text (heading excluded) for a context.md body.
    `start` skips a prefix without copying it; `numbers` keeps only those sections."""
    return {
        number: body[begin:end].strip("\n")
        for number, begin, end in _section_spans(body, start)
        if numbers is None or number in numbers
    }

"""The Planner's tools, executed by the Coordinator: memory_search / memory_retrieve /
memory_save, and internet_research when `[research] search_url` is configured.

One name per tool, everywhere: the JSON schemas an LLM sees (`tool_schemas()`, OpenAI
function-calling format, whose names may not contain dots), the executor, the events,
`pandafs tools` and the docs.  The dotted spelling of earlier versions
(`memory.search`) is accepted as an alias (`canonical_tool`), so old plans and a
model that read the design notes still reach the tool.
Each tool is an argument model (pydantic) plus a function; the same models give the
schemas.  During a turn `memory_save` only *stages* a candidate: Save commits it on
APPROVE.  Every result carries the text Synthesis reads (`result["text"]`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events import Payload
from events.schema import ExtractionRecorded, MemoryCandidate

from ..errors import BadInput
from ..memory import SearchArgs
from ..tasks.schemas import ToolSpec
from ..tokens import truncate_tokens
from .context import TurnContext
from .sources import turn_text

__all__ = [
    "TOOLS",
    "ToolOutcome",
    "available_tools",
    "canonical_tool",
    "finding_line",
    "run_tool",
    "tool_schemas",
]


RETRIEVE_TOKENS = 1500  # one retrieved document, as the Context Gatherer cuts one (PER_DOC_TOKENS)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrieveArgs(_Args):
    id: str = Field(description="document id (alice/turn_000001) or vault-relative path")


class SaveArgs(_Args):
    content: str = Field(description="stable knowledge only: a preference or fact, never a price or URL")
    doc_type: Literal["preference", "fact", "memory"] = "memory"
    topic: str = "general"
    keywords: list[str] = Field(default_factory=list)
    key: str | None = Field(None, description="short key for a preference or fact")


class ResearchArgs(_Args):
    query: str = Field(description="what to look up on the web")


@dataclass
class ToolOutcome:
    ok: bool
    summary: str
    result: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    error: str | None = None
    staged: MemoryCandidate | None = None
    events: list[Payload] = field(default_factory=list)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[TurnContext, Any], ToolOutcome]
    available: Callable[[TurnContext], bool] = lambda ctx: True


def _hit_line(hit: dict[str, Any]) -> str:
    """`Title (2026-05-03): snippet` — each hit says when it was said, which is what a
    question across conversations needs."""
    when = f" ({hit['date']})" if hit.get("date") else ""
    return f"{hit['title']}{when}: {hit['snippet'].replace('**', '')}"


def _search(ctx: TurnContext, args: SearchArgs) -> ToolOutcome:
    hits = ctx.memory.search(
        args.query, user=ctx.user, now=ctx.now(), exclude_ids=[ctx.doc_id], **args.search_kwargs()
    )
    keys = ("doc_id", "doc_path", "title", "score", "snippet", "archived", "date", "episode")
    rows = [{k: h.get(k) for k in keys} for h in hits]
    text = "\n".join(_hit_line(h) for h in hits)
    return ToolOutcome(True, f"{len(hits)} hit(s) for {args.query!r}", {"hits": rows}, text)


def _retrieve(ctx: TurnContext, args: RetrieveArgs) -> ToolOutcome:
    try:  # ownership by path, checked before anything is read or counted
        doc = ctx.memory.retrieve(args.id, user=ctx.user, now=ctx.now())
    except BadInput as exc:
        return ToolOutcome(False, "not retrieved", error=str(exc))
    content = doc.content
    if re.search(r"/turn_\d+$", doc.doc_id):
        content = turn_text(content)  # a turn teaches its question and its answer
    text = truncate_tokens(content, RETRIEVE_TOKENS)
    return ToolOutcome(
        True,
        f"retrieved {doc.doc_id}",
        {"doc_id": doc.doc_id, "doc_path": doc.doc_path, "archived": doc.archived, "text": text},
        text,
    )


def _stage(ctx: TurnContext, args: SaveArgs) -> ToolOutcome:
    number = len(ctx.extras.setdefault("staged_by_tool", [])) + 1
    candidate = MemoryCandidate(
        candidate_id=f"tool-{number}",
        doc_type=args.doc_type,
        content=args.content,
        topic=args.topic,
        keywords=args.keywords,
        key=args.key,
    )
    ctx.extras["staged_by_tool"].append(candidate)
    return ToolOutcome(
        True,
        f"staged {args.doc_type} candidate (committed only on APPROVE)",
        {"candidate_id": candidate.candidate_id},
        staged=candidate,
    )


def finding_line(finding: dict[str, Any]) -> str:
    """One research finding as a sentence: `Title: $697.00, In stock (shop.example).`"""
    details = ", ".join(str(finding[k]) for k in ("price", "availability") if finding.get(k))
    where = f" ({finding['domain']})" if finding.get("domain") else ""
    return f"{finding.get('title') or 'Untitled page'}{': ' + details if details else ''}{where}."


def _research_available(ctx: TurnContext) -> bool:
    return bool(ctx.config.research.search_url)


def _research(ctx: TurnContext, args: ResearchArgs) -> ToolOutcome:
    if not _research_available(ctx):
        return ToolOutcome(
            False,
            "internet_research is not configured",
            error="unavailable: set [research] search_url in pandafs.toml",
        )
    tool = ctx.extras.get("research_tool")
    if tool is None:
        from ..research import ResearchTool

        tool = ResearchTool(ctx.config.research, reliability=ctx.extras.get("reliability"))
    analysis = ctx.extras.get("analysis")
    topic = getattr(analysis, "primary_topic", "general")
    keywords = list(getattr(analysis, "keywords", []))
    result = tool.run(
        args.query,
        ctx.turn_dir,
        user=ctx.user,
        topic=topic,
        keywords=keywords,
        now=ctx.now(),
        root=ctx.vault.root,
    )
    if not result.available:
        return ToolOutcome(False, "internet_research is not available", error=result.error or "unavailable")
    rows = [dict(f) for f in result.findings]
    outcomes = [o.__dict__ if hasattr(o, "__dict__") else dict(o) for o in result.outcomes]
    text = "\n".join(finding_line(f) for f in rows)
    extractions: list[Payload] = [
        ExtractionRecorded(
            domain=o.domain,
            url=o.url,
            success=o.success,
            items=o.items,
            fields_present=list(o.fields_present),
            confidence=o.confidence,
            error=o.error,
        )
        for o in result.outcomes
    ]
    return ToolOutcome(
        True,
        result.summary,
        {"findings": rows, "outcomes": outcomes, "skipped_domains": list(result.skipped_domains)},
        text,
        events=extractions,
    )


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "memory_search",
            "Search every document in memory (turns, preferences, facts, research, "
            "knowledge) visible to this user.",
            SearchArgs,
            _search,
        ),
        Tool(
            "memory_retrieve",
            "Get one document by id or path (archived turns are expanded).",
            RetrieveArgs,
            _retrieve,
        ),
        Tool(
            "memory_save",
            "Save stable knowledge (a preference, fact or memory). During a turn it is "
            "staged and committed only if validation approves.",
            SaveArgs,
            _stage,
        ),
        Tool(
            "internet_research",
            "Search the web and read the top pages (titles, prices, "
            "availability); pages are cached as visit records.",
            ResearchArgs,
            _research,
            _research_available,
        ),
    )
}


ALIASES = {name.replace("_", ".", 1): name for name in TOOLS}


def canonical_tool(name: str) -> str:
    """The one name of a tool (`memory_search`), also for the old dotted spelling."""
    return ALIASES.get(name, name)


def available_tools(ctx: TurnContext) -> list[ToolSpec]:
    return [
        ToolSpec(name=t.name, description=t.description, available=t.available(ctx)) for t in TOOLS.values()
    ]


def run_tool(ctx: TurnContext, name: str, raw_args: dict[str, Any]) -> ToolOutcome:
    """Validate arguments and run a tool; bad arguments are an outcome, not a crash."""
    tool = TOOLS.get(canonical_tool(name))
    if tool is None:
        return ToolOutcome(False, f"unknown tool {name!r}", error=f"unknown tool {name!r}")
    try:
        args = tool.args.model_validate(raw_args)
    except ValidationError as exc:
        err = exc.errors()[0]
        return ToolOutcome(
            False, "invalid arguments", error=f"{'.'.join(map(str, err['loc']))}: {err['msg']}"
        )
    return tool.run(ctx, args)


def tool_schemas(
    *, include_unavailable: bool = True, research_configured: bool = False
) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas of the tools."""
    out = []
    for tool in TOOLS.values():
        if tool.name == "internet_research" and not (include_unavailable or research_configured):
            continue
        schema = tool.args.model_json_schema()
        schema.pop("title", None)
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema,
                },
            }
        )
    return out

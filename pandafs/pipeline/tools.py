"""The tool registry: every tool once (name, argument model, function, hints), served alike
by the Planner, `pandafs tools --json` and the MCP server.  Adding a tool is one
`register(Tool(…))`.

A tool runs in a `ToolSession`: whose memory, as which user, inside a turn or not.  Inside
a turn `save_memory` only *stages* a candidate that Save commits on APPROVE; outside one
(MCP) it saves at once.  `doors` says who serves a tool: `internet_research` needs a turn's
folder, `ask` runs a turn.  `canonical_request` maps the names stored plans may still
carry to today's, so a replayed or recovered turn reaches its tool."""

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.schema import ExtractionRecorded, MemoryCandidate, Payload
from indexers.errors import IndexingError

from ..errors import BadInput, Unreadable, first_line
from ..memory.api import Memory
from ..memory.args import SearchArgs, SearchArgsModel, empty_list
from ..tasks.schemas import ToolSpec
from ..tokens import truncate_tokens
from ..vault import Vault
from .sources import PER_DOC_TOKENS, turn_text

if TYPE_CHECKING:
    from .context import TurnContext

__all__ = [
    "FORGET_AFTER",
    "TOOLS",
    "Tool",
    "ToolOutcome",
    "ToolSession",
    "available_tools",
    "canonical_request",
    "canonical_tool",
    "finding_line",
    "register",
    "run_tool",
    "tool_schemas",
]


DOORS = ("planner", "mcp")
"""Who calls tools: the Planner inside a turn, an MCP client outside one.  `pandafs tools
--json` lists every registered tool."""


class _Args(BaseModel):
    # each tool's model is built when first used: a turn offers the Planner only some tools
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RetrieveArgs(_Args):
    identifier: str = Field(description="a doc_id from search (alice/turn_000001) or a vault-relative path")


class SaveArgs(_Args):
    content: str = Field(description="stable knowledge only: a preference or fact, never a price or URL")
    type: Literal["preference", "fact", "memory"] = Field(
        "memory", description="preference and fact go to preferences.md / facts.md; memory to memories/"
    )
    topic: str = Field("general", description="hierarchical topic, e.g. travel.flights")
    keywords: list[str] = Field(default_factory=empty_list)
    key: str | None = Field(None, description="key of a preference or fact, e.g. seat")
    scope: Literal["new", "user"] | None = Field(
        None, description="new expires after its TTL unless promoted; default: user for a preference or fact"
    )
    ttl_hours: float | None = Field(None, gt=0, description="expiry of a new memory")


class ResearchArgs(_Args):
    query: str = Field(description="what to look up on the web")


class EditArgs(_Args):
    identifier: str = Field(description="doc_id of a memory, or of this user's preferences / facts")
    text: str | None = Field(None, description="the new text of the entry or memory")
    entry: str | None = Field(None, description="which entry of preferences / facts: its number or its key")
    title: str | None = None
    topic: str | None = None
    keywords: list[str] | None = None


class DeleteArgs(_Args):
    identifier: str = Field(description="doc_id of a memory, or of this user's preferences / facts")
    entry: str | None = Field(None, description="which entry of preferences / facts: its number or its key")


class ForgetArgs(_Args):
    query_or_id: str = Field(
        description="words to forget, or a doc_id: user/turn_000001, user/memories/x, "
        "user/preferences#N, user/facts#KEY"
    )
    confirm: bool = Field(
        False, description="false: list what would change (nothing changes); true: forget it, for good"
    )


FORGET_AFTER = "forget_after"
"""`TurnContext.extras` key: forgets confirmed inside a turn, run once its log is closed
(the turn quotes what goes, and its log is held while it runs)."""


class AskArgs(_Args):
    question: str = Field(description="the question or statement, as the user would say it")
    now: datetime | None = Field(
        None, description="ask at this ISO time (UTC if naive), e.g. about an imported history"
    )


@dataclass(eq=False)
class ToolSession:
    """What a tool acts through: one user's view of one vault's memory, a clock, the turn
    it runs in (None outside a turn), and how to run a turn (for `ask`)."""

    vault: Vault
    memory: Memory
    user: str
    clock: Callable[[], datetime]
    turn: "TurnContext | None" = None
    ask: Callable[[str, datetime | None], dict[str, Any]] | None = None
    """Runs one turn for the user, asked at a time or now, and returns its JSON (handed in
    by a door outside a turn)."""


@dataclass(eq=False)
class ToolOutcome:
    """What one tool call did: its result for the model (the only part of it Synthesis reads),
    the events it adds."""

    ok: bool
    summary: str
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    staged: MemoryCandidate | None = None
    events: list[Payload] = field(default_factory=list)
    answer: Any = None
    """What a caller outside a turn receives (MCP); `result` when None."""

    def reply(self) -> Any:
        return self.result if self.answer is None else self.answer


class Tool(NamedTuple):
    """One tool: `run(session, args)` with `args` an instance of `args`.  The hints are
    MCP's tool annotations (what a client may assume about a call)."""

    name: str
    title: str
    description: str
    args: type[BaseModel]
    run: Callable[[ToolSession, Any], ToolOutcome]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    doors: tuple[str, ...] = DOORS
    returns: Any = dict[str, Any]
    """The type of what a caller outside a turn receives (the MCP output schema)."""
    available: Callable[[ToolSession], bool] = lambda session: True

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        parameters = copy.deepcopy(_parameters(self.args))
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


@cache
def _parameters(args: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, built once per model (every planner call sends them all)."""
    parameters = args.model_json_schema()
    parameters.pop("title", None)
    return parameters


TOOLS: dict[str, Tool] = {}


def register(tool: Tool) -> Tool:
    """Add `tool` to the registry every door serves."""
    if tool.name in TOOLS:
        raise ValueError(f"tool {tool.name!r} is registered twice")
    unknown = set(tool.doors) - set(DOORS)
    if unknown:
        raise ValueError(f"tool {tool.name!r}: unknown door(s) {sorted(unknown)}")
    TOOLS[tool.name] = tool
    return tool


def _search(session: ToolSession, args: SearchArgsModel) -> ToolOutcome:
    exclude = [session.turn.doc_id] if session.turn is not None else []
    try:
        hits = session.memory.search(
            args.query, user=session.user, now=session.clock(), exclude_ids=exclude, **args.search_kwargs()
        )
    except IndexingError as exc:  # an index that cannot be read costs the hits, not the turn
        return ToolOutcome(False, "not searched", error=first_line(exc))
    keys = ("doc_id", "doc_path", "title", "score", "snippet", "archived", "date", "episode")
    rows = [{k: h.get(k) for k in keys} for h in hits]
    return ToolOutcome(True, f"{len(hits)} hit(s) for {args.query!r}", {"hits": rows}, answer=hits)


def _retrieve(session: ToolSession, args: RetrieveArgs) -> ToolOutcome:
    try:  # ownership by path, checked before anything is read or counted
        doc = session.memory.retrieve(args.identifier, user=session.user, now=session.clock())
    except (BadInput, Unreadable) as exc:
        return ToolOutcome(False, "not retrieved", error=str(exc))
    content = doc.content
    if re.search(r"/turn_\d+$", doc.doc_id):
        content = turn_text(content)  # a turn teaches its question and its answer
    text = truncate_tokens(content, PER_DOC_TOKENS)  # as the Context Gatherer cuts one
    return ToolOutcome(
        True,
        f"retrieved {doc.doc_id}",
        {"doc_id": doc.doc_id, "doc_path": doc.doc_path, "archived": doc.archived, "text": text},
        answer=doc.as_json(),
    )


def _save(session: ToolSession, args: SaveArgs) -> ToolOutcome:
    turn = session.turn
    if turn is None:
        given = args.model_dump(exclude={"type", "scope"})  # content, topic, keywords, key, ttl_hours
        saved = session.memory.save(**given, user=session.user, doc_type=args.type, scope=args.scope or "new")
        data = saved.as_json()
        return ToolOutcome(True, f"saved {saved.doc_id}", data, answer=data)
    staged = turn.extras.setdefault("staged_by_tool", [])
    extra = {k: v for k, v in (("scope", args.scope), ("ttl_hours", args.ttl_hours)) if v is not None}
    given = args.model_dump(include={"content", "topic", "keywords", "key"})
    candidate = MemoryCandidate(candidate_id=f"tool-{len(staged) + 1}", doc_type=args.type, **given, **extra)
    staged.append(candidate)
    return ToolOutcome(
        True,
        f"staged {args.type} candidate (committed only on APPROVE)",
        {"candidate_id": candidate.candidate_id},
        staged=candidate,
    )


def finding_line(finding: dict[str, Any]) -> str:
    """One research finding as a sentence: `Title — $697.00, In stock (shop.example).`
    (not "Title: …", which reads as a document's title before its snippet, and the
    title is what the finding is about)."""
    details = ", ".join(str(finding[k]) for k in ("price", "availability") if finding.get(k))
    where = f" ({finding['domain']})" if finding.get("domain") else ""
    return f"{finding.get('title') or 'Untitled page'}{' — ' + details if details else ''}{where}."


def _research_available(session: ToolSession) -> bool:
    return session.turn is not None and bool(session.vault.config.research.search_url)


def _research(session: ToolSession, args: ResearchArgs) -> ToolOutcome:
    ctx = session.turn
    if ctx is None or not _research_available(session):
        return ToolOutcome(
            False,
            "internet_research is not configured",
            error="unavailable: set [research] search_url in pandafs.toml",
        )
    from ..research.tool import ResearchTool

    tool = ResearchTool(ctx.config.research, reliability=ctx.extras.get("reliability"))
    analysis = ctx.extras.get("analysis")
    topic = getattr(analysis, "primary_topic", "general")
    keywords = list(getattr(analysis, "keywords", []))
    result = tool.run(
        args.query,
        ctx.vault.layout.turn_dir(ctx.user, ctx.turn),
        user=ctx.user,
        topic=topic,
        keywords=keywords,
        now=ctx.clock(),
        root=ctx.vault.root,
    )
    rows = [dict(f) for f in result.findings]
    outcomes = [o.__dict__ for o in result.outcomes]
    extractions: list[Payload] = [ExtractionRecorded(**o) for o in outcomes]
    return ToolOutcome(
        True,
        result.summary,
        {"findings": rows, "outcomes": outcomes, "skipped_domains": list(result.skipped_domains)},
        events=extractions,
    )


def _edit(session: ToolSession, args: EditArgs) -> ToolOutcome:
    from ..memory.editing import edit_document

    try:
        changes = args.model_dump(exclude={"identifier"})  # text, entry, title, topic, keywords
        changed = edit_document(session.vault, args.identifier, session.user, now=session.clock(), **changes)
    except BadInput as exc:
        return ToolOutcome(False, "not edited", error=str(exc))
    return ToolOutcome(True, f"edited {changed.doc_id}", changed.as_json())


def _delete(session: ToolSession, args: DeleteArgs) -> ToolOutcome:
    from ..memory.editing import delete_document

    try:
        changed = delete_document(
            session.vault, args.identifier, session.user, entry=args.entry, now=session.clock()
        )
    except BadInput as exc:
        return ToolOutcome(False, "not deleted", error=str(exc))
    return ToolOutcome(True, f"deleted {changed.doc_id} (moved to {changed.moved_to})", changed.as_json())


def _forget(session: ToolSession, args: ForgetArgs) -> ToolOutcome:
    """A dry run unless `confirm`; confirmed inside a turn, it runs when the turn ends."""
    from ..errors import Busy
    from ..forget import forget

    inside = session.turn is not None
    try:
        report = forget(
            session.vault,
            args.query_or_id,
            session.user,
            dry_run=inside or not args.confirm,
            now=session.clock(),
        )
    except (BadInput, Busy) as exc:
        return ToolOutcome(False, "nothing forgotten", error=str(exc))
    data = report.as_json()
    files = len(report.files)
    if not args.confirm:
        data["next"] = "nothing changed yet: call forget again with confirm: true to forget it"
        return ToolOutcome(True, f"would change {files} file(s)", data)
    if session.turn is not None:
        session.turn.extras.setdefault(FORGET_AFTER, []).append(args.query_or_id)
        return ToolOutcome(True, "forget confirmed: runs when the turn ends", data)
    return ToolOutcome(
        report.ok,
        f"forgot it: {files} file(s) changed",
        data,
        error=None if report.ok else f"{len(report.survivors)} place(s) still hold it",
    )


def _ask(session: ToolSession, args: AskArgs) -> ToolOutcome:
    if session.ask is None:
        return ToolOutcome(False, "ask is not available here", error="ask runs a turn: not inside one")
    data = session.ask(args.question, args.now)
    return ToolOutcome(True, f"answered in {data['turn_id']}", data, answer=data)


for _tool in (
    Tool(
        "search_memory",
        "Search memory",
        "Search every document this user may see (their own plus global ones): turns, "
        "preferences, facts, memories, research, knowledge, archived turns' summaries.",
        SearchArgs,
        _search,
        read_only=True,
        idempotent=True,
        returns=list[dict[str, Any]],
    ),
    Tool(
        "retrieve_memory",
        "Retrieve a document",
        "Get one document in full by id or path (an archived turn is expanded from the archive).",
        RetrieveArgs,
        _retrieve,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        "save_memory",
        "Save a memory",
        "Save stable knowledge (a preference, fact or memory) for this user; never overwrites, "
        "and saving the same statement again adds nothing. Inside a turn it is staged and "
        "committed only if validation approves.",
        SaveArgs,
        _save,
        idempotent=True,
    ),
    Tool(
        "edit_memory",
        "Edit a memory",
        "Change one of this user's memory documents: an entry of preferences / facts (by its "
        "number or key), or a memory's text, title, topic or keywords.",
        EditArgs,
        _edit,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        "delete_memory",
        "Delete a memory",
        "Delete one of this user's memories or one entry of preferences / facts: it is kept in "
        "the archive where expired documents go, and no longer searched. To remove the text "
        "from everything, use forget.",
        DeleteArgs,
        _delete,
        destructive=True,
    ),
    Tool(
        "forget",
        "Forget",
        "Make the vault forget a statement, memory, turn or words of this user everywhere "
        "(documents, turns, archive, index, caches, outbox). Call without confirm first, show "
        "the person what would change, then again with confirm: true only if they asked.",
        ForgetArgs,
        _forget,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        "internet_research",
        "Research the web",
        "Search the web and read the top pages (titles, prices, availability); pages are "
        "cached as visit records.",
        ResearchArgs,
        _research,
        read_only=True,
        open_world=True,
        doors=("planner",),
        available=_research_available,
    ),
    Tool(
        "ask",
        "Ask the assistant",
        "Run one turn of the assistant's pipeline for this user (recorded as a turn, like "
        "`pandafs ask`); returns the answer, the turn id and its outcome.",
        AskArgs,
        _ask,
        open_world=True,  # a turn may research the web when that is configured
        doors=("mcp",),
    ),
):
    register(_tool)


_RENAMED: dict[str, tuple[str, dict[str, str]]] = {
    "memory_search": ("search_memory", {}),
    "memory_retrieve": ("retrieve_memory", {"id": "identifier"}),
    "memory_save": ("save_memory", {"doc_type": "type"}),
}
"""Names and argument spellings that stored plans and events may still carry."""
_RENAMED |= {old.replace("_", ".", 1): new for old, new in _RENAMED.items()}


def canonical_request(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A tool call in today's name and argument spellings."""
    if name not in _RENAMED:
        return name, args
    new, renames = _RENAMED[name]
    return new, {renames.get(key, key): value for key, value in args.items()}


def canonical_tool(name: str) -> str:
    """The registered name of a tool, also for the spellings of stored plans."""
    return canonical_request(name, {})[0]


def _session(ctx: "TurnContext") -> ToolSession:
    return ToolSession(ctx.vault, ctx.memory, ctx.user, ctx.clock, turn=ctx)


def available_tools(ctx: "TurnContext") -> list[ToolSpec]:
    """The Planner's tools, each saying whether it can run in this turn."""
    session = _session(ctx)
    return [
        ToolSpec(name=t.name, description=t.description, available=t.available(session))
        for t in TOOLS.values()
        if "planner" in t.doors
    ]


def run_tool(ctx: "TurnContext", name: str, raw_args: dict[str, Any]) -> ToolOutcome:
    """Validate arguments and run a tool for the Planner; an unknown tool or bad arguments
    are an outcome, not a crash."""
    name, raw_args = canonical_request(name, raw_args)
    tool = TOOLS.get(name)
    if tool is None or "planner" not in tool.doors:
        return ToolOutcome(False, f"unknown tool {name!r}", error=f"unknown tool {name!r}")
    try:
        args = tool.args.model_validate(raw_args)
    except ValidationError as exc:
        err = exc.errors()[0]
        return ToolOutcome(
            False, "invalid arguments", error=f"{'.'.join(map(str, err['loc']))}: {err['msg']}"
        )
    return tool.run(_session(ctx), args)


def tool_schemas(door: str | None = None, ctx: "TurnContext | None" = None) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas of the tools `door` serves (every tool when None);
    with `ctx`, only those that can run in its turn."""
    session = _session(ctx) if ctx is not None else None
    return [
        tool.schema()
        for tool in TOOLS.values()
        if (door is None or door in tool.doors) and (session is None or tool.available(session))
    ]

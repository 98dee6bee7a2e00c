"""Typed turn events.

An event is one JSON line in a turn's `events.jsonl`:

    {"v":1,"seq":3,"ts":"…Z","user":"alice","turn":"turn_000001","phase":"planner",
     "type":"plan_created","data":{…},"prev":"<sha256 of event 2>","hash":"<sha256>"}

Each event type is a frozen pydantic payload class (`data`) registered under its
`type` name; `Event` is the envelope.  `parse_event` validates a raw record's envelope and
its type's payload; a type this version does not know becomes an `UnknownEvent` that keeps
its data untouched (a newer PandaFS wrote it), so nothing is ever dropped.  Payloads allow
extra keys for the same reason.  Each payload class is built when a turn first writes or
reads it."""

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Candidate",
    "ContentReference",
    "ContextBlock",
    "ContextRetrieved",
    "ContextSynthesized",
    "DocumentsUsed",
    "Event",
    "ExecutorStepped",
    "ExtractionRecorded",
    "FeedbackRecorded",
    "Forgotten",
    "GateResult",
    "MemoryCandidate",
    "MemoryCommitted",
    "MemoryDiscarded",
    "MemoryEntry",
    "MemoryStaged",
    "Outcome",
    "PAYLOADS",
    "Payload",
    "PhaseFailed",
    "PhaseMetrics",
    "PlanCreated",
    "QueryAnalyzed",
    "ReflectionDecided",
    "ResponseSynthesized",
    "SCHEMA_VERSION",
    "ScopeChanged",
    "SourceRef",
    "TierFailed",
    "Todo",
    "ToolExecuted",
    "ToolRequest",
    "TornTailRepaired",
    "TurnCompleted",
    "TurnStarted",
    "UnknownEvent",
    "ValidationDecided",
    "parse_event",
]

SCHEMA_VERSION = 1

Decision = Literal["PROCEED", "CLARIFY"]
Outcome = Literal["APPROVE", "RETRY", "REVISE", "FAIL"]
TurnOutcome = Literal["APPROVE", "REVISE", "FAIL", "CLARIFY", "IMPORTED"]


class Record(BaseModel):
    """A frozen part of an event; keys it does not know are kept (a newer PandaFS wrote them)."""

    model_config = ConfigDict(frozen=True, extra="allow")


class Payload(Record):
    """Base of every event's `data`.  Subclasses set TYPE and PHASE; each is built when a
    turn first writes or reads it."""

    model_config = ConfigDict(defer_build=True)
    TYPE: ClassVar[str]
    PHASE: ClassVar[str]


class PhaseMetrics(Record):
    duration_ms: float = 0.0
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tool_calls: int = 0


# --- intake ---------------------------------------------------------------------------


class TurnStarted(Payload):
    TYPE = "turn_started"
    PHASE = "intake"
    query: str
    source: Literal["ask", "import", "inbox"] = "ask"
    occurred_at: datetime
    asked_at: datetime | None = None
    """The time the asker set (`ask --now`, an inbox file's `now:`, MCP `ask`'s `now`):
    every phase of the turn reads it as the present, so a question about an imported
    history is asked at the time it belongs to.  None: the clock's time."""
    external_id: str | None = None
    meta: dict[str, Any] | None = None
    inbox_file: str | None = None
    backend: str | None = None


# --- phase 0: query analyzer ----------------------------------------------------------


class ContentReference(Record):
    title: str
    source_turn: str
    doc_id: str | None = None
    detail: str | None = None


class QueryAnalyzed(Payload):
    TYPE = "query_analyzed"
    PHASE = "query_analyzer"
    resolved_query: str
    query_type: str = "general_question"
    reference_status: Literal["not_needed", "resolved", "unresolved"] = "not_needed"
    original_references: list[str] = []
    content_reference: ContentReference | None = None
    primary_topic: str = "general"
    keywords: list[str] = []
    entities: list[str] = []
    reasoning: str = ""
    metrics: PhaseMetrics | None = None


# --- phase 1: reflection --------------------------------------------------------------


class ReflectionDecided(Payload):
    TYPE = "reflection_decided"
    PHASE = "reflection"
    decision: Decision
    confidence: float = 1.0
    reasoning: str = ""
    user_purpose: str = ""
    data_requirements: list[str] = []
    clarification_question: str | None = None
    metrics: PhaseMetrics | None = None


# --- phase 2: context gatherer --------------------------------------------------------


class Candidate(Record):
    doc_id: str
    doc_path: str
    kind: str
    title: str = ""
    score: float = 0.0
    relevance: Literal["high", "medium", "low"] = "medium"
    reason: str = ""
    tier: str | None = None
    selected: bool = False


class MemoryEntry(Record):
    """One line of preferences.md / facts.md that the gatherer considered."""

    kind: Literal["preference", "fact"]
    key: str = ""
    value: str
    doc_id: str
    doc_path: str


class ContextRetrieved(Payload):
    TYPE = "context_retrieved"
    PHASE = "context_gatherer"
    queries: list[str] = []
    candidates: list[Candidate] = []
    memory: list[MemoryEntry] = []
    reasoning: str = ""
    tiers: dict[str, Any] = {}
    metrics: PhaseMetrics | None = None


class GateResult(Record):
    gate: str
    passed: bool
    detail: str = ""


class ContextBlock(Record):
    """One `###` block of §2: a table (rows of cells) plus its `_meta` mapping."""

    heading: str
    meta: dict[str, Any] = {}
    columns: list[str] = []
    rows: list[list[str]] = []
    text: str = ""


class SourceRef(Record):
    doc_id: str
    doc_path: str
    title: str = ""


class ContextSynthesized(Payload):
    TYPE = "context_synthesized"
    PHASE = "context_gatherer"
    blocks: list[ContextBlock] = []
    sources: list[SourceRef] = []
    gates: list[GateResult] = []
    tokens: int = 0
    metrics: PhaseMetrics | None = None


# --- phase 3-5: planner, executor, coordinator ----------------------------------------


class Todo(Record):
    id: int
    text: str
    status: Literal["pending", "in_progress", "completed", "skipped"] = "pending"


class ToolRequest(Record):
    tool: str
    args: dict[str, Any] = {}
    reason: str = ""


class MemoryCandidate(Record):
    candidate_id: str
    doc_type: Literal["preference", "fact", "memory"]
    content: str
    topic: str = "user.preference"
    keywords: list[str] = []
    key: str | None = None


class PlanCreated(Payload):
    TYPE = "plan_created"
    PHASE = "planner"
    attempt: int = 0
    route: Literal["synthesis", "coordinator"] = "synthesis"
    todos: list[Todo] = []
    tool_requests: list[ToolRequest] = []
    reasoning: str = ""
    metrics: PhaseMetrics | None = None


class ExecutorStepped(Payload):
    TYPE = "executor_stepped"
    PHASE = "executor"
    attempt: int = 0
    step: int
    action: Literal["call_tool", "done"]
    todo_id: int | None = None
    request: ToolRequest | None = None
    reasoning: str = ""


class ToolExecuted(Payload):
    TYPE = "tool_executed"
    PHASE = "coordinator"
    attempt: int = 0
    tool: str
    args: dict[str, Any] = {}
    ok: bool
    summary: str = ""
    result: dict[str, Any] = {}
    error: str | None = None
    duration_ms: float = 0.0


class MemoryStaged(Payload):
    TYPE = "memory_staged"
    PHASE = "planner"
    candidate: MemoryCandidate


# --- phase 6-7: synthesis, validation -------------------------------------------------


class ResponseSynthesized(Payload):
    TYPE = "response_synthesized"
    PHASE = "synthesis"
    attempt: int = 0
    answer: str
    citations: list[str] = []
    metrics: PhaseMetrics | None = None


class ValidationDecided(Payload):
    TYPE = "validation_decided"
    PHASE = "validation"
    attempt: int = 0
    decision: Outcome
    reasons: list[str] = []
    checks: list[GateResult] = []
    metrics: PhaseMetrics | None = None


# --- phase 8: save ----------------------------------------------------------------------


class MemoryCommitted(Payload):
    TYPE = "memory_committed"
    PHASE = "save"
    candidate_id: str
    doc_id: str
    doc_path: str


class MemoryDiscarded(Payload):
    TYPE = "memory_discarded"
    PHASE = "save"
    candidate_id: str
    reason: str


class DocumentsUsed(Payload):
    TYPE = "documents_used"
    PHASE = "save"
    doc_ids: list[str] = []
    outcome: Outcome


class TurnCompleted(Payload):
    TYPE = "turn_completed"
    PHASE = "save"
    outcome: TurnOutcome
    answer: str | None = None
    subject: str | None = None
    summary: str = ""
    topics: list[str] = []
    query_type: str = "general_question"
    has_research: bool = False
    research_topic: str | None = None
    quality: float = 0.5
    intervention: str | None = None
    metrics: PhaseMetrics | None = None


# --- failures and housekeeping ---------------------------------------------------------


class PhaseFailed(Payload):
    TYPE = "phase_failed"
    PHASE = "system"
    phase: str
    error_type: str
    message: str
    attempt: int = 0
    metrics: PhaseMetrics | None = None  # what the phase spent before it failed


class TornTailRepaired(Payload):
    TYPE = "torn_tail_repaired"
    PHASE = "system"
    bytes_moved: int
    moved_to: str


class TierFailed(Payload):
    """A context tier could not be assembled, or the unified search (`search`) could not
    read the index; the turn goes on without it."""

    TYPE = "tier_failed"
    PHASE = "context_gatherer"
    tier: Literal["hot", "warm", "cold", "search"]
    error_type: str
    message: str


class ExtractionRecorded(Payload):
    """How extracting one page went (folded into the per-domain reliability table)."""

    TYPE = "extraction_recorded"
    PHASE = "coordinator"
    domain: str
    url: str
    success: bool
    items: int = 0
    fields_present: list[str] = []
    confidence: float = 0.0
    error: str | None = None


class ScopeChanged(Payload):
    """A document was promoted or demoted (new ↔ user ↔ global) or expired, and why."""

    TYPE = "scope_changed"
    PHASE = "save"
    doc_id: str
    doc_path: str
    old_scope: str
    new_scope: str
    reason: str
    trust: float | None = None
    usage_count: int = 0


class FeedbackRecorded(Payload):
    TYPE = "feedback_recorded"
    PHASE = "query_analyzer"
    target_turn: str
    status: Literal["accepted", "rejected"]
    signal: str


class Forgotten(Payload):
    """A person made the vault forget something: the one rewrite of history, recorded.

    In the owner's maintenance log it is the forgetting itself (who, when, what kind, and
    salted hashes of the forgotten words, so `verify --forgotten` can prove they are gone
    without the text being kept); at the end of a turn log it anchors the chain that was
    rewritten without the forgotten payload (`redacted`: how many events changed;
    `replaces`: the hash the log ended with before, so a record of each turn's final
    hash can follow the log from the old end to the new one)."""

    TYPE = "forgotten"
    PHASE = "system"
    forget_id: str
    by: str
    kind: Literal["statement", "memory", "turn", "words"]
    targets: int = 0
    redacted: int = 0
    replaces: str = ""
    salt: str = ""
    word_hashes: list[str] = []
    sentence_hashes: list[str] = []
    all_of_hashes: list[str] = []


# --- the envelope and the registry ----------------------------------------------------

PAYLOADS: dict[str, type[Payload]] = {cls.TYPE: cls for cls in Payload.__subclasses__()}
"""Every event type this version knows, by its `type` name (each payload class above)."""


class Event(BaseModel):
    """The envelope every line shares.  `data` is the payload of its `type` (`PAYLOADS`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    v: int = SCHEMA_VERSION
    seq: int = Field(ge=0)
    ts: datetime
    user: str
    turn: str
    phase: str
    type: str
    data: Any
    prev: str
    hash: str
    known: ClassVar[bool] = True
    """Whether this version knows the event's type (`UnknownEvent`: no)."""


class UnknownEvent(Event):
    """An event type this version does not know; kept verbatim and reported."""

    data: dict[str, Any]
    known: ClassVar[bool] = False


def parse_event(record: dict[str, Any]) -> Event:
    """Validate one raw log record into its event, its `data` the payload its type names (an
    `UnknownEvent` for a type this version does not know); one that does not fit raises
    pydantic's `ValidationError` (the payload's, or the envelope's)."""
    payload = PAYLOADS.get(record.get("type"))  # type: ignore[arg-type]
    if payload is None:
        return UnknownEvent.__pydantic_validator__.validate_python(record)  # type: ignore[no-any-return]
    data = payload.__pydantic_validator__.validate_python(record.get("data"))
    return Event.__pydantic_validator__.validate_python({**record, "data": data})  # type: ignore[no-any-return]

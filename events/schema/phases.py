"""The payloads of a turn's phases, intake to Save (phases 0-8): what each phase decided."""

# No `from __future__ import annotations`: the models' annotations are objects when the
# classes are built, which pydantic would otherwise compile from their strings one by one.

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1

Decision = Literal["PROCEED", "CLARIFY"]
Outcome = Literal["APPROVE", "RETRY", "REVISE", "FAIL"]
TurnOutcome = Literal["APPROVE", "REVISE", "FAIL", "CLARIFY", "IMPORTED"]


class Payload(BaseModel):
    """Base of every event's `data`.  Subclasses set TYPE and PHASE."""

    model_config = ConfigDict(frozen=True, extra="allow")
    TYPE: ClassVar[str]
    PHASE: ClassVar[str]


class PhaseMetrics(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
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


class ContentReference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
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


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    doc_id: str
    doc_path: str
    kind: str
    title: str = ""
    score: float = 0.0
    relevance: Literal["high", "medium", "low"] = "medium"
    reason: str = ""
    tier: str | None = None
    selected: bool = False


class MemoryEntry(BaseModel):
    """One line of preferences.md / facts.md that the gatherer considered."""

    model_config = ConfigDict(frozen=True, extra="allow")
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


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    gate: str
    passed: bool
    detail: str = ""


class ContextBlock(BaseModel):
    """One `###` block of §2: a table (rows of cells) plus its `_meta` mapping."""

    model_config = ConfigDict(frozen=True, extra="allow")
    heading: str
    meta: dict[str, Any] = {}
    columns: list[str] = []
    rows: list[list[str]] = []
    text: str = ""


class SourceRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
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


class Todo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    id: int
    text: str
    status: Literal["pending", "in_progress", "completed", "skipped"] = "pending"


class ToolRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    tool: str
    args: dict[str, Any] = {}
    reason: str = ""


class MemoryCandidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
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

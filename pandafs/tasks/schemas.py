"""The typed input and output of every thinking step of the pipeline, phase by phase.

A phase never talks to a model directly.  It builds a task's input model and asks
the backend (`pandafs.llm.base.Backend`) for the output model; both backends answer
exactly these models, so the contracts live here, below the pipeline and the LLM
backends (the prompts that go with them: `tasks.prompts`).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from events.schema import ContentReference, GateResult, ToolRequest


class _Model(BaseModel):
    # each contract is built when first used: a turn uses most, no command all of them
    model_config = ConfigDict(extra="ignore", defer_build=True)


class _Asked(_Model):  # a step's input: the query as asked and with its references resolved
    query: str
    resolved_query: str


# --- phase 0: query analyzer -------------------------------------------------------------


class PriorTurn(_Model):
    turn: str
    query: str
    answer: str = ""
    subject: str | None = None
    content_reference: ContentReference | None = None


class AnalyzeIn(_Model):
    query: str
    recent_turns: list[PriorTurn] = []
    topics: dict[str, list[str]] = {}


class AnalyzeOut(_Model):
    resolved_query: str
    query_type: str = "question"
    reference_status: Literal["not_needed", "resolved", "unresolved"] = "not_needed"
    original_references: list[str] = []
    content_reference: ContentReference | None = None
    primary_topic: str = "general"
    keywords: list[str] = []
    entities: list[str] = []
    feedback: Literal["accepted", "rejected"] | None = None
    reasoning: str = ""


# --- phase 1: reflection -------------------------------------------------------------------


class ReflectIn(_Model):
    query: str
    analysis: AnalyzeOut


class ReflectOut(_Model):
    decision: Literal["PROCEED", "CLARIFY"]
    confidence: float = Field(0.8, ge=0, le=1)
    reasoning: str = ""
    user_purpose: str = ""
    data_requirements: list[str] = []
    clarification_question: str | None = None


# --- phase 2: context gatherer ---------------------------------------------------------------


class CandidateView(_Model):
    doc_id: str
    kind: str
    title: str = ""
    score: float = 0.0
    snippet: str = ""
    age_days: float = 0.0
    quality: float = 0.5
    tier: str | None = None


class RetrievalIn(_Asked):
    keywords: list[str] = []
    topic: str = "general"
    candidates: list[CandidateView] = []
    memory_entries: list[str] = []
    threshold: float = 0.15


class Pick(_Model):
    doc_id: str
    relevance: Literal["high", "medium", "low"] = "medium"
    reason: str = ""


class RetrievalOut(_Model):
    relevant: list[Pick] = []
    relevant_memory: list[str] = []
    reasoning: str = ""


class LoadedDoc(_Model):
    doc_id: str
    kind: str
    title: str = ""
    text: str = ""
    created_at: str = ""
    quality: float = 0.5
    relevance: str = "medium"
    archived: bool = False


class MemoryRow(_Model):
    kind: Literal["preference", "fact"]
    key: str = ""
    value: str
    source: str = ""


class SynthesizeContextIn(_Asked):
    keywords: list[str] = []
    documents: list[LoadedDoc] = []
    memory: list[MemoryRow] = []


class DocRow(_Model):
    doc_id: str
    relevance: str = "medium"
    summary: str
    key_facts: list[str] = []


class SynthesizeContextOut(_Model):
    memory: list[MemoryRow] = []
    prior_turns: list[DocRow] = []
    research: list[DocRow] = []
    knowledge: list[DocRow] = []
    gaps: list[str] = []
    context_quality: float = Field(0.5, ge=0, le=1)


# --- phase 3: planner --------------------------------------------------------------------------


class ToolSpec(_Model):
    name: str
    description: str
    available: bool = True


class CandidateDraft(_Model):
    doc_type: Literal["preference", "fact", "memory"]
    content: str
    key: str | None = None
    topic: str = "user.preference"
    keywords: list[str] = []


class PlanIn(_Model):
    today: str = ""
    query: str
    resolved_query: str
    query_type: str
    keywords: list[str] = []
    topic: str = "general"
    user_purpose: str = ""
    data_requirements: list[str] = []
    context_meta: list[dict[str, Any]] = []
    context_text: str = ""
    tools: list[ToolSpec] = []
    attempt: int = 0
    feedback: list[str] = []


class PlanOut(_Model):
    route: Literal["synthesis", "coordinator"] = "synthesis"
    todos: list[str] = []
    tool_requests: list[ToolRequest] = []
    memory_candidates: list[CandidateDraft] = []
    reasoning: str = ""


# --- phase 4: executor (native tool calls) --------------------------------------------------


class ToolCallsIn(_Asked):
    """What the Executor's model sees; `tools` go out as the request's `tools`, not as text."""

    todos: list[str] = []
    planned: list[ToolRequest] = []
    context_text: str = ""
    tools: list[dict[str, Any]] = Field(default=[], exclude=True)


class ToolCallsOut(_Model):
    tool_requests: list[ToolRequest] = []
    reasoning: str = ""


# --- phase 6-7: synthesis and validation -------------------------------------------------------


class SourceView(_Model):
    n: int
    doc_id: str
    title: str = ""
    text: str = ""


class ToolResultView(_Model):
    tool: str
    ok: bool = True
    summary: str = ""
    text: str = ""


# The docstring below is part of the JSON schema a model is sent: changing it changes prompts.
class FactView(_Model):
    """One statement the answer may use, with where it came from (grounding.py)."""

    n: int
    doc_id: str = ""
    text: str
    origin: Literal["memory", "stated", "document", "answer", "tool", "assistant"] = "document"
    when: str = ""
    slot: str = ""
    key: str = ""  # what the statement is about ("car", "prefers:tea"): its slot's key
    replaces: list[str] = []


class AnswerIn(_Asked):
    query_type: str
    keywords: list[str] = []
    entities: list[str] = []
    content_reference: ContentReference | None = None
    requested: str = ""
    facts: list[FactView] = []
    context_text: str = ""
    sources: list[SourceView] = []
    tool_results: list[ToolResultView] = []
    staged_memory: list[str] = []
    feedback: list[str] = []


class AnswerOut(_Model):
    answer: str
    citations: list[str] = []


class ValidateIn(_Asked):
    query_type: str
    keywords: list[str] = []
    entities: list[str] = []
    data_requirements: list[str] = []
    requested: str = ""
    facts: list[FactView] = []
    checks: list[GateResult] = []
    tools_tried: bool = False
    answer: str
    citations: list[str] = []
    sources: list[SourceView] = []
    tool_results: list[ToolResultView] = []
    attempt: int = 0
    max_attempts: int = 3


class ValidateOut(_Model):
    decision: Literal["APPROVE", "RETRY", "REVISE", "FAIL"]
    reasons: list[str] = []
    checks: list[GateResult] = []


# --- save: turn summary --------------------------------------------------------------------------


class SummarizeIn(_Asked):
    answer: str
    outcome: str
    keywords: list[str] = []
    entities: list[str] = []
    tools_used: list[str] = []


class SummarizeOut(_Model):
    summary: str
    topics: list[str] = []
    subject: str | None = None

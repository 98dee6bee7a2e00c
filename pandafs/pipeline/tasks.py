"""The LLM contracts of the pipeline: one Task per thinking step, with typed in/out.

A phase never talks to a model directly.  It builds a task's input model and asks
the backend (`pandafs.llm.base.Backend`) for the output model.  The offline backend
implements each task with deterministic rules; the OpenAI-compatible backend sends
the instructions and the input JSON and validates the reply against the output
model.  Keeping the contracts here means both backends answer exactly the same
questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from events.schema import ContentReference, GateResult, ToolRequest

__all__ = ["TASKS", "Task"]

I = TypeVar("I", bound=BaseModel)  # noqa: E741
O = TypeVar("O", bound=BaseModel)  # noqa: E741


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


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


class RetrievalIn(_Model):
    query: str
    resolved_query: str
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


class SynthesizeContextIn(_Model):
    query: str
    resolved_query: str
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


class AnswerIn(_Model):
    query: str
    resolved_query: str
    query_type: str
    keywords: list[str] = []
    content_reference: ContentReference | None = None
    context_text: str = ""
    sources: list[SourceView] = []
    tool_results: list[ToolResultView] = []
    staged_memory: list[str] = []
    feedback: list[str] = []


class AnswerOut(_Model):
    answer: str
    citations: list[str] = []


class ValidateIn(_Model):
    query: str
    resolved_query: str
    query_type: str
    keywords: list[str] = []
    entities: list[str] = []
    data_requirements: list[str] = []
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


class SummarizeIn(_Model):
    query: str
    resolved_query: str
    answer: str
    outcome: str
    keywords: list[str] = []
    entities: list[str] = []
    tools_used: list[str] = []


class SummarizeOut(_Model):
    summary: str
    topics: list[str] = []
    subject: str | None = None


@dataclass(frozen=True)
class Task(Generic[I, O]):
    """One thinking step: who does it (role), what it is told, what it must return."""

    name: str
    role: Literal["reflex", "mind", "voice"]
    input: type[I]
    output: type[O]
    instructions: str


TASKS: dict[str, Task[Any, Any]] = {
    t.name: t
    for t in (
        Task(
            "analyze_query",
            "reflex",
            AnalyzeIn,
            AnalyzeOut,
            "You are the Query Analyzer. Resolve references to earlier turns ('that one', 'it') "
            "using recent_turns, classify the query, pick the most specific topic from topics, "
            "and list content keywords and named entities.",
        ),
        Task(
            "reflect",
            "reflex",
            ReflectIn,
            ReflectOut,
            "You are Reflection, a fast gate. Decide PROCEED if the query can be acted on, "
            "CLARIFY (with one short question) if it cannot. State the user's purpose and "
            "what data the answer needs.",
        ),
        Task(
            "plan_retrieval",
            "mind",
            RetrievalIn,
            RetrievalOut,
            "You are the Context Gatherer (retrieval). From the candidate documents and memory "
            "entries, pick only those relevant to the query, with a reason for each.",
        ),
        Task(
            "synthesize_context",
            "mind",
            SynthesizeContextIn,
            SynthesizeContextOut,
            "You are the Context Gatherer (synthesis). Extract from the documents only what "
            "helps answer the query; omit irrelevant preferences and facts entirely. Every "
            "row must name the document it came from.",
        ),
        Task(
            "plan",
            "mind",
            PlanIn,
            PlanOut,
            "You are the Planner. Decide whether the gathered context suffices (route "
            "synthesis) or tools are needed (route coordinator), write a short todo list, and "
            "list stable memory candidates (preferences, facts; never prices or URLs).",
        ),
        Task(
            "answer",
            "voice",
            AnswerIn,
            AnswerOut,
            "You are Synthesis. Answer the user from the context and tool results only, "
            "citing sources as [n]; say plainly when memory holds nothing relevant.",
        ),
        Task(
            "validate",
            "mind",
            ValidateIn,
            ValidateOut,
            "You are Validation. APPROVE a grounded answer that addresses the query; REVISE "
            "if it makes claims not in the sources; RETRY if more retrieval could help; FAIL "
            "if it cannot be answered.",
        ),
        Task(
            "summarize_turn",
            "mind",
            SummarizeIn,
            SummarizeOut,
            "Summarise the completed turn in one or two sentences for the turn index, with "
            "2-5 topic keywords and the main subject discussed.",
        ),
    )
}

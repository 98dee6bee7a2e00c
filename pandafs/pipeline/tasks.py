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


class ToolCallsIn(_Model):
    """What the Executor's model sees; `tools` go out as the request's `tools`, not as text."""

    query: str
    resolved_query: str
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


class FactView(_Model):
    """One statement the answer may use, with where it came from (grounding.py)."""

    n: int
    doc_id: str = ""
    text: str
    origin: Literal["memory", "stated", "document", "answer", "tool"] = "document"
    when: str = ""
    slot: str = ""
    replaces: list[str] = []


class AnswerIn(_Model):
    query: str
    resolved_query: str
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


class ValidateIn(_Model):
    query: str
    resolved_query: str
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
    example: dict[str, Any]
    tool_calls: bool = False  # answered with OpenAI `tool_calls`, not JSON content

    def prompt(self) -> str:
        """The system prompt: the job, the output schema in words, one example."""
        import json

        return (
            f"TASK: {self.name}\n{self.instructions}\n\nExample of a valid reply:\n"
            f"{json.dumps(self.example, ensure_ascii=False)}"
        )


TASKS: dict[str, Task[Any, Any]] = {
    t.name: t
    for t in (
        Task(
            "analyze_query",
            "reflex",
            AnalyzeIn,
            AnalyzeOut,
            "You are the Query Analyzer. Resolve references ('that one', 'it', 'there') to the "
            "latest matching thing or place in recent_turns and write the query with it in "
            "resolved_query. query_type is one of: question, recall, followup, commerce, "
            "preference_statement, fact_statement, greeting, feedback. A question is never a "
            "statement. Pick the most specific topic from topics; list content keywords and "
            "named entities. Reply with JSON: resolved_query, query_type, reference_status, "
            "original_references, content_reference, primary_topic, keywords, entities, "
            "feedback, reasoning.",
            {
                "resolved_query": "How much was the Lenovo LOQ 15?",
                "query_type": "followup",
                "reference_status": "resolved",
                "original_references": ["that one"],
                "content_reference": {"title": "Lenovo LOQ 15", "source_turn": "turn_000002"},
                "primary_topic": "electronics.laptop",
                "keywords": ["lenovo", "loq", "price"],
                "entities": ["Lenovo LOQ 15"],
                "feedback": None,
                "reasoning": "'that one' is the laptop named in turn 2",
            },
        ),
        Task(
            "reflect",
            "reflex",
            ReflectIn,
            ReflectOut,
            "You are Reflection, a fast gate. decision is PROCEED if the query can be acted on, "
            "CLARIFY (with one short clarification_question) if it cannot. State user_purpose "
            "and data_requirements (any of: user_memory, prior_turns, knowledge, research, "
            "price, fresh_data).",
            {
                "decision": "PROCEED",
                "confidence": 0.85,
                "reasoning": "a clear question about the user's job",
                "user_purpose": "Recall the user's job",
                "data_requirements": ["user_memory"],
                "clarification_question": None,
            },
        ),
        Task(
            "plan_retrieval",
            "mind",
            RetrievalIn,
            RetrievalOut,
            "You are the Context Gatherer (retrieval). From the candidates pick only the "
            "documents relevant to the query (relevant: doc_id, relevance high|medium|low, "
            "reason) and copy the memory_entries that help, verbatim, into relevant_memory.",
            {
                "relevant": [{"doc_id": "alice/facts", "relevance": "high", "reason": "states the job"}],
                "relevant_memory": ["Works as a carpenter in Bergen"],
                "reasoning": "1 of 4 documents is about the job",
            },
        ),
        Task(
            "synthesize_context",
            "mind",
            SynthesizeContextIn,
            SynthesizeContextOut,
            "You are the Context Gatherer (synthesis). Extract from the documents only what "
            "helps answer the query; omit irrelevant preferences and facts entirely. Every "
            "row names the doc_id it came from; key_facts are sentences copied from that "
            "document. Put turns in prior_turns, research in research, the rest in knowledge.",
            {
                "memory": [
                    {"kind": "fact", "key": "", "value": "Lives in Trondheim", "source": "alice/facts"}
                ],
                "prior_turns": [
                    {
                        "doc_id": "alice/turn_000003",
                        "relevance": "medium",
                        "summary": "the user said where they live",
                        "key_facts": ["I live in Oslo"],
                    }
                ],
                "research": [],
                "knowledge": [],
                "gaps": [],
                "context_quality": 0.7,
            },
        ),
        Task(
            "plan",
            "mind",
            PlanIn,
            PlanOut,
            "You are the Planner. route is 'synthesis' when the gathered context answers the "
            "query, 'coordinator' when tools are needed; then list tool_requests (tool = one "
            "of the names in tools, args as that tool's JSON arguments). Write a short todo "
            "list. memory_candidates hold only what the user STATED about themselves "
            "(preferences, facts, plans and events with their date from today); never a "
            "question, a price or a URL.",
            {
                "route": "coordinator",
                "todos": ["Search memory for the trip", "Answer from §2 and the results"],
                "tool_requests": [
                    {"tool": "memory_search", "args": {"query": "trip Rome May"}, "reason": "§2 lacks it"}
                ],
                "memory_candidates": [
                    {
                        "doc_type": "fact",
                        "content": "Planning a trip to Rome in May (said 2026-03-01)",
                        "topic": "travel",
                        "keywords": ["trip", "rome", "may"],
                    }
                ],
                "reasoning": "the plan is new; §2 has nothing on hotels",
            },
        ),
        Task(
            "call_tools",
            "mind",
            ToolCallsIn,
            ToolCallsOut,
            "You are the Executor. Call the tools the plan needs, by their exact names, with "
            "JSON arguments that match each tool's parameters (planned lists the Planner's "
            "suggestions). Call no tool when none is needed.",
            {
                "tool_requests": [
                    {"tool": "memory_search", "args": {"query": "dentist"}, "reason": "find the dentist"}
                ],
                "reasoning": "one search",
            },
            tool_calls=True,
        ),
        Task(
            "answer",
            "voice",
            AnswerIn,
            AnswerOut,
            "You are Synthesis. Answer the user from facts only (each fact is numbered; cite "
            "it as [n]). When facts disagree the newest wins (a fact's 'replaces' lists what "
            "it overrides): say so briefly when it matters. Facts of origin 'memory' and "
            "'stated' are what the user said and outrank 'answer' (an earlier reply). Never "
            "repeat a fact. If requested (price, date, name, list, place) is not in the "
            "facts, say plainly that you don't know it and what memory last said. Reply "
            "with JSON: answer, citations (doc ids).",
            {
                "answer": "You live in Trondheim [1] (earlier you said Oslo).",
                "citations": ["alice/facts"],
            },
        ),
        Task(
            "validate",
            "mind",
            ValidateIn,
            ValidateOut,
            "You are Validation. checks holds the results of mechanical checks (requested "
            "data present, no contradiction of a stated fact, numbers grounded, citations "
            "valid). decision: APPROVE only if the answer contains what was requested and "
            "every check passed; REVISE if the answer misstates the facts; RETRY if more "
            "retrieval could help and tools_tried is false; FAIL if it cannot be answered. "
            "Reply with JSON: decision, reasons, checks.",
            {
                "decision": "RETRY",
                "reasons": ["the answer lacks the price that was asked for"],
                "checks": [{"gate": "requested_data", "passed": False, "detail": "price"}],
            },
        ),
        Task(
            "summarize_turn",
            "mind",
            SummarizeIn,
            SummarizeOut,
            "Summarise the completed turn in one or two sentences for the turn index, with "
            "2-5 topic keywords and the main subject discussed (the thing or place named).",
            {
                "summary": "Asked about the Lenovo LOQ 15 — answered: $697 at Best Buy.",
                "topics": ["lenovo", "laptop", "price"],
                "subject": "Lenovo LOQ 15",
            },
        ),
    )
}

"""The LLM contract of each pipeline step: who does it, its instructions, one example.

`TASKS` names one `Task` per thinking step, with its typed output (`tasks.schemas`; its
input is the model its phase builds, the one its offline rule takes).  The offline backend
answers each with deterministic rules; the OpenAI-compatible backend sends `Task.prompt()`
and the input JSON and validates the reply against the output model.
"""

from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from . import schemas as t

__all__ = ["TASKS"]


class Task(NamedTuple):
    """One thinking step: who does it (role), what it is told, what it must return."""

    name: str
    role: Literal["reflex", "mind", "voice"]
    output: type[BaseModel]
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


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "analyze_query",
            "reflex",
            t.AnalyzeOut,
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
            t.ReflectOut,
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
            t.RetrievalOut,
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
            t.SynthesizeContextOut,
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
            t.PlanOut,
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
                    {"tool": "search_memory", "args": {"query": "trip Rome May"}, "reason": "§2 lacks it"}
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
            t.ToolCallsOut,
            "You are the Executor. Call the tools the plan needs, by their exact names, with "
            "JSON arguments that match each tool's parameters (planned lists the Planner's "
            "suggestions). Call no tool when none is needed.",
            {
                "tool_requests": [
                    {"tool": "search_memory", "args": {"query": "dentist"}, "reason": "find the dentist"}
                ],
                "reasoning": "one search",
            },
            tool_calls=True,
        ),
        Task(
            "answer",
            "voice",
            t.AnswerOut,
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
            t.ValidateOut,
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
            t.SummarizeOut,
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

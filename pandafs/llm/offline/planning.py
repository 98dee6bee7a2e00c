"""Phases 3-4 by rule: stage what the user stated as memory candidates, and call tools
only when the gathered context is not enough."""

from __future__ import annotations

import re

from events.schema import ToolRequest

from ...tasks import grounding as g
from ...tasks import schemas as t
from .text import PRICE, URL, stems_overlap
from .understand import FACT, PLAN, PREFERENCE

_CLAUSES = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<=[.!;?])\s+|"
    r"\s+(?:and|but)\s+(?=i\b|i'm\b|my\b|we\b)",
    re.IGNORECASE,
)


_OWN = re.compile(r"\b(?:my|our|i|i'm|i've|we|we're)\b", re.IGNORECASE)


def _statement_candidates(query: str, topic: str, keywords: list[str], today: str) -> list[t.CandidateDraft]:
    """What the user stated about themselves; never a question, a request or a URL, nor a
    price unless it is the user's own ("my budget is 800 dollars", not a shop's price).
    Plans and events carry the day they were said, so "in May" keeps its meaning later."""
    drafts: list[t.CandidateDraft] = []
    for sentence in _CLAUSES.split(query.strip()):
        sentence = sentence.strip().rstrip(".!;")
        if not sentence or g.is_question(sentence) or URL.search(sentence):
            continue
        if PRICE.search(sentence) and not _OWN.search(sentence):
            continue
        is_pref = bool(re.search(PREFERENCE, sentence))
        is_plan = not is_pref and bool(re.search(PLAN, sentence))
        if not is_pref and not is_plan and not re.search(FACT, sentence) and g.slot_of(sentence) is None:
            continue
        content = g.statement_form(sentence)
        if is_plan and today and not content.startswith("Lives "):
            content += f" (said {today})"
        words = [k for k in keywords if stems_overlap([k], sentence)]
        drafts.append(
            t.CandidateDraft(
                doc_type="preference" if is_pref else "fact",
                content=content,
                topic=topic if topic != "general" else ("user.preference" if is_pref else "user.fact"),
                keywords=words[:6],
            )
        )
    return drafts


def plan(data: t.PlanIn) -> t.PlanOut:
    tools = {spec.name for spec in data.tools if spec.available}
    drafts = _statement_candidates(data.query, data.topic, data.keywords, data.today)
    question = g.is_question(data.query) or data.query_type in (
        "recall",
        "followup",
        "commerce",
        "question",
    )
    found = sum(int(m.get("count", 0) or 0) for m in data.context_meta)
    todos: list[str] = []
    requests: list[ToolRequest] = []
    if drafts:
        todos.append(f"Stage {len(drafts)} memory candidate(s) from what the user stated")
    if question and data.query_type not in ("greeting", "feedback"):
        needs_price = "price" in data.data_requirements
        can_research = "internet_research" in tools
        unpriced = needs_price and not PRICE.search(data.context_text)  # §2 cannot answer it
        if (
            data.attempt == 0
            and found
            and not (can_research and ("fresh_data" in data.data_requirements or unpriced))
        ):
            todos.append("Answer from the gathered context (§2)")
        else:
            if "internet_research" in tools and (
                data.query_type == "commerce" or needs_price or "fresh_data" in data.data_requirements
            ):
                requests.append(
                    ToolRequest(
                        tool="internet_research",
                        args={"query": data.resolved_query},
                        reason="current prices and availability are needed",
                    )
                )
            if "search_memory" in tools:
                query = data.resolved_query if data.attempt == 0 else " ".join(data.keywords)
                requests.append(
                    ToolRequest(
                        tool="search_memory",
                        args={"query": query, "limit": 5},
                        reason="look for more in memory than §2 holds",
                    )
                )
            todos += [f"Call {r.tool}" for r in requests]
            todos.append("Answer from §2 and the tool results")
    else:
        todos.append("Acknowledge the user")
    reasoning = (
        f"§2 holds {found} relevant item(s); "
        + (f"tools: {', '.join(r.tool for r in requests)}" if requests else "no tools needed")
        + (f"; retry after: {'; '.join(data.feedback)}" if data.feedback else "")
    )
    return t.PlanOut(
        route="coordinator" if requests else "synthesis",
        todos=todos,
        tool_requests=requests,
        memory_candidates=drafts,
        reasoning=reasoning,
    )


def call_tools(data: t.ToolCallsIn) -> t.ToolCallsOut:
    return t.ToolCallsOut(tool_requests=data.planned, reasoning=f"{len(data.planned)} planned call(s)")

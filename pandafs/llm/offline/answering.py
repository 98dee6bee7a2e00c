"""Phases 6-7 by rule: an extractive answer citing its facts [n], and its validation
(numbers grounded in the sources, citations valid, the requested datum present)."""

from __future__ import annotations

import re

from events.schema import GateResult
from indexers.words import query_terms

from ...tasks import grounding as g
from ...tasks import schemas as t
from .text import NUMBER, stems_overlap
from .understand import STATEMENTS


def _to_user(text: str) -> str:
    """A stored statement ("Lives in Oslo") as said to the user ("You live in Oslo")."""
    for lead, said in g.SECOND_PERSON:
        if text.startswith(lead):
            return said + text[len(lead) :]
    return text


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|me|my|mine|we|us|our)\b", re.I)


def _own_words(fact: t.FactView) -> str:
    """A taste or identity the user saved in their own words ("I prefer aisle seats") in
    the stored form `_to_user` says to them ("Prefers aisle seats"); any other text as it
    is (a lead changed before a later "my" would mix the persons)."""
    if fact.origin != "memory" or fact.slot not in g.STRONG_SLOTS:
        return fact.text
    stored = g.statement_form(fact.text)
    return fact.text if _FIRST_PERSON.search(stored) else stored


def _said(fact: t.FactView) -> str:
    """A fact as the answer says it: a change of state said of the thing it changed
    ("Your car: Sold the Volvo and bought a white Tesla")."""
    text = _to_user(_own_words(fact)).rstrip(".")
    thing = fact.key.split(":")[-1].replace("_", " ")
    if (
        fact.key
        and ":" not in fact.key
        and fact.slot not in g.STRONG_SLOTS
        and not g.is_about((thing,), fact.text)
    ):
        return f"Your {thing}: {text}"
    return text


_NEGATED = re.compile(r"\bnot\b|\bnever\b|n't\b|\bno\s+longer\b|^dislikes\b|\bhates?\b", re.I)


def _answer_form(fact: t.FactView, data: t.AnswerIn) -> str:
    """A fact as it answers this question: a yes-or-no question is answered yes (or no,
    when the fact negates it) by a fact that states the whole asked predicate."""
    said = _said(fact)
    if data.requested == "polar":
        predicate = g.asked_predicate(data.resolved_query)
        if predicate and g.states(predicate, fact.text) == len(predicate):
            return ("No — " if _NEGATED.search(fact.text) else "Yes — ") + said
    return said


_WHAT = {"which": "which", "count": "number of", "duration": "how long for", "polar": "answer about"}


def _holds(kind: str, text: str, query: str) -> bool:
    return g.has_requested(kind, text, query) if kind else True


def _pick(data: t.AnswerIn) -> list[t.FactView]:
    """The facts that answer the question, best first (slot, shared words, datum, origin)."""
    keywords = list(data.keywords)
    title = data.content_reference.title if data.content_reference else ""
    keywords += query_terms(title) if title else []
    slots = g.asked_slots(data.resolved_query)
    focus = g.focus_of(data.resolved_query) if g.is_question(data.query) else ()
    predicate = g.asked_predicate(data.resolved_query) if g.is_question(data.query) else ()
    scored = []
    for i, fact in enumerate(data.facts):
        if not g.speaker_fits(data.query, fact.origin):
            continue
        score = stems_overlap(keywords, fact.text) or g.related_overlap(data.resolved_query, fact.text)
        if (fact.slot and fact.slot in slots) or (focus and fact.key and g.is_about(focus, "", fact.key)):
            score += 3
        if title and title.lower() in fact.text.lower():
            score += 2
        if score and data.requested and _holds(data.requested, _answer_form(fact, data), data.query):
            score += 2
        if score and predicate and g.states(predicate, fact.text):
            score += 2
        if score:
            scored.append((-score, g.ORIGIN_RANK.get(fact.origin, 5), -i, fact))
    scored.sort(key=lambda x: x[:3])
    picked = [x[3] for x in scored]
    if focus:  # only what is about the thing asked for (a cat does not answer for a dog)
        picked = [f for f in picked if g.about_focus(focus, f.text, f.key, data.query)]
    # it says what was asked of the thing, as much of it as any fact giving the datum says
    giving = [f for f in picked if _holds(data.requested, _answer_form(f, data), data.query)]
    most = max((g.states(predicate, f.text) for f in giving or picked), default=0) if predicate else 0
    if most:
        picked = [f for f in picked if g.states(predicate, f.text) >= most]
    strong = slots & g.STRONG_SLOTS
    if strong:  # a question about the user's job, home, name or taste: only such a statement
        picked = [f for f in picked if f.slot in strong]
    if focus and g.asks_now(data.query, data.requested):  # how it stands: the newest statement giving it
        newest = [f for f in picked if _holds(data.requested, _answer_form(f, data), data.query)]
        newest.sort(key=data.facts.index)  # the facts come newest first
        picked = newest[:1] + [f for f in picked if f not in newest[:1]]
    if slots & {f.slot for f in picked if f.slot} or data.requested not in ("", "list"):
        return picked[:1] if not data.feedback else picked[:2]
    return picked[: 5 if data.requested == "list" else 3]


def _cite(fact: t.FactView) -> str:
    """A source as [n], a document by its id; a tool's result is said in words, not by the
    pipeline's name for the tool ("found by search memory")."""
    if fact.n:
        return f"[{fact.n}]"
    return f"({fact.doc_id})" if "/" in fact.doc_id else f"(found by {fact.doc_id.replace('_', ' ')})"


def answer(data: t.AnswerIn) -> t.AnswerOut:
    parts: list[str] = []
    if data.staged_memory:
        parts.append("Noted — I'll remember: " + "; ".join(m.rstrip(".") for m in data.staged_memory) + ".")
    if data.query_type == "greeting":
        return t.AnswerOut(answer="Hello! Ask me anything, or tell me what you'd like me to remember.")
    if data.query_type == "feedback":
        return t.AnswerOut(answer="Thanks for telling me — I've noted it for the previous answer.")
    wants_answer = g.is_question(data.query) or data.query_type not in STATEMENTS
    citations: list[str] = []
    if wants_answer:
        picked = _pick(data)
        focus = " ".join(g.focus_of(data.resolved_query)) if g.is_question(data.query) else ""
        subject = (
            (data.content_reference.title if data.content_reference else "")
            or focus
            or max(data.entities, key=len, default="")
            or ", ".join(data.keywords[:4])
            or "that"
        )
        if data.requested and not any(
            _holds(data.requested, _answer_form(f, data), data.query) for f in picked
        ):
            about = [f for f in picked if stems_overlap(query_terms(subject), f.text)][:1]
            seen = (
                f"; the last thing memory holds about it: {_to_user(about[0].text).rstrip('.')} "
                if about
                else ""
            )
            parts.append(
                f"I don't know {_WHAT.get(data.requested, 'the ' + data.requested + ' of')} {subject}"
                f"{seen}{_cite(about[0]) if about else ''}."
            )
            picked = about
        elif picked:
            said = []
            for fact in picked:
                line = f"{_answer_form(fact, data)} {_cite(fact)}"
                if fact.replaces:
                    line += f" (this replaces what was said before: {', '.join(fact.replaces)})"
                said.append(line + ".")
            parts.append(" ".join(said))
        elif not data.requested:
            parts.append(f"I don't have anything in memory about {subject} yet.")
        for fact in picked:
            if fact.n and fact.doc_id not in citations:
                citations.append(fact.doc_id)
    return t.AnswerOut(answer=" ".join(parts).strip() or "Noted.", citations=citations)


def validate(data: t.ValidateIn) -> t.ValidateOut:
    text = data.answer
    corpus = " ".join(s.text for s in data.sources) + " " + " ".join(r.text for r in data.tool_results)
    corpus_flat = corpus.replace(",", "")
    checks: list[GateResult] = []
    present = bool(text.strip())
    checks.append(GateResult(gate="answer_present", passed=present))
    claims = g.NOTED.sub("", text)  # what it will remember is the user's own words, not a claim
    numbers = {
        n
        for n in (m.group(0).replace(",", "") for m in NUMBER.finditer(claims))
        if n not in {str(s.n) for s in data.sources}
    }
    quoted_query = data.query + " " + data.resolved_query
    ungrounded = sorted(n for n in numbers if n not in corpus_flat and n not in quoted_query)
    checks.append(GateResult(gate="grounded", passed=not ungrounded, detail=", ".join(ungrounded)))
    valid = {str(s.n) for s in data.sources}
    cited = set(re.findall(r"\[(\d+)\]", text))
    bad = sorted(cited - valid)
    checks.append(GateResult(gate="citations_valid", passed=not bad, detail=", ".join(bad)))
    checks += data.checks
    failed = {c.gate: c for c in data.checks if not c.passed}
    last = data.attempt + 1 >= data.max_attempts
    if not present:
        return t.ValidateOut(decision="FAIL", reasons=["the answer is empty"], checks=checks)
    if ungrounded or bad:
        reasons = [f"claims not found in the sources: {', '.join(ungrounded + bad)}"]
        return t.ValidateOut(decision="FAIL" if last else "REVISE", reasons=reasons, checks=checks)
    if "consistent_with_memory" in failed:
        reasons = [f"contradicts memory: {failed['consistent_with_memory'].detail}"]
        return t.ValidateOut(decision="FAIL" if last else "REVISE", reasons=reasons, checks=checks)
    if "requested_data" in failed:
        reasons = [f"the answer lacks the {data.requested or 'answer'} that was asked for"]
        retry = not last and not data.tools_tried
        return t.ValidateOut(decision="RETRY" if retry else "FAIL", reasons=reasons, checks=checks)
    return t.ValidateOut(
        decision="APPROVE",
        reasons=["grounded in the cited sources" if cited else "no unsupported claims"],
        checks=checks,
    )

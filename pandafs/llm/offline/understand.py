"""Phases 0-1 by rule: `analyze_query` (keywords, topic, type, references, entities,
implicit feedback) and `reflect` (CLARIFY when nothing can be acted on, else PROCEED)."""

from __future__ import annotations

import re

from events.schema import ContentReference
from indexers.words import query_terms

from ...tasks import grounding as g
from ...tasks import schemas as t
from .text import PRICE, entities_in, stem

# What the user states, as patterns `re` compiles (and caches) the first time one is
# searched: a turn that asks a question needs none of them.
PREFERENCE = (
    r"(?i)\b(?:i|we)\s+(?:(?:really|usually|always|now|still|actually|also|definitely)\s+)?"
    r"(?:prefer|like|love|enjoy|hate|dislike|"
    r"avoid|can't stand|cannot stand)\b|\bmy\s+favou?rite\b|"
    r"\bi\s+(?:don't|do not)\s+(?:like|eat|want)\b|"
    r"\bi'?m\s+(?:a\s+)?(?:vegetarian|vegan|allergic)\b"
)
FACT = (
    r"(?i)\bmy\s+name\s+is\b|\bi\s+(?:work|live)\s+(?:as|at|in|for)\b|\bi\s+am\s+(?:a|an)\b|"
    r"\bi'?m\s+(?:a|an)\s+\w+\s*(?:at|in|for)?\b|\bi\s+have\s+(?:a|an|two|three)\b|"
    r"\bmy\s+(?:birthday|job|wife|husband|partner|dog|cat|hamster|son|daughter|kid)\b[^?]*\b(?:is|are)\b|"
    r"^(?:my|our)\s+[^.?!]{1,60}?\s+(?:is|are|was|were)\b|"
    r"^(?:please\s+)?remember\s+(?:that\s+)?"
)
# Plans and events the user states (English future / intention and completed-action leads).
PLAN = (
    r"(?i)^(?:(?:so|well|also|oh),?\s+)?(?:(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:planning|going|flying|"
    r"travel(?:l)?ing|moving|visiting|heading|starting|getting|taking|having)\b|"
    r"(?:i|we)\s+(?:plan|booked|bought|visited|went|adopted|started|finished|met|got|signed|ordered|sold)\b|"
    r"(?:i|we)(?:'ll|\s+will)\s+|(?:i|we)\s+(?:have\s+|'ve\s+|just\s+)*moved\s+to\b|(?:i|we)\s+now\s+live\b)"
)
_RECALL = re.compile(
    r"\b(?:did\s+(?:i|we)|what\s+did\s+(?:i|we)|do\s+you\s+remember|have\s+(?:i|we)|when\s+did\s+(?:i|we)|"
    r"what\s+do\s+you\s+know\s+about\s+me|what\s+do\s+i\s+(?:like|prefer))\b",
    re.IGNORECASE,
)
_COMMERCE = frozenset("price prices cost costs cheap cheapest buy deal deals expensive afford".split())
_REJECTED = re.compile(
    r"^(?:no|nope)\b|that'?s\s+(?:wrong|not\s+right|incorrect|not\s+it)|not\s+what\s+i\s+(?:asked|meant)|"
    r"\bi\s+meant\b|you'?re\s+wrong",
    re.IGNORECASE,
)
_ACCEPTED = re.compile(r"\b(?:thanks|thank\s+you|perfect|that\s+helped|exactly\s+what)\b", re.IGNORECASE)
# A greeting (the opening of phatic talk): a greeting word and at most a few words more
# ("hello there", "hi again, friend"), no question and nothing stated.
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|howdy|greetings|good\s+(?:morning|evening|afternoon|day))\b"
    r"[\s,!.]*(?:[a-z']+[\s,!.]*){0,3}$",
    re.IGNORECASE,
)
_REFERENCE = re.compile(
    r"\b(?:that\s+one|this\s+one|the\s+same\s+one|that\s+(?!is\b|was\b|i\b|you\b|we\b|it\b|they\b)[a-z]+|"
    r"\bit\b|them|those)\b",
    re.IGNORECASE,
)
_NAMED = re.compile(r"(?:that|this)\s+([a-z]+)$", re.IGNORECASE)
_VAGUE = frozenset(
    """one thing stuff it them those this that same hmm hm um uh er ok okay so well yes yeah
    maybe huh something anything""".split()
)


def _topic(words: list[str], topics: dict[str, list[str]]) -> str:
    stems = {stem(w) for w in words}
    best, best_key = "general", (0, 0)
    for topic, keys in topics.items():
        hits = sum(1 for k in keys if stem(k) in stems)
        if hits and (hits, topic.count(".")) > best_key:
            best, best_key = topic, (hits, topic.count("."))
    if best != "general":  # prefer the most specific topic that also matched
        for topic, keys in topics.items():
            if topic.startswith(best + ".") and any(stem(k) in stems for k in keys):
                best = topic
    return best


_THERE = re.compile(r"\b(?:there|that\s+place|that\s+city)\b(?!\s+(?:is|are|was|were)\b)", re.IGNORECASE)
_PLACE = re.compile(r"\b(?:to|in|at|from|visit|visiting|near)\s+([A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)")
_NOT_PLACE = frozenset(
    """January February March April May June July August September October November December
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday I""".split()
)


def _latest_place(turns: list[t.PriorTurn]) -> tuple[str, t.PriorTurn] | None:
    """The place the newest earlier turn names ("a trip to Rome in May" → Rome)."""
    for turn in reversed(turns):
        for text in (turn.query, turn.answer):
            places = [m.group(1) for m in _PLACE.finditer(text) if m.group(1) not in _NOT_PLACE]
            if places:
                return places[-1] if text is turn.query else places[0], turn
    return None


def _latest_subject(turns: list[t.PriorTurn]) -> tuple[str, t.PriorTurn] | None:
    """The thing the newest earlier turn was about (its subject or what it referred to)."""
    for turn in reversed(turns):
        target = turn.subject or (turn.content_reference.title if turn.content_reference else None)
        if target and target not in _NOT_PLACE:
            return target, turn
    return None


def analyze_query(data: t.AnalyzeIn) -> t.AnalyzeOut:
    query = data.query.strip()
    question = g.is_question(query)
    feedback = None
    if _REJECTED.search(query):
        feedback = "rejected"
    elif _ACCEPTED.search(query):
        feedback = "accepted"
    resolved, status, references, reference = query, "not_needed", [], None
    stated = not question and any(re.search(pattern, query) for pattern in (PREFERENCE, FACT, PLAN))
    there = _THERE.search(query)
    match = there or _REFERENCE.search(query)
    found = None
    if match and len(query.split()) <= 14 and not stated:
        found = _latest_place(data.recent_turns) if there else _latest_subject(data.recent_turns)
        named = _NAMED.match(match.group(0))
        if named and named.group(1).lower() not in _VAGUE:
            # "that desk" names its referent: the latest subject stands for it only if it is one
            noun = stem(named.group(1))
            if found is None or noun not in {stem(w) for w in query_terms(found[0])}:
                match = None
    if match and len(query.split()) <= 14 and not stated:
        references = [match.group(0)]
        if found is not None:
            target, previous = found
            status = "resolved"
            replacement = f"in {target}" if there else target
            resolved = query[: match.start()] + replacement + query[match.end() :]
            source_turn = previous.turn
            if previous.content_reference is not None and previous.content_reference.title == target:
                source_turn = previous.content_reference.source_turn
            reference = ContentReference(title=target, source_turn=source_turn, detail=previous.query[:120])
        else:
            status = "unresolved"
    resolved_words = query_terms(resolved)
    keywords = list(dict.fromkeys(w for w in resolved_words if w not in _VAGUE))[:10]
    if _GREETING.match(query) and not question and not stated:
        kind = "greeting"
    elif feedback is not None and len(query.split()) <= 8 and not keywords[2:]:
        kind = "feedback"
    elif not question and re.search(PREFERENCE, query):
        kind = "preference_statement"
    elif not question and (re.search(FACT, query) or re.search(PLAN, query)):
        kind = "fact_statement"
    elif _RECALL.search(query):
        kind = "recall"
    elif status == "resolved":
        kind = "followup"
    elif _COMMERCE & set(resolved_words) or PRICE.search(query) or "how much" in query.lower():
        kind = "commerce"
    else:
        kind = "question"
    reasoning = f"type {kind}; {len(keywords)} keywords"
    if status != "not_needed":
        reasoning += f"; reference {references[0]!r} {status}"
    return t.AnalyzeOut(
        resolved_query=resolved,
        query_type=kind,
        reference_status=status,  # type: ignore[arg-type]
        original_references=references,
        content_reference=reference,
        primary_topic=_topic(resolved_words, data.topics),
        keywords=keywords,
        entities=entities_in(resolved),
        feedback=feedback,  # type: ignore[arg-type]
        reasoning=reasoning,
    )


# --- phase 1 ---------------------------------------------------------------------------------

STATEMENTS = ("preference_statement", "fact_statement")


def reflect(data: t.ReflectIn) -> t.ReflectOut:
    a = data.analysis
    subject = ", ".join(a.entities[:2]) or " ".join(a.keywords[:4])
    if a.query_type in ("greeting", "feedback"):
        return t.ReflectOut(
            decision="PROCEED",
            confidence=0.9,
            reasoning=f"{a.query_type}: reply briefly",
            user_purpose="Small talk or feedback",
            data_requirements=[],
        )
    if a.reference_status == "unresolved" and len(a.keywords) < 2:
        return t.ReflectOut(
            decision="CLARIFY",
            confidence=0.9,
            reasoning=f"the query refers to {a.original_references[0]!r}; no earlier turn names it",
            clarification_question="Which one do you mean? No earlier turn names it.",
        )
    if not a.keywords:
        return t.ReflectOut(
            decision="CLARIFY",
            confidence=0.85,
            reasoning="the query names nothing to look up or act on",
            clarification_question="I found no topic in your message: what should I look into?",
        )
    needs: list[str] = []
    if a.query_type in STATEMENTS:
        purpose = f"Tell the assistant about themselves ({subject})"
        needs.append("user_memory")
    elif a.query_type == "recall":
        purpose, needs = f"Recall what was said about {subject}", ["prior_turns", "user_memory"]
    elif a.query_type == "followup":
        purpose, needs = (
            f"Follow up on {a.content_reference.title if a.content_reference else subject}",
            ["prior_turns"],
        )
    elif a.query_type == "commerce":
        purpose, needs = f"Find buying information for {subject}", ["prior_turns", "research"]
    else:
        purpose, needs = f"Get information about {subject}", ["prior_turns", "knowledge"]
    lowered = data.query.lower()
    if "how much" in lowered or {"price", "cost", "costs", "prices"} & set(a.keywords):
        needs.append("price")
    if any(w in lowered for w in ("in stock", "right now", "today", "latest", "current")):
        needs.append("fresh_data")
    return t.ReflectOut(
        decision="PROCEED",
        confidence=0.85 if a.keywords[1:] else 0.7,
        reasoning=f"clear {a.query_type} with keywords {', '.join(a.keywords[:5])}",
        user_purpose=purpose,
        data_requirements=list(dict.fromkeys(needs)),
    )

"""The offline backend: every pipeline task answered by deterministic rules.

No model, no network, same input → same output.  It is the default backend, the
one the demo and the tests run, and the reference the OpenAI-compatible backend is
tested against (the loopback test server answers with these very rules).

What the rules do, task by task:
- analyze_query: content keywords, the most specific topic of the config's topic
  map, a query type from phrasing, reference resolution ("that one", "it") from
  the previous turn's subject, named entities, and implicit feedback.
- reflect: CLARIFY when nothing can be acted on, else PROCEED with a purpose and
  data requirements.
- plan_retrieval / synthesize_context: keep what shares words with the query;
  extract the sentences that do; omit irrelevant preferences and facts.
- plan: stage stated preferences and facts as memory candidates (never prices or
  URLs); route to tools only when the gathered context is not enough.
- answer: extractive — quote the best matching sentences and cite them [n].
- validate: grounded (every number and price in the answer is in a source),
  citations valid, and the requested datum (e.g. a price) present.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from events.schema import ContentReference, GateResult, ToolRequest
from indexers.words import query_terms

from ..pipeline import grounding as g
from ..pipeline import tasks as t
from .openai_compat import Usage

__all__ = ["OfflineBackend", "entities_in", "sentences", "stems_overlap"]

# --- text helpers ---------------------------------------------------------------------------

# Sentence ends, but not after an honorific or a common Latin abbreviation ("Dr. Berg").
_SENTENCE = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<!\bvs\.)"
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+"
)
_LINK = re.compile(r"\[\[[^\]|]*?(?:\\?\|([^\]]*))?\]\]")
_MARKDOWN = re.compile(r"[*_`#>|]+")
_PRICE = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d{1,2})?|\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|dollars|euros))"
)
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_WORDS = re.compile(r"[A-Za-z0-9$€£]+")
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_ENTITY = re.compile(r"\b[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d[\w-]*))*")
_NOT_ENTITY = frozenset(
    """I I'm I've I'd The A An And But Or So If When Where What Which Who Why How Is Are Was
    Were Do Does Did Can Could Would Should Will It It's That This These Those My Your Our
    Their His Her We You They He She Yes No Ok Okay Hi Hello Hey Thanks Thank Please Noted
    From Here There Also Just Sure Great Good Sorry Let Tell Find Show Give Remember Turn
    Answer Query Source Sources Summary Prior Relevant Key Facts Monday Tuesday Wednesday
    Thursday Friday Saturday Sunday Today Tomorrow Yesterday Prefers Likes Dislikes Has Works
    Lives Their Name Asked About Noted Does""".split()
)


_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://|/)[^)]*\)")


def _unlink(text: str) -> str:
    """Replace wikilinks (also table-escaped `[[a\\|b]]`) and markdown links by their label."""
    return _MD_LINK.sub(lambda m: m.group(1), _LINK.sub(lambda m: m.group(1) or " ", text))


_LABEL = re.compile(
    r"^(?:[-*]\s+|\[\d+\]\s+)*(?:(?:Asked|Answered|From memory|Noted[^:]*|About [^:]{1,80}):\s*)*"
)
_NOTE = re.compile(r"\s*_?\((?:from|saved)\b[^)]*\)_?\s*$")


def _clean(text: str) -> str:
    text = _NOTE.sub("", _LABEL.sub("", text.strip()))
    return " ".join(_MARKDOWN.sub(" ", text).split())


def sentences(text: str) -> list[str]:
    """Readable sentences of a markdown text (headings, tables and YAML skipped)."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not stripped or stripped.startswith(("#", "|---", "---")):
            continue
        stripped = _unlink(stripped)
        if stripped.startswith("|"):
            stripped = " ".join(c.strip() for c in stripped.strip("|").split("|") if c.strip())
        for part in _SENTENCE.split(stripped):
            cleaned = _clean(part)
            if len(cleaned) > 2:
                out.append(cleaned)
    return tuple(out)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ings", "ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=8192)
def _text_stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORDS.findall(text))


def stems_overlap(keywords: list[str], text: str) -> int:
    """How many distinct keyword stems occur in `text`."""
    words = _text_stems(text)
    return sum(1 for k in {_stem(k) for k in keywords} if k in words)


def entities_in(text: str) -> list[str]:
    """Capitalised names and model numbers ("Lenovo LOQ 15"), longest first per start."""
    found: list[str] = []
    for match in _ENTITY.finditer(text):
        words = match.group(0).split()
        while words and words[0].strip("'") in _NOT_ENTITY:
            words = words[1:]
        while words and words[-1] in _NOT_ENTITY:
            words = words[:-1]
        if not words:
            continue
        name = " ".join(words).strip(".,;:!?")
        if len(name) > 1 and name not in found:
            found.append(name)
    return found


# --- phase 0 ---------------------------------------------------------------------------------

_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:(?:really|usually|always|now|still|actually|also|definitely)\s+)?"
    r"(?:prefer|like|love|enjoy|hate|dislike|"
    r"avoid|can't stand|cannot stand)\b|\bmy\s+favou?rite\b|"
    r"\bi\s+(?:don't|do not)\s+(?:like|eat|want)\b|"
    r"\bi'?m\s+(?:a\s+)?(?:vegetarian|vegan|allergic)\b",
    re.IGNORECASE,
)
_FACT = re.compile(
    r"\bmy\s+name\s+is\b|\bi\s+(?:work|live)\s+(?:as|at|in|for)\b|\bi\s+am\s+(?:a|an)\b|"
    r"\bi'?m\s+(?:a|an)\s+\w+\s*(?:at|in|for)?\b|\bi\s+have\s+(?:a|an|two|three)\b|"
    r"\bmy\s+(?:birthday|job|wife|husband|partner|dog|cat|hamster|son|daughter|kid)\b[^?]*\b(?:is|are)\b|"
    r"^my\s+[a-z]+(?:\s+[a-z]+)?(?:'s\s+[a-z]+)?\s+(?:is|are|was)\b|"
    r"^(?:please\s+)?remember\s+(?:that\s+)?",
    re.IGNORECASE,
)
# Plans and events the user states (English future / intention and completed-action leads).
_PLAN = re.compile(
    r"^(?:(?:so|well|also|oh),?\s+)?(?:(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:planning|going|flying|"
    r"travel(?:l)?ing|moving|visiting|heading|starting|getting|taking|having)\b|"
    r"(?:i|we)\s+(?:plan|booked|bought|visited|went|adopted|started|finished|met|got|signed|ordered|sold)\b|"
    r"(?:i|we)(?:'ll|\s+will)\s+|(?:i|we)\s+(?:have\s+|'ve\s+|just\s+)*moved\s+to\b|(?:i|we)\s+now\s+live\b)",
    re.IGNORECASE,
)
_RECALL = re.compile(
    r"\b(?:did\s+(?:i|we)|what\s+did\s+(?:i|we)|do\s+you\s+remember|have\s+(?:i|we)|when\s+did\s+(?:i|we)|"
    r"what\s+do\s+you\s+know\s+about\s+me|what\s+do\s+i\s+(?:like|prefer))\b",
    re.IGNORECASE,
)
_PRICE_WORDS = frozenset("much price prices cost costs pay paid expensive cheap".split())
_COMMERCE = frozenset("price prices cost costs cheap cheapest buy deal deals expensive afford".split())
_REJECTED = re.compile(
    r"^(?:no|nope)\b|that'?s\s+(?:wrong|not\s+right|incorrect|not\s+it)|not\s+what\s+i\s+(?:asked|meant)|"
    r"\bi\s+meant\b|you'?re\s+wrong",
    re.IGNORECASE,
)
_ACCEPTED = re.compile(r"\b(?:thanks|thank\s+you|perfect|that\s+helped|exactly\s+what)\b", re.IGNORECASE)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|good\s+(?:morning|evening|afternoon))\b[\s!.]*$", re.IGNORECASE)
_REFERENCE = re.compile(
    r"\b(?:that\s+one|this\s+one|the\s+same\s+one|that\s+(?!is\b|was\b|i\b|you\b|we\b|it\b|they\b)[a-z]+|"
    r"\bit\b|them|those)\b",
    re.IGNORECASE,
)
_VAGUE = frozenset(
    """one thing stuff it them those this that same hmm hm um uh er ok okay so well yes yeah
    maybe huh something anything""".split()
)


def _topic(words: list[str], topics: dict[str, list[str]]) -> str:
    stems = {_stem(w) for w in words}
    best, best_key = "general", (0, 0)
    for topic, keys in topics.items():
        hits = sum(1 for k in keys if _stem(k) in stems)
        if hits and (hits, topic.count(".")) > best_key:
            best, best_key = topic, (hits, topic.count("."))
    if best != "general":  # prefer the most specific topic that also matched
        for topic, keys in topics.items():
            if topic.startswith(best + ".") and any(_stem(k) in stems for k in keys):
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
    stated = not question and bool(_PREFERENCE.search(query) or _FACT.search(query) or _PLAN.search(query))
    there = _THERE.search(query)
    match = there or _REFERENCE.search(query)
    if match and len(query.split()) <= 14 and not stated:
        references = [match.group(0)]
        found = _latest_place(data.recent_turns) if there else _latest_subject(data.recent_turns)
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
    if _GREETING.match(query):
        kind = "greeting"
    elif feedback is not None and len(query.split()) <= 8 and not keywords[2:]:
        kind = "feedback"
    elif not question and _PREFERENCE.search(query):
        kind = "preference_statement"
    elif not question and (_FACT.search(query) or _PLAN.search(query)):
        kind = "fact_statement"
    elif _RECALL.search(query):
        kind = "recall"
    elif status == "resolved":
        kind = "followup"
    elif _COMMERCE & set(resolved_words) or _PRICE.search(query) or "how much" in query.lower():
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

_STATEMENTS = ("preference_statement", "fact_statement")


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
    if a.query_type in _STATEMENTS:
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


# --- phase 2 ---------------------------------------------------------------------------------


_TURN_KINDS = frozenset({"turn", "archived_turn"})


def plan_retrieval(data: t.RetrievalIn) -> t.RetrievalOut:
    keywords = data.keywords
    # Scores are compared within their class: a long turn that repeats the words of a
    # short memory outscores it, and the memory must not fall under the threshold for it.
    top: dict[bool, float] = {}
    for c in data.candidates:
        top[c.kind in _TURN_KINDS] = max(top.get(c.kind in _TURN_KINDS, 0.0), c.score)
    picks: list[t.Pick] = []
    for c in data.candidates:
        overlap = stems_overlap(keywords, f"{c.title} {c.snippet}")
        norm = c.score / (top.get(c.kind in _TURN_KINDS) or 1.0)
        if c.tier == "reference":
            picks.append(t.Pick(doc_id=c.doc_id, relevance="high", reason="the query refers to this turn"))
            continue
        if overlap == 0 or (c.tier == "search" and norm < data.threshold):
            continue
        relevance = (
            "high" if norm >= 0.6 and overlap >= 2 else "medium" if norm >= 0.3 or overlap >= 2 else "low"
        )
        where = f"{c.tier} tier, " if c.tier else ""
        picks.append(
            t.Pick(
                doc_id=c.doc_id,
                relevance=relevance,
                reason=f"{where}shares {overlap} query term(s)",
            )
        )
    memory = [m for m in data.memory_entries if stems_overlap(keywords, m) > 0]
    reasoning = (
        f"{len(picks)} of {len(data.candidates)} documents and {len(memory)} memory entries share query terms"
    )
    return t.RetrievalOut(relevant=picks, relevant_memory=memory, reasoning=reasoning)


def _key_facts(keywords: list[str], text: str, limit: int = 3) -> list[str]:
    scored = [(stems_overlap(keywords, s), -i, s) for i, s in enumerate(sentences(text))]
    scored = [x for x in scored if x[0] > 0]
    scored.sort(reverse=True)
    return [s[:300] for _, _, s in scored[:limit]]


def synthesize_context(data: t.SynthesizeContextIn) -> t.SynthesizeContextOut:
    keywords = data.keywords
    out = t.SynthesizeContextOut()
    out.memory = list(data.memory)
    covered: set[str] = set()
    for doc in data.documents:
        facts = _key_facts(keywords, doc.text)
        if not facts:
            continue
        for word in keywords:
            if any(stems_overlap([word], f) for f in facts):
                covered.add(word)
        row = t.DocRow(
            doc_id=doc.doc_id,
            relevance=doc.relevance,
            summary=doc.title or facts[0][:120],
            key_facts=facts,
        )
        if doc.kind in ("turn", "archived_turn"):
            out.prior_turns.append(row)
        elif doc.kind == "research":
            out.research.append(row)
        else:
            out.knowledge.append(row)
    out.gaps = [
        w for w in keywords if w not in covered and not any(stems_overlap([w], m.value) for m in out.memory)
    ]
    found = len(out.prior_turns) + len(out.research) + len(out.knowledge) + len(out.memory)
    out.context_quality = round(min(1.0, 0.3 + 0.15 * found) if found else 0.0, 2)
    return out


# --- phase 3 ---------------------------------------------------------------------------------

_CLAUSES = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<=[.!;?])\s+|"
    r"\s+(?:and|but)\s+(?=i\b|i'm\b|my\b|we\b)",
    re.IGNORECASE,
)


def _statement_candidates(query: str, topic: str, keywords: list[str], today: str) -> list[t.CandidateDraft]:
    """What the user stated about themselves; never a question, a request, a price or a URL.
    Plans and events carry the day they were said, so "in May" keeps its meaning later."""
    drafts: list[t.CandidateDraft] = []
    for sentence in _CLAUSES.split(query.strip()):
        sentence = sentence.strip().rstrip(".!;")
        if not sentence or g.is_question(sentence) or _URL.search(sentence) or _PRICE.search(sentence):
            continue
        is_pref = bool(_PREFERENCE.search(sentence))
        is_plan = not is_pref and bool(_PLAN.search(sentence))
        if not is_pref and not is_plan and not _FACT.search(sentence):
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
        unpriced = needs_price and not _PRICE.search(data.context_text)  # §2 cannot answer it
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
            if "memory_search" in tools:
                query = data.resolved_query if data.attempt == 0 else " ".join(data.keywords)
                requests.append(
                    ToolRequest(
                        tool="memory_search",
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


# --- phase 6-7 -------------------------------------------------------------------------------


def _to_user(text: str) -> str:
    """A stored statement ("Lives in Oslo") as said to the user ("You live in Oslo")."""
    for lead, said in g.SECOND_PERSON:
        if text.startswith(lead):
            return said + text[len(lead) :]
    return text


def _holds(kind: str, text: str, query: str) -> bool:
    return g.has_requested(kind, text, query) if kind else True


def _pick(data: t.AnswerIn) -> list[t.FactView]:
    """The facts that answer the question, best first (slot, shared words, datum, origin)."""
    keywords = list(data.keywords)
    title = data.content_reference.title if data.content_reference else ""
    keywords += query_terms(title) if title else []
    slots = g.asked_slots(data.resolved_query)
    scored = []
    for i, fact in enumerate(data.facts):
        score = stems_overlap(keywords, fact.text) or g.related_overlap(data.resolved_query, fact.text)
        if fact.slot and fact.slot in slots:
            score += 3
        if title and title.lower() in fact.text.lower():
            score += 2
        if score and data.requested and _holds(data.requested, fact.text, data.query):
            score += 2
        if score:
            scored.append((-score, g.ORIGIN_RANK.get(fact.origin, 5), -i, fact))
    scored.sort(key=lambda x: x[:3])
    picked = [x[3] for x in scored]
    strong = slots & g.STRONG_SLOTS
    if strong:  # a question about the user's job, home, name or taste: only such a statement
        picked = [f for f in picked if f.slot in strong]
    if slots & {f.slot for f in picked if f.slot} or data.requested in ("price", "date", "name", "place"):
        return picked[:1] if not data.feedback else picked[:2]
    return picked[: 5 if data.requested == "list" else 3]


def _cite(fact: t.FactView) -> str:
    return f"[{fact.n}]" if fact.n else f"({fact.doc_id})"


def answer(data: t.AnswerIn) -> t.AnswerOut:
    parts: list[str] = []
    if data.staged_memory:
        parts.append("Noted — I'll remember: " + "; ".join(m.rstrip(".") for m in data.staged_memory) + ".")
    if data.query_type == "greeting":
        return t.AnswerOut(answer="Hello! Ask me anything, or tell me what you'd like me to remember.")
    if data.query_type == "feedback":
        return t.AnswerOut(answer="Thanks for telling me — I've noted it for the previous answer.")
    wants_answer = g.is_question(data.query) or data.query_type not in _STATEMENTS
    citations: list[str] = []
    if wants_answer:
        picked = _pick(data)
        subject = (
            (data.content_reference.title if data.content_reference else "")
            or max(data.entities, key=len, default="")
            or ", ".join(data.keywords[:4])
            or "that"
        )
        if data.requested and not any(_holds(data.requested, f.text, data.query) for f in picked):
            about = [f for f in picked if stems_overlap(query_terms(subject), f.text)][:1]
            seen = (
                f"; the last thing memory holds about it: {_to_user(about[0].text).rstrip('.')} "
                if about
                else ""
            )
            parts.append(
                f"I don't know the {data.requested} of {subject}{seen}{_cite(about[0]) if about else ''}."
            )
            picked = about
        elif picked:
            said = []
            for fact in picked:
                line = f"{_to_user(fact.text).rstrip('.')} {_cite(fact)}"
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


_NOTED = re.compile(r"^Noted — I'll remember: .*?\.(?=\s+[A-Z]|\s*$)")


def validate(data: t.ValidateIn) -> t.ValidateOut:
    text = data.answer
    corpus = " ".join(s.text for s in data.sources) + " " + " ".join(r.text for r in data.tool_results)
    corpus_flat = corpus.replace(",", "")
    checks: list[GateResult] = []
    present = bool(text.strip())
    checks.append(GateResult(gate="answer_present", passed=present))
    claims = _NOTED.sub("", text)  # what it will remember is the user's own words, not a claim
    numbers = {
        n
        for n in (m.group(0).replace(",", "") for m in _NUMBER.finditer(claims))
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


# --- save ------------------------------------------------------------------------------------


def summarize_turn(data: t.SummarizeIn) -> t.SummarizeOut:
    first = sentences(data.answer)[:1]
    summary = f"Asked: {data.resolved_query[:140]}"
    if first:
        summary += f" — answered: {first[0][:160]}"
    answer_entities = entities_in(data.answer)
    subject = None
    for name in answer_entities:  # the most specific name the answer gives for what was asked
        if any(e.lower() in name.lower() for e in data.entities) or stems_overlap(data.keywords, name):
            if subject is None or len(name) > len(subject):
                subject = name
    if subject is None and data.entities:
        subject = max(data.entities, key=len)
    if subject is None and answer_entities and g.is_question(data.query):
        subject = answer_entities[0]  # the thing the answer named is what "it" will mean next
    return t.SummarizeOut(summary=summary, topics=data.keywords[:5], subject=subject)


def call_tools(data: t.ToolCallsIn) -> t.ToolCallsOut:
    return t.ToolCallsOut(tool_requests=data.planned, reasoning=f"{len(data.planned)} planned call(s)")


RULES: dict[str, Callable[[Any], BaseModel]] = {
    "call_tools": call_tools,
    "analyze_query": analyze_query,
    "reflect": reflect,
    "plan_retrieval": plan_retrieval,
    "synthesize_context": synthesize_context,
    "plan": plan,
    "answer": answer,
    "validate": validate,
    "summarize_turn": summarize_turn,
}


class OfflineBackend:
    """Deterministic rules; `run` validates the result against the task's output model."""

    name = "offline"

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        result = RULES[task.name](data)
        return task.output.model_validate(result.model_dump()), Usage(calls=1)

    def close(self) -> None:
        return None

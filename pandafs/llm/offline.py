"""The offline backend: every pipeline task answered by deterministic rules (no model, no
network, same input → same output); the default, and the reference the OpenAI-compatible
backend is tested against.  Memory text is read as sentences (markdown skipped), words by
the index's English stem, names as capitalised runs.  Phases 0-1 CLARIFY only when nothing
can be acted on; 2 keeps what shares words with the query; 3-4 stage what the user stated
and call tools only when the context is not enough; 6-7 answer extractively, citing [n],
and validate (numbers grounded, citations valid, the requested datum present)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from events.layout import TURN_KINDS
from events.schema import ContentReference, GateResult, Outcome, ToolRequest
from indexers.words import query_terms

from ..tasks import grounding as g
from ..tasks import schemas as t
from ..tokens import count_tokens
from .usage import Usage

__all__ = ["RULES", "OfflineBackend", "sentences", "stems_overlap"]


# --- reading memory text ------------------------------------------------------------------

# Chat replies and list items often start their sentences in lower case ("no, it is not
# recommended … it's essential to dilute …"): a lower-case word after an end mark begins a
# sentence too, unless the mark ends a shortened word that runs on in lower case ("9 a.m.
# sharp", "approx. two cups", "fruit, nuts, etc. are fine") or an ellipsis ("so... maybe").
_RUNS_ON = "".join(
    rf"(?<!\b(?i:{word})\.)"
    for word in """etc approx vs cf incl esp est min max no nos vol fig ca dept jr sr inc ltd co
    st mt ft oz lb lbs tbsp tsp hr hrs sec pp al misc avg""".split()
)
_SENTENCE = re.compile(
    g.NOT_ABBREVIATED
    + r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|"
    + g.NOT_ABBREVIATED
    + _RUNS_ON
    + r"(?<!\b[A-Za-z]\.)(?<!\.\.)(?<=[.!?])\s+(?=[a-z])|\n+",
)
_LINK = re.compile(r"\[\[[^\]|]*?(?:\\?\|([^\]]*))?\]\]")
_MARKDOWN = re.compile(r"[*_`#>|]+")
NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_ENTITY = re.compile(r"\b[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d[\w-]*))*")
_NOT_ENTITY = frozenset(
    """I I'm I've I'd The A An And But Or So If When Where What Which Who Why How Am Is Are Was
    Were Do Does Did Have Had Can Could Would Should Will It It's That This These Those My Your Our
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


@lru_cache(maxsize=4096)
def sentences(text: str) -> tuple[str, ...]:
    """Readable sentences of a markdown text (headings, tables and YAML skipped)."""
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
        for run in _cells(stripped):
            for part in _SENTENCE.split(run):
                cleaned = _clean(part)
                if len(cleaned) > 2:
                    out.append(cleaned)
    return tuple(out)


_CELL = re.compile(r"(?<!\\)\|")
_TOKEN = re.compile(r"^\S*[/_]\S*$")  # a path or an id ("demo/memories/…", "turn_000005")


def _cells(line: str) -> list[str]:
    """A line as runs of text: a table row (or a search snippet cut from one) is its cells,
    never one run of cells flattened together.  When a cell holds a sentence, the cells
    are that sentence and its labels (a source's id, its relevance), and the sentences
    stand alone; a row of values alone reads as their list ("Lenovo LOQ, $697, in stock").
    A cell cut off by a snippet ("…Key Facts", "gaming l…") and an id are no text."""
    cells = [c.strip() for c in _CELL.split(line)]
    if len(cells) < 3 and not line.startswith("|"):
        return [line]
    kept = [c for c in cells if c and not c.startswith("…") and not c.endswith("…") and not _TOKEN.match(c)]
    prose = [c for c in kept if len(c.split()) >= 4]
    return prose or ([", ".join(kept)] if kept else [])


def stems_overlap(keywords: list[str], text: str) -> int:
    """How many distinct keyword stems occur in `text`."""
    words = g.stems_of(text)
    return sum(1 for k in {g.stem(k) for k in keywords} if k in words)


def entities_in(text: str) -> list[str]:
    """Capitalised names and model numbers ("Lenovo LOQ 15"), longest first per start."""
    found: list[str] = []
    for match in _ENTITY.finditer(text):
        words = match.group(0).split()
        while words and words[0].strip("'") in _NOT_ENTITY:
            words = words[1:]
        while words and words[-1] in _NOT_ENTITY:
            words = words[:-1]
        name = " ".join(words).strip(".,;:!?")
        if len(name) > 1 and name not in found:
            found.append(name)
    return found


# --- phase 0: analyze_query -----------------------------------------------------------------

# What the user states (compiled by `re` when first used: a question needs none of them).
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
# A greeting word and at most a few words more ("hi again, friend").  Here and below, letters are
# spelled (?-i:[A-Za-z]), not [a-z] under re.I, which also folds in ı and ſ and makes `re` build
# the class as a 64k-entry table.
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|howdy|greetings|good\s+(?:morning|evening|afternoon|day))\b"
    r"[\s,!.]*(?:(?-i:[A-Za-z']+)[\s,!.]*){0,3}$",
    re.IGNORECASE,
)
_REFERENCE = re.compile(
    r"\b(?:that\s+one|this\s+one|the\s+same\s+one|that\s+(?!is\b|was\b|i\b|you\b|we\b|it\b|they\b)(?-i:[A-Za-z]+)|"
    r"\bit\b|them|those)\b",
    re.IGNORECASE,
)
_NAMED = re.compile(r"(?:that|this)\s+(?-i:([A-Za-z]+))$", re.IGNORECASE)
_VAGUE = frozenset(
    """one thing stuff it them those this that same hmm hm um uh er ok okay so well yes yeah
    maybe huh something anything""".split()
)


def _topic(words: list[str], topics: dict[str, list[str]]) -> str:
    stems = {g.stem(w) for w in words}
    best, best_key = "general", (0, 0)
    for topic, keys in topics.items():
        hits = sum(1 for k in keys if g.stem(k) in stems)
        if hits and (hits, topic.count(".")) > best_key:
            best, best_key = topic, (hits, topic.count("."))
    if best != "general":  # prefer the most specific topic that also matched
        for topic, keys in topics.items():
            if topic.startswith(best + ".") and any(g.stem(k) in stems for k in keys):
                best = topic
    return best


_THERE = re.compile(r"\b(?:there|that\s+place|that\s+city)\b(?!\s+(?:is|are|was|were)\b)", re.IGNORECASE)
_PLACE = re.compile(r"\b(?:to|in|at|from|visit|visiting|near)\s+([A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)")


def _latest_place(turns: list[t.PriorTurn]) -> tuple[str, t.PriorTurn] | None:
    """The place the newest earlier turn names ("a trip to Rome in May" → Rome)."""
    for turn in reversed(turns):
        for text in (turn.query, turn.answer):
            places = [m.group(1) for m in _PLACE.finditer(text) if m.group(1) not in g.NOT_NAMES]
            if places:
                return places[-1] if text is turn.query else places[0], turn
    return None


def _latest_subject(turns: list[t.PriorTurn]) -> tuple[str, t.PriorTurn] | None:
    """The thing the newest earlier turn was about (its subject or what it referred to)."""
    for turn in reversed(turns):
        target = turn.subject or (turn.content_reference.title if turn.content_reference else None)
        if target and target not in g.NOT_NAMES:
            return target, turn
    return None


def analyze_query(data: t.AnalyzeIn) -> t.AnalyzeOut:
    query = data.query.strip()
    question = g.is_question(query)
    feedback = "rejected" if _REJECTED.search(query) else "accepted" if _ACCEPTED.search(query) else None
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
            noun = g.stem(named.group(1))
            if found is None or noun not in {g.stem(w) for w in query_terms(found[0])}:
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
    elif _COMMERCE & set(resolved_words) or g.PRICE.search(query) or "how much" in query.lower():
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


# --- phase 1: reflect -----------------------------------------------------------------------

STATEMENTS = ("preference_statement", "fact_statement")
# What a query of each kind is for (said of its subject), and where its answer lies.
_PURPOSES = {
    **dict.fromkeys(STATEMENTS, ("Tell the assistant about themselves ({})", ["user_memory"])),
    "recall": ("Recall what was said about {}", ["prior_turns", "user_memory"]),
    "followup": ("Follow up on {}", ["prior_turns"]),
    "commerce": ("Find buying information for {}", ["prior_turns", "research"]),
}


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
    if a.query_type == "followup" and a.content_reference:
        subject = a.content_reference.title
    purpose, sources = _PURPOSES.get(a.query_type, ("Get information about {}", ["prior_turns", "knowledge"]))
    needs = [*sources]
    lowered = data.query.lower()
    if "how much" in lowered or {"price", "cost", "costs", "prices"} & set(a.keywords):
        needs.append("price")
    if any(w in lowered for w in ("in stock", "right now", "today", "latest", "current")):
        needs.append("fresh_data")
    return t.ReflectOut(
        decision="PROCEED",
        confidence=0.85 if a.keywords[1:] else 0.7,
        reasoning=f"clear {a.query_type} with keywords {', '.join(a.keywords[:5])}",
        user_purpose=purpose.format(subject),
        data_requirements=list(dict.fromkeys(needs)),
    )


# --- phase 2: plan_retrieval, synthesize_context ------------------------------------------


def plan_retrieval(data: t.RetrievalIn) -> t.RetrievalOut:
    # every content word of the question, not only the analyzer's first keywords: a long
    # question often names what it asks for after them
    asked = list(dict.fromkeys([*data.keywords, *query_terms(data.resolved_query)]))
    # Scores are compared within their class: a long turn that repeats the words of a
    # short memory outscores it, and the memory must not fall under the threshold for it.
    top: dict[bool, float] = {}
    for c in data.candidates:
        top[c.kind in TURN_KINDS] = max(top.get(c.kind in TURN_KINDS, 0.0), c.score)
    picks: list[t.Pick] = []
    for c in data.candidates:
        overlap = stems_overlap(asked, f"{c.title} {c.snippet}")
        norm = c.score / (top.get(c.kind in TURN_KINDS) or 1.0)
        if c.tier == "reference":
            picks.append(t.Pick(doc_id=c.doc_id, relevance="high", reason="the query refers to this turn"))
            continue
        if overlap == 0 or (c.tier == "search" and norm < data.threshold):
            continue
        relevance = (
            "high" if norm >= 0.6 and overlap >= 2 else "medium" if norm >= 0.3 or overlap >= 2 else "low"
        )
        reason = (f"{c.tier} tier, " if c.tier else "") + f"shares {overlap} query term(s)"
        picks.append(t.Pick(doc_id=c.doc_id, relevance=relevance, reason=reason))
    memory = [m for m in data.memory_entries if stems_overlap(data.keywords, m) > 0]
    reasoning = (
        f"{len(picks)} of {len(data.candidates)} documents and {len(memory)} memory entries share query terms"
    )
    return t.RetrievalOut(relevant=picks, relevant_memory=memory, reasoning=reasoning)


def _key_facts(keywords: list[str], text: str) -> list[str]:
    scored = [(stems_overlap(keywords, s), -i, s) for i, s in enumerate(sentences(text))]
    return [s[:300] for _, _, s in sorted((x for x in scored if x[0] > 0), reverse=True)[:3]]


def synthesize_context(data: t.SynthesizeContextIn) -> t.SynthesizeContextOut:
    keywords = data.keywords
    rows: dict[str, list[t.DocRow]] = {"prior_turns": [], "research": [], "knowledge": []}
    section = {"turn": "prior_turns", "archived_turn": "prior_turns", "research": "research"}
    covered: set[str] = set()
    for doc in data.documents:
        facts = _key_facts(keywords, doc.text)
        if not facts:
            continue
        covered |= {word for word in keywords if any(stems_overlap([word], f) for f in facts)}
        row = t.DocRow(
            doc_id=doc.doc_id,
            relevance=doc.relevance,
            summary=doc.title or facts[0][:120],
            key_facts=facts,
        )
        rows[section.get(doc.kind, "knowledge")].append(row)  # any other document is knowledge
    gaps = [
        w for w in keywords if w not in covered and not any(stems_overlap([w], m.value) for m in data.memory)
    ]
    found = sum(map(len, rows.values())) + len(data.memory)
    quality = round(min(1.0, 0.3 + 0.15 * found) if found else 0.0, 2)
    return t.SynthesizeContextOut(memory=data.memory, **rows, gaps=gaps, context_quality=quality)


# --- phases 3-4: plan, call_tools ---------------------------------------------------------

_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|we|us|our)\b", re.I)  # "i'm", "we're" too
_CLAUSES = re.compile(g.NOT_ABBREVIATED + r"(?<=[.!;?])\s+|" + g.NEW_CLAUSE.pattern, re.IGNORECASE)


def _statement_candidates(query: str, topic: str, keywords: list[str], today: str) -> list[t.CandidateDraft]:
    """What the user stated about themselves; never a question, a request or a URL, nor a
    price unless it is the user's own ("my budget is 800 dollars", not a shop's price).
    Plans and events carry the day they were said, so "in May" keeps its meaning later."""
    drafts: list[t.CandidateDraft] = []
    for sentence in _CLAUSES.split(query.strip()):
        sentence = sentence.strip().rstrip(".!;")
        if not sentence or g.is_question(sentence) or URL.search(sentence):
            continue
        if g.PRICE.search(sentence) and not _FIRST_PERSON.search(sentence):
            continue
        is_pref = bool(re.search(PREFERENCE, sentence))
        is_plan = not is_pref and bool(re.search(PLAN, sentence))
        if not is_pref and not is_plan and not re.search(FACT, sentence) and g.slot_of(sentence) is None:
            continue
        content = g.statement_form(sentence)
        if is_plan and today and not content.startswith("Lives "):
            content += f" (said {today})"
        words = [k for k in keywords if stems_overlap([k], sentence)]
        kind = "preference" if is_pref else "fact"
        where = topic if topic != "general" else f"user.{kind}"
        drafts.append(t.CandidateDraft(doc_type=kind, content=content, topic=where, keywords=words[:6]))
    return drafts


def plan(data: t.PlanIn) -> t.PlanOut:
    tools = {spec.name for spec in data.tools if spec.available}
    drafts = _statement_candidates(data.query, data.topic, data.keywords, data.today)
    question = g.is_question(data.query) or data.query_type in ("recall", "followup", "commerce", "question")
    found = sum(int(m.get("count", 0) or 0) for m in data.context_meta)
    todos: list[str] = []
    requests: list[ToolRequest] = []
    if drafts:
        todos.append(f"Stage {len(drafts)} memory candidate(s) from what the user stated")
    if question and data.query_type not in ("greeting", "feedback"):
        needs_price, fresh = "price" in data.data_requirements, "fresh_data" in data.data_requirements
        can_research = "internet_research" in tools
        unpriced = needs_price and not g.PRICE.search(data.context_text)  # §2 cannot answer it
        if data.attempt == 0 and found and not (can_research and (fresh or unpriced)):
            todos.append("Answer from the gathered context (§2)")
        else:
            if can_research and (data.query_type == "commerce" or needs_price or fresh):
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


# --- phases 6-7: answer, validate ---------------------------------------------------------


def _to_user(text: str) -> str:
    """A stored statement ("Lives in Oslo") as said to the user ("You live in Oslo")."""
    for lead, said in g.SECOND_PERSON:
        if text.startswith(lead):
            return said + text[len(lead) :]
    return text


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
    own_key = fact.key and ":" not in fact.key and fact.slot not in g.STRONG_SLOTS
    if own_key and not g.is_about((thing,), fact.text):
        return f"Your {thing}: {text}"
    return text


# A statement that says no: its lead ("Does not like", "Dislikes") or a negation in it.  The
# checks refuse a "yes" from any statement with a negative word; a "no" is said only of these.
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


_WHAT = {"which": "which", "count": "the number of", "duration": "how long for", "polar": "the answer about"}


def _pick(data: t.AnswerIn) -> list[t.FactView]:
    """The facts that answer the question, best first (slot, shared words, datum, origin)."""
    keywords = list(data.keywords)
    title = data.content_reference.title if data.content_reference else ""
    keywords += query_terms(title) if title else []
    slots = g.asked_slots(data.resolved_query)
    focus = g.focus_of(data.resolved_query) if g.is_question(data.query) else ()
    predicate = g.asked_of(g.asked_predicate(data.resolved_query), focus) if g.is_question(data.query) else ()
    scored = []
    for i, fact in enumerate(data.facts):
        if not g.speaker_fits(data.query, fact.origin):
            continue
        score = stems_overlap(keywords, fact.text) or g.related_overlap(data.resolved_query, fact.text)
        if (fact.slot and fact.slot in slots) or (focus and fact.key and g.is_about(focus, "", fact.key)):
            score += 3 + (fact.key in slots)  # the slot itself before a part of it ("job:where")
        if title and title.lower() in fact.text.lower():
            score += 2
        if score and data.requested and g.has_requested(data.requested, _answer_form(fact, data), data.query):
            score += 2
        if score and predicate and g.states(predicate, fact.text, focus):
            score += 2
        if score:
            scored.append((-score, g.ORIGIN_RANK.get(fact.origin, 5), -i, fact))
    scored.sort(key=lambda x: x[:3])
    picked = [x[3] for x in scored]
    if focus:  # only what is about the thing asked for (a cat does not answer for a dog),
        # best what names it whole, else what names its head in a text that names the rest
        whole = [f for f in picked if g.about_focus(focus, f.text, f.key, data.query)]
        if whole:
            picked = whole
        else:  # the documents are joined only when no fact names the whole focus
            documents = g.documents_of((f.doc_id, f.text) for f in data.facts)
            picked = [
                f
                for f in picked
                if g.about_focus(focus, f.text, f.key, data.query, documents.get(f.doc_id, ""))
            ]
    # it says what was asked of the thing, as much of it as any fact giving the datum says
    giving = [f for f in picked if g.has_requested(data.requested, _answer_form(f, data), data.query)]
    most = max((g.states(predicate, f.text, focus) for f in giving or picked), default=0) if predicate else 0
    if most:
        picked = [f for f in picked if g.states(predicate, f.text, focus) >= most]
    strong = slots & g.STRONG_SLOTS
    if strong:  # a question about the user's job, home, name or taste: only such a statement
        picked = [f for f in picked if f.slot in strong]
    if focus and g.asks_now(data.query, data.requested):  # how it stands: the newest statement giving it
        newest = [f for f in picked if g.has_requested(data.requested, _answer_form(f, data), data.query)]
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
        if data.requested and set(query_terms(focus)) <= set(query_terms(data.requested)):
            focus = ""  # "the date" asked of a thing names the kind asked for, not the thing
        subject = (
            (data.content_reference.title if data.content_reference else "")
            or focus
            or max(data.entities, key=len, default="")
            or ", ".join(data.keywords[:4])
            or "that"
        )
        if data.requested and not any(
            g.has_requested(data.requested, _answer_form(f, data), data.query) for f in picked
        ):
            about = [f for f in picked if stems_overlap(query_terms(subject), f.text)][:1]
            what = _WHAT.get(data.requested, f"the {data.requested} of")
            seen = "".join(
                f"; the last thing memory holds about it: {_to_user(f.text).rstrip('.')} {_cite(f)}"
                for f in about
            )
            parts.append(f"I don't know {what} {subject}{seen}.")
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
        citations = list(dict.fromkeys(fact.doc_id for fact in picked if fact.n))
    return t.AnswerOut(answer=" ".join(parts).strip() or "Noted.", citations=citations)


def validate(data: t.ValidateIn) -> t.ValidateOut:
    text = data.answer
    corpus = " ".join(s.text for s in data.sources) + " " + " ".join(r.text for r in data.tool_results)
    corpus_flat = corpus.replace(",", "")
    checks: list[GateResult] = []
    present = bool(text.strip())
    checks.append(GateResult(gate="answer_present", passed=present))
    claims = g.NOTED.sub("", text)  # what it will remember is the user's own words, not a claim
    valid = {str(s.n) for s in data.sources}
    numbers = {n for n in (m.group(0).replace(",", "") for m in NUMBER.finditer(claims)) if n not in valid}
    quoted_query = data.query + " " + data.resolved_query
    ungrounded = sorted(n for n in numbers if n not in corpus_flat and n not in quoted_query)
    checks.append(GateResult(gate="grounded", passed=not ungrounded, detail=", ".join(ungrounded)))
    cited = set(re.findall(r"\[(\d+)\]", text))
    bad = sorted(cited - valid)
    checks.append(GateResult(gate="citations_valid", passed=not bad, detail=", ".join(bad)))
    checks += data.checks
    failed = {c.gate: c for c in data.checks if not c.passed}
    last = data.attempt + 1 >= data.max_attempts
    decision: Outcome
    revise: Outcome = "FAIL" if last else "REVISE"
    if not present:
        decision, reason = "FAIL", "the answer is empty"
    elif ungrounded or bad:
        decision, reason = revise, f"claims not found in the sources: {', '.join(ungrounded + bad)}"
    elif "consistent_with_memory" in failed:
        decision, reason = revise, f"contradicts memory: {failed['consistent_with_memory'].detail}"
    elif "requested_data" in failed:
        decision = "RETRY" if not last and not data.tools_tried else "FAIL"
        reason = f"the answer lacks the {data.requested or 'answer'} that was asked for"
    else:
        decision, reason = "APPROVE", "grounded in the cited sources" if cited else "no unsupported claims"
    return t.ValidateOut(decision=decision, reasons=[reason], checks=checks)


# --- save: the turn's summary -------------------------------------------------------------


def summarize_turn(data: t.SummarizeIn) -> t.SummarizeOut:
    first = sentences(data.answer)[:1]
    summary = f"Asked: {data.resolved_query[:140]}" + "".join(f" — answered: {s[:160]}" for s in first)
    answer_entities = entities_in(data.answer)
    asked = [e.lower() for e in data.entities]
    named = [
        n for n in answer_entities if any(e in n.lower() for e in asked) or stems_overlap(data.keywords, n)
    ]
    subject = max(named, key=len, default=None)  # the most specific name the answer gives for what was asked
    if subject is None and data.entities:
        subject = max(data.entities, key=len)
    if subject is None and answer_entities and g.is_question(data.query):
        subject = answer_entities[0]  # the thing the answer named is what "it" will mean next
    return t.SummarizeOut(summary=summary, topics=data.keywords[:5], subject=subject)


# --- the backend --------------------------------------------------------------------------

# Each task's rule, under the task's name.
_PHASES = (analyze_query, reflect, plan_retrieval, synthesize_context, plan, call_tools, answer, validate)
RULES: dict[str, Callable[[Any], BaseModel]] = {rule.__name__: rule for rule in (*_PHASES, summarize_turn)}


@lru_cache(maxsize=64)
def _prompt_tokens(prompt: str) -> int:
    """A task's instructions are the same on every call: counted once."""
    return count_tokens(prompt)


class OfflineBackend:
    """Deterministic rules, each building its task's output model.  Its usage counts the
    tokens a model would have been sent and returned, so runs compare."""

    name = "offline"
    sends_tools = False  # `call_tools` follows the plan

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        result = RULES[task.name](data)
        sent = _prompt_tokens(task.prompt()) + count_tokens(data.model_dump_json())
        return result, Usage(tokens_in=sent, tokens_out=count_tokens(result.model_dump_json()), calls=1)

    def close(self) -> None:
        return None

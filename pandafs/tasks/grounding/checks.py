"""The checks an answer must pass: it holds the datum asked for and contradicts no settled fact."""

from __future__ import annotations

import re

from events.schema import GateResult

from .facts import Fact
from .sentences import CITE, PIPELINE_TEXT, SAID_NOTE, is_honest_unknown, is_question
from .slots import STRONG_SLOTS, asked_slots, disagree, focus_of, is_about, slot_of, stems_of

# --- requested data -------------------------------------------------------------------------

PRICE = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d{1,2})?|\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|NOK|dollars|euros|kr)\b)",
    re.IGNORECASE,
)
_MONTHS = "january february march april may june july august september october november december"
DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:"
    + "|".join(m[:3] + "[a-z]*" for m in _MONTHS.split())
    + r")\b|(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|yesterday|today|tonight|"
    r"next\s+(?:week|month|year)|last\s+(?:week|month|year)|in\s+\d+\s+(?:days|weeks|months))",
    re.IGNORECASE,
)
_REQUESTED = [  # checked in order; the question's own words decide
    ("price", re.compile(r"\bhow\s+much\b|\bprice[sd]?\b|\bcosts?\b|\bpaid\b|\bpay\b", re.I)),
    ("date", re.compile(r"^\s*when\b|\bwhat\s+(?:date|day|time)\b|\bwhich\s+(?:date|day)\b", re.I)),
    (
        "name",
        re.compile(
            r"^\s*who\b|\bwhat(?:'s|\s+is|\s+was)\s+(?:my|the|his|her|their)\s+\w*\s*name\b|"
            r"\bname\s+of\b|\bcalled\b",
            re.I,
        ),
    ),
    ("place", re.compile(r"^\s*where\b", re.I)),
    (
        "list",
        re.compile(r"\blist\b|\bwhat\s+(?:are|were)\s+(?:all\s+)?(?:my|the)\b|\ball\s+(?:my|the)\b", re.I),
    ),
]


def requested_kind(query: str) -> str:
    """The datum a question asks for — price, date, name, place, list — or ''."""
    if not is_question(query):
        return ""
    for kind, pattern in _REQUESTED:
        if pattern.search(query):
            return kind
    return ""


_CAPITAL = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_NOT_NAME = frozenset(
    """I I'm I've I'd The A An From About You Your My It Its This That These Those And But Or
    Also Earlier Last Noted Sorry Asked Answered Lives Works Name Prefers Likes Dislikes Their
    Is Has Will Planning Going""".split()
)


def _names(text: str) -> set[str]:
    found = set()
    for match in _CAPITAL.finditer(text):
        words = [w for w in match.group(0).split() if w not in _NOT_NAME]
        if words:
            found.add(" ".join(words).lower())
    return found


def has_requested(kind: str, answer: str, query: str) -> bool:
    if not kind:
        return True
    if is_honest_unknown(answer):
        return False
    if kind == "price":
        return bool(PRICE.search(answer))
    if kind == "date":
        return bool(DATE.search(answer))
    if kind in ("name", "place"):
        asked = _names(query) | {w.lower() for w in re.findall(r"\w+", query)}
        return any(n not in asked for n in _names(answer))
    if kind == "list":
        return len(re.findall(r"\[\d+\]", answer)) >= 2 or answer.count(",") + answer.count(" and ") >= 1
    return True


# --- answer checks --------------------------------------------------------------------------


# Sentence ends, but not after an honorific or a Latin abbreviation ("Dr. Berg").
_CLAUSE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<!\bvs\.)"
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?;])\s+|\s+—\s+"
)


def answer_checks(
    answer: str, query: str, requested: str, facts: list[Fact], resolved: str = ""
) -> list[GateResult]:
    """Is the answer about what was asked (`resolved`: the query with its references
    resolved), does it hold what was asked, and does it contradict no settled fact?"""
    present = has_requested(requested, answer, query) and not (
        is_question(query) and is_honest_unknown(answer)
    )
    contradictions = []
    lowered = answer.lower()
    strong = asked_slots(query) & STRONG_SLOTS if is_question(query) else set()
    if strong and present:  # "what's my job?" is answered by the job, not by a neighbour
        present = any(f.slot and f.slot.kind in strong and f.slot.said.lower() in lowered for f in facts)
    said = [slot_of(s) for s in _CLAUSE_END.split(SAID_NOTE.sub("", CITE.sub("", answer)))]
    for fact in facts:
        if fact.slot is None or fact.origin == "answer":
            continue
        for slot in said:
            if slot is not None and disagree(fact.slot, slot):
                contradictions.append(f"{slot.said} (memory says {fact.text})")
        for old in fact.replaces:
            if old.lower() in lowered and fact.slot.said.lower() not in lowered:
                contradictions.append(f"{old} (replaced by {fact.slot.said})")
    return [
        _about(answer, query, resolved or query, facts),
        GateResult(
            gate="requested_data",
            passed=present,
            detail=(f"a {requested} was asked for" if requested else "an answer was asked for")
            + ("" if present else "; the answer lacks it"),
        ),
        GateResult(
            gate="consistent_with_memory",
            passed=not contradictions,
            detail="; ".join(dict.fromkeys(contradictions)),
        ),
    ]


_ABOUT = "about_what_was_asked"


def _content(text: str) -> frozenset[str]:
    return stems_of(CITE.sub("", text), content=True)


def _about(answer: str, query: str, resolved: str, facts: list[Fact]) -> GateResult:
    """Is what the answer says taken from facts about the thing the question asks about?
    The facts it uses are those sharing a word with it that the question does not have;
    one of them must be about the question's focus (`slots.focus_of`).  The pipeline's own
    labels are never an answer."""
    if PIPELINE_TEXT.search(answer):
        return GateResult(
            gate="about_what_was_asked", passed=False, detail="it quotes the pipeline's own text"
        )
    focus = focus_of(resolved) if is_question(query) else ()
    if not focus or is_honest_unknown(answer):
        return GateResult(gate=_ABOUT, passed=True)
    new = _content(answer) - _content(resolved)
    used = [f for f in facts if new & _content(f.text)]
    passed = any(is_about(focus, f.text, f.slot.key if f.slot else "") for f in used)
    thing = " ".join(focus)
    detail = f"the answer is about {thing}" if passed else f"no fact it uses is about {thing}"
    return GateResult(gate=_ABOUT, passed=passed, detail=detail)

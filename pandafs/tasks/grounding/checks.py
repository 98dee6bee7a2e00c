"""The checks an answer must pass: it holds the datum asked for and contradicts no settled fact."""

from __future__ import annotations

import re

from events.schema import GateResult
from indexers.words import stem

from .facts import REPLIES, Fact
from .sentences import CITE, NOTED, PIPELINE_TEXT, SAID_NOTE, is_honest_unknown, is_question
from .slots import (
    STRONG_SLOTS,
    asked_part,
    asked_predicate,
    asked_slots,
    disagree,
    focus_of,
    is_about,
    slot_of,
    states,
    stems_of,
)

# --- requested data -------------------------------------------------------------------------

PRICE = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d{1,2})?|\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|NOK|dollars|euros|kr)\b)",
    re.IGNORECASE,
)
_MONTHS = "january february march april may june july august september october november december"
# Dates said relative to when they were said (deixis: "yesterday" in last month's turn is
# not yesterday now): an answer to "when" must carry a date that holds on its own.
DEICTIC = (
    r"(?i)\b(?:today|tonight|tomorrow|yesterday|(?:this|last|next)\s+(?:week|weekend|month|year|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"\d+\s+\w+\s+ago|recently|the\s+other\s+day)\b"
)
_ABSOLUTE_DATE = (
    r"(?i)\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:1[89]|20)\d{2}|(?:"
    + "|".join(m[:3] + "[a-z]*" for m in _MONTHS.split())
    + r")\b)"
)
# Questions whose answer is worked out from several statements, not read off one (a total,
# a difference, an elapsed time, an order: the answer types of Li & Roth 2002 that need
# arithmetic or comparison), and requests for suggestions, which are composed for the
# user.  A quoted statement is neither.
COMPUTED = re.compile(
    r"\b(?:in\s+total|total|altogether|combined|sum|save|saved|increase|decrease|difference|"
    r"more\s+than|less\s+than|fewer\s+than|how\s+many\s+more|how\s+much\s+more|left|remaining|"
    r"percentage|average|ago|passed|between|order|earliest|latest|first\s+to\s+last|"
    r"how\s+long\s+did\s+it\s+take|how\s+many\s+\w+\s+did\s+it\s+take|"
    r"suggest|suggestions?|recommend|recommendations?|ideas?|advice|tips|most\s+recently|"
    r"more\s+recently|first\b[^?]*\bor|or\b[^?]*\bfirst|how\s+many\b[^?]*\b(?:and|or)|"
    r"how\s+long\b[^?]*\b(?:before|after|since|until))\b",
    re.IGNORECASE,
)
# What each kind of question looks like, checked in order (the question's own words
# decide); pattern sources, compiled by `re` when first searched: a turn reaches few.
_REQUESTED = [
    ("count", r"(?i)\bhow\s+many\b"),
    ("duration", r"(?i)\bhow\s+long\b"),
    (  # a polar question ("did I finish it?") is answered yes or no
        "polar",
        r"(?i)^\s*(?:[^,?]{1,80},\s*)?(?:did|do|does|is|are|was|were|have|has|had|am|can|could|will|"
        r"would|should)\s+(?:i|we|my|our)\b",
    ),
    ("price", r"(?i)\bhow\s+much\b|\bprice[sd]?\b|\bcosts?\b|\bpaid\b|\bpay\b"),
    ("date", r"(?i)^\s*when\b|\bwhat\s+(?:date|day|time)\b|\bwhich\s+(?:date|day)\b"),
    (
        "name",
        r"(?i)^\s*who\b|\bwhat(?:'s|\s+is|\s+was)\s+(?:my|the|his|her|their)\s+\w*\s*name\b|"
        r"\bname\s+of\b|\bcalled\b",
    ),
    ("place", r"(?i)^\s*where\b"),
    ("list", r"(?i)\blist\b|\bwhat\s+(?:are|were)\s+(?:all\s+)?(?:my|the)\b|\ball\s+(?:my|the)\b"),
    (  # "what play did I see?", "which laptop with an RTX GPU …": the answer names the one
        "which",
        r"(?i)^\s*(?:what|which)\s+(?!(?:is|are|was|were|do|does|did|have|has|had|am|can|could|should|"
        r"would|will|kind|kinds|type|types|sort)\b)[a-z]+(?:\s+[a-z]+)?"
        r"(?:\s+(?:with|from|for)\s+(?:(?:a|an|the)\s+)?[a-z0-9]+(?:\s+[a-z0-9]+)?)?"
        r"\s+(?:is|are|was|were|do|does|did|"
        r"have|has|had|am|i|we)\b|^\s*what\s+(?:is|was)\s+the\s+[a-z]+\s+(?:that|which|who)\b",
    ),
]


_POLAR = re.compile(dict(_REQUESTED)["polar"])


def requested_kind(query: str) -> str:
    """The datum a question asks for — count, duration, polar (yes or no), price, date,
    name, place, list, which — or ''."""
    if not is_question(query):
        return ""
    query = asked_part(query)
    for kind, pattern in _REQUESTED:
        if re.search(pattern, query):
            if kind in ("polar", "which", "place") and asked_slots(query) & STRONG_SLOTS:
                continue  # "do I like tea?", "where do I prefer to sit?": the statement answers
            return kind
    return ""


_CAPITAL = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_NOT_NAME = frozenset(
    """I I'm I've I'd The A An From About You Your My It Its This That These Those And But Or
    Also Earlier Last Noted Sorry Asked Answered Lives Works Name Prefers Likes Dislikes Their
    Is Has Will Planning Going I'll Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December Today
    Yesterday Tomorrow Speaking Thanks Yes No Oh Well So Actually""".split()
)


def _names(text: str) -> set[str]:
    found = set()
    for match in _CAPITAL.finditer(text):
        words = [w for w in match.group(0).split() if w not in _NOT_NAME]
        if words:
            found.add(" ".join(words).lower())
    return found


_CARDINAL = (
    r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+dozen|"
    r"dozens|hundreds|twenty|thirty|forty|fifty)"
)
_HOW_MANY = (
    r"(?i)\bhow\s+many\s+((?:[a-z-]+\s+){0,2}?[a-z-]+?)(?=\s+(?:do|does|did|have|has|had|am|is|are|was|"
    r"were|will|would|can|should|of|in|on|at|i|we)\b|[?.!,]|$)"
)


# "my 5th project": an ordinal of a thing the user keeps doing says how many so far
_COUNTED = rf"(?:{_CARDINAL}|\d+(?:st|nd|rd|th))"
# "my follower count is close to 1300", "the number of followers is 1,300": the count
# named by a noun of counting, its cardinal said within a few words after it
_COUNT_NOUNS = frozenset("count number total tally".split())


def _counts(answer: str, query: str) -> bool:
    """ "How many N": the answer states a number of N (a cardinal or an ordinal within four
    words before N, a cardinal of "ones" after N, or N's count and a cardinal after it)."""
    asked = re.search(_HOW_MANY, query)
    if asked is None:
        return bool(re.search(rf"\b{_CARDINAL}\b", answer, re.I))
    head = stem(asked.group(1).split()[-1])
    for match in re.finditer(rf"\b{_COUNTED}\b((?:\s+[\w'-]+){{1,4}})", answer, re.I):
        if head in {stem(w) for w in re.findall(r"[a-z]+", match.group(1).lower())}:
            return True
    words = re.findall(r"[\w,.]+", answer.lower())
    for match in re.finditer(rf"\b{_COUNTED}\s+(?:[a-z-]+\s+)?ones\b", answer, re.I):
        if head in {stem(w.strip(",.")) for w in words[: len(answer[: match.start()].split())]}:
            return True  # "Korean restaurants … I've tried four different ones": the ones are N
    for n, word in enumerate(words[:-1]):
        near = words[max(0, n - 2) : n + 3]
        if stem(word) == head and _COUNT_NOUNS & {w.strip(",.") for w in near}:
            after = " ".join(words[n + 1 : n + 11])
            if re.search(rf"\b{_CARDINAL}\b", after):
                return True
    return False


def has_requested(kind: str, answer: str, query: str) -> bool:
    if not kind:
        return True
    if is_honest_unknown(answer):
        return False
    if kind == "price":
        return bool(PRICE.search(answer))
    if kind == "date":
        return bool(re.search(_ABSOLUTE_DATE, re.sub(DEICTIC, "", answer)))
    if kind == "count":
        return _counts(answer, query)
    if kind == "duration":
        return bool(re.search(_DURATION, answer))
    if kind == "polar":
        return bool(re.match(r"\s*(?:yes|no)\b", CITE.sub("", answer), re.I))
    if kind == "place":  # a place is named after a preposition of place ("at Target")
        asked = _names(query) | {w.lower() for w in re.findall(r"\w+", query)}
        return any(_names(m.group(1)) - asked for m in re.finditer(_AT_PLACE, answer)) or _located(
            answer, query
        )
    if kind == "name":
        asked = _names(query) | {w.lower() for w in re.findall(r"\w+", query)}
        return any(n not in asked for n in _names(answer))
    if kind == "list":
        return len(re.findall(r"\[\d+\]", answer)) >= 2 or answer.count(",") + answer.count(" and ") >= 1
    if kind == "which":
        return _identifies(answer, query)
    return True


# pattern sources for one kind of question each, compiled by `re` when first searched
_DURATION = (
    rf"(?i)\b{_CARDINAL}(?:\s+and\s+a\s+half)?\s+"
    r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?)\b"
)
_AT_PLACE = (
    r"\b(?:at|in|on|near|from|to|inside|outside|by)\s+(?:the\s+)?([A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*)*)"
)
# A place said as a common noun phrase after the asked verb ("hides them in his cheeks"
# for "where does he hide his seeds?"): the locative complement of that verb.
_LOCATIVE = (
    r"(?i)\b(?:in|at|on|inside|under|behind|near|beside|into|onto)\s+"
    r"(?:(?:the|a|an|my|our|his|her|their|its)\s+)?([a-z]+)"
)


def _located(answer: str, query: str) -> bool:
    predicate = asked_predicate(query)
    if not predicate:
        return False
    asked = stems_of(query)
    words = [(m.start(), m.group(0)) for m in re.finditer(r"[A-Za-z]+", CITE.sub("", answer))]
    verbs = [n for n, (_, w) in enumerate(words) if states(predicate[:1], w)]
    for match in re.finditer(_LOCATIVE, CITE.sub("", answer)):
        at = sum(1 for start, _ in words if start < match.start())
        if stem(match.group(1)) not in asked and any(0 < at - v <= 4 for v in verbs):
            return True
    return False


_PLACE_NOUNS = frozenset(
    "city town country place state village neighbourhood neighborhood area region".split()
)
_QUOTED = r"(?<!\w)[\"“'‘]([^\"”'’]{2,80})[\"”'’](?!\w)"


def _identifies(answer: str, query: str) -> bool:
    """Does the answer name which one: a name, a quoted title or a number that the question
    does not hold, near the thing asked about when it says that thing?"""
    asked = _names(query) | {w.lower() for w in re.findall(r"\w+", query)}
    plain = CITE.sub("", answer)
    named = [m for m in _CAPITAL.finditer(plain) if _names(m.group(0)) - asked]
    named += [m for m in re.finditer(_QUOTED, plain) if m.group(1).lower() not in query.lower()]
    numbers = [m for m in re.finditer(r"\b\d[\d,.]*\b", plain) if m.group(0) not in query]
    focus = focus_of(query)
    if not focus:
        return bool(named or numbers)
    head = stem(focus[-1])
    words = [(m.start(), stem(m.group(0))) for m in re.finditer(r"[a-z]+", plain.lower())]
    near = [n for n, (_, w) in enumerate(words) if w == head]
    if not near:  # the answer does not say the thing: only a place named as one stands for a place,
        # or a name that extends the question's own ("Lenovo LOQ 15" for "which Lenovo laptop")
        extends = any(
            set(focus[:-1]) & set(n.split()) for m in named for n in _names(m.group(0)) if n not in asked
        )
        return extends or (focus[-1] in _PLACE_NOUNS and has_requested("place", answer, query))

    def within(found: list[re.Match[str]], span: int) -> bool:
        at = [sum(1 for start, _ in words if start < m.start()) for m in found]
        return any(abs(a - b) <= span for a in near for b in at)

    return within(named, 8) or within(numbers, 3)  # "my internet plan to 500 Mbps"


def about_focus(focus: tuple[str, ...], text: str, key: str, query: str) -> bool:
    """Is a statement about the question's focus (`slots.is_about`)?  For "which Lenovo
    laptop …" the head noun is the answer's type (Li & Roth 2002), and a statement that
    names one ("The Lenovo LOQ 15 has …") is about it without saying "laptop"."""
    if is_about(focus, text, key):
        return True
    return (
        len(focus) > 1
        and requested_kind(query) == "which"
        and is_about(focus[:-1], text)
        and _identifies(text, query)
    )


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
    answer = NOTED.sub("", answer).strip()  # what it will remember is no claim
    present = has_requested(requested, answer, query) and not (
        is_question(query) and is_honest_unknown(answer)
    )
    contradictions = []
    lowered = answer.lower()
    computed = (
        is_question(query) and bool(COMPUTED.search(resolved or query)) and not ASKS_ASSISTANT.search(query)
    )
    if present and computed and _quotes(answer, facts):
        present = False  # a total, a difference or an order is worked out, not quoted
    strong = asked_slots(query) & STRONG_SLOTS if is_question(query) else set()
    if strong and present:  # "what's my job?" is answered by the job, not by a neighbour
        present = any(f.slot and f.slot.kind in strong and f.slot.said.lower() in lowered for f in facts)
    said = [slot_of(s) for s in _CLAUSE_END.split(SAID_NOTE.sub("", CITE.sub("", answer)))]
    for fact in facts:
        if fact.slot is None or fact.origin in REPLIES:
            continue
        for slot in said:
            if slot is not None and disagree(fact.slot, slot):
                contradictions.append(f"{slot.said} (memory says {fact.text})")
        for old in fact.replaces:
            if old.lower() in lowered and fact.slot.said.lower() not in lowered:
                contradictions.append(f"{old} (replaced by {fact.slot.said})")
    if is_question(query):
        contradictions += _superseded(answer, query, requested, facts, focus_of(resolved or query))
    return [
        _about(answer, query, resolved or query, facts, checkable=bool(requested or strong)),
        GateResult(
            gate="requested_data",
            passed=present,
            detail=(f"a {requested} was asked for" if requested else "an answer was asked for")
            + (" (worked out from what memory holds, not a quoted statement)" if computed else "")
            + ("" if present else "; the answer lacks it"),
        ),
        GateResult(
            gate="consistent_with_memory",
            passed=not contradictions,
            detail="; ".join(dict.fromkeys(contradictions)),
        ),
    ]


_ABOUT = "about_what_was_asked"
_NOTHING = "the question names no thing and no datum to check an answer against"
_WHO = "the question asks what the assistant said; the answer quotes the user (or the other way round)"
# A question about what the assistant said earlier ("you suggested", "our previous
# conversation") is answered by the assistant's words; any other by the user's, the files
# and documents, never by an imported reply of the assistant quoted as the user's fact.
ASKS_ASSISTANT = re.compile(
    r"\byou\s+(?:told|suggested|recommended|mentioned|said|gave|provided|listed|explained|created|"
    r"wrote|shared|described|advised|named)\b|\bdid\s+you\s+(?:tell|suggest|recommend|mention|say|give|"
    r"provide|list|explain|create|write|share|describe|advise|name)\b|\b(?:our|the)\s+(?:previous|last|earlier)\s+"
    r"(?:conversation|chat|discussion)\b|\bremind\s+me\s+what\s+you\b",
    re.IGNORECASE,
)


def _who(query: str) -> str:
    if ASKS_ASSISTANT.search(query):
        return _WHO
    return "the answer quotes what the assistant said, not what the user stated"


_WE = re.compile(r"\b(?:we|us|our)\b", re.IGNORECASE)
_I = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)


def speaker_fits(query: str, origin: str) -> bool:
    """May a fact of this origin answer this question (`ASKS_ASSISTANT`; "what did we set"
    asks about both speakers)?"""
    if ASKS_ASSISTANT.search(query):
        return origin in REPLIES
    if _WE.search(query):
        return True
    if _I.search(query):  # a search snippet mixes both speakers: not the user's own words
        return origin not in ("assistant", "tool")
    return origin != "assistant"


def _content(text: str) -> frozenset[str]:
    return stems_of(CITE.sub("", text), content=True)


def _about(answer: str, query: str, resolved: str, facts: list[Fact], *, checkable: bool) -> GateResult:
    """Is what the answer says taken from facts about the thing the question asks about?
    The facts it uses are those sharing a word with it that the question does not have;
    one of them must be about the question's focus (`slots.focus_of`), and the names the
    question gives ("Kristin Hannah", "Software Engineer Manager") must be in the answer.  A question that
    names no thing, no datum (`checkable`: a requested kind or an identity slot) leaves
    nothing to check an answer against: it is not approved.  The pipeline's own labels are
    never an answer."""
    if PIPELINE_TEXT.search(answer):
        return GateResult(
            gate="about_what_was_asked", passed=False, detail="it quotes the pipeline's own text"
        )
    focus = focus_of(resolved) if is_question(query) else ()
    if is_honest_unknown(answer) or not is_question(query):
        return GateResult(gate=_ABOUT, passed=True)
    said = set(re.findall(r"\w+", answer.lower()))
    named = {w for n in _names(query.split(None, 1)[-1]) for w in n.split()}
    acronyms = {w.lower() for w in re.findall(r"\b[A-Z0-9]{2,5}\b", query)}  # "RTX", "GPU": said many ways
    missing = sorted(w for w in named - acronyms if w not in said and w.isalpha())
    if missing:  # "my new role as Software Engineer Manager" is not "Senior Software Engineer"
        return GateResult(gate=_ABOUT, passed=False, detail=f"the answer does not say {missing[0]!r}")
    predicate = asked_predicate(resolved)
    polar = _POLAR.search(asked_part(query)) is not None
    if not focus:  # then at least: a datum to check, from who was asked about
        if not checkable and not predicate:
            return GateResult(gate=_ABOUT, passed=False, detail=_NOTHING)
        new = _content(answer) - _content(resolved)
        quoted = [f for f in _quoted_facts(answer, facts) if new & _content(f.text)]
        sources = quoted or [f for f in facts if new & _content(f.text)]
        fitting = [f for f in sources if speaker_fits(query, f.origin)]
        if quoted and not _fits_quoted(answer, query, quoted):
            return GateResult(gate=_ABOUT, passed=False, detail=_who(query))
        if sources and not fitting:
            return GateResult(gate=_ABOUT, passed=False, detail=_WHO)
        passed = not fitting or _addresses(answer, predicate, fitting, polar=polar, query=query)
        asked = " ".join(predicate)
        return GateResult(
            gate=_ABOUT, passed=passed, detail="" if passed else f"no fact it uses says {asked}"
        )
    new = _content(answer) - _content(resolved)
    quoted = [f for f in _quoted_facts(answer, facts) if new & _content(f.text)]
    if quoted and not _fits_quoted(answer, query, quoted):
        return GateResult(gate=_ABOUT, passed=False, detail=_who(query))
    used = quoted or [f for f in facts if new & _content(f.text)]
    used = [f for f in used if speaker_fits(query, f.origin)]
    about = [f for f in used if about_focus(focus, f.text, f.slot.key if f.slot else "", query)]
    thing = " ".join(focus)
    if not about:
        return GateResult(gate=_ABOUT, passed=False, detail=f"no fact it uses is about {thing}")
    if not _addresses(answer, predicate, about, polar=polar, query=query):
        asked = " ".join(predicate)
        return GateResult(gate=_ABOUT, passed=False, detail=f"no fact it uses says what {thing} {asked}")
    return GateResult(gate=_ABOUT, passed=True, detail=f"the answer is about {thing}")


def _quoted_facts(answer: str, facts: list[Fact]) -> list[Fact]:
    """The facts an answer is made of: those whose content words (three or more) are nearly
    all in the answer.  The answer is judged by these, not by any fact that shares a word
    with it: a reply quoted beside a user's sentence that merely shares "skin" is the reply."""
    said = _content(answer)
    out = []
    for fact in facts:
        words = {w for w in _content(fact.text) if len(w) > 2}
        if len(words) >= 3 and len(words & said) >= 0.8 * len(words):
            out.append(fact)
    return out


def _fits_quoted(answer: str, query: str, quoted: list[Fact]) -> bool:
    """Does the answer say only what facts from whom the question asks about give
    (`speaker_fits`)?  A quoted fact of another speaker may echo them (a reply repeating
    what the user said), but the words only it gives are another speaker's: an imported
    reply of the assistant is not what the user stated, however it is phrased."""
    said = _content(answer)
    given = [_content(f.text) for f in quoted if speaker_fits(query, f.origin)]
    covered = _content(query).union(*given)
    return all(
        len((_content(f.text) & said) - covered) < 2 for f in quoted if not speaker_fits(query, f.origin)
    )


_NEGATED = re.compile(r"\bnot\b|\bnever\b|n't\b|\bno\s+longer\b|\bdislikes?\b|\bhates?\b", re.I)


def _addresses(
    answer: str, predicate: tuple[str, ...], facts: list[Fact], *, polar: bool, query: str = ""
) -> bool:
    """Does a fact the answer uses say what was asked of the thing (`slots.asked_predicate`),
    not only name it?  A yes or no is read off a fact that states the whole predicate, or
    negates it: a "yes" from a negated statement is wrong."""
    if not predicate:
        return True
    if not polar:
        return any(states(predicate, f.text) for f in facts)
    choice = _alternatives(predicate, query)
    if choice:  # "do I prefer aisle or window seats?": the rest of it, and one of the two
        rest = tuple(w for w in predicate if w not in choice)
        return any(states(rest, f.text) == len(rest) and states(choice, f.text) for f in facts)
    whole = [f for f in facts if states(predicate, f.text) == len(predicate)]
    says_yes = bool(re.match(r"\s*yes\b", answer, re.I))
    return any(not (says_yes and _NEGATED.search(f.text)) for f in whole)


def _alternatives(predicate: tuple[str, ...], query: str) -> tuple[str, ...]:
    """The two words an alternative question ("do I prefer aisle or window seats?") asks
    to choose between, when both are of its predicate; () for a yes-or-no question."""
    match = re.search(r"\b([a-z]+)\s+or\s+([a-z]+)\b", query.lower())
    if match is None:
        return ()
    pair = tuple(stem(w) for w in match.groups())
    return pair if all(w in predicate for w in pair) else ()


def _quotes(answer: str, facts: list[Fact]) -> bool:
    """Is the answer made of statements of memory as they are (each clause a fact's words)?"""
    clauses = [c for c in _CLAUSE_END.split(SAID_NOTE.sub("", CITE.sub("", answer))) if c.strip()]
    known = [stems_of(f.text, content=True) for f in facts]
    said = [{w for w in stems_of(c, content=True) if len(w) > 2} for c in clauses]
    return bool(said) and all(len(words) > 2 and any(words <= fact for fact in known) for words in said)


# --- the newest statement ---------------------------------------------------------------------

# How things stand (how many, how much, which, who, where) is read off the newest statement
# about the thing asked: a value the user gave and later gave again differently is no
# answer, whatever its slot (the newest-wins of `facts.settle` reaches only the statements
# whose slot it recognises).  A question that asks for an earlier value is not about now.
_UPDATED_KINDS = frozenset({"count", "price", "name", "place", "which"})
_ASKS_EARLIER = re.compile(
    r"\b(?:first|initially|originally|before|previously|used\s+to|earlier|at\s+the\s+(?:start|beginning))\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}


def _values(text: str, kind: str, query: str) -> frozenset[str]:
    """The values a statement gives of the kind asked — its numbers (digits, number words,
    "5th"), and for a name, place or which its names (not a sentence's first word) — less
    those the question holds."""
    plain = CITE.sub("", text)
    found = {n.replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", plain)}
    found |= {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", plain.lower()) if w in _NUMBER_WORDS}
    if kind in ("name", "place", "which"):
        found |= _names(plain.split(None, 1)[-1] if " " in plain.strip() else "")
    asked = {n.replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", query)}
    asked |= {_NUMBER_WORDS.get(w, w) for w in re.findall(r"[a-z]+", query.lower())} | _names(query)
    return frozenset(found - asked)


def asks_now(query: str, requested: str) -> bool:
    """Does a question ask how a thing stands now (a value a later statement may change)?"""
    return (
        requested in _UPDATED_KINDS
        and not _ASKS_EARLIER.search(query)
        and not ASKS_ASSISTANT.search(query)
        and not COMPUTED.search(query)
    )


def _superseded(
    answer: str, query: str, requested: str, facts: list[Fact], focus: tuple[str, ...]
) -> list[str]:
    """The values of an answer that a later statement by the user about the same thing
    (its focus, `about_focus`) no longer gives: for each, the later statement.  A question
    that names no datum ("what is my monthly rent?") is held to the numbers it is given."""
    if not focus or not asks_now(query, requested or "count"):
        return []
    said = _values(answer, requested, query)
    if not said:
        return []
    stated = []
    for fact in facts:
        if fact.when is None or fact.origin in REPLIES or not speaker_fits(query, fact.origin):
            continue
        if about_focus(focus, fact.text, fact.slot.key if fact.slot else "", query):
            values = _values(fact.text, requested, query)
            if values:
                stated.append((fact, fact.when, values))
    since = max((when for _, when, values in stated if values & said), default=None)
    if since is None:
        return []
    return [
        f"{', '.join(sorted(said))} (a later statement, {when.date().isoformat()}: {fact.text[:160]})"
        for fact, when, values in stated
        if when > since and not values <= said
    ]

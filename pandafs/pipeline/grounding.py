"""What an answer may be built from, and the checks an answer must pass.

Synthesis reads *facts*: sentences of the §2 sources and the §4 tool results, each
with its origin and date, deduplicated, and with disagreements settled (newest wins).
Validation reads *checks*: whether the answer holds what the question asked for and
whether it contradicts a stated fact.  Both are computed here, in the pipeline, the
same for every backend, so a model can use them but cannot talk its way past them.

Origins, strongest first (seed 003 §5: what the user said outranks what the
assistant said): `memory` (preferences.md, facts.md, saved memories — "the file says
what is true now", DESIGN §2), `stated` (what the user said in an earlier turn),
`document` (research, knowledge), `tool` (§4), `answer` (an earlier APPROVEd reply).
Non-answers ("I don't have anything…"), acknowledgements, questions and the current
query itself are never facts.

Slots.  A statement normalised to third person ("Lives in Oslo", "Their dentist is
Dr. Berg") has a slot — the thing it is about.  Slots of single-valued predicates
(where one lives, one's job, name, "my X is …") hold one value: two statements with
different values disagree and the newest wins.  Preferences are many-valued, except
that "prefers" chooses one thing of a kind (same head noun) and "likes" / "dislikes"
of the same thing disagree.  These lists are English grammar, not tuned to any data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from functools import lru_cache

from events.schema import GateResult
from indexers.query import plan_query
from indexers.words import stem

__all__ = [
    "Fact",
    "answer_checks",
    "is_honest_unknown",
    "is_non_answer",
    "is_question",
    "requested_kind",
    "settle",
    "slot_of",
    "statement_form",
]

# --- sentence kinds -------------------------------------------------------------------------

# Interrogatives and auxiliaries that open an English question, and the imperatives that
# open a request: neither is ever something the user stated about themselves.
_QUESTION_START = re.compile(
    r"^\s*(?:what|which|who|whom|whose|where|when|why|how|do|does|did|is|are|was|were|am|can|"
    r"could|should|would|will|shall|have|has|had|may|might|any|is there|are there)\b",
    re.IGNORECASE,
)
_REQUEST_START = re.compile(
    r"^\s*(?:please\s+)?(?:tell|remind|recommend|suggest|show|find|list|give|search|look|"
    r"compare|explain|help|check|name)\b",
    re.IGNORECASE,
)
# What the pipeline itself says when it has nothing: never evidence (issue 12).
_NON_ANSWER = re.compile(
    r"\bI don'?t have anything\b|\bI don'?t know\b|\bI couldn'?t\b|\bcouldn'?t give a reliable\b|"
    r"\bnothing in memory\b|\bno earlier turn names\b|\bI found no topic\b|^Noted\b|"
    r"\bI'll remember\b|^Hello! Ask me anything|^Thanks for telling me|^Which one do you mean|"
    r"^Sorry\b",
    re.IGNORECASE,
)
_HONEST = re.compile(r"\bI don'?t (?:know|have anything)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question or a request, not a statement."""
    text = text.strip()
    return text.endswith("?") or bool(_QUESTION_START.match(text) or _REQUEST_START.match(text))


def is_non_answer(text: str) -> bool:
    return bool(_NON_ANSWER.search(text))


def is_honest_unknown(text: str) -> bool:
    """An answer that says plainly it does not know (a fine answer, but not an APPROVE)."""
    return bool(_HONEST.search(text))


# --- statements and slots -------------------------------------------------------------------

# How a stored statement is said to the user, and back (the answer's own words are
# normalised the same way, so an answer and the fact it repeats compare equal).
SECOND_PERSON = [
    ("Lives ", "You live "),
    ("Works ", "You work "),
    ("Name: ", "Your name is "),
    ("Their ", "Your "),
    ("Prefers ", "You prefer "),
    ("Likes ", "You like "),
    ("Dislikes ", "You dislike "),
    ("Does not like ", "You don't like "),
    ("Planning ", "You're planning "),
    ("Going ", "You're going "),
    ("Will ", "You will "),
    ("Is ", "You are "),
    ("Has ", "You have "),
]

# First person → third person, as the memory files store statements.
STATEMENT_LEADS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:i|we)\s+(?:really\s+|usually\s+|always\s+)?prefer\s+", re.I), "Prefers "),
    (re.compile(r"^(?:i|we)\s+(?:really\s+|usually\s+)?(?:like|love|enjoy)\s+", re.I), "Likes "),
    (re.compile(r"^(?:i|we)\s+(?:hate|dislike|avoid|can't stand|cannot stand)\s+", re.I), "Dislikes "),
    (re.compile(r"^i\s+(?:don't|do not)\s+(?:like|eat|want)\s+", re.I), "Does not like "),
    (re.compile(r"^(?:please\s+)?remember\s+(?:that\s+)?", re.I), ""),
    (re.compile(r"^my\s+name\s+is\s+", re.I), "Name: "),
    (re.compile(r"^(?:i|we)\s+(?:have\s+|'ve\s+|just\s+)*moved\s+to\s+", re.I), "Lives in "),
    (re.compile(r"^(?:i|we)\s+(?:now\s+|currently\s+)?live\s+", re.I), "Lives "),
    (re.compile(r"^(?:i|we)\s+(?:now\s+|currently\s+)?work\s+", re.I), "Works "),
    (
        re.compile(
            r"^(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?=(?:planning|going|flying|travel|moving|visiting|"
            r"heading|starting|getting|taking|having)\b)",
            re.I,
        ),
        "",
    ),
    (
        re.compile(
            r"^(?:i|we)\s+(?=(?:plan|booked|bought|visited|went|adopted|started|finished|met|got|"
            r"signed|ordered|sold)\b)",
            re.I,
        ),
        "",
    ),
    (re.compile(r"^(?:i|we)\s*(?:'ll|\s+will)\s+", re.I), "Will "),
    (re.compile(r"^i'?m\s+|^i\s+am\s+", re.I), "Is "),
    (re.compile(r"^(?:i|we)\s+have\s+", re.I), "Has "),
    (re.compile(r"^my\s+", re.I), "Their "),
    *[
        (re.compile("^" + re.escape(said).replace(r"\ ", r"\s+"), re.I), stored)
        for stored, said in SECOND_PERSON
    ],
    (re.compile(r"^you'?re\s+|^you\s+are\s+", re.I), "Is "),
]


_REMEMBER = re.compile(
    r"^(?:(?:actually|well|oh|also|so|by the way|btw|these days|nowadays|now|update)[,:]?\s+)*"
    r"(?:(?:please\s+)?(?:remember|note|don't forget)\s+(?:that\s+)?)?",
    re.I,
)
_ADVERB = re.compile(r"^((?:i|we)\s+)(?:really|usually|always|now|still|actually|also|definitely)\s+", re.I)
_TRAILING = re.compile(r",?\s+(?:now|these days|nowadays|anymore|instead)$", re.I)


@lru_cache(maxsize=65536)
def statement_form(sentence: str) -> str:
    """'I live in Oslo' → 'Lives in Oslo'; other sentences unchanged (but capitalised)."""
    text = _TRAILING.sub("", _ADVERB.sub(r"\1", _REMEMBER.sub("", sentence.strip().rstrip(".!;"))))
    for pattern, lead in STATEMENT_LEADS:
        if pattern.search(text):
            text = pattern.sub(lead, text, count=1)
            break
    return text[:1].upper() + text[1:] if text else text


_KEY_SLOTS = {  # keyed entries (`**job:** carpenter`, `Name: Alex`) of config.IDENTITY_KEYS
    **dict.fromkeys(("name", "full_name", "preferred_name", "nickname"), "name"),
    **dict.fromkeys(("job", "occupation", "profession", "role", "work", "works_at", "employer"), "job"),
    **dict.fromkeys(("location", "lives_in", "home", "hometown", "city"), "home"),
}
_SLOT_LEADS: list[tuple[re.Pattern[str], str, str]] = [  # (pattern, slot, arity)
    (re.compile(r"^(?P<s>[a-z][a-z _-]{1,30}):\s*(?P<v>.+)$", re.I), "", "one"),
    (re.compile(r"^lives\s+(?:in|at|near)\s+(?P<v>.+)$", re.I), "home", "one"),
    (re.compile(r"^works\s+(?:as|at|for|in)\s+(?P<v>.+)$", re.I), "job", "one"),
    (re.compile(r"^their\s+(?P<s>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|was)\s+(?P<v>.+)$", re.I), "", "one"),
    (re.compile(r"^prefers\s+(?P<v>.+)$", re.I), "prefers", "head"),
    (re.compile(r"^(?P<s>likes|dislikes|does not like)\s+(?P<v>.+)$", re.I), "likes", "one"),
]
# Questions about the user's own identity and taste (the identity keys of
# config.IDENTITY_KEYS, and preferences): only a statement of that slot answers them.
_ASKED = {
    "home": re.compile(
        r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?live\b|\b(?:i|we)\s+live\b|"
        r"\bmy\s+(?:home|hometown|home\s*town|address|city)\b",
        re.I,
    ),
    "job": re.compile(
        r"\bmy\s+(?:job|occupation|profession|work|career|employer|line\s+of\s+work)\b|"
        r"\bwhat\s+(?:do|did)\s+(?:i|we)\s+do\b(?!\s+(?:about|with|if|when|now|next|to))|"
        r"\bwhere\s+(?:do|did)\s+(?:i|we)\s+work\b",
        re.I,
    ),
    "name": re.compile(r"\bmy\s+(?:own\s+)?name\b|\bwhat\s+am\s+i\s+called\b|\bwho\s+am\s+i\b", re.I),
    "prefers": re.compile(
        r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?prefer\b|\bmy\s+(?:favou?rite|preferred)\b", re.I
    ),
    "likes": re.compile(r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?(?:like|love|enjoy)\b", re.I),
}
STRONG_SLOTS = frozenset(_ASKED)  # asked like this, answered only by such a statement


@dataclass(frozen=True)
class Slot:
    """What a statement is about (`key`), what it says of it (`value`), and `said`: the
    words an answer stating it must hold.  Taste is keyed by its object, so "Likes tea"
    and "Dislikes tea" are two values of one slot and the newer wins."""

    key: str
    value: str
    arity: str  # one | head
    said: str = ""

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]


@lru_cache(maxsize=65536)
def slot_of(statement: str) -> Slot | None:
    text = statement_form(statement)
    for pattern, slot, arity in _SLOT_LEADS:
        match = pattern.match(text)
        if match:
            named = (match.groupdict().get("s") or "").lower().replace(" ", "_").replace("-", "_")
            key = slot or _KEY_SLOTS.get(named, named)
            value = match.group("v").strip().rstrip(".")
            if slot == "likes":  # key by the object, the polarity is the value
                return Slot(f"likes:{value.lower()}", named, arity, said=value)
            return Slot(key, value, arity, said=value)
    return None


def asked_slots(query: str) -> set[str]:
    """The slots a question asks about: 'what's my job' → job; 'who is my dentist' → dentist."""
    slots = {slot for slot, pattern in _ASKED.items() if pattern.search(query)}
    for match in re.finditer(r"\bmy\s+([a-z]+)", query.lower()):
        slots.add(match.group(1))
    return slots


@lru_cache(maxsize=65536)
def _en_stem(word: str) -> str:
    return stem(word)


@lru_cache(maxsize=4096)
def _groups(query: str) -> tuple[tuple[str, frozenset[str]], ...]:
    plan = plan_query(query)
    return tuple((g.stem, frozenset(g.variants)) for g in plan.groups if g.weight >= 1.0)


def related_overlap(query: str, text: str) -> int:
    """Query words found in `text` as themselves or as a synonym of the index's everyday
    thesaurus (`indexers.words`: trip ↔ holiday, job ↔ occupation)."""
    words = {_en_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower())}
    return sum(1 for term, variants in _groups(query) if term in words or words & variants)


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


# --- facts ----------------------------------------------------------------------------------

ORIGIN_RANK = {"memory": 0, "stated": 1, "document": 2, "tool": 3, "answer": 4}
_CITE = re.compile(r"\s*(?:\[\d+\]|\((?:memory|internet)[_.]\w+\))")
_SAID = re.compile(r"\s*\((?:said|this replaces)[^)]*\)")


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    plain = _SAID.sub("", _CITE.sub("", text))
    return " ".join(re.findall(r"[a-z0-9$€£]+", statement_form(plain).lower()))


@dataclass
class Fact:
    text: str
    origin: str
    n: int  # the §2 source number it came from, 0 for a tool result
    doc_id: str
    when: datetime | None = None
    seq: int = 0  # order within one file: a later line of the same day is newer
    slot: Slot | None = None
    replaces: list[str] = field(default_factory=list)

    def rank(self) -> tuple[int, float]:
        stamp = self.when.timestamp() if self.when else 0.0
        return (ORIGIN_RANK.get(self.origin, 5), -stamp)


def end_of_day(day: str) -> datetime | None:
    """A file entry noted on `day` counts as of that day's end: the file is the truth."""
    try:
        return datetime.combine(datetime.fromisoformat(day[:10]).date(), time.max, tzinfo=UTC)
    except ValueError:
        return None


def _disagree(a: Slot, b: Slot) -> bool:
    if a.key != b.key or a.value.lower() == b.value.lower():
        return False
    if a.arity == "one":
        return True
    if a.arity == "head":  # "Prefers Lenovo laptops" / "Prefers Dell laptops"
        return a.value.lower().split()[-1] == b.value.lower().split()[-1]
    return False


def settle(facts: list[Fact], query: str) -> list[Fact]:
    """Drop non-facts and repeats, and let the newest of disagreeing statements win."""
    asked = norm(query)
    kept: dict[str, Fact] = {}
    for fact in facts:  # statements here are stored forms ("Is a nurse", "Does not like tea"):
        text = fact.text.strip()  # only a question mark makes one a question
        key = norm(text)
        if not key or text.endswith("?") or is_non_answer(text) or key == asked:
            continue
        fact.text = _CITE.sub("", text).strip()
        fact.slot = slot_of(fact.text)
        if key not in kept or fact.rank() < kept[key].rank():
            kept[key] = fact
    out = sorted(kept.values(), key=lambda f: (-(f.when.timestamp() if f.when else 0.0), -f.seq, f.rank()))
    winners: list[Fact] = []
    for fact in out:  # newest first: a later one that disagrees with a winner loses
        slot = fact.slot
        rival = next((w for w in winners if w.slot and slot and _disagree(w.slot, slot)), None)
        if rival is not None and (rival.origin != "answer" or fact.origin == "answer"):
            rival.replaces.append(fact.text if slot is None or slot.kind == "likes" else slot.value)
            continue
        if rival is not None:  # an earlier answer never outranks what the user stated
            winners.remove(rival)
            old = rival.slot
            fact.replaces.append(rival.text if old is None or old.kind == "likes" else old.value)
        winners.append(fact)
    return winners


# --- answer checks --------------------------------------------------------------------------


# Sentence ends, but not after an honorific or a Latin abbreviation ("Dr. Berg").
_CLAUSE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<!\bvs\.)"
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?;])\s+|\s+—\s+"
)


def answer_checks(answer: str, query: str, requested: str, facts: list[Fact]) -> list[GateResult]:
    """Does the answer hold what was asked, and does it contradict no settled fact?"""
    present = has_requested(requested, answer, query) and not (
        is_question(query) and is_honest_unknown(answer)
    )
    contradictions = []
    lowered = answer.lower()
    strong = asked_slots(query) & STRONG_SLOTS if is_question(query) else set()
    if strong and present:  # "what's my job?" is answered by the job, not by a neighbour
        present = any(f.slot and f.slot.kind in strong and f.slot.said.lower() in lowered for f in facts)
    said = [slot_of(s) for s in _CLAUSE_END.split(_SAID.sub("", _CITE.sub("", answer)))]
    for fact in facts:
        if fact.slot is None or fact.origin == "answer":
            continue
        for slot in said:
            if slot is not None and _disagree(fact.slot, slot):
                contradictions.append(f"{slot.said} (memory says {fact.text})")
        for old in fact.replaces:
            if old.lower() in lowered and fact.slot.said.lower() not in lowered:
                contradictions.append(f"{old} (replaced by {fact.slot.said})")
    return [
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

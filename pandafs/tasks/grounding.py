"""What an answer may be built from (*facts*), and the checks an answer must pass.

Facts are the sentences of the §2 sources and §4 tool results, each with its origin and
date, deduplicated, disagreements settled (newest wins); checks say whether an answer holds
what was asked and contradicts no stated fact.  Both live here, beneath the pipeline and
the backends, the same for every backend: a model can use them but not talk past them.

A question, a request or a non-answer (`is_non_answer`) is never a statement.  Statements
are stored in the third person ("I live in Oslo" → "Lives in Oslo") and said back in the
second (`SECOND_PERSON`); `norm` is the key two wordings share.  A statement's *slot* is
what it is about: single-valued slots (home, job, name, "my X is …") hold one value;
tastes are many-valued, but "prefers" chooses one of a kind (same head noun) and "likes" /
"dislikes" of one thing disagree.  These lists are English grammar, not tuned to any data.

Origins, strongest first: `memory` (preferences.md, facts.md, saved memories: the file
says what is true now), `stated` (the user in an earlier turn), `document` (research,
knowledge), `tool` (§4), `answer` (an earlier APPROVEd reply), `assistant` (an imported
reply: it answers what the assistant said).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from functools import lru_cache
from typing import NamedTuple

from events.schema import GateResult
from indexers.query import plan_query
from indexers.words import STOP_WORDS, _lexicon
from indexers.words import stem as _index_stem

__all__ = [
    "PRICE",
    "Fact",
    "about_focus",
    "answer_checks",
    "asks_now",
    "asked_of",
    "asked_predicate",
    "documents_of",
    "end_of_day",
    "focus_of",
    "has_requested",
    "is_about",
    "is_honest_unknown",
    "is_question",
    "requested_kind",
    "settle",
    "statement_form",
]

# --- sentence kinds -------------------------------------------------------------------------

# Interrogatives and auxiliaries that open an English question.
_QUESTION_START = re.compile(
    r"^\s*(?:what|which|who|whom|whose|where|when|why|how|do|does|did|is|are|was|were|am|can|"
    r"could|should|would|will|shall|have|has|had|may|might|any|is there|are there)\b",
    re.IGNORECASE,
)
# A request is an imperative: a base-form verb without a subject, often after "please", a
# negation, "let's" or an introductory phrase ("In the above table, add …").  "Please
# remember …" and "don't forget …" are about memory, not requests.  The verbs are common
# action verbs that are not also everyday nouns a statement starts with.
_IMPERATIVE_VERBS = """tell remind recommend suggest show find list give search look compare explain
    help check name add make create write rewrite draft generate summarize summarise translate fix
    change update edit modify remove delete replace rename move convert calculate compute estimate
    sort format organize organise schedule send put keep use try run install build open stop
    include exclude provide describe outline analyze analyse review rank choose pick select
    continue expand elaborate clarify simplify shorten improve proofread correct imagine consider
    assume pretend go come take bring get set let""".split()
# Compiled by `re` when first matched: a question's own start decides most.
_REQUEST_START = (
    r"(?i)^\s*(?:(?:in|for|on|at|from|with|using|based\s+on|after|before|now|then|also|and|so|ok|"
    r"okay|great|thanks|thank\s+you|next|first|finally)\b[^,.;:!?]{0,80},\s*)?"
    r"(?:(?:please|kindly)\b(?!\s+(?:remember|note|forget|don'?t\s+forget)\b)|let'?s\b|let\s+us\b|"
    r"(?:don'?t|do\s+not|never)\b(?!\s+forget\b)|"
    r"(?:(?:just|also|now|then)\s+)?(?:"
    + "|".join(_IMPERATIVE_VERBS)
    + r")\b(?!['’]s|\s*:|\s+(?:is|are|was|were)\b))"
)
# What the pipeline itself says when it has nothing: never evidence.
_NON_ANSWER = re.compile(  # one look-behind before the phrases, not a `\b` before each: a fast scan
    r"(?<!\w)(?:I don'?t have anything|I don'?t know|I couldn'?t|couldn'?t give a reliable|"
    r"nothing in memory|no earlier turn names|I found no topic|I'll remember)\b|"
    r"^(?:Noted\b|Hello! Ask me anything|Thanks for telling me|Which one do you mean|Sorry\b)",
    re.IGNORECASE,
)
_HONEST = re.compile(r"\bI don'?t (?:know|have anything)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question or a request, not a statement."""
    text = text.strip()
    return text.endswith("?") or bool(_QUESTION_START.match(text) or re.match(_REQUEST_START, text))


# The labels events/render.py writes into context.md (§0, §1): the pipeline's own text.
PIPELINE_TEXT = re.compile(
    r"\b(?:Query type|Topic|Resolved query|Refers to|Decision|User purpose|Data requirements|"
    r"Reasoning|Question for the user|Source References|Quality Gates)\b\s*:",
)


def is_non_answer(text: str) -> bool:
    return bool(_NON_ANSWER.search(text) or PIPELINE_TEXT.search(text))


def is_honest_unknown(text: str) -> bool:
    """An answer that says plainly it does not know (a fine answer, but not an APPROVE)."""
    return bool(_HONEST.search(text))


# --- statements and slots -------------------------------------------------------------------

# How a stored statement is said to the user, and back (an answer is normalised the same
# way, so it and the fact it repeats compare equal).
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
    (re.compile(pattern, re.I), lead)
    for pattern, lead in [
        (r"^(?:i|we)\s+(?:really\s+|usually\s+|always\s+)?prefer\s+", "Prefers "),
        (r"^(?:i|we)\s+(?:really\s+|usually\s+)?(?:like|love|enjoy)\s+", "Likes "),
        (r"^(?:i|we)\s+(?:hate|dislike|avoid|can't stand|cannot stand)\s+", "Dislikes "),
        (r"^i\s+(?:don't|do not)\s+(?:like|eat|want)\s+", "Does not like "),
        (r"^(?:please\s+)?remember\s+(?:that\s+)?", ""),
        (r"^my\s+name\s+is\s+", "Name: "),
        (r"^(?:i|we)\s+(?:have\s+|'ve\s+|just\s+)*moved\s+to\s+", "Lives in "),
        (r"^(?:i|we)\s+(?:now\s+|currently\s+)?live\s+", "Lives "),
        (r"^(?:i|we)\s+(?:now\s+|currently\s+)?work\s+", "Works "),
        (
            r"^(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?=(?:planning|going|flying|travel|moving|visiting|"
            r"heading|starting|getting|taking|having)\b)",
            "",
        ),
        (
            r"^(?:i|we)\s+(?=(?:plan|booked|bought|visited|went|adopted|started|finished|met|got|"
            r"signed|ordered|sold)\b)",
            "",
        ),
        (r"^(?:i|we)\s*(?:'ll|\s+will)\s+", "Will "),
        (r"^i'?m\s+|^i\s+am\s+", "Is "),
        (r"^(?:i|we)\s+have\s+", "Has "),
        (r"^my\s+", "Their "),
        *[("^" + re.escape(said).replace(r"\ ", r"\s+"), stored) for stored, said in SECOND_PERSON],
        (r"^you'?re\s+|^you\s+are\s+", "Is "),
    ]
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


# What an answer says it will remember: the user's own words, not a claim to check.
NOTED = re.compile(r"^Noted — I'll remember: .*?\.(?=\s+[A-Z]|\s*$)")
# a source [n], a tool by its name, or a tool's result cited in words ("found by search memory")
CITE = re.compile(r"\s*(?:\[\d+\]|\((?:(?:memory|internet)[_.]\w+|[a-z]+_memory|found by [a-z ]+)\))")
SAID_NOTE = re.compile(r"\s*\((?:said|this replaces)[^)]*\)")


_KEY_WORD = re.compile(r"(?:[^\W_]|[$£]|€)+")  # € apart: a class of all three is a 64k-entry table


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """A statement's key: its words, lower-cased (letters and digits of any script, or a
    Russian or Greek fact would have the key "" and `settle` would drop it)."""
    plain = SAID_NOTE.sub("", CITE.sub("", text))
    return " ".join(_KEY_WORD.findall(statement_form(plain).lower()))


_KEY_SLOTS = {  # keyed entries (`**job:** carpenter`, `Name: Alex`) of config.IDENTITY_KEYS
    **dict.fromkeys(("name", "full_name", "preferred_name", "nickname"), "name"),
    **dict.fromkeys(("job", "occupation", "profession", "role", "work", "works_at", "employer"), "job"),
    **dict.fromkeys(("location", "lives_in", "home", "hometown", "city"), "home"),
}
_SLOT_LEADS: list[tuple[re.Pattern[str], str, str]] = [  # (pattern, slot, arity)
    (re.compile(pattern, re.I), slot, arity)
    for pattern, slot, arity in [
        (r"^(?P<s>[a-z][a-z _-]{1,30}):\s*(?P<v>.+)$", "", "one"),
        (r"^lives\s+(?:in|at|near)\s+(?P<v>.+)$", "home", "one"),
        # the role ("as a nurse") and where ("at St Mary's"): two things said, neither replaces the other
        (r"^works\s+as\s+(?P<v>.+)$", "job", "one"),
        (r"^works\s+(?:at|for|in)\s+(?P<v>.+)$", "job:where", "one"),
        (
            r"^their\s+(?:favou?rite|preferred)\s+(?P<s>(?-i:[A-Za-z]+(?:\s+[A-Za-z]+){0,2}?))\s+"
            r"(?:is|are|was)\s+(?P<v>.+)$",
            "prefers",
            "one",
        ),
        (r"^their\s+(?P<s>(?-i:[A-Za-z]+(?:\s+[A-Za-z]+){0,4}?))\s+(?:is|are|was)\s+(?P<v>.+)$", "", "one"),
        (r"^prefers\s+(?P<v>.+)$", "prefers", "head"),
        (r"^(?P<s>likes|dislikes|does not like)\s+(?P<v>.+)$", "likes", "one"),
    ]
]
# Questions about the user's identity (config.IDENTITY_KEYS) and taste: only a statement
# of that slot answers them.  "What do I do?" asks the job on its own or with an adjunct
# of earning ("for a living"); with another ("for fun", "on weekends") it asks what is done.
_ASKED = {
    slot: re.compile(pattern, re.I)
    for slot, pattern in {
        "home": r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?live\b|\b(?:i|we)\s+live\b|"
        r"\bmy\s+(?:home|hometown|home\s*town|address|city)\b|\bwhere(?:'s|\s+is)\s+home\b",
        "job": r"\bmy\s+(?:job|occupation|profession|work|career|employer|line\s+of\s+work)\b|"
        r"\bwhat\s+(?:do|did)\s+(?:i|we)\s+do(?:\s+for\s+(?:a\s+)?(?:living|work|money)\b|(?=\s*(?:[?.!]|$)))|"
        r"\bwhere\s+(?:do|did)\s+(?:i|we)\s+work\b",
        "name": r"\bmy\s+(?:own\s+)?name\b|\bwhat\s+am\s+i\s+called\b|\bwho\s+am\s+i\b",
        "prefers": r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?prefer\b|\bmy\s+(?:favou?rite|preferred)\b",
        "likes": r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?(?:like|love|enjoy)\b",
    }.items()
}
STRONG_SLOTS = frozenset(_ASKED)  # asked like this, answered only by such a statement
_IDENTITY = frozenset(_KEY_SLOTS.values())  # job, home, name: one value, however asked


class Slot(NamedTuple):
    """What a statement is about (`key`), what it says of it (`value`), and the words an
    answer stating it must hold (`said`).  Taste is keyed by its object: "Likes tea" and
    "Dislikes tea" are two values of one slot."""

    key: str
    value: str
    arity: str  # one | head
    said: str = ""

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]


# A clause with a subject of its own starts a statement of its own: "I live in Oslo and I
# work for NovaTech" says where one lives and, apart, where one works; so does one after a
# semicolon ("Lives in Oslo; Works for NovaTech") or after a comma and "now", "so" or "then"
# ("I switched jobs, now I work at Spotify").
NEW_CLAUSE = re.compile(r"\s*;\s*|(?:,?\s+(?:and|but)|,\s+(?:now|so|then))\s+(?=i\b|i'm\b|my\b|we\b)", re.I)
# Coordinated clauses share their subject: "I changed careers and now work as a pilot".
_LAST_CLAUSE = re.compile(
    r",?\s+(?:and|but)\s+(?:now\s+|then\s+|so\s+|these\s+days\s+)?(?!.*\s(?:and|but)\s)", re.I
)
_SUBJECT = re.compile(r"^(?:i|i'm|i've|we|we're|my|our)\b", re.I)


@lru_cache(maxsize=65536)
def slot_of(statement: str) -> Slot | None:
    """The slot of the first of a statement's clauses (`NEW_CLAUSE`) that states one."""
    for sentence in NEW_CLAUSE.split(statement):
        text = statement_form(sentence)
        found = _lead_slot(text)
        if found is None and (clause := _LAST_CLAUSE.search(text)):
            rest = text[clause.end() :]
            found = _lead_slot(statement_form(rest if _SUBJECT.match(rest) else f"I {rest}"))
        if found is not None:
            return found
    return None


def _lead_slot(text: str) -> Slot | None:
    for pattern, slot, arity in _SLOT_LEADS:
        match = pattern.match(text)
        if match:
            named = (match.groupdict().get("s") or "").lower().replace(" ", "_").replace("-", "_")
            key = slot or _KEY_SLOTS.get(named, named)
            value = match.group("v").strip().rstrip(".")
            if slot == "likes":  # key by the object, the polarity is the value
                return Slot(f"likes:{value.lower()}", named, arity, said=value)
            if slot == "prefers" and named:  # "my favourite tea is …": one favourite per thing
                return Slot(f"prefers:{named}", value, arity, said=value)
            return Slot(key, value, arity, said=value)
    return None


_TASTES = frozenset({"prefers", "likes"})


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The index's own stem (`en_stem`), so "likes" and "like" meet, as they do in search."""
    return _index_stem(word) or word.lower()


def asked_slots(query: str) -> set[str]:
    """The slots a question asks about: 'what's my job' → job; 'who is my dentist' → dentist.
    A preference is a liking of one thing over others: 'which seat do I like?' is answered
    by what the user prefers, and 'what do I prefer?' by what they like."""
    slots = {slot for slot, pattern in _ASKED.items() if pattern.search(query)}
    if slots & _TASTES:
        slots |= _TASTES
    for match in re.finditer(r"\bmy\s+([a-z]+)", query.lower()):
        slots.add(match.group(1))
    return slots


@lru_cache(maxsize=4096)
def _groups(query: str) -> tuple[tuple[str, frozenset[str]], ...]:
    plan = plan_query(query)
    return tuple((g.stem, frozenset(g.variants)) for g in plan.groups if g.weight >= 1.0)


@lru_cache(maxsize=8192)
def stems_of(text: str, *, content: bool = False) -> frozenset[str]:
    """The index's English stems of the words of `text` (`content`: stop words left out)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return frozenset(stem(w) for w in words if not (content and w in STOP_WORDS))


def related_overlap(query: str, text: str) -> int:
    """Query words found in `text` as themselves or as a synonym of the index's everyday
    thesaurus (`indexers.words`: trip ↔ holiday, job ↔ occupation)."""
    words = stems_of(text)
    return sum(1 for term, variants in _groups(query) if term in words or words & variants)


def disagree(a: Slot, b: Slot) -> bool:
    """Two statements of one slot that cannot both hold."""
    if a.key != b.key or a.value.lower() == b.value.lower():
        return False
    if a.arity == "head":  # "Prefers Lenovo laptops" / "Prefers Dell laptops"
        return a.value.lower().split()[-1] == b.value.lower().split()[-1]
    return a.arity == "one"


# --- the focus of a question ------------------------------------------------------------------

# A wh-question's focus is the noun phrase it asks about ("my dog", "what car do I have",
# "that desk"): a cited fact answers only if it is about that thing.  The phrase ends where
# a verb, a preposition or a clause begins.  Its letters are spelled A-Z in either case, not
# [a-z] under re.I (which also folds in ı and ſ), and ’ stands outside the class: either makes
# `re` build the class as a 64k-entry table.
_NP = r"(?P<np>(?-i:[A-Za-z][A-Za-z' -]*(?:’[A-Za-z' -]*)*))"
_FOCUS_LEADS = (
    # "how many Korean restaurants have I tried in my city?": what is counted, not the city
    re.compile(rf"^\s*how\s+(?:many|much)\s+{_NP}", re.I),
    re.compile(rf"\bmy\s+{_NP}", re.I),
    re.compile(rf"\bname\s+of\s+(?:my|the|our)\s+{_NP}", re.I),
    re.compile(rf"^\s*(?:what|which|how\s+many|how\s+much)\s+{_NP}", re.I),
    re.compile(rf"^\s*(?:what|which|who)\s+(?:is|was|are|were)\s+the\s+{_NP}", re.I),
    re.compile(  # "can you remind me what the recommended ratio is?"
        r"\b(?:remind\s+me|tell\s+me|know)\s+(?:of\s+)?(?:what|which)\s+(?:(?:is|was|were|are)\s+)?(?:the\s+)?"
        + _NP,
        re.I,
    ),
    re.compile(rf"\b(?:that|this|those|these)\s+{_NP}", re.I),
)
_MODIFIERS = frozenset("favourite favorite preferred current new old usual own main".split())
# "my line of work", "what kind of music": the thing is what follows "of".
_CLASSIFIERS = frozenset(
    "kind kinds type types sort sorts brand make model line style genre number amount".split()
)
# "the price of a laptop", "the name of my dog": the thing follows "of".
_ATTRIBUTES = frozenset(
    "price cost value name date age size colour color address length weight height".split()
)
_OF_DETERMINERS = frozenset("a an the my our his her their your this that".split())
# "how many days …", "how much money …": a unit measures the answer, it is not the thing.
_UNITS = frozenset(
    """seconds minutes hours days weeks months years times dollars euros pounds miles kilometers
    km meters metres money time""".split()
)
_NP_END = frozenset(
    """a an the is are was were be been being am do does did have has had called named now
    these those this that again for in on at to from of with which who whom whose and or as by
    than currently still right today yesterday tonight last next i you we he she it they my your
    our his her their me us him them can could should would will shall may might must not
    there here when where why how what all any some one ones thing things stuff like likes love
    loves want wants need needs eat eats get gets go goes use uses think say said""".split()
)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def asked_part(query: str) -> str:
    """The question of a message that first says something ("I remember you told me to
    dilute it. Can you remind me what the ratio is?"): its last sentence that asks."""
    parts = [p for p in _SENTENCE_END.split(query.strip()) if p.strip()]
    asking = [p for p in parts if p.rstrip().endswith("?")]
    return asking[-1] if asking else query


@lru_cache(maxsize=4096)
def focus_of(query: str) -> tuple[str, ...]:
    """The words of the thing a question asks about, its head noun last ('what is my
    favourite football team?' → ('football', 'team')); () when it names none."""
    query = asked_part(query)
    for lead in _FOCUS_LEADS:
        for match in lead.finditer(query):
            words: list[str] = []
            for raw in re.findall(r"[a-z]+(?:-[a-z]+)*(?:['’]s)?", match.group("np").lower()):
                word = re.sub(r"['’]s$", "", raw)
                if word == "of" and len(words) == 1 and words[0] in _CLASSIFIERS | _ATTRIBUTES:
                    words = ["of"]  # the thing follows (past a determiner)
                    continue
                if words == ["of"]:
                    if word in _OF_DETERMINERS:
                        continue
                    words = []
                if word in _NP_END:
                    break
                if not words and word in _MODIFIERS:
                    continue
                words.append(word)
                if raw != word or len(words) == 2:  # "my sister's name": the sister
                    break
            if words and words[-1] not in _UNITS and words != ["of"] and words[-1] not in _CLASSIFIERS:
                return tuple(words)
    return ()


# Where an English word is a verb, not a noun: after a subject pronoun or a modal ("we
# book", "I'd play", "can't park", "will watch"; an adverb may come between), after "to"
# with an object ("to book a session"), an -ing form after "be" ("is booking"), an -ed
# form after "have".
_SUBJECTS = frozenset(
    "i you we they he she i'd you'd we'd they'd he'd she'd i'll you'll we'll they'll he'll she'll "
    "i've you've we've they've will would can could should shall may might must".split()
)
_BE = frozenset("am is are was were be been being i'm you're we're they're".split())
_HAVE = frozenset("have has had i've you've we've they've".split())
_OBJECTS = frozenset("a an the my your our his her their its it them me us him".split())
_BETWEEN = frozenset(
    "also just usually often always never really still already then now sometimes only".split()
)
_ADVERBS = frozenset(stem(w) for w in _BETWEEN | {"currently", "actually"})


@lru_cache(maxsize=8192)
def _as_nouns(text: str, head: str) -> str:
    """The words of `text` it does not use as verbs: "planning to book a session" names no book.
    A verb shorter than `head` stays: the head is a noun made from it ("I prefer aisle seats"
    states a preference), not the same word used as a verb."""
    words = re.findall(r"[a-z0-9]+(?:['’][a-z]+)?", text.lower().replace("’", "'"))
    kept = []
    for n, word in enumerate(words):
        before = [w for w in words[max(0, n - 2) : n] if w not in _BETWEEN][-1:]
        lead = before[0] if before else ""
        after = words[n + 1] if n + 1 < len(words) else ""
        verb = (
            lead in _SUBJECTS
            or lead.endswith("n't")
            or (lead == "to" and after in _OBJECTS)
            or (lead in _BE and word.endswith("ing"))
            or (lead in _HAVE and word.endswith("ed"))
        )
        if not verb or len(word) < len(head):
            kept.append(word)
    return " ".join(kept)


def is_about(focus: tuple[str, ...], text: str, slot: str = "") -> bool:
    """Is a statement about the focus: each of its words in the statement (as itself or a
    word of the index's thesaurus), its head noun named as a noun (`_names_head`), or the
    statement's slot (its key) is the thing asked about ("Works as a pilot" is about one's job)?"""
    if not focus:
        return True
    if slot:
        key = slot.replace(":", " ").replace("_", " ")
        if _KEY_SLOTS.get(focus[-1], focus[-1]) == slot.split(":", 1)[0] or all(
            related_overlap(word, key) for word in focus
        ):
            return True
    *words, head = focus
    return all(related_overlap(word, text) for word in words) and _names_head(head, text)


def _names_head(head: str, text: str) -> bool:
    """Does `text` name the head noun: the word itself used as a noun (`_as_nouns`), or a
    word of the thesaurus in any use ("I've been working at NovaTech" is about the job)?"""
    said, nouns = stems_of(text), stems_of(_as_nouns(text, head))
    return any(term in nouns or said & (variants - {term}) for term, variants in _groups(head))


# --- what a question asks of its focus --------------------------------------------------------

# With do-support ("what does my hamster like to eat?", "does Biscuit like seeds?") the
# main verb follows the subject in its base form: the words from it on are the predicate
# an answer must address.  The subject is a pronoun, or determiners and possessives, then
# nouns (after a determiner, capitalised, or plural) until the first bare lower-case word.
_DO_SUPPORT = re.compile(
    r"^\s*(?:(?P<wh>what|which|where|when|why|how|who|whom)\b(?P<np>[^?]{0,40}?)\s+)?(?:do|does|did)\s+"
    r"(?P<rest>[^?]+)",
    re.I,
)
# The progressive asks the same of its -ing verb ("what book am I reading?" → read).
_PROGRESSIVE = re.compile(
    r"^\s*(?:(?P<wh>what|which|where|when|why|how|who|whom)\b(?P<np>[^?]{0,40}?)\s+)?(?:am|is|are|was|were)\s+"
    r"(?:i|we|he|she|they)\s+(?:(?:currently|still|now|already|really|actually|also|just|usually)\s+)?"
    r"(?P<rest>(?-i:[A-Za-z]+)ing\b[^?]*)",
    re.I,
)
# A relative clause asks the same of its verb ("what is the artist that I started to listen
# to?" → start, listen; "the date on which I attended …" → attend, …).
_RELATIVE = re.compile(
    r"^\s*(?P<wh>what|which|who)\s+(?:is|was|are|were)\s+(?P<np>the\s+[^?]{1,40}?)\s+"
    r"(?:(?:on|in|at|to|with|from|for)\s+)?(?:that|which|who|whom|when|where)\s+"
    r"(?P<rest>(?:i|we|he|she|they)\b[^?]+)",
    re.I,
)
# A yes-or-no question of "to be" asks its complement of the subject ("is my sister a doctor?"
# → doctor, "am I allergic to anything?" → allergic).
_COPULA = re.compile(r"^\s*(?:am|is|are|was|were)\s+(?P<rest>[^?]+)", re.I)
_PRONOUNS = frozenset("i we you he she it they".split())
# they stand for what is asked, which a fact names in its own words
_INDEFINITE = frozenset("anything something anyone someone anybody somebody".split())
_DETERMINERS = frozenset("my our your his her their its the a an this that these those".split())
# The verbs `statement_form` reads as "Likes", and "adore" (indexers.words.RINGS): "does he
# like seeds?" asks what "he loves seeds" states.
_TASTE = frozenset(stem(w) for w in "like likes love loves enjoy enjoys adore prefer prefers".split())
# "Which laptop did we look at?": when the wh-word names a thing, a verb of perception or
# communication is how it came up, not something said of it: the thing is the answer.
_RECALLING = frozenset(
    stem(w)
    for w in """see saw seen look looked watch watched notice noticed hear heard talk talked speak
    spoke discuss discussed mention mentioned say said tell told chat chatted ask asked""".split()
)


@lru_cache(maxsize=4096)
def asked_predicate(query: str) -> tuple[str, ...]:
    """The stems of what a do-question (a progressive one, a relative clause) asks of its
    subject ('what does my hamster Biscuit like to eat?' → like, eat; 'what book am I
    reading?' → read); () when the question has no such verb phrase, or when its verb
    phrase is only the words that ask for the job, home or name ('what do I do for a
    living?', 'where do I live?'): they are how the slot is asked, not something asked of
    it, and a statement of the slot answers them.  Of a taste, what is liked is asked: 'what
    do I like to eat?' → eat (every statement of a taste says "like")."""
    part = asked_part(query)
    match = _DO_SUPPORT.search(part)
    progressive = match is None and (match := _PROGRESSIVE.search(part)) is not None
    match = match or _RELATIVE.search(part)
    copula = match is None and (match := _COPULA.search(part)) is not None
    if match is None:
        return ()
    tokens = re.findall(r"[A-Za-z][\w'-]*(?:’[\w'-]*)*", match.group("rest"))  # ’ apart, as in _NP
    start, after_det, noun = (0 if progressive else len(tokens)), False, False
    for i, token in enumerate([] if progressive else tokens):
        low = token.lower()
        if i == 0 and low == "you":  # what the assistant said: its words are the answer
            return ()
        if i == 0 and low in _PRONOUNS:
            start = 1
            break
        if low in _DETERMINERS or low.endswith(("'s", "’s")):
            if copula and noun:  # "is my sister | a doctor?"
                start = i
                break
            after_det = True
            continue
        plural = low.endswith("s") and not low.endswith("ss")
        if noun and not after_det and not token[0].isupper() and not plural:
            start = i
            break
        after_det, noun = False, True
    stems = [
        stem(w.lower())
        for w in tokens[start:]
        if (w.lower() not in STOP_WORDS or stem(w.lower()) in _TASTE) and w.lower() not in _INDEFINITE
    ]
    if not _POLAR.search(part):  # a yes or no is asked of the whole: "do I live in Oslo?"
        asking = (m.group(0) for slot in _IDENTITY for m in _ASKED[slot].finditer(part))
        idiom = {stem(w.lower()) for words in asking for w in re.findall(r"[A-Za-z]+", words)}
        stems = [] if idiom.issuperset(stems) else stems
        if asked_slots(part) & _TASTES:
            stems = [s for s in stems if s not in _TASTE]
    # "which laptop did we look at?", "what did I say about Oslo?": how it came up, not what is asked
    about = "about" in (t.lower() for t in tokens)
    wh = "" if copula else (match.group("wh") or "").lower()
    if wh in ("what", "which") and (match.group("np").strip() or about):
        stems = [s for s in stems if s not in _RECALLING]
    return tuple(dict.fromkeys(s for s in stems if len(s) > 1))


def _forms(word: str) -> frozenset[str]:
    """A stem with its irregular forms and the index's synonyms (indexers.words)."""
    irregular, synonyms = _lexicon()
    forms = {word} | irregular.get(word, frozenset()) | synonyms.get(word, frozenset())
    return frozenset(forms | _TASTE if word in _TASTE else forms)


def asked_of(predicate: tuple[str, ...], thing: tuple[str, ...]) -> tuple[str, ...]:
    """What the predicate asks of the thing: its words less the thing's own ("where do I
    keep my old sneakers?" asks keep, not sneakers, of the sneakers)."""
    named = {stem(w) for w in thing}
    return tuple(w for w in predicate if w not in named) or predicate


def states(predicate: tuple[str, ...], text: str, thing: tuple[str, ...] = ()) -> int:
    """How many words of the asked predicate `text` says (as themselves, an irregular form
    or a synonym).  A synonym that names the `thing` asked about says nothing of it: "the
    memory book" names a book, it does not say that anyone reads it."""
    words = stems_of(text)
    named = {stem(w) for w in thing}
    return sum(1 for word in predicate if words & (_forms(word) - (named - {word})))


# --- a change of state ------------------------------------------------------------------------

# Statements that one thing took another's place ("trade X for Y", "replace X with Y",
# "sold X … bought Y", "switch from X to Y"): the new thing takes the old one's slot ("My
# car is a blue Volvo" → "sold the Volvo and bought a white Tesla": a white Tesla).
_DET = r"(?:(?:my|our|the|a|an|that|this|some)\s+)?"
_GAVE_UP = r"(?:sold|gave\s+away|got\s+rid\s+of|traded\s+in|returned|lost|quit|left|ditched|dropped)"
_GOT = (
    r"(?:bought|got|purchased|adopted|(?:now\s+)?(?:have|drive|own|use)|switched\s+to|started|joined|"
    r"took\s+up|picked\s+up|moved\s+to|went\s+with|chose)"
)
_CHANGES = (
    rf"(?i)\b{_GAVE_UP}\s+{_DET}(?P<old>[^,;]+?),?\s+(?:and|then|so)\s+(?:now\s+|then\s+)?"
    rf"(?:(?:i|we)\s+)?(?:now\s+)?{_GOT}\s+{_DET}(?P<new>.+)$",
    rf"(?i)\breplaced\s+{_DET}(?P<old>.+?)\s+with\s+{_DET}(?P<new>.+)$",
    rf"(?i)\b(?:switched|changed|moved|went|upgraded)\s+from\s+{_DET}(?P<old>.+?)\s+to\s+{_DET}(?P<new>.+)$",
    rf"(?i)\b(?:traded|swapped|exchanged)\s+(?:in\s+)?{_DET}(?P<old>.+?)\s+for\s+{_DET}(?P<new>.+)$",
)


@lru_cache(maxsize=65536)
def change_of(statement: str) -> tuple[str, str] | None:
    """(old, new) when a statement says one thing took another's place, else None."""
    for pattern in _CHANGES:
        match = re.search(pattern, statement.rstrip(".!"))
        if match:
            return match.group("old").strip(), match.group("new").strip()
    return None


def takes_slot(statement: str, earlier: list[Slot]) -> Slot | None:
    """The slot a change of state takes over: that of the newest of `earlier` whose value
    names the old thing ("a blue Volvo" names "the Volvo")."""
    change = change_of(statement)
    if change is None:
        return None
    old, new = change
    names = stems_of(old, content=True)
    for slot in reversed(earlier):
        if names and names <= stems_of(slot.value, content=True) | stems_of(slot.key.replace("_", " ")):
            return Slot(slot.key, new, slot.arity, said=new)
    return None


# --- a tally ----------------------------------------------------------------------------------

# A number the user keeps of something ("I've watched 4 MCU films", later "… 5 MCU films"):
# one value per thing counted and per verb, so the newest wins.
_TALLY = (
    r"(?i)\b(?:i|we)(?:'ve|\s+have)?\s+(?:(?:now|already|just|actually|finally|only|also)\s+)*"
    r"(?P<verb>(?-i:[A-Za-z]+))\s+(?:about\s+|around\s+|over\s+|only\s+|exactly\s+)?"
    r"(?P<n>\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+" + _NP
)


def tally_slot(statement: str) -> Slot | None:
    """The slot of a statement of how many of a thing the user has done or has."""
    match = re.search(_TALLY, statement)
    if match is None:
        return None
    words: list[str] = []
    for word in match.group("np").lower().split():
        if word in _NP_END or word in ("since", "so", "but", "because", "until"):
            break
        words.append(word.strip("'’-"))
        if len(words) == 2:
            break
    if not words:
        return None
    thing = " ".join(words)
    said = f"{match.group('n')} {thing}"
    key = f"count:{stem(match.group('verb').lower())}:{stem(words[-1])}"
    return Slot(key, said, "one", said=said)


ORIGIN_RANK = {"memory": 0, "stated": 1, "document": 2, "tool": 3, "answer": 4, "assistant": 5}
REPLIES = frozenset({"answer", "assistant"})  # what the assistant said, never over the user


@dataclass
class Fact:
    """One line of evidence an answer may rest on, and where it came from."""

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


_OWN_DOCS = ("memories", "preferences", "facts")


def _own_slot(fact: Fact) -> Slot | None:
    """A statement a user saved about themselves under their own user id ("alice likes tea"
    in alice's memories) has the slot of "likes tea"; a name in anyone else's document, or
    another name, is someone else."""
    owner, _, rest = fact.doc_id.partition("/")
    if fact.origin != "memory" or rest.split("/", 1)[0] not in _OWN_DOCS:
        return None
    head, _, said = fact.text.partition(" ")
    return slot_of(said) if said and head.lower() == owner.lower() else None


def settle(facts: list[Fact], query: str) -> list[Fact]:
    """Drop non-facts and repeats, and let the newest of disagreeing statements win."""
    asked = norm(query)
    kept: dict[str, Fact] = {}
    for fact in facts:  # statements here are stored forms ("Is a nurse", "Does not like tea"):
        text = fact.text.strip()  # only a question mark makes one a question
        key = norm(text)
        if not key or text.endswith("?") or is_non_answer(text) or key == asked:
            continue
        fact.text = CITE.sub("", text).strip()
        fact.slot = slot_of(fact.text) or _own_slot(fact)
        if key not in kept or fact.rank() < kept[key].rank():
            kept[key] = fact
    out = sorted(kept.values(), key=lambda f: (-(f.when.timestamp() if f.when else 0.0), -f.seq, f.rank()))
    held: list[Slot] = []
    for fact in reversed(out):  # oldest first: a change of state takes the slot it changes
        if fact.slot is None:
            fact.slot = takes_slot(fact.text, held) or tally_slot(fact.text)
        if fact.slot is not None:
            held.append(fact.slot)
    winners: list[Fact] = []
    for fact in out:  # newest first: a later one that disagrees with a winner loses
        slot = fact.slot
        rival = next((w for w in winners if w.slot and slot and disagree(w.slot, slot)), None)
        if rival is not None and (rival.origin not in REPLIES or fact.origin in REPLIES):
            rival.replaces.append(fact.text if slot is None or slot.kind == "likes" else slot.value)
            continue
        if rival is not None:  # an earlier answer never outranks what the user stated
            winners.remove(rival)
            old = rival.slot
            fact.replaces.append(rival.text if old is None or old.kind == "likes" else old.value)
        winners.append(fact)
    return winners


# --- requested data -------------------------------------------------------------------------

PRICE = re.compile(  # € apart, as in _KEY_WORD
    r"(?:[$£]\s?\d[\d,]*(?:\.\d{1,2})?|€\s?\d[\d,]*(?:\.\d{1,2})?|"
    r"\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|NOK|dollars|euros|kr)\b)",
    re.IGNORECASE,
)
_MONTHS = "january february march april may june july august september october november december"
# Dates relative to when they were said ("yesterday" in last month's turn): an answer to
# "when" must carry a date that holds on its own.
DEICTIC = (
    r"(?i)\b(?:today|tonight|tomorrow|yesterday|(?:this|last|next)\s+(?:week|weekend|month|year|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"\d+\s+\w+\s+ago|recently|the\s+other\s+day)\b"
)
# A month by its name or its abbreviation ("Jan", "Sept"), never a word that merely starts
# like one ("marathon", "decided", "maybe"); "May" and "March" only capitalised (else a verb).
_MONTH = (
    "|".join(f"{m}|{m[:3]}" for m in _MONTHS.split() if m not in ("march", "may"))
    + "|sept|(?-i:March|Mar|May)"
)
_ABSOLUTE_DATE = (
    r"(?i)\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:1[89]|20)\d{2}|(?:" + _MONTH + r")\b)"
)
# Questions answered by working out from several statements (a total, a difference, an
# elapsed time, an order) and requests for suggestions: a quoted statement is neither.
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
# What each kind of question looks like, checked in order; compiled by `re` when first used.
_REQUESTED = [
    ("count", r"(?i)\bhow\s+many\b"),
    ("duration", r"(?i)\bhow\s+long\b"),
    (  # a polar question ("did I finish it?") is answered yes or no
        "polar",
        r"(?i)^\s*(?:[^,?]{1,80},\s*)?(?:did|do|does|is|are|was|were|have|has|had|am|can|could|will|"
        r"would|should)\s+(?:i|we|my|our)\b",
    ),
    ("price", r"(?i)\bhow\s+much\b|\bprices?\b|\bpriced\b|\bcosts?\b|\bpaid\b|\bpay\b"),
    (  # "what was the date on which I …" asks for a date as "what date" does
        "date",
        r"(?i)^\s*when\b|\bwhat\s+(?:date|day|time)\b|\bwhich\s+(?:date|day)\b|"
        r"\b(?:what|which)(?:'s|\s+is|\s+was)\s+the\s+(?:date|day)\b(?!\s+like\b)",
    ),
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
        r"would|will|kind|kinds|type|types|sort)\b)(?-i:[A-Za-z]+(?:\s+[A-Za-z]+)?)"
        r"(?:\s+(?:with|from|for)\s+(?:(?:a|an|the)\s+)?(?-i:[A-Za-z0-9]+(?:\s+[A-Za-z0-9]+)?))?"
        r"\s+(?:is|are|was|were|do|does|did|"
        r"have|has|had|am|i|we)\b|^\s*what\s+(?:is|was)\s+the\s+(?-i:[A-Za-z]+)\s+(?:that|which|who)\b",
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
            slots = asked_slots(query) & STRONG_SLOTS
            if kind in ("polar", "which") and slots or kind == "place" and slots & _TASTES:
                continue  # "do I like tea?", "where do I prefer to sit?": the statement answers;
                # "where do I work?" asks a place, which "works as a nurse" does not give
            return kind
    return ""


_CAPITAL = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
# Capitalised words that name nothing (days and months are no name and no place).
NOT_NAMES = frozenset(
    """I I'm I've I'd The A An From About You Your My It Its This That These Those And But Or
    Also Earlier Last Noted Sorry Asked Answered Lives Works Name Prefers Likes Dislikes Their
    Is Has Will Planning Going I'll Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December Today
    Yesterday Tomorrow Speaking Thanks Yes No Oh Well So Actually Yeah Yep Wow Hey Hi Hello Bye
    Cool Awesome Great Sure Aww Congrats Okay Ok""".split()
)


def _names(text: str) -> set[str]:
    runs = ([w for w in m.group(0).split() if w not in NOT_NAMES] for m in _CAPITAL.finditer(text))
    return {" ".join(words).lower() for words in runs if words}


_CARDINAL = (
    r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+dozen|"
    r"dozens|hundreds|twenty|thirty|forty|fifty)"
)
_HOW_MANY = (
    r"(?i)\bhow\s+many\s+((?-i:(?:[A-Za-z-]+\s+){0,2}?[A-Za-z-]+?))(?=\s+(?:do|does|did|have|has|had|am|is|are|was|"
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
    for match in re.finditer(rf"\b{_COUNTED}\s+(?:(?-i:[A-Za-z-]+)\s+)?ones\b", answer, re.I):
        if head in {stem(w.strip(",.")) for w in words[: len(answer[: match.start()].split())]}:
            return True  # "Korean restaurants … I've tried four different ones": the ones are N
    for n, word in enumerate(words[:-1]):
        near = words[max(0, n - 2) : n + 3]
        if stem(word) == head and _COUNT_NOUNS & {w.strip(",.") for w in near}:
            after = " ".join(words[n + 1 : n + 11])
            if re.search(rf"\b{_CARDINAL}\b", after):
                return True
    return False


# "Gina: No worries, Jon": the speaker of a line of an imported log is whose line it is, no value of it
_SPEAKER = re.compile(r"(?:^|(?<=[.!?]\s))[A-Z][a-z]+:\s")


def has_requested(kind: str, answer: str, query: str) -> bool:
    if not kind:
        return True
    answer = _SPEAKER.sub("", answer)
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
    if kind == "place":  # named after a preposition of place ("at Target"), a workplace by its employer
        asked = _names(query) | {w.lower() for w in re.findall(r"\w+", query)}
        named = any(_names(m.group(1)) - asked for m in re.finditer(_AT_PLACE, answer))
        return named or _located(answer, query)
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
    r"\b(?:at|in|on|near|from|to|inside|outside|by|work(?:s|ed|ing)?\s+for)\s+"
    r"(?:the\s+)?([A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*)*)"
)
# A place said as a common noun phrase after the asked verb ("hides them in his cheeks"
# for "where does he hide his seeds?"): the locative complement of that verb.
_LOCATIVE = (
    r"(?i)\b(?:in|at|on|inside|under|behind|near|beside|into|onto)\s+"
    r"(?:(?:the|a|an|my|our|his|her|their|its)\s+)?(?-i:([A-Za-z]+))"
)


def _located(answer: str, query: str) -> bool:
    # the asked verb, or with none of its own ("where do I live?" asks a slot) the question's words
    verb = asked_predicate(query)[:1] or tuple(stems_of(asked_part(query), content=True))
    asked = stems_of(query)
    words = [(m.start(), m.group(0)) for m in re.finditer(r"[A-Za-z]+", CITE.sub("", answer))]
    verbs = [n for n, (_, w) in enumerate(words) if states(verb, w)]
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


def about_focus(focus: tuple[str, ...], text: str, key: str, query: str, document: str = "") -> bool:
    """Is a statement about the question's focus (`slots.is_about`)?  For "which Lenovo
    laptop …" the head noun is the answer's type (Li & Roth 2002), and a statement that
    names one ("The Lenovo LOQ 15 has …") is about it without saying "laptop".  A text says
    a thing's modifiers once and then refers back to it by its head noun alone ("it is not
    recommended to apply it directly … dilute it in a 1:10 ratio" gives the recommended
    ratio): a statement naming the head is about the focus when its `document` (the text
    it was read from) states the modifiers.  Not when the phrase is no noun with its
    modifiers: its last word a number ("the other four options") or a verb's past form
    ("how many days passed"), or a unit before it ("how many days ago": a measure)."""
    if is_about(focus, text, key):
        return True
    *modifiers, head = focus
    if (
        modifiers
        and not _UNITS.intersection(modifiers)
        and head not in _NUMBER_WORDS
        and not (len(head) > 5 and head.endswith("ed"))
        and is_about((head,), text)
        and all(related_overlap(w, document) for w in modifiers)
    ):
        return True
    return (
        len(focus) > 1
        and requested_kind(query) == "which"
        and is_about(focus[:-1], text)
        and _identifies(text, query)
    )


def documents_of(statements: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The text of each document (`about_focus`) from its statements, as (doc_id, text)
    pairs; a tool's result (its id has no "/") is many documents, so none."""
    texts: dict[str, list[str]] = {}
    for doc_id, text in statements:
        if "/" in doc_id:
            texts.setdefault(doc_id, []).append(text)
    return {doc_id: " ".join(lines) for doc_id, lines in texts.items()}


# --- answer checks --------------------------------------------------------------------------


# Not after an honorific or a Latin abbreviation ("Dr. Berg"): where a sentence may end.
NOT_ABBREVIATED = (
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<!\bvs\.)"
    r"(?<!\be\.g\.)(?<!\bi\.e\.)"
)
_CLAUSE_END = re.compile(NOT_ABBREVIATED + r"(?<=[.!?;])\s+|\s+—\s+")


def answer_checks(
    answer: str, query: str, requested: str, facts: list[Fact], resolved: str = ""
) -> list[GateResult]:
    """Is the answer about what was asked (`resolved`: the query with its references
    resolved), does it hold what was asked, and does it contradict no settled fact?"""
    answer = NOTED.sub("", answer).strip()  # what it will remember is no claim
    asking = is_question(query)
    present = has_requested(requested, answer, query) and not (asking and is_honest_unknown(answer))
    contradictions = []
    lowered = answer.lower()
    computed = asking and bool(COMPUTED.search(resolved or query)) and not ASKS_ASSISTANT.search(query)
    if present and computed and _quotes(answer, facts):
        present = False  # a total, a difference or an order is worked out, not quoted
    strong = asked_slots(query) & STRONG_SLOTS if asking else set()
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
    if asking:
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
    """Is what the answer says taken from facts about the thing asked (`focus_of`)?  The facts
    it uses share a word with it that the question lacks; one must be about the focus, and
    the names the question gives must be in the answer.  A question naming no thing and no
    datum (`checkable`: a requested kind or an identity slot) is not approved."""
    if PIPELINE_TEXT.search(answer):
        return GateResult(gate=_ABOUT, passed=False, detail="it quotes the pipeline's own text")
    focus = focus_of(resolved) if is_question(query) else ()
    if is_honest_unknown(answer) or not is_question(query):
        return GateResult(gate=_ABOUT, passed=True)
    said = set(re.findall(r"\w+", answer.lower()))
    named = {w for n in _names(query.split(None, 1)[-1]) for w in n.split()}
    acronyms = {w.lower() for w in re.findall(r"\b[A-Z0-9]{2,5}\b", query)}  # "RTX", "GPU": said many ways
    missing = sorted(w for w in named - acronyms if w not in said and w.isalpha())
    if missing:  # "my new role as Software Engineer Manager" is not "Senior Software Engineer"
        return GateResult(gate=_ABOUT, passed=False, detail=f"the answer does not say {missing[0]!r}")
    # whom it asks of is those names, said above; what it asks is the rest (Calvin's necklace),
    # with a name that qualifies the next word of the thing ("which Lenovo laptop")
    focus = tuple(w for w in focus if w not in _BETWEEN)
    whom = {
        stem(re.sub(r"['’]s$", "", n))
        for n in named
        if not any(re.search(rf"\b{re.escape(n)}\s+{re.escape(w)}\b", query, re.I) for w in focus)
    }
    focus = tuple(w for w in focus if stem(w) not in whom)
    predicate = asked_predicate(resolved)
    asked = " ".join(predicate)
    polar = _POLAR.search(asked_part(query)) is not None
    if not focus and not checkable and not predicate:  # no thing, no datum to check
        return GateResult(gate=_ABOUT, passed=False, detail=_NOTHING)
    new = _content(answer) - _content(resolved)
    quoted = [f for f in _quoted_facts(answer, facts) if new & _content(f.text)]
    sources = quoted or [f for f in facts if new & _content(f.text)]
    used = [f for f in sources if speaker_fits(query, f.origin)]  # from who was asked about
    if quoted and not _fits_quoted(answer, query, quoted):
        return GateResult(gate=_ABOUT, passed=False, detail=_who(query))
    if not focus:
        if sources and not used:
            return GateResult(gate=_ABOUT, passed=False, detail=_WHO)
        passed = not used or _addresses(answer, predicate, used, polar=polar, query=query)
        return GateResult(
            gate=_ABOUT, passed=passed, detail="" if passed else f"no fact it uses says {asked}"
        )
    documents = documents_of((f.doc_id, f.text) for f in facts)
    about = [
        f
        for f in used
        if about_focus(focus, f.text, f.slot.key if f.slot else "", query, documents.get(f.doc_id, ""))
    ]
    thing = " ".join(focus)
    if not about:
        return GateResult(gate=_ABOUT, passed=False, detail=f"no fact it uses is about {thing}")
    if not _addresses(answer, predicate, about, polar=polar, query=query, thing=focus):
        return GateResult(gate=_ABOUT, passed=False, detail=f"no fact it uses says what {thing} {asked}")
    return GateResult(gate=_ABOUT, passed=True, detail=f"the answer is about {thing}")


def _quoted_facts(answer: str, facts: list[Fact]) -> list[Fact]:
    """The facts an answer is made of: those whose content words (three or more) are nearly
    all in it (not any fact that merely shares a word with it)."""
    said = _content(answer)
    out = []
    for fact in facts:
        words = {w for w in _content(fact.text) if len(w) > 2}
        if len(words) >= 3 and len(words & said) >= 0.8 * len(words):
            out.append(fact)
    return out


def _fits_quoted(answer: str, query: str, quoted: list[Fact]) -> bool:
    """Does the answer say only what facts of the speaker asked about give (`speaker_fits`)?
    Another speaker's quoted fact may echo them, but the words only it gives are not theirs."""
    said = _content(answer)
    given = [_content(f.text) for f in quoted if speaker_fits(query, f.origin)]
    covered = _content(query).union(*given)
    return all(
        len((_content(f.text) & said) - covered) < 2 for f in quoted if not speaker_fits(query, f.origin)
    )


_NEGATED = re.compile(r"\bnot\b|\bnever\b|n't\b|\bno\s+longer\b|\bdislikes?\b|\bhates?\b", re.I)


def _addresses(
    answer: str,
    predicate: tuple[str, ...],
    facts: list[Fact],
    *,
    polar: bool,
    query: str = "",
    thing: tuple[str, ...] = (),
) -> bool:
    """Does a fact the answer uses say what was asked of the thing (`asked_predicate`), not
    only name it (`states`: the `thing`'s own words say nothing of it)?  A yes or no needs a
    fact stating the whole predicate, and no "yes" from a negated one."""
    predicate = asked_of(predicate, thing)
    if not predicate:
        return True
    if not polar:  # its verb and most words of what was done, not a deictic one ("last Friday"
        # is no listening): "the charity race" is not what Caroline realised after it
        done = tuple(w for w in predicate if w not in _DEICTIC_WORDS) or predicate
        # up to its verb: past "say" of what was said and an adverb ("do I currently use")
        verb = done[: next((i for i, w in enumerate(done) if w not in _RECALLING | _ADVERBS), 0) + 1]
        # most of what was asked, by any fact ("…, and what …?"), the asking itself aside
        content = tuple(w for w in done if w not in _RECALLING) or done
        said = sum(1 for w in content if any(states((w,), f.text, thing) for f in facts))
        return 2 * said >= len(content) and any(states(verb, f.text, thing) for f in facts)
    choice = _alternatives(predicate, query)
    if choice:  # "do I prefer aisle or window seats?": the rest of it, and one of the two
        rest = tuple(w for w in predicate if w not in choice)
        return any(states(rest, f.text, thing) == len(rest) and states(choice, f.text, thing) for f in facts)
    whole = [f for f in facts if states(predicate, f.text, thing) == len(predicate)]
    says_yes = bool(re.match(r"\s*yes\b", answer, re.I))
    return any(not (says_yes and _NEGATED.search(f.text)) for f in whole)


# Words that place a time relative to when they are said: the question's "last Friday" and
# a statement's "last October" name unrelated times, so they match nothing.
_DEICTIC_WORDS = frozenset(
    stem(w)
    for w in """last next this ago yesterday today tonight tomorrow recent recently monday tuesday
    wednesday thursday friday saturday sunday""".split()
)


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
# about the thing asked, whatever its slot (`settle` reaches only slots it recognises).
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
    """The values a statement gives of the kind asked (numbers; names for a name, place or
    which), less those the question holds."""
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
    """The values of an answer that a later statement about the same thing (`about_focus`) no
    longer gives, each with that statement; with no datum asked, its numbers."""
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

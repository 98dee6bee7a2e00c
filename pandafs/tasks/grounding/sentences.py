"""What kind of sentence a text is, and the one stored (third-person) form of a statement.

A question or a request is never something the user stated; neither is what the
pipeline says when it has nothing (`is_non_answer`).  A statement is stored in the
third person ("I live in Oslo" → "Lives in Oslo"), and said back in the second
(`SECOND_PERSON`); `norm` is the key two wordings of one statement share.
"""

from __future__ import annotations

import re
from functools import lru_cache

# --- sentence kinds -------------------------------------------------------------------------

# Interrogatives and auxiliaries that open an English question, and the imperatives that
# open a request: neither is ever something the user stated about themselves.
_QUESTION_START = re.compile(
    r"^\s*(?:what|which|who|whom|whose|where|when|why|how|do|does|did|is|are|was|were|am|can|"
    r"could|should|would|will|shall|have|has|had|may|might|any|is there|are there)\b",
    re.IGNORECASE,
)
# A request (a directive speech act, Searle 1976) in English is an imperative: a clause
# without a subject whose verb is in its base form, often after "please", a negation
# ("don't …"), "let's", or an introductory phrase ("In the above table, add …"); "please
# remember …" and "don't forget …" ask to keep a statement, "please forget …" to drop one:
# they are about memory, not questions.  The verbs are common action verbs that are not
# also everyday nouns a statement starts with.
_IMPERATIVE_VERBS = """tell remind recommend suggest show find list give search look compare explain
    help check name add make create write rewrite draft generate summarize summarise translate fix
    change update edit modify remove delete replace rename move convert calculate compute estimate
    sort format organize organise schedule send put keep use try run install build open stop
    include exclude provide describe outline analyze analyse review rank choose pick select
    continue expand elaborate clarify simplify shorten improve proofread correct imagine consider
    assume pretend go come take bring get set let""".split()
# Compiled by `re` (and cached there) when first matched: a question's own start decides most.
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
    return text.endswith("?") or bool(_QUESTION_START.match(text) or re.match(_REQUEST_START, text))


# The labels events/render.py writes into a turn's context.md (§0, §1): the pipeline's own
# text, never something the user or a document said.
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


# What an answer says it will remember: the user's own words, not a claim to check.
NOTED = re.compile(r"^Noted — I'll remember: .*?\.(?=\s+[A-Z]|\s*$)")
# a source [n], a tool by its name, or a tool's result cited in words ("found by search memory")
CITE = re.compile(r"\s*(?:\[\d+\]|\((?:(?:memory|internet)[_.]\w+|[a-z]+_memory|found by [a-z ]+)\))")
SAID_NOTE = re.compile(r"\s*\((?:said|this replaces)[^)]*\)")


_KEY_WORD = re.compile(r"(?:[^\W_]|[$€£])+")


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """A statement's key: its words (letters and digits of any script, currency signs),
    lower-cased.  Any script: with only a-z and 0-9 a fact in Russian or Greek would have
    the key "" and `facts.settle` would drop it from the context."""
    plain = SAID_NOTE.sub("", CITE.sub("", text))
    return " ".join(_KEY_WORD.findall(statement_form(plain).lower()))

"""What a statement is about (its slot), which slots a question asks for, and when two disagree.

A statement normalised to third person ("Lives in Oslo", "Their dentist is
Dr. Berg") has a slot — the thing it is about.  Slots of single-valued predicates
(where one lives, one's job, name, "my X is …") hold one value: two statements with
different values disagree.  Preferences are many-valued, except that "prefers"
chooses one thing of a kind (same head noun) and "likes" / "dislikes" of the same
thing disagree.  These lists are English grammar, not tuned to any data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from indexers.query import plan_query
from indexers.words import stem

from .sentences import statement_form

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


def disagree(a: Slot, b: Slot) -> bool:
    """Two statements of one slot that cannot both hold."""
    if a.key != b.key or a.value.lower() == b.value.lower():
        return False
    if a.arity == "one":
        return True
    if a.arity == "head":  # "Prefers Lenovo laptops" / "Prefers Dell laptops"
        return a.value.lower().split()[-1] == b.value.lower().split()[-1]
    return False

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
from indexers.words import STOP_WORDS, _lexicon, stem

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
    (
        re.compile(
            r"^their\s+(?:favou?rite|preferred)\s+(?P<s>[a-z]+(?:\s+[a-z]+){0,2}?)\s+(?:is|are|was)\s+(?P<v>.+)$",
            re.I,
        ),
        "prefers",
        "one",
    ),
    (
        re.compile(r"^their\s+(?P<s>[a-z]+(?:\s+[a-z]+){0,4}?)\s+(?:is|are|was)\s+(?P<v>.+)$", re.I),
        "",
        "one",
    ),
    (re.compile(r"^prefers\s+(?P<v>.+)$", re.I), "prefers", "head"),
    (re.compile(r"^(?P<s>likes|dislikes|does not like)\s+(?P<v>.+)$", re.I), "likes", "one"),
]
# Questions about the user's own identity and taste (the identity keys of
# config.IDENTITY_KEYS, and preferences): only a statement of that slot answers them.
_ASKED = {
    "home": re.compile(
        r"\b(?:do|did)\s+(?:i|we)\s+(?:\w+\s+)?live\b|\b(?:i|we)\s+live\b|"
        r"\bmy\s+(?:home|hometown|home\s*town|address|city)\b|\bwhere(?:'s|\s+is)\s+home\b",
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


# Coordinated clauses share their subject (conjunction reduction): in "I changed careers
# and now work as a pilot" the last clause says "I work as a pilot".
_LAST_CLAUSE = re.compile(
    r",?\s+(?:and|but)\s+(?:now\s+|then\s+|so\s+|these\s+days\s+)?(?!.*\s(?:and|but)\s)", re.I
)
_SUBJECT = re.compile(r"^(?:i|i'm|i've|we|we're|my|our)\b", re.I)


@lru_cache(maxsize=65536)
def slot_of(statement: str) -> Slot | None:
    text = statement_form(statement)
    found = _lead_slot(text)
    if found is None and (clause := _LAST_CLAUSE.search(text)):
        rest = text[clause.end() :]
        found = _lead_slot(statement_form(rest if _SUBJECT.match(rest) else f"I {rest}"))
    return found


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


@lru_cache(maxsize=65536)
def _en_stem(word: str) -> str:
    return stem(word)


@lru_cache(maxsize=4096)
def _groups(query: str) -> tuple[tuple[str, frozenset[str]], ...]:
    plan = plan_query(query)
    return tuple((g.stem, frozenset(g.variants)) for g in plan.groups if g.weight >= 1.0)


@lru_cache(maxsize=8192)
def stems_of(text: str, *, content: bool = False) -> frozenset[str]:
    """The index's English stems of the words of `text` (`content`: stop words left out)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return frozenset(_en_stem(w) for w in words if not (content and w in STOP_WORDS))


def related_overlap(query: str, text: str) -> int:
    """Query words found in `text` as themselves or as a synonym of the index's everyday
    thesaurus (`indexers.words`: trip ↔ holiday, job ↔ occupation)."""
    words = stems_of(text)
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


# --- the focus of a question ------------------------------------------------------------------

# A wh-question's focus is the noun phrase it asks about (the "question focus" of question
# answering, Moldovan et al. 2000; the answer type's head noun, Li & Roth 2002): "my dog",
# "what car do I have", "that desk".  A cited fact answers the question only if it is
# about that thing.  The phrase ends where a verb, a preposition or a clause begins.
_FOCUS_LEADS = (
    # "how many Korean restaurants have I tried in my city?": what is counted, not the city
    re.compile(r"^\s*how\s+(?:many|much)\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
    re.compile(r"\bmy\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
    re.compile(r"\bname\s+of\s+(?:my|the|our)\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
    re.compile(r"^\s*(?:what|which|how\s+many|how\s+much)\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
    re.compile(r"^\s*(?:what|which|who)\s+(?:is|was|are|were)\s+the\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
    re.compile(  # "can you remind me what the recommended ratio is?"
        r"\b(?:remind\s+me|tell\s+me|know)\s+(?:of\s+)?(?:what|which)\s+(?:(?:is|was|were|are)\s+)?(?:the\s+)?"
        r"(?P<np>[a-z][a-z'’ -]*)",
        re.I,
    ),
    re.compile(r"\b(?:that|this|those|these)\s+(?P<np>[a-z][a-z'’ -]*)", re.I),
)
_MODIFIERS = frozenset("favourite favorite preferred current new old usual own main".split())
# "my line of work", "what kind of music": the thing is what follows "of".
_CLASSIFIERS = frozenset(
    "kind kinds type types sort sorts brand make model line style genre number amount".split()
)
# "the price of a laptop", "the name of my dog": the attribute asked is the answer's type
# (Li & Roth 2002's numeric and human classes), the thing it is of follows "of".
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


def is_about(focus: tuple[str, ...], text: str, slot: str = "") -> bool:
    """Is a statement about the focus: each of its words in the statement (as itself or a
    word of the index's thesaurus), or the statement's slot (its key) is the thing asked
    about ("Works as a pilot" is about one's job)?"""
    if not focus:
        return True
    if slot:
        key = slot.replace(":", " ").replace("_", " ")
        if _KEY_SLOTS.get(focus[-1], focus[-1]) == slot.split(":", 1)[0] or all(
            related_overlap(word, key) for word in focus
        ):
            return True
    return all(related_overlap(word, text) for word in focus)


# --- what a question asks of its focus --------------------------------------------------------

# With do-support ("what does my hamster like to eat?", "where did I park?", "does Biscuit
# like seeds?") the main verb follows the subject in its base form (Quirk et al. 1985,
# "A Comprehensive Grammar of the English Language", §3.37): the words from that verb on
# are what the question asks of its subject, the predicate an answer must address.  The
# subject is a pronoun, or a noun phrase: determiners and possessives, then nouns (after a
# determiner, capitalised, or plural) until the first bare lower-case word, the verb.
_DO_SUPPORT = re.compile(
    r"^\s*(?:(?P<wh>what|which|where|when|why|how|who|whom)\b(?P<np>[^?]{0,40}?)\s+)?(?:do|does|did)\s+"
    r"(?P<rest>[^?]+)",
    re.I,
)
_PRONOUNS = frozenset("i we you he she it they".split())
_DETERMINERS = frozenset("my our your his her their its the a an this that these those".split())
# The verbs `statement_form` reads as one "Likes" (sentences.STATEMENT_LEADS), and "adore"
# of the index's love ring (indexers.words.RINGS): "does he like seeds?" asks what "he
# loves seeds" states.
_TASTE = frozenset(stem(w) for w in "like likes love loves enjoy enjoys adore prefer prefers".split())
# "Which laptop did we look at?", "what book did I mention?": when the wh-word asks for a
# thing it names, a verb of perception or of communication (Levin 1993, §30 "see",
# "peer" and §37 "talk", "say" verbs) is how it came up, the act of remembering it, not
# something said of it: the thing named is what the answer must give.
_RECALLING = frozenset(
    stem(w)
    for w in """see saw seen look looked watch watched notice noticed hear heard talk talked speak
    spoke discuss discussed mention mentioned say said tell told chat chatted""".split()
)


@lru_cache(maxsize=4096)
def asked_predicate(query: str) -> tuple[str, ...]:
    """The stems of what a do-question asks of its subject ('what does my hamster Biscuit
    like to eat?' → like, eat); () when the question has no such verb phrase."""
    match = _DO_SUPPORT.search(asked_part(query))
    if match is None:
        return ()
    tokens = re.findall(r"[A-Za-z][\w'’-]*", match.group("rest"))
    start, after_det, noun = len(tokens), False, False
    for i, token in enumerate(tokens):
        low = token.lower()
        if i == 0 and low == "you":  # what the assistant said: its words are the answer
            return ()
        if i == 0 and low in _PRONOUNS:
            start = 1
            break
        if low in _DETERMINERS or low.endswith(("'s", "’s")):
            after_det = True
            continue
        plural = low.endswith("s") and not low.endswith("ss")
        if noun and not after_det and not token[0].isupper() and not plural:
            start = i
            break
        after_det, noun = False, True
    stems = [
        _en_stem(w.lower())
        for w in tokens[start:]
        if w.lower() not in STOP_WORDS or _en_stem(w.lower()) in _TASTE
    ]
    if match.group("wh") and match.group("wh").lower() in ("what", "which") and match.group("np").strip():
        stems = [s for s in stems if s not in _RECALLING]  # "which laptop did we look at?"
    return tuple(dict.fromkeys(s for s in stems if len(s) > 1))


def _forms(word: str) -> frozenset[str]:
    """A stem with its irregular forms and the index's synonyms (indexers.words)."""
    irregular, synonyms = _lexicon()
    forms = {word} | irregular.get(word, frozenset()) | synonyms.get(word, frozenset())
    return frozenset(forms | _TASTE if word in _TASTE else forms)


def states(predicate: tuple[str, ...], text: str) -> int:
    """How many words of the asked predicate `text` says (as themselves, an irregular form
    or a synonym)."""
    words = stems_of(text)
    return sum(1 for word in predicate if words & _forms(word))


# --- a change of state ------------------------------------------------------------------------

# Statements that one thing took another's place: verbs of exchange and of giving up and
# getting (Levin 1993, "English Verb Classes and Alternations", §13: "trade X for Y",
# "replace X with Y", "give away X … get Y"; "switch from X to Y").  The new thing takes
# the slot the old one held ("My car is a blue Volvo" → "sold the Volvo and bought a
# white Tesla": the car is now a white Tesla).
_DET = r"(?:(?:my|our|the|a|an|that|this|some)\s+)?"
_GAVE_UP = r"(?:sold|gave\s+away|got\s+rid\s+of|traded\s+in|returned|lost|quit|left|ditched|dropped)"
_GOT = (
    r"(?:bought|got|purchased|adopted|(?:now\s+)?(?:have|drive|own|use)|switched\s+to|started|joined|"
    r"took\s+up|picked\s+up|moved\s+to|went\s+with|chose)"
)
# Patterns `re` compiles (and caches) the first time a statement is searched with them.
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

# A number the user keeps of something ("I've watched 4 MCU films", weeks later "I've now
# watched 5 MCU films"): one value per thing counted and per verb, so the newest wins, as
# for any one-valued slot.
_TALLY = (
    r"(?i)\b(?:i|we)(?:'ve|\s+have)?\s+(?:(?:now|already|just|actually|finally|only|also)\s+)*"
    r"(?P<verb>[a-z]+)\s+(?:about\s+|around\s+|over\s+|only\s+|exactly\s+)?"
    r"(?P<n>\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<np>[a-z][a-z'’ -]*)"
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
    key = f"count:{_en_stem(match.group('verb').lower())}:{_en_stem(words[-1])}"
    return Slot(key, said, "one", said=said)

"""From a natural-language query to weighted term groups for the full-text index.

A question such as "Which city does Maya currently call home?" becomes one *group*
per content word, each the stem the index uses (`en_stem`) plus weighted variants:

- **stop words** are dropped, and **question framing** ("name", "called", "kind",
  "usually", "like", "favourite", ...) is kept at a low weight: such words are in
  most questions about a person and say little about which conversation answers;
- **recency cues** ("now", "currently", "these days", "at the moment", ...) are
  taken out of the text and reported as `wants_latest`, so ranking can prefer the
  latest of near-equal candidates (a changed fact: the newest statement wins);
- **irregular verb forms** map both ways (bought ↔ buy, met ↔ meet), which the
  Porter stemmer cannot do;
- a small **everyday-life thesaurus** adds synonyms (relocate ↔ move, employer ↔
  job) and, one way, the kinds of a category word (a question about a "pet" may be
  answered by a turn about a "kitten").  It is deliberately short, general and
  weighted below the words the user typed; it needs no model.

Prefix variants (allergy → allergic) depend on the index's vocabulary and are
added by `indexers.fulltext` when it builds the query.  **Time words** ("last week",
"in May", "two months ago", "the first time") are resolved by `resolve_time` against
the search's `now` (see its section below).

Where each resource comes from, and its switch (`[search]` in pandafs.toml; the
effect of each, on and off, is measured by `scripts/eval_retrieval.py --search`):

- stop words (`stop_words`): the NLTK English stop-word list (itself from the
  Snowball project), plus question verbs ("tell", "remember") and fillers;
- question framing (`framing`): words of question templates about a person ("name",
  "kind", "usually", "favourite");
- word forms (`word_forms`, `prefix_weight`): the common English irregular verbs (any
  grammar's table) and the index's own vocabulary;
- thesaurus (`synonym_weight`): hand-written rings of everyday personal-life synonyms
  and category → kinds;
- time words (`time_words`, `time_weight`): TimeML's TIMEX3 classes of relative and
  absolute dates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import tantivy

__all__ = [
    "FRAME_WORDS",
    "Lexicon",
    "QueryPlan",
    "STOP_WORDS",
    "TermGroup",
    "TimeHint",
    "plan_query",
    "query_terms",
    "resolve_time",
    "stem",
]

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    did does tell know remember recall ever""".split()
)
"""Words `query_terms` drops (also used by the offline LLM backend for keywords)."""

SEARCH_STOP_WORDS = STOP_WORDS | frozenset(
    """also much many something anything someone anyone somebody anybody whose exactly actually
    really please thing things stuff""".split()
)
"""What search drops on top: fillers that never identify a document."""

FRAME_WORDS = frozenset(
    """name named called call calls kind type sort form main usual usually typically generally
    like likes liked love loves loved enjoy enjoys enjoyed prefer prefers preferred favourite
    favorite best most least use uses used using get gets got go goes went make makes made
    happen happened person""".split()
)
"""Question framing: kept, at `FRAME_WEIGHT`, since it is rarely what the answer says."""
FRAME_WEIGHT = 0.4
VARIANT_WEIGHT = 0.9
"""Irregular verb forms: nearly the word itself."""
SYNONYM_WEIGHT = 0.7

RECENCY_CUES = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|at present|at the moment|"
    r"at this point|latest|most recent(?:ly)?|lately|anymore|any more|still)\b"
)

_WORD = re.compile(r"[0-9A-Za-zÀ-ÖØ-öø-ÿ]+")

# Past forms of common irregular verbs (base, past, participle...), matched both ways.
IRREGULAR = """
be was were been | begin began begun | break broke broken | bring brought | build built
buy bought | catch caught | choose chose chosen | come came | cost | do did done
draw drew drawn | drink drank drunk | drive drove driven | eat ate eaten | fall fell fallen
feel felt | fight fought | find found | fly flew flown | forget forgot forgotten
get got gotten | give gave given | go went gone | grow grew grown | have had | hear heard
hold held | hurt | keep kept | know knew known | leave left | lend lent | lose lost
make made | meet met | pay paid | put | read | ride rode ridden | ring rang rung
rise rose risen | run ran | say said | see saw seen | sell sold | send sent | set
shake shook shaken | shoot shot | show showed shown | sing sang sung | sink sank sunk
sit sat | sleep slept | speak spoke spoken | spend spent | stand stood | steal stole stolen
swim swam swum | take took taken | teach taught | tear tore torn | tell told
think thought | throw threw thrown | understand understood | wake woke woken
wear wore worn | win won | write wrote written
"""

# Synonym rings: every word may stand for every other (in everyday personal talk).
RINGS = """
home house flat apartment place
live reside based
move relocate relocation movers
city town
hometown birthplace
neighbour neighbor
job work employer employed employs employment company firm career workplace
colleague coworker
profession occupation trade career
boss manager supervisor
hire hired recruit
quit resign
salary pay wage income
promotion promoted
school college university uni
study studies degree course
teacher instructor tutor coach teaches
class lesson course workshop
exam test
exercise workout training fitness
jog run
sport sports
diet eating
food cuisine dish meal
cook cooking recipe
restaurant cafe café bistro diner
drink beverage
sick ill unwell illness
injury injured hurt
doctor gp physician
dentist dental
vet veterinarian veterinary
allergy allergic intolerance intolerant
medicine medication pills prescription
partner spouse
fiance fiancé fiancee fiancée
wedding married marry marriage
engaged engagement proposed proposal propose
anniversary together
sibling siblings
child children kid kids
mother mum mom
father dad
grandmother grandma granny
grandfather grandpa
friend mate pal buddy
pet pets
dog puppy pup
cat kitten kitty
rabbit bunny
phone smartphone mobile cellphone
laptop notebook computer pc
watch smartwatch
car vehicle
bike bicycle cycling
buy purchase order
gift present
trip travel holiday vacation journey getaway
flight plane fly airline
seat sit
return back
book novel reading read
music song band album playlist
film movie cinema
concert gig
show series
hate dislike loathe detest
love adore
prefer preference favourite favorite
autumn fall
birthday bday
start begin
finish complete
money cash
rent lease
garden yard
"""

# A category word → the kinds it covers (one way: "pet" may mean a kitten, not the reverse).
KINDS = """
pet: dog cat rabbit hamster parrot bird fish puppy kitten bunny tortoise turtle guinea ferret
sibling: brother sister
partner: boyfriend girlfriend husband wife fiance fiancee
parent: mother father mum mom dad
child: son daughter
grandparent: grandmother grandfather grandma grandpa
relationship: boyfriend girlfriend husband wife partner together anniversary dating
family: mother father mum mom dad brother sister son daughter parents
diet: vegan vegetarian pescatarian flexitarian keto paleo
exercise: running swimming cycling rowing yoga pilates climbing tennis football boxing lifting
sport: running swimming cycling rowing yoga pilates climbing tennis football boxing basketball
workout: running swimming cycling rowing yoga pilates climbing lifting
season: spring summer autumn winter
genre: fiction fantasy thriller crime romance mystery poetry biography jazz rock pop folk
cuisine: italian indian thai japanese korean chinese mexican vietnamese french greek spanish
    turkish lebanese ethiopian
instrument: guitar piano violin drums cello
drink: coffee tea beer wine juice
coffee: espresso latte cappuccino americano
vehicle: car bike motorbike scooter van
"""


@lru_cache(maxsize=1)
def _analyzer() -> tantivy.TextAnalyzer:
    """The analyzer of tantivy's `en_stem` (simple tokenizer, lower case, English stemmer)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def stem(word: str) -> str:
    """The term `en_stem` indexes for `word` ("" for none)."""
    tokens = _analyzer().analyze(word)
    return tokens[0] if tokens else ""


def _related(chunks: list[str], into: dict[str, set[str]]) -> dict[str, set[str]]:
    for chunk in chunks:
        stems = {stem(w) for w in chunk.split()} - {""}
        for term in stems:
            into.setdefault(term, set()).update(stems - {term})
    return into


@lru_cache(maxsize=1)
def _lexicon() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(irregular forms, synonyms and kinds), stem → related stems."""
    irregular = _related(re.split(r"[|\n]", IRREGULAR), {})
    synonyms = _related(RINGS.strip().splitlines(), {})
    for line in re.sub(r"\n\s+", " ", KINDS.strip()).splitlines():
        category, kinds = line.split(":", 1)
        synonyms.setdefault(stem(category), set()).update(stem(k) for k in kinds.split())
    return _frozen(irregular), _frozen(synonyms)


def _frozen(related: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    return {term: frozenset(others) for term, others in related.items()}


def query_terms(text: str) -> list[str]:
    """Lower-cased content words of a natural-language query (no operators, no stop words)."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in STOP_WORDS and not (len(w) == 1 and not w.isdigit())]
    return kept or [w for w in words if len(w) > 1]


@dataclass
class TermGroup:
    """One query word: its stem, its weight, and other stems that may stand for it."""

    stem: str
    weight: float
    variants: dict[str, float] = field(default_factory=dict)

    def add_variant(self, term: str, weight: float) -> None:
        if term and term != self.stem and weight > self.variants.get(term, 0.0):
            self.variants[term] = weight


@dataclass(frozen=True)
class Lexicon:
    """Which lexical resources the planner uses (each can be switched off to show its effect)."""

    stop_words: bool = True
    framing: bool = True
    word_forms: bool = True


@dataclass(frozen=True)
class QueryPlan:
    groups: tuple[TermGroup, ...]
    wants_latest: bool
    """The query asks for the current state ("now", "currently", "these days")."""


def plan_query(
    text: str, *, synonym_weight: float = SYNONYM_WEIGHT, lexicon: Lexicon = Lexicon()
) -> QueryPlan:
    """The term groups of a natural-language query (see the module docstring).

    `synonym_weight` scales thesaurus variants (0 leaves them out); `lexicon` switches
    the stop words, question framing and irregular word forms.
    """
    lowered = text.lower().replace("’", "'")
    lowered, cues = RECENCY_CUES.subn(" ", lowered)
    words = [w for w in _WORD.findall(lowered) if w != "s"]
    stop = SEARCH_STOP_WORDS if lexicon.stop_words else frozenset()
    kept = [w for w in words if w not in stop and (len(w) > 1 or w.isdigit())]
    if not kept:
        kept = [w for w in _WORD.findall(text.lower()) if len(w) > 1]
    irregular, synonyms = _lexicon()
    groups: dict[str, TermGroup] = {}
    for word in kept:
        term = stem(word)
        if not term:
            continue
        weight = FRAME_WEIGHT if lexicon.framing and word in FRAME_WORDS else 1.0
        group = groups.get(term)
        if group is None:
            group = groups[term] = TermGroup(term, weight)
        group.weight = max(group.weight, weight)
        for form in irregular.get(term, ()) if lexicon.word_forms else ():
            group.add_variant(form, VARIANT_WEIGHT)
        if synonym_weight > 0:
            for synonym in synonyms.get(term, ()):
                group.add_variant(synonym, synonym_weight)
    return QueryPlan(tuple(groups.values()), cues > 0)


# --- time in questions -------------------------------------------------------------
#
# The expressions are the relative and absolute dates of everyday English as TimeML's
# TIMEX3 guidelines classify them (a deictic unit: "last week", "this month"; a
# distance: "two months ago"; a named month or weekday; an ordinal over events: "the
# first time", "recently").  Each resolves against the search's `now` into a window
# of creation times; the window is generous (a story told a few days after it
# happened still counts) because it boosts, it does not filter.

MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3,
    "several": 3,
}  # fmt: skip
UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple|few|several)"
_UNIT = r"(day|week|month|year)s?"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
TIME_PATTERNS = [
    ("ago", re.compile(rf"\b(?:about |around |roughly )?(?:a )?{_NUM} (?:of )?{_UNIT} ago\b")),
    ("past", re.compile(rf"\b(?:in |over |during )?the (?:last|past) {_NUM} {_UNIT}\b")),
    ("last_unit", re.compile(r"\b(?:last|past|previous) (day|week|weekend|month|year)\b")),
    ("this_unit", re.compile(r"\bthis (week|weekend|month|year)\b")),
    ("yesterday", re.compile(r"\byesterday\b")),
    ("today", re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b")),
    (
        "date",
        re.compile(
            rf"\b(?:on |in |during |since )?({_MONTH})\.? (\d{{1,2}})(?:st|nd|rd|th)?\b"
            r"(?:,? (\d{4}))?"
        ),
    ),
    (
        "month",
        re.compile(
            rf"\b(?:in |during |since |back in )?(?:early |late |mid-?)?({_MONTH})\b" r"(?:,? (\d{4}))?"
        ),
    ),
    (
        "weekday",
        re.compile(r"\b(?:last |on |this past )?" rf"({'|'.join(WEEKDAYS)})\b"),
    ),
    (
        "first",
        re.compile(
            r"\b(?:the |my )?(?:very )?first (?:time|ever)\b"
            r"|\b(?:earliest|initially|originally|at first)\b"
        ),
    ),
    ("recent", re.compile(r"\b(?:recently|recent|lately|the other day|just now|the last time)\b")),
    ("iso", re.compile(r"\b(?:on |since )?(\d{4})-(\d{2})-(\d{2})\b")),
]
DAY_S = 86400


@dataclass(frozen=True)
class TimeHint:
    """What the query says about *when*: a window of creation times and/or an order."""

    after: datetime | None = None
    before: datetime | None = None
    order: str | None = None  # "earliest" | "latest"
    phrases: tuple[str, ...] = ()


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word, 1)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def resolve_time(text: str, now: datetime) -> tuple[str, TimeHint]:
    """The query without its time expressions, and the hint they resolve to at `now`."""
    lowered = text.lower().replace("’", "'")
    day = datetime(now.year, now.month, now.day, tzinfo=UTC)
    after: datetime | None = None
    before: datetime | None = None
    order: str | None = None
    phrases: list[str] = []

    def window(lo: datetime, hi: datetime) -> None:
        nonlocal after, before
        if after is None or lo > after:
            after = lo
        if before is None or hi < before:
            before = hi

    for kind, pattern in TIME_PATTERNS:
        for m in list(pattern.finditer(lowered)):
            if (
                kind == "month"
                and m.group(1) == "may"
                and not re.search(r"\b(?:in|during|since) may\b|\bmay,? \d{4}", m.group(0))
            ):
                continue  # "may" is mostly the verb
            if kind == "month" and m.group(1) in (
                "mar",
                "jun",
                "sep",
                "dec",
                "jan",
                "oct",
                "nov",
                "aug",
                "apr",
                "feb",
                "jul",
            ):
                continue  # abbreviations only with a day ("Mar 5")
            phrases.append(m.group(0).strip())
            if kind == "ago":
                span = _count(m.group(1)) * UNIT_DAYS[m.group(2)]
                centre = now - timedelta(days=span)
                margin = timedelta(days=max(3.0, span * 0.35))
                window(centre - margin, centre + margin)
            elif kind == "past":
                window(
                    now - timedelta(days=_count(m.group(1)) * UNIT_DAYS[m.group(2)] + 1),
                    now + timedelta(days=1),
                )
            elif kind == "last_unit":
                unit = m.group(1)
                if unit == "day":
                    window(day - timedelta(days=2), now + timedelta(days=1))
                elif unit in ("week", "weekend"):
                    window(day - timedelta(days=14), day + timedelta(days=1))
                elif unit == "month":
                    y, mo = _shift_month(now.year, now.month, -1)
                    window(_month_start(y, mo) - timedelta(days=7), now + timedelta(days=1))
                else:
                    window(datetime(now.year - 1, 1, 1, tzinfo=UTC), now + timedelta(days=1))
            elif kind == "this_unit":
                span = {"week": 7, "weekend": 7, "month": 31, "year": 366}[m.group(1)]
                window(day - timedelta(days=span), now + timedelta(days=1))
            elif kind == "yesterday":
                window(day - timedelta(days=2), day + timedelta(days=1))
            elif kind == "today":
                window(day - timedelta(days=1), now + timedelta(days=1))
            elif kind == "iso":
                try:
                    at = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
                except ValueError:
                    continue
                window(at - timedelta(days=1), at + timedelta(days=2))
            elif kind == "date":
                month, dom = MONTHS[m.group(1)], int(m.group(2))
                year = int(m.group(3)) if m.group(3) else now.year
                try:
                    at = datetime(year, month, dom, tzinfo=UTC)
                except ValueError:
                    continue
                if not m.group(3) and at > now:
                    at = at.replace(year=year - 1)
                window(at - timedelta(days=3), at + timedelta(days=4))
            elif kind == "month":
                month = MONTHS[m.group(1)]
                year = int(m.group(2)) if m.group(2) else now.year
                if not m.group(2) and _month_start(year, month) > now:
                    year -= 1
                ny, nm = _shift_month(year, month, 1)
                window(
                    _month_start(year, month) - timedelta(days=3), _month_start(ny, nm) + timedelta(days=7)
                )
            elif kind == "weekday":
                back = (now.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
                at = day - timedelta(days=back)
                window(at - timedelta(days=1), at + timedelta(days=2))
            elif kind == "first":
                order = "earliest"
            elif kind == "recent":
                order = order or "latest"
            lowered = lowered[: m.start()] + " " * (m.end() - m.start()) + lowered[m.end() :]
    if after is not None and before is not None and after >= before:
        after = before = None  # contradictory expressions: no window
    return lowered, TimeHint(after, before, order, tuple(phrases))

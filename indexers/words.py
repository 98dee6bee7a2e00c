"""The English words a query is read with: stemming, stop words, framing, word forms, thesaurus.

Each resource and its `[search]` switch:

- stop words (`stop_words`): NLTK's English list (from Snowball), plus question verbs
  ("tell", "remember") and fillers;
- question framing (`framing`): words of question templates about a person;
- word forms (`word_forms`, `prefix_weight`): the common irregular verbs and the index's
  own vocabulary;
- thesaurus (`synonym_weight`): hand-written rings of everyday synonyms and category → kinds;
- time words (`time_words`, `time_weight`): TimeML's TIMEX3 classes of dates;
- feedback words (`feedback_*`): the user's own best-matching turns, weighed by RM3."""

from __future__ import annotations

import re
from functools import lru_cache

import tantivy

__all__ = ["FRAME_WORDS", "SEARCH_STOP_WORDS", "STOP_WORDS", "query_terms", "stem", "stems_of"]

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
colour color
flavour flavor
humour humor
behaviour behavior
theatre theater
centre center
grey gray
jewellery jewelry
pyjamas pajamas
yoghurt yogurt
organise organize
realise realize
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


def _en_stem(*, stemmed: bool) -> tantivy.TextAnalyzer:
    """tantivy's `en_stem`: simple tokenizer, long tokens out, lower case, English stemmer if `stemmed`."""
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    return (builder.filter(tantivy.Filter.stemmer("english")) if stemmed else builder).build()


@lru_cache(maxsize=1)
def _analyzer() -> tantivy.TextAnalyzer:
    """The analyzer of tantivy's `en_stem`: the terms the index keeps."""
    return _en_stem(stemmed=True)


@lru_cache(maxsize=1)
def _splitter() -> tantivy.TextAnalyzer:
    """`en_stem` before its stemmer: the words the index keeps, lower-cased."""
    return _en_stem(stemmed=False)


def words_of(text: str) -> list[str]:
    """The words of `text` as the index splits them (runs of letters and digits, in any
    script), lower-cased, before stemming: one splitter for the index and the query, so a
    question in any script has words."""
    return _splitter().analyze(text)


def stems_of(text: str) -> list[str]:
    """The terms `en_stem` indexes for `text`, in order."""
    return _analyzer().analyze(text)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The term `en_stem` indexes for `word` ("" for none); kept for the words a long-lived
    process meets again and again."""
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
    words = words_of(text)
    kept = [w for w in words if w not in STOP_WORDS and not (len(w) == 1 and not w.isdigit())]
    return kept or [w for w in words if len(w) > 1]

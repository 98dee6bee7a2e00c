"""From a natural-language query to weighted term groups for the full-text index.

Each content word becomes a group: the stem the index uses (`en_stem`) plus weighted
variants.  Stop words are dropped; question framing ("name", "kind", "usually") is kept at
a low weight; recency cues ("now", "currently") are taken out and reported as
`wants_latest`; a count or a sum asked for ("how many", "in total") is reported as
`counts`; irregular verb forms map both ways (bought ↔ buy); a short everyday-life
thesaurus adds synonyms and, one way, the kinds of a category word ("pet" → "kitten"),
weighted below the user's words.  Prefix variants come from the index's vocabulary
(`indexers.search`); time words are `indexers.time_words`'.  The lists: `indexers.words`."""

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from .words import FRAME_WORDS, SEARCH_STOP_WORDS, _lexicon, stem, words_of

__all__ = ["QueryPlan", "TermGroup", "plan_query"]

FRAME_WEIGHT = 0.4
VARIANT_WEIGHT = 0.9
"""Irregular verb forms: nearly the word itself."""
SYNONYM_WEIGHT = 0.7

RECENCY_CUES = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|at present|at the moment|"
    r"at this point|latest|most recent(?:ly)?|lately|anymore|any more|still)\b"
)
COUNT_CUES = re.compile(r"\b(?:how (?:many|much)|in total|altogether|in all)\b")
"""A question that asks for a count or a sum: its answer is gathered from every conversation
that mentions one of the things counted, most of which need not say the question's words."""


class TermGroup:
    """One query word: its stem, its weight, and other stems that may stand for it."""

    __slots__ = ("stem", "variants", "weight")

    def __init__(self, stem: str, weight: float) -> None:
        self.stem = stem
        self.weight = weight
        self.variants: dict[str, float] = {}

    def add_variant(self, term: str, weight: float) -> None:
        if term and term != self.stem and weight > self.variants.get(term, 0.0):
            self.variants[term] = weight


class QueryPlan(NamedTuple):
    """A query as term groups to search, and what it asks for beyond its words."""

    groups: tuple[TermGroup, ...]
    wants_latest: bool
    """The query asks for the current state ("now", "currently", "these days")."""
    counts: bool = False
    """The query asks for a count or a sum (`COUNT_CUES`): RM3's feedback is for such a query."""
    feedback: Mapping[str, float] = MappingProxyType({})
    """Pseudo-relevance feedback words and weights (`indexers.feedback`): one group of their own."""


def plan_query(
    text: str,
    *,
    synonym_weight: float = SYNONYM_WEIGHT,
    stop_words: bool = True,
    framing: bool = True,
    word_forms: bool = True,
) -> QueryPlan:
    """The term groups of a natural-language query.  `synonym_weight` scales thesaurus
    variants (0 leaves them out); `stop_words`, `framing` and `word_forms` switch those
    resources off to show their effect (`Ranking`'s switches of the same names)."""
    lowered = text.lower().replace("’", "'")
    counts = COUNT_CUES.search(lowered) is not None
    lowered, cues = RECENCY_CUES.subn(" ", lowered)
    words = [w for w in words_of(lowered) if w != "s"]
    stop = SEARCH_STOP_WORDS if stop_words else frozenset()
    kept = [w for w in words if w not in stop and (len(w) > 1 or w.isdigit())]
    if not kept:
        kept = [w for w in words_of(text) if len(w) > 1]
    irregular, synonyms = _lexicon()
    groups: dict[str, TermGroup] = {}
    for word in kept:
        term = stem(word)
        if not term:
            continue
        weight = FRAME_WEIGHT if framing and word in FRAME_WORDS else 1.0
        group = groups.get(term)
        if group is None:
            group = groups[term] = TermGroup(term, weight)
        group.weight = max(group.weight, weight)
        for form in irregular.get(term, ()) if word_forms else ():
            group.add_variant(form, VARIANT_WEIGHT)
        if synonym_weight > 0:
            for synonym in synonyms.get(term, ()):
                group.add_variant(synonym, synonym_weight)
    return QueryPlan(tuple(groups.values()), cues > 0, counts)

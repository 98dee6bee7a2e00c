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
added by `indexers.search` when it builds the query.  **Time words** ("last week",
"in May", "two months ago", "the first time") are resolved by
`indexers.time_words.resolve_time` against the search's `now`.

The word lists and where they come from are in `indexers.words`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .words import FRAME_WORDS, SEARCH_STOP_WORDS, _lexicon, stem, words_of

__all__ = ["Lexicon", "QueryPlan", "TermGroup", "plan_query"]

FRAME_WEIGHT = 0.4
VARIANT_WEIGHT = 0.9
"""Irregular verb forms: nearly the word itself."""
SYNONYM_WEIGHT = 0.7

RECENCY_CUES = re.compile(
    r"\b(?:now|nowadays|currently|current|these days|at present|at the moment|"
    r"at this point|latest|most recent(?:ly)?|lately|anymore|any more|still)\b"
)


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
    feedback: dict[str, float] = field(default_factory=dict)
    """Pseudo-relevance feedback words and weights (`indexers.feedback`): one group of their own."""


def plan_query(
    text: str, *, synonym_weight: float = SYNONYM_WEIGHT, lexicon: Lexicon = Lexicon()
) -> QueryPlan:
    """The term groups of a natural-language query (see the module docstring).

    `synonym_weight` scales thesaurus variants (0 leaves them out); `lexicon` switches
    the stop words, question framing and irregular word forms.
    """
    lowered = text.lower().replace("’", "'")
    lowered, cues = RECENCY_CUES.subn(" ", lowered)
    words = [w for w in words_of(lowered) if w != "s"]
    stop = SEARCH_STOP_WORDS if lexicon.stop_words else frozenset()
    kept = [w for w in words if w not in stop and (len(w) > 1 or w.isdigit())]
    if not kept:
        kept = [w for w in words_of(text) if len(w) > 1]
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

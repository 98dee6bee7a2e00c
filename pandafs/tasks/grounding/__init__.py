"""What an answer may be built from, and the checks an answer must pass.

Synthesis reads *facts*: sentences of the §2 sources and the §4 tool results, each
with its origin and date, deduplicated, and with disagreements settled (newest wins).
Validation reads *checks*: whether the answer holds what the question asked for and
whether it contradicts a stated fact.  Both are computed here, beneath the pipeline
and the backends, the same for every backend, so a model can use them but cannot
talk its way past them.

sentences.py  sentence kinds (question, non-answer) and the stored form of a statement
slots.py      what a statement is about, what a question asks about, disagreement
facts.py      `Fact` and `settle`: dedupe, origin rank, newest wins
checks.py     the requested datum and `answer_checks`
"""

from .checks import PRICE, about_focus, answer_checks, asks_now, has_requested, requested_kind, speaker_fits
from .facts import ORIGIN_RANK, Fact, end_of_day, settle
from .sentences import NOTED, SECOND_PERSON, is_honest_unknown, is_question, norm, statement_form
from .slots import (
    STRONG_SLOTS,
    asked_predicate,
    asked_slots,
    focus_of,
    is_about,
    related_overlap,
    slot_of,
    states,
)

__all__ = [
    "NOTED",
    "ORIGIN_RANK",
    "PRICE",
    "SECOND_PERSON",
    "STRONG_SLOTS",
    "Fact",
    "about_focus",
    "answer_checks",
    "asks_now",
    "asked_predicate",
    "asked_slots",
    "end_of_day",
    "focus_of",
    "has_requested",
    "is_about",
    "is_honest_unknown",
    "is_question",
    "norm",
    "related_overlap",
    "requested_kind",
    "settle",
    "slot_of",
    "speaker_fits",
    "states",
    "statement_form",
]

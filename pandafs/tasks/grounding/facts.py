"""The facts an answer may be built from: deduplicated, ranked by origin, disagreements settled.

Origins, strongest first (what the user said outranks what the assistant said):
`memory` (preferences.md, facts.md, saved memories — "the file says what is true now",
docs/vault-format.md), `stated` (what the user said in an earlier turn),
`document` (research, knowledge), `tool` (§4), `answer` (an earlier APPROVEd reply),
`assistant` (an imported conversation's reply: it answers what the assistant said).
Non-answers, questions and the current query itself are never facts; of
disagreeing statements the newest wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time

from .sentences import CITE, is_non_answer, norm
from .slots import Slot, disagree, slot_of, takes_slot, tally_slot

ORIGIN_RANK = {"memory": 0, "stated": 1, "document": 2, "tool": 3, "answer": 4, "assistant": 5}
REPLIES = frozenset({"answer", "assistant"})  # what the assistant said, never over the user


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

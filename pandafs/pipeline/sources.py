"""The text of a source as the pipeline reads it: a turn's question and answer, a page
visit's extracted fields, any other document whole; plus the small text helpers the
Context Gatherer's two steps and Synthesis share."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from events.documents import split_sections
from events.layout import TURN_DIR_RE, TURN_KINDS, turn_number
from events.stamps import format_ts
from indexers.time_words import NUMBER_WORDS, WEEKDAYS

from ..memory.turn_records import TurnReader, TurnRecord, parse_time
from ..research.visits import read_visit
from ..tokens import count_tokens
from .context import RECORD_CACHE, TurnContext

__all__ = [
    "PER_DOC_TOKENS",
    "abridge",
    "first_share",
    "age_days",
    "date_phrases",
    "plain_text",
    "prior_turn",
    "sentence_pieces",
    "source_text",
    "turn_text",
    "visit_text",
]


def age_days(created: Any, now: datetime) -> float:
    when = parse_time(created)
    return 0.0 if when is None else max(0.0, (now - when).total_seconds() / 86400.0)


def turn_text(content: str) -> str:
    """What a turn's context.md teaches: the question (§0) and the answer (§5)."""
    sections = split_sections(content)
    if not sections:
        return content
    asked = sections.get(0, "").split("\n\n")[0].strip()
    answered = sections.get(5, "").strip()
    return f"Asked: {asked}\nAnswered: {answered}".strip()


PER_DOC_TOKENS = 1500
"""A document's share of the gatherer at most (the Context Gatherer's per-turn limit)."""
WHOLE_SHARE = 0.5
"""The most relevant prior turns get their whole text (up to `PER_DOC_TOKENS`) first while
together they take at most this share of §2's budget (the most relevant one always) ..."""
CORE_TOKENS = 100
"""... every other chosen turn first this much (the user's words, then the sentences that
match the question); what is left of §2's budget then grows them, most relevant first:
more turns reach §2 than whole turns until the budget would bring."""


def first_share(tokens: int, given: list[int], budget: int) -> int:
    """The tokens a chosen turn of `tokens` tokens is first given of `budget`, after the
    more relevant ones were `given` theirs: whole while the whole ones fit `WHOLE_SHARE`
    of it (the most relevant always), else `CORE_TOKENS`."""
    whole = min(tokens, PER_DOC_TOKENS)
    if whole <= CORE_TOKENS or not given:
        return whole
    if whole <= budget * WHOLE_SHARE - sum(g for g in given if g > CORE_TOKENS):
        return whole
    return CORE_TOKENS


def prior_turn(ctx: TurnContext, doc_id: str, kind: str) -> TurnRecord | None:
    """A past turn of this user as the tiers read it: a live turn's question and answer,
    an archived one's stub (reading it counts no expansion).  None for anything else."""
    user, _, name = doc_id.partition("/")
    if kind not in TURN_KINDS or user != ctx.user or not TURN_DIR_RE.fullmatch(name):
        return None
    reader = TurnReader(ctx.vault, ctx.user, ctx.extras.get(RECORD_CACHE))
    number = turn_number(name)
    return reader.stub(number) if kind == "archived_turn" else reader.live(number)


def source_text(ctx: TurnContext, doc_path: str, kind: str) -> str:
    """The text of a document as the pipeline reads it (a turn: its question and answer;
    a visit record: the fields extracted from the page)."""
    if kind == "visit":
        return visit_text(ctx.vault.root, doc_path)
    doc = ctx.read(doc_path)
    if doc is None:
        return ""
    return turn_text(doc.content) if kind == "turn" else doc.content


def visit_text(root: Path, page: str) -> str:
    """The fields of the visit whose page is `page` (vault-relative), from its manifest;
    "" when that is missing, unreadable, or not plainly a file of the vault."""
    record = read_visit(root, page.rpartition("/")[0])
    if record is None:
        return ""
    fields = record.extracted_data
    lines = [f"{fields.get('title') or record.title}."]
    for key in ("price", "availability", "description"):
        if fields.get(key):
            lines.append(f"{key.capitalize()}: {fields[key]}.")
    lines.append(f"Visited {format_ts(record.visited_at)} at {record.final_url}.")
    return "\n".join(lines)


def plain_text(text: str) -> str:
    return " ".join(re.sub(r"(?<!\S)#identity\b", "", text, flags=re.I).split()).lower()


# --- a prior turn's text in §2: dated, abridged by relevance -----------------------------

_PIECE = re.compile(r"[^\n.!?]*(?:[.!?]+[\"')\]]*(?=\s|$)|\n|$)")
_NUMBER = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few)"
_AGO = re.compile(rf"\b{_NUMBER}\s+(day|week|month|year)s?\s+ago\b", re.I)
_DEICTIC = re.compile(
    r"\b(yesterday|today|tonight|this morning|this afternoon|this evening|last night|"
    r"last (?:week|weekend|month|year)|last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.I,
)


@lru_cache(maxsize=256)  # a turn's text is scored, then abridged, by the same pieces
def sentence_pieces(text: str) -> tuple[str, ...]:
    """`text` cut into sentences (and lines), each with its own trailing punctuation;
    joined again they give `text` back, spacing aside."""
    return tuple(p.strip() for p in _PIECE.findall(text) if p.strip())


def _shift(when: datetime, number: int, unit: str) -> str:
    if unit == "day":
        return (when - timedelta(days=number)).strftime("%Y-%m-%d")
    if unit == "week":
        return "week of " + (when - timedelta(weeks=number)).strftime("%Y-%m-%d")
    if unit == "month":
        month = when.month - 1 - number
        return f"{when.year + month // 12:04d}-{month % 12 + 1:02d}"
    return f"{when.year - number:04d}"


def _deictic(phrase: str, when: datetime) -> str:
    words = phrase.lower().split()
    if words[0] in ("today", "tonight", "this"):
        return when.strftime("%Y-%m-%d")
    if words[0] == "yesterday" or words == ["last", "night"]:
        return _shift(when, 1, "day")
    unit = words[1]
    if unit in ("week", "weekend"):
        return _shift(when, 1, "week")
    if unit in ("month", "year"):
        return _shift(when, 1, unit)
    back = (when.weekday() - WEEKDAYS[unit]) % 7 or 7
    return _shift(when, back, "day")


def date_phrases(text: str, when: datetime | None) -> str:
    """`text` with each relative time phrase ("two days ago", "yesterday", "last
    Friday") followed by the date it names, counted from `when` (the turn's own time)."""
    if when is None:
        return text

    def ago(match: re.Match[str]) -> str:
        raw = match.group(1).lower()
        number = int(raw) if raw.isdigit() else NUMBER_WORDS.get(raw.split()[0], 1)  # "couple of"
        return f"{match.group(0)} ({_shift(when, number, match.group(2).lower())})"

    text = _AGO.sub(ago, text)
    return _DEICTIC.sub(lambda m: f"{m.group(0)} ({_deictic(m.group(0), when)})", text)


def abridge(text: str, relevance: list[float], budget: int) -> str | None:
    """`text` within `budget` tokens, its least relevant sentences dropped (`relevance`:
    one score per `sentence_pieces`).  Kept first: the sentences scored above 0, best
    first, then the others nearest to them; a sentence that repeats an earlier one
    comes last.  So a scored sentence is dropped only when the scored ones alone do not
    fit.  None when not even the best one fits.  Each gap is marked "…"."""
    pieces = sentence_pieces(text)
    sizes = [count_tokens(p) + 1 for p in pieces]  # each may leave a gap mark after it
    scored = [i for i, r in enumerate(relevance) if r > 0]
    seen: set[str] = set()
    repeats = set()
    for i, piece in enumerate(pieces):
        if piece.lower() in seen:
            repeats.add(i)
        seen.add(piece.lower())

    def distance(i: int) -> int:
        return min((abs(i - j) for j in scored), default=i)

    order = sorted(
        range(len(pieces)),
        key=lambda i: (i in repeats, relevance[i] <= 0, -relevance[i], distance(i), i),
    )
    if not order or sizes[order[0]] > budget:
        return None
    kept, room = set(), budget
    for i in order:
        if sizes[i] <= room:
            kept.add(i)
            room -= sizes[i]
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i in kept:
            out.append(piece)
        elif out[-1:] != ["…"]:
            out.append("…")
    return " ".join(out)

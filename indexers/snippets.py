"""Snippets: a short window of a hit's prose around the query's words, the words in bold.

The prose is taken at index time (`prose_of`: the body without headings, code fences,
`_meta` blocks and table rules, whitespace folded, at most `PROSE_CHARS`) and stored in
the index beside the payload, so a search never re-reads a hit's file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

SNIPPET_CHARS = 220
PROSE_CHARS = 8000
"""Prose kept per document for its snippet: a turn's whole text, a long note's first
pages (a snippet of a longer document comes from those)."""
CUT = "\x1f"
"""Ends a prose cut at `PROSE_CHARS` (white space to `str.split`: folded prose never holds it)."""

_NOT_PROSE = ("#", "```", "_meta", "|---", "  type:")
"""How the lines a snippet skips begin: headings, code fences, `_meta` blocks, table rules."""


_ASCII_SPACES = ("\t", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f")
_DOUBLE_SPACE = re.compile("  ")  # faster than `"  " in text`, which tries at every space


def _folded(text: str) -> bool:
    """`text` already equals `" ".join(text.split())`: single spaces between words and no
    other white space, checked by a few scans instead of a split and a join.  Beyond ASCII,
    `str.isprintable` is the scan: every white space `str.split` splits at but the space
    itself is a control character or a separator, which are not printable."""
    if text[:1] == " " or text[-1:] == " " or _DOUBLE_SPACE.search(text):
        return False
    if text.isascii():  # (a flag of the string: no scan)
        return not any(space in text for space in _ASCII_SPACES)
    return text.isprintable()


def conversation_prose(body: str) -> str:
    """`prose_of` a turn body's §0 and §5: what was asked and what was answered, which is
    what a person looks for in a past turn.  The pipeline's own sections (reflection,
    gathered context, plan, tools, validation) are no snippet's text.  A body without
    numbered sections is read whole.

    A body whose only `## ` heading lines are §0's then §5's, with nothing but lines
    `prose_of` skips before them (an imported turn: its title), is read whole too: the rest
    of it is those heading lines, so the prose is the same without copying the sections out.
    (The headings are found by their `#`: one character is searched for much faster than a
    string in text beyond Latin-1.)"""
    headings: list[int] = []
    at = body.find("#")
    while at >= 0 and len(headings) < 3:
        if (at == 0 or body[at - 1] == "\n") and body.startswith("## ", at):
            headings.append(at)
        at = body.find("#", at + 2)
    if (
        len(headings) == 2
        and body.startswith("## 0. ", headings[0])
        and body.startswith("## 5. ", headings[1])
        and all(not line or line.startswith(_NOT_PROSE) for line in body[: headings[0]].split("\n"))
    ):
        return prose_of(body)
    from events.documents import split_sections  # index time only: `search` never loads it

    sections = split_sections(body, numbers=(0, 5))
    return prose_of("\n".join(sections.values()) if sections else body)


def prose_of(body: str) -> str:
    """The text a snippet is cut from: `body` (an `IndexDoc`'s, which holds no NUL) without
    the lines it skips, whitespace folded, at most `PROSE_CHARS` (then ending in `CUT`)."""
    # line by line with `str.startswith`: a MULTILINE regex would try every position
    kept = [line for line in body.split("\n") if line and not line.startswith(_NOT_PROSE)]
    flat = " ".join(kept)
    if not _folded(flat):
        flat = " ".join(flat.split())
    return flat if len(flat) <= PROSE_CHARS else flat[:PROSE_CHARS] + CUT


def snippet_stem(term: str) -> str:
    """What of a query term a snippet looks for: a word over 4 letters less its last 2
    (at least 4 kept), so "hamsters" finds "hamster"."""
    return term[: max(4, len(term) - 2)]


def snippet_of(prose: str, terms: Iterable[str]) -> str:
    """A ~220-character window of `prose` (from `prose_of`) around the query terms, terms in **bold**."""
    cut = prose.endswith(CUT)
    flat = prose[:-1] if cut else prose
    stems = tuple(sorted({snippet_stem(t) for t in terms}, key=len, reverse=True))
    if not stems:
        return flat[:SNIPPET_CHARS]
    folded = tuple(stem.casefold() for stem in stems)
    haystack = flat.casefold()  # case-blind as the pattern is: "ΟΔΟΣ" holds "οδοσ"
    if len(haystack) == len(flat):  # each character folded to one: offsets kept, find on the copy
        matches = _find_words(haystack, folded)
    else:  # a character that folds to two ("ß", "İ"): the offsets move
        matches = [m.span() for m in _snippet_pattern(stems).finditer(flat)]
    if not matches:
        return flat[:SNIPPET_CHARS]
    best_start, best_count, right = matches[0][0], 0, 0
    for left, (m_start, _) in enumerate(matches):  # sliding window: most matches within SNIPPET_CHARS
        while right < len(matches) and matches[right][0] < m_start + SNIPPET_CHARS:
            right += 1
        if right - left > best_count:
            best_start, best_count = m_start, right - left
    start = max(0, best_start - 40)
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    end = start + SNIPPET_CHARS
    pieces, last = [], start
    rest_of_word = _REST_OF_WORD.match
    for m_start, m_end in matches:
        if m_start < start or m_start >= end:
            continue
        word = rest_of_word(flat, m_end)  # the whole word (ASCII matches end with the stem)
        m_end = word.end() if word else m_end
        if m_end > end:  # cut by the window: still bold only if a whole stem is left
            if not flat[m_start:end].casefold().startswith(folded):
                continue
            m_end = end
        pieces += [flat[last:m_start], "**", flat[m_start:m_end], "**"]
        last = m_end
    out = "".join(pieces) + flat[last:end]
    return ("…" if start else "") + out + ("…" if end < len(flat) or cut else "")


def _find_words(haystack: str, stems: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end of the stem) of each word of `haystack` (lower-case ASCII) that begins
    with a stem (`str.find` per stem, not one regex alternation over every position);
    `snippet_of` extends to the word's end only the few it bolds."""
    spans: dict[int, int] = {}
    for stem_text in stems:
        size = len(stem_text)
        at = haystack.find(stem_text)
        while at != -1:
            if at not in spans:
                before = haystack[at - 1] if at else " "
                if not (before.isalnum() or before == "_"):
                    spans[at] = at + size
            at = haystack.find(stem_text, at + 1)
    return sorted(spans.items())


_REST_OF_WORD = re.compile(r"\w*")


@lru_cache(maxsize=512)
def _snippet_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(map(re.escape, stems)) + r")\w*", re.IGNORECASE)

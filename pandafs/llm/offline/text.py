"""Reading memory text the way the offline rules need it: sentences (markdown structure
skipped), words by the index's English stem, names as capitalised runs, and the shared
patterns (prices, numbers, URLs)."""

from __future__ import annotations

import re
from functools import lru_cache

from indexers.words import stem as index_stem

# Sentence ends, but not after an honorific or a common Latin abbreviation ("Dr. Berg").
_SENTENCE = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)(?<!\bvs\.)"
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+"
)
_LINK = re.compile(r"\[\[[^\]|]*?(?:\\?\|([^\]]*))?\]\]")
_MARKDOWN = re.compile(r"[*_`#>|]+")
PRICE = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d{1,2})?|\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|dollars|euros))"
)
NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_WORDS = re.compile(r"[A-Za-z0-9$€£]+")
URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_ENTITY = re.compile(r"\b[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d[\w-]*))*")
_NOT_ENTITY = frozenset(
    """I I'm I've I'd The A An And But Or So If When Where What Which Who Why How Is Are Was
    Were Do Does Did Can Could Would Should Will It It's That This These Those My Your Our
    Their His Her We You They He She Yes No Ok Okay Hi Hello Hey Thanks Thank Please Noted
    From Here There Also Just Sure Great Good Sorry Let Tell Find Show Give Remember Turn
    Answer Query Source Sources Summary Prior Relevant Key Facts Monday Tuesday Wednesday
    Thursday Friday Saturday Sunday Today Tomorrow Yesterday Prefers Likes Dislikes Has Works
    Lives Their Name Asked About Noted Does""".split()
)


_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://|/)[^)]*\)")


def _unlink(text: str) -> str:
    """Replace wikilinks (also table-escaped `[[a\\|b]]`) and markdown links by their label."""
    return _MD_LINK.sub(lambda m: m.group(1), _LINK.sub(lambda m: m.group(1) or " ", text))


_LABEL = re.compile(
    r"^(?:[-*]\s+|\[\d+\]\s+)*(?:(?:Asked|Answered|From memory|Noted[^:]*|About [^:]{1,80}):\s*)*"
)
_NOTE = re.compile(r"\s*_?\((?:from|saved)\b[^)]*\)_?\s*$")


def _clean(text: str) -> str:
    text = _NOTE.sub("", _LABEL.sub("", text.strip()))
    return " ".join(_MARKDOWN.sub(" ", text).split())


def sentences(text: str) -> list[str]:
    """Readable sentences of a markdown text (headings, tables and YAML skipped)."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not stripped or stripped.startswith(("#", "|---", "---")):
            continue
        stripped = _unlink(stripped)
        for run in _cells(stripped):
            for part in _SENTENCE.split(run):
                cleaned = _clean(part)
                if len(cleaned) > 2:
                    out.append(cleaned)
    return tuple(out)


_CELL = re.compile(r"(?<!\\)\|")
_TOKEN = re.compile(r"^\S*[/_]\S*$")  # a path or an id ("demo/memories/…", "turn_000005")


def _cells(line: str) -> list[str]:
    """A line as runs of text: a table row (or a search snippet cut from one) is its cells,
    never one run of cells flattened together.  When a cell holds a sentence, the cells
    are that sentence and its labels (a source's id, its relevance), and the sentences
    stand alone; a row of values alone reads as their list ("Lenovo LOQ, $697, in stock").
    A cell cut off by a snippet ("…Key Facts", "gaming l…") and an id are no text."""
    cells = [c.strip() for c in _CELL.split(line)]
    if len(cells) < 3 and not line.startswith("|"):
        return [line]
    kept = [c for c in cells if c and not c.startswith("…") and not c.endswith("…") and not _TOKEN.match(c)]
    prose = [c for c in kept if len(c.split()) >= 4]
    return prose or ([", ".join(kept)] if kept else [])


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The index's own stem (`en_stem`), so "likes" and "like" meet, as they do in search."""
    return index_stem(word) or word.lower()


@lru_cache(maxsize=8192)
def _text_stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in _WORDS.findall(text))


def stems_overlap(keywords: list[str], text: str) -> int:
    """How many distinct keyword stems occur in `text`."""
    words = _text_stems(text)
    return sum(1 for k in {stem(k) for k in keywords} if k in words)


def entities_in(text: str) -> list[str]:
    """Capitalised names and model numbers ("Lenovo LOQ 15"), longest first per start."""
    found: list[str] = []
    for match in _ENTITY.finditer(text):
        words = match.group(0).split()
        while words and words[0].strip("'") in _NOT_ENTITY:
            words = words[1:]
        while words and words[-1] in _NOT_ENTITY:
            words = words[:-1]
        if not words:
            continue
        name = " ".join(words).strip(".,;:!?")
        if len(name) > 1 and name not in found:
            found.append(name)
    return found

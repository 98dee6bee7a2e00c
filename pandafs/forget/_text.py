"""What counts as the forgotten text, kept only as salted hashes, and how it is cut out.

Text is looked at in segments: a line, a table cell, a sentence, or one JSON string.  A
segment is tainted when it holds one of the text's distinctive words, all the words a
person asked to forget, or a copy of one of its sentences (in a JSON list, any one of
words the list holds between them).  Words are compared as the index stems them.  A
tainted segment becomes `REDACTED`, keeping its leading markup ("- ", "| ", "# ").

`Matcher` holds only sha256 hashes of a random salt and each stem, so a plan can be
written down and resumed without the text stored anywhere."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from indexers.words import STOP_WORDS, stem, words_of
from indexers.words import stems_of as _index_stems

__all__ = ["REDACTED", "Matcher", "content_stems", "segments", "sentences_of", "stems_of"]

REDACTED = "(forgotten)"

_SPLIT = re.compile(r"(\n|\||(?<=[.!?])\s+)")
_LEAD = re.compile(r"^[^\w]*", re.UNICODE)


def stems_of(text: str) -> list[str]:
    """The words of `text` as the index keeps them (stemmed, lower case)."""
    return _index_stems(text)


def content_stems(text: str) -> set[str]:
    """The stems of `text`'s content words: no stop words, no single letters or numbers."""
    return {
        s
        for w in words_of(text)
        if len(w) >= 3 and w not in STOP_WORDS and not w.isdigit() and (s := stem(w))
    }


def segments(text: str) -> Iterator[str]:
    """The segments of `text` (separators left out)."""
    for index, part in enumerate(_SPLIT.split(text)):
        if index % 2 == 0 and part.strip():
            yield part


def sentences_of(text: str) -> list[str]:
    """The sentences of `text` worth recognising as copies (two content words or more)."""
    return [s for s in segments(text) if len(content_stems(s)) >= 2]


def _normal(stems: Iterable[str]) -> str:
    return " ".join(stems)


@dataclass
class Matcher:
    """The forgotten text as hashes: `words` (any one taints a segment), `all_of` (all
    of them together do), `sentences` (a segment whose stems equal one of them)."""

    salt: str = field(default_factory=lambda: secrets.token_hex(16))
    words: set[str] = field(default_factory=set)
    all_of: set[str] = field(default_factory=set)
    sentences: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._cache: dict[str, str] = {}
        self._sentence_lengths: list[int] | None = None

    def hash(self, term: str) -> str:
        """The salted hash of a stem, a sentence's stems or a path (words are cached: a
        vault's vocabulary is bounded, its sentences are not)."""
        found = self._cache.get(term)
        if found is None:
            found = self._digest(term)
            if " " not in term:
                self._cache[term] = found
        return found

    def _digest(self, text: str) -> str:
        return hashlib.sha256(f"{self.salt}\x00{text}".encode()).hexdigest()[:32]

    def add_words(self, stems: Iterable[str]) -> None:
        self.words |= {self.hash(s) for s in stems}

    def add_all_of(self, stems: Iterable[str]) -> None:
        self.all_of |= {self.hash(s) for s in stems}

    def add_sentences(self, texts: Iterable[str]) -> None:
        """Sentences recognised wherever they are quoted (a run of their stems in order),
        kept as `{length}:{hash}`."""
        for text in texts:
            stems = stems_of(text)
            if stems:
                self.sentences.add(f"{len(stems)}:{self.hash(_normal(stems))}")

    @property
    def _lengths(self) -> list[int]:
        if self._sentence_lengths is None:
            self._sentence_lengths = sorted({int(s.split(":", 1)[0]) for s in self.sentences})
        return self._sentence_lengths

    def _quotes(self, stems: list[str]) -> bool:
        for length in self._lengths:
            for start in range(len(stems) - length + 1):
                window = _normal(stems[start : start + length])
                if f"{length}:{self._digest(window)}" in self.sentences:
                    return True
        return False

    @property
    def empty(self) -> bool:
        return not (self.words or self.all_of or self.sentences)

    def tainted(self, segment: str) -> bool:
        stems = stems_of(segment)
        if not stems:
            return False
        hashes = {self.hash(s) for s in stems}
        if hashes & self.words:
            return True
        if self.all_of and self.all_of <= hashes:
            return True
        return bool(self.sentences) and self._quotes(stems)

    def is_word(self, term: str) -> bool:
        """Is `term` (an index term: a stem) one of the distinctive words?"""
        return self.hash(term) in self.words

    def any_tainted(self, text: str) -> bool:
        return any(self.tainted(s) for s in segments(text))

    def _holds_one(self, segment: str) -> bool:
        return bool({self.hash(s) for s in stems_of(segment)} & self.all_of)

    def redact(self, text: str, tainted: Callable[[str], bool] | None = None) -> str:
        """`text` with each tainted segment replaced (its leading markup kept)."""
        tainted = tainted or self.tainted
        if not text or not any(tainted(s) for s in segments(text)):
            return text
        out = []
        for index, part in enumerate(_SPLIT.split(text)):
            if index % 2 == 0 and part.strip() and tainted(part):
                lead = _LEAD.match(part)
                prefix = lead.group(0) if lead else ""
                tail = part[len(part.rstrip()) :]
                part = f"{prefix}{REDACTED}{tail}"
            out.append(part)
        return "".join(out)

    def _spread(self, items: list[Any]) -> bool:
        """Do the strings of a list hold all the words asked for between them (a keyword
        list, one word an item, that no single item taints)?"""
        if not self.all_of:
            return False
        hashes = {self.hash(s) for v in items if isinstance(v, str) for s in stems_of(v)}
        return self.all_of <= hashes

    def redact_value(self, value: Any) -> Any:
        """A JSON value with every string redacted (keys kept); in a list whose strings
        hold all the words asked for between them, each segment holding one of them."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            if self._spread(value):
                return [
                    self.redact(v, self._holds_one) if isinstance(v, str) else self.redact_value(v)
                    for v in value
                ]
            return [self.redact_value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}
        return value

    def value_tainted(self, value: Any) -> bool:
        if isinstance(value, str):
            return self.any_tainted(value)
        if isinstance(value, list):
            return self._spread(value) or any(self.value_tainted(v) for v in value)
        if isinstance(value, dict):
            return any(self.value_tainted(v) for v in value.values())
        return False

    def as_json(self) -> dict[str, Any]:
        return {
            "salt": self.salt,
            "words": sorted(self.words),
            "all_of": sorted(self.all_of),
            "sentences": sorted(self.sentences),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Matcher:
        return cls(
            salt=str(data["salt"]),
            words=set(data.get("words", [])),
            all_of=set(data.get("all_of", [])),
            sentences=set(data.get("sentences", [])),
        )

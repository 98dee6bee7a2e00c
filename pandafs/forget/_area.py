"""A user's area (every file PandaFS keeps for them), what counts as the forgotten text, and
how each kind of file is redacted (the derived stores are rebuilt, not redacted).

Text is looked at in segments: a line, a table cell, a sentence, one JSON string.  A segment
is tainted when it holds one of the distinctive words, all the words asked for (in a JSON
list: between its items), or a copy of a forgotten sentence, words compared as the index
stems them; it becomes `REDACTED`, keeping its leading markup ("- ", "| ", "# ").
`Matcher` holds only salted hashes, so a plan is written down without the text."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from indexers.walk import is_utf8_name
from indexers.words import STOP_WORDS, stem, stems_of, words_of

from ..errors import BadInput
from ..turns import EVENTS_FILE, first_event
from ..vault import Vault

PROJECTED = frozenset(
    {"context.md", "metadata.json", "query_analysis.json", "ticket.md", "toolresults.md", "metrics.json"}
)
"""Files a turn's events project to: re-projected from the redacted events, not edited."""

BOOKKEEPING = frozenset(
    {
        ".memory.lock",
        ".alloc.lock",
        ".counter",
        ".forget.lock",
        ".forget-intent.json",
        ".external_ids.jsonl",
        ".ledger.jsonl",
    }
)
"""Locks, counters, the forget's intent and the ledgers (the import ledger keeps a re-import
from bringing a forgotten turn back): not what a person said."""

ENTRY_DOCS = ("preferences.md", "facts.md")
REDACTED = "(forgotten)"

_SPLIT = re.compile(r"(\n|\||(?<=[.!?])\s+)")
_LEAD = re.compile(r"^[^\w]*", re.UNICODE)


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

    def hash(self, term: str) -> str:
        """The salted hash of a stem, a sentence's stems or a path (only words are cached)."""
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
        """Sentences recognised wherever quoted (a run of their stems), as `{length}:{hash}`."""
        for text in texts:
            stems = stems_of(text)
            if stems:
                self.sentences.add(f"{len(stems)}:{self.hash(' '.join(stems))}")

    @cached_property
    def _lengths(self) -> list[int]:
        return sorted({int(s.split(":", 1)[0]) for s in self.sentences})

    def _quotes(self, stems: list[str]) -> bool:
        for length in self._lengths:
            for start in range(len(stems) - length + 1):
                window = " ".join(stems[start : start + length])
                if f"{length}:{self._digest(window)}" in self.sentences:
                    return True
        return False

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
        """Do a list's strings hold all the words asked for between them (a keyword list)?"""
        if not self.all_of:
            return False
        hashes = {self.hash(s) for v in items if isinstance(v, str) for s in stems_of(v)}
        return self.all_of <= hashes

    def redact_value(self, value: Any) -> Any:
        """A JSON value with every string redacted (keys kept); in a list whose strings hold
        all the words asked for between them, each segment holding one of them.  Equal to
        `value` when nothing in it holds the forgotten text."""
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


def _walk(root: Path, rel: str) -> Iterator[str]:
    """Regular files under `root/rel` (never through a link), vault-relative."""
    base = root / rel
    try:
        st = os.lstat(base)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        yield rel
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name in BOOKKEEPING or not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            rel_path = os.path.relpath(path, root)
            if not is_utf8_name(rel_path):  # it could hold what goes, and no record can name it
                shown = os.fsencode(rel_path).decode("utf-8", "replace")
                raise BadInput(f"{shown} has a name that is not UTF-8 text: rename it, then forget again")
            yield rel_path


def user_files(vault: Vault, user: str) -> list[str]:
    """Every live file of `user`'s area, vault-relative, in a stable order."""
    root = vault.root
    found = list(_walk(root, f"users/{user}"))
    found += _walk(root, f"outbox/{user}")
    found += _walk(root, f"archive/stubs/{user}")
    found += _walk(root, f"archive/expired/users/{user}")
    notes = root / "observability" / "interventions"
    if notes.is_dir():
        found += sorted(
            f"observability/interventions/{n}" for n in os.listdir(notes) if f"-{user}-turn_" in n
        )
    found += sorted(inbox_copies(vault, user))
    return found


def inbox_copies(vault: Vault, user: str) -> set[str]:
    """`inbox/processed/…` files that became turns of `user` (their `inbox_file`)."""
    copies: set[str] = set()
    for folder in vault.layout.turn_dirs(user):
        record = first_event(vault.root, folder / EVENTS_FILE)
        name = (record.get("data") or {}).get("inbox_file") if record is not None else None
        if isinstance(name, str) and name.startswith("inbox/processed/") and ".." not in name:
            if os.path.isfile(vault.root / name) and not os.path.islink(vault.root / name):
                copies.add(name)
    return copies


def archived_rows(vault: Vault, user: str) -> Iterator[tuple[Path, str, str, bytes]]:
    """(part file, turn, path in the turn folder, bytes) of each archived file of `user`."""
    from ..archive._common import store_of

    store = store_of(vault)
    for part in store.parts():
        for (owner, turn), files in store.read_part(part).turns.items():
            if owner == user:
                for entry in files.files:
                    if not entry.is_dir:
                        yield part, turn, entry.path, entry.data


def segments_of_file(rel: str, data: bytes) -> Iterator[str]:
    """A file's text as strings: a JSON file's strings (keys too) one by one, else its text."""
    name = rel.rsplit("/", 1)[-1]
    if name.endswith((".json", ".jsonl")) or name == "events.jsonl":
        for line in data.split(b"\n") if name.endswith(".jsonl") else [data]:
            if not line.strip():
                continue
            with suppress(orjson.JSONDecodeError):
                yield from _strings(orjson.loads(line))
                continue
            yield line.decode("utf-8", errors="replace")
        return
    yield data.decode("utf-8", errors="replace")
    yield rel  # a file's name says what it holds too (a memory is named after its words)


def file_tainted(matcher: Matcher, rel: str, data: bytes) -> bool:
    """Does any segment of the file hold the forgotten text?"""
    return any(matcher.any_tainted(text) for text in segments_of_file(rel, data))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        if value.get("type") == "forgotten":  # a forgetting's own record: hashes only
            return
        for key, item in value.items():
            yield key
            yield from _strings(item)


def redact_file(rel: str, data: bytes, matcher: Matcher) -> bytes | None:
    """The file's bytes with the forgotten text cut out; None: the file goes (a memory)."""
    name = rel.rsplit("/", 1)[-1]
    if name.endswith(".jsonl"):
        out = []
        for line in data.split(b"\n"):
            try:
                value = orjson.loads(line) if line.strip() else None
            except orjson.JSONDecodeError:  # a line that is not JSON is text
                text = line.decode("utf-8", errors="replace")
                redacted = matcher.redact(text)
                out.append(line if redacted == text else redacted.encode("utf-8"))
                continue
            new = matcher.redact_value(value)
            out.append(line if new == value else orjson.dumps(new))
        return b"\n".join(out)
    if name.endswith(".json"):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = None
        if value is not None:
            new = matcher.redact_value(value)
            if new == value:
                return data
            indented = b"\n  " in data
            option = orjson.OPT_INDENT_2 if indented else 0
            return orjson.dumps(new, option=option) + (b"\n" if indented else b"")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # not text: left as it is, and the proof names it if it holds the words
    if not matcher.any_tainted(text):
        return data
    parts = rel.split("/")
    if len(parts) >= 4 and parts[0] == "users" and parts[2] == "memories" and name.endswith(".md"):
        return None  # a memory that says it: the memory goes
    if name.endswith(".md"):
        return _redact_markdown(rel, text, matcher, entries=rel.endswith(ENTRY_DOCS)).encode("utf-8")
    return matcher.redact(text).encode("utf-8")


def _redact_markdown(rel: str, text: str, matcher: Matcher, *, entries: bool) -> str:
    """A markdown document redacted; an entry of preferences.md / facts.md loses its whole line."""
    from events.documents import parse_document, render_document
    from events.errors import FrontmatterError

    try:
        parsed = parse_document(text, rel)
    except FrontmatterError:
        return matcher.redact(text)
    front = matcher.redact_value(dict(parsed.frontmatter)) if parsed.has_frontmatter else {}
    if isinstance(front.get("keywords"), list):
        front["keywords"] = [k for k in front["keywords"] if k != REDACTED]
    body = parsed.body
    if entries:
        body = "\n".join(
            line for line in body.split("\n") if not (line.startswith("- ") and matcher.any_tainted(line))
        )
    body = matcher.redact(body)
    return render_document(front, body) if parsed.has_frontmatter else body

"""Identity anchors: the lines of a user's facts.md that say who they are (name, work,
home…) and so always reach the cold tier (the rules are in `memory.tiers`' docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from events.documents import parse_document
from events.errors import NotInVault
from events.fsio import read_vault_file
from events.layout import validate_user_id

from ..vault import Vault
from .store import Entry, parse_entries

__all__ = ["Anchor", "identity_anchors"]

_TAG = re.compile(r"(?<!\S)#identity\b", re.I)
_NOT_TAG = re.compile(r"(?<!\S)#not-identity\b", re.I)
_LEADING_KEY = re.compile(r"^([A-Za-z][\w \-]{0,30}?):\s+(\S.*)$")
_LEADS = {"works": "work", "lives": "location"}
_SOURCE_TURN = re.compile(r"turns/(turn_\d{6,})/")


@dataclass(frozen=True)
class Anchor:
    """One identity fact; `text` is what the cold tier holds of it (maybe cut)."""

    key: str  # normalised identity key ('' for a tagged line without one)
    value: str
    statement: str  # the fact as given to the model: "Name: Alex", "Lives in Berlin"
    line: int
    source_turn: str | None
    doc_id: str
    doc_path: str
    text: str = ""
    tokens: int = 0
    truncated: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "line": self.line,
            "source_turn": self.source_turn,
            "doc_id": self.doc_id,
            "tokens": self.tokens,
            "truncated": self.truncated,
        }


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def identity_key(entry: Entry, keys: Iterable[str]) -> tuple[str, str, str] | None:
    """(normalised key, value, statement) when a facts.md line is an identity anchor."""
    raw = f"{entry.key or ''} {entry.value}"
    if _NOT_TAG.search(raw):
        return None
    tagged = bool(_TAG.search(raw))
    value = " ".join(_TAG.sub("", entry.value).split())
    wanted = {_norm_key(k) for k in keys}
    if entry.key:
        shown = " ".join(_TAG.sub("", entry.key).split())
        key = _norm_key(shown)
        return (key, value, f"{shown}: {value}") if tagged or key in wanted else None
    match = _LEADING_KEY.match(value)
    if match and (tagged or _norm_key(match.group(1)) in wanted):
        return _norm_key(match.group(1)), match.group(2).strip(), value
    lead = value.split(" ", 1)[0].lower()
    if lead in _LEADS and _LEADS[lead] in wanted:
        return _LEADS[lead], value, value
    return ("", value, value) if tagged else None


def identity_anchors(vault: Vault, user: str, keys: Iterable[str]) -> list[Anchor]:
    """The identity anchors of `user` (facts.md), in file order, the last statement per key."""
    rel = f"users/{validate_user_id(user)}/facts.md"
    try:
        raw, _ = read_vault_file(vault.root, rel)
        text = raw.decode("utf-8")
    except (OSError, NotInVault, UnicodeDecodeError):
        return []
    body = parse_document(text, rel).body
    keys = list(keys)
    found: dict[str, Anchor] = {}
    for entry in parse_entries(body):
        hit = identity_key(entry, keys)
        if hit is None:
            continue
        key, value, statement = hit
        source = _SOURCE_TURN.search(entry.note or "")
        slot = key or " ".join(value.lower().split())
        found.pop(slot, None)  # re-inserted: the latest statement, at its own position
        found[slot] = Anchor(
            key=key,
            value=value,
            statement=statement,
            line=entry.line,
            source_turn=source.group(1) if source else None,
            doc_id=f"{user}/facts",
            doc_path=rel,
        )
    return list(found.values())

"""Memory: the unified search, save and retrieve API over a vault."""

from .api import SCOPES, ArchiveSource, Expansion, Memory, Retrieved, SearchArgs, TrustLookup
from .store import Entry, SavedDoc, parse_entries

__all__ = [
    "SCOPES",
    "ArchiveSource",
    "Entry",
    "Expansion",
    "Memory",
    "Retrieved",
    "SearchArgs",
    "SavedDoc",
    "parse_entries",
    "TrustLookup",
]

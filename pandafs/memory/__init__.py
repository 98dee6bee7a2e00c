"""Memory: the unified search, save and retrieve API over a vault."""

from .api import SCOPES, Memory, Retrieved, SearchArgs
from .store import Entry, SavedDoc, parse_entries

__all__ = ["SCOPES", "Entry", "Memory", "Retrieved", "SearchArgs", "SavedDoc", "parse_entries"]

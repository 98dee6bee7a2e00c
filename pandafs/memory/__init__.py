"""Memory: the unified search, save and retrieve API over a vault.

What only saving, retrieving or the memory tool needs (`.store`, `.retrieved`, and
`SearchArgs`, a pydantic model, from `.args`) is imported when first used, so
`pandafs search` never builds it.
"""

from typing import TYPE_CHECKING

from events.lazy import lazy_exports

from .api import SCOPES, Memory

if TYPE_CHECKING:
    from .args import SearchArgs
    from .retrieved import ArchiveSource, Expansion, Retrieved
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
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "SearchArgs": ".args",
        **dict.fromkeys(("ArchiveSource", "Expansion", "Retrieved"), ".retrieved"),
        **dict.fromkeys(("Entry", "SavedDoc", "parse_entries"), ".store"),
    },
)

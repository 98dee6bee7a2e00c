"""Memory: the unified search, save and retrieve API over a vault.

`SearchArgs` (a pydantic model) is imported from `.args` when first used, so
`pandafs search` never builds it.
"""

from typing import TYPE_CHECKING

from events.lazy import lazy_exports

from .api import SCOPES, Memory
from .retrieved import ArchiveSource, Expansion, Retrieved, TrustLookup
from .store import Entry, SavedDoc, parse_entries

if TYPE_CHECKING:
    from .args import SearchArgs

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

__getattr__, __dir__ = lazy_exports(__name__, globals(), {"SearchArgs": ".args"})

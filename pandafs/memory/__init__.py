"""Memory: the unified search, save and retrieve API over a vault."""

from typing import TYPE_CHECKING, Any

from .api import SCOPES, ArchiveSource, Expansion, Memory, Retrieved, TrustLookup
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

if TYPE_CHECKING:
    from .args import SearchArgs


def __getattr__(name: str) -> Any:
    """`SearchArgs` is built (with pydantic) only when first asked for."""
    if name == "SearchArgs":
        from .args import SearchArgs

        return SearchArgs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Builds the `Memory` everything above the learning loop and the archive uses.

The memory layer knows nothing of either: this is where they are handed to it — the
learning loop's derived trust (read when a document is indexed) and the archive's
originals of archived turns (read when one is retrieved).  Each is loaded on first
use, so a search that indexes nothing and retrieves nothing loads neither.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .memory import Memory
from .vault import Vault

if TYPE_CHECKING:
    from .memory import Expansion, TrustLookup

__all__ = ["open_memory"]


def open_memory(vault: Vault) -> Memory:
    """Search, save and retrieve over `vault`, with trust and the archive attached."""

    def archive(doc_id: str, now: datetime | None) -> Expansion:
        from .archive import expand_turn

        return expand_turn(vault, doc_id, now=now)

    return Memory(vault, trust=_lazy_trust(vault), archive=archive)


def _lazy_trust(vault: Vault) -> TrustLookup:
    reader: TrustLookup | None = None

    def trust(doc_id: str) -> float | None:
        nonlocal reader
        if reader is None:
            from .learning.state import trust_lookup

            reader = trust_lookup(vault)
        return reader(doc_id)

    return trust

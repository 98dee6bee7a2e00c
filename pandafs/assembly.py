"""Builds the `Memory` the upper layers use, with derived trust and the archive, loaded on first use."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import TYPE_CHECKING

from indexers.writer import Learned

from .memory.api import Memory
from .vault import Vault

if TYPE_CHECKING:
    from .memory.retrieved import Expansion

__all__ = ["open_memory"]


def open_memory(vault: Vault) -> Memory:
    """Search, save and retrieve over `vault`, with trust and the archive attached."""

    def archive(doc_id: str, now: datetime | None) -> Expansion:
        from .archive import expand_turn

        return expand_turn(vault, doc_id, now=now)

    return Memory(vault, learned=_lazy_learned(vault), archive=archive)


def _lazy_learned(vault: Vault) -> Learned:
    """`learning.state.learned_of`, its readers made when the indexer first asks."""

    @functools.cache
    def learned() -> Learned:
        from .learning.state import learned_of

        return learned_of(vault)

    def trust(doc_id: str) -> float | None:
        found = learned().trust
        return found(doc_id) if found is not None else None

    def shared(doc_id: str) -> bool:
        found = learned().shared
        return found is not None and found(doc_id)

    return Learned(trust=trust, shared=shared)

"""What the learning-loop tests share: a settable clock, a pipeline on it, frontmatter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from events.documents import parse_document
from pandafs.learning.engine import Learning, SyncReport
from pandafs.learning.state import LearnedReader
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

__all__ = ["T0", "cache_json", "clock", "front_of", "pipeline", "sync"]

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> dict[str, datetime]:
    return {"t": T0}


@pytest.fixture
def pipeline(vault: Vault, clock: dict[str, datetime]) -> Iterator[Pipeline]:
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: clock["t"]) as p:
        yield p


def front_of(vault: Vault, rel: str) -> dict[str, Any]:
    return parse_document((vault.root / rel).read_text(encoding="utf-8")).frontmatter


def sync(vault: Vault, *, memory: Memory | None = None) -> SyncReport:
    """Fold every turn completed since the last sync and materialise what changed (what a
    Save, a promote or stats does first)."""
    with Learning(vault, memory).open() as engine:
        return engine.sync()


def cache_json(vault: Vault) -> dict[str, Any]:
    """The state the learning cache's files say, as JSON values (empty: no readable cache),
    read as the indexer's readers read it."""
    return LearnedReader(vault)._state().dump()

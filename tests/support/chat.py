"""A conversation on the offline backend whose clock moves five minutes per turn."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Chat:
    """A pipeline on a clock that moves five minutes per turn."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.now = START

    def ask(self, query: str, user: str = "alice") -> Any:
        self.now += timedelta(minutes=5)
        return self.pipeline.ask(query, user=user)


@contextmanager
def chatting(vault: Vault) -> Iterator[Chat]:
    box: dict[str, Chat] = {}
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: box["c"].now) as pipeline:
        box["c"] = Chat(pipeline)
        yield box["c"]

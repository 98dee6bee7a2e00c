"""A conversation on the offline backend whose clock moves five minutes per turn."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.turn_import.run import import_turns
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


def import_history(
    vault: Vault, folder: Path, pairs: Sequence[tuple[str, str]], stamps: Sequence[datetime]
) -> None:
    """alice's (query, response) pairs imported as past turns, one at each stamp."""
    lines = [
        {
            "user": "alice",
            "external_id": f"s-{n}",
            "timestamp": when.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "query": query,
            "response": response,
        }
        for n, ((query, response), when) in enumerate(zip(pairs, stamps, strict=True))
    ]
    source = folder / "turns.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_turns(vault, source)

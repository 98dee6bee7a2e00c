"""`pandafs search --batch`: one JSON query per line in, one JSON hit list (or error) per line out.

Its own module because the lines are checked by a pydantic model, which a single
`pandafs search` should not pay to build.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import orjson
from pydantic import Field, ValidationError

from events.errors import EventsError

from ..errors import PandaError
from ..memory import Memory
from ..memory.args import SearchArgs

__all__ = ["BatchQuery", "batch_search"]


class BatchQuery(SearchArgs):
    """One line of `search --batch` (DESIGN §8): the search arguments, whose search it
    is, and content types spelled `types`."""

    user: str | None = None
    content_types: list[str] = Field(default_factory=list, validation_alias="types")
    limit: int = Field(10, ge=1, le=1000)
    now: datetime | None = Field(None, description="search as of this time (time words resolve to it)")


def batch_search(memory: Memory, source: Path) -> int:
    """Answer each line in order; the number of lines that failed."""
    failed = 0
    with source.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                line = BatchQuery.model_validate(orjson.loads(raw))
                now = line.now.replace(tzinfo=UTC) if line.now and line.now.tzinfo is None else line.now
                out: Any = memory.search(line.query, user=line.user, now=now, **line.search_kwargs())
            except orjson.JSONDecodeError as exc:
                out = {"error": f"not valid JSON: {exc}"}
            except ValidationError as exc:
                err = exc.errors()[0]
                out = {"error": f"{'.'.join(map(str, err['loc']))}: {err['msg']}"}
            except (PandaError, EventsError) as exc:
                out = {"error": str(exc)}
            failed += isinstance(out, dict)
            click.echo(orjson.dumps(out).decode())
    return failed

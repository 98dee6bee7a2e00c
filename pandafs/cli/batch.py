"""`pandafs search --batch`: one JSON query per line in, one JSON hit list (or error) per line out.

Its own module because the lines are checked by a pydantic model, which a single
`pandafs search` should not pay to build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson
from pydantic import ValidationError

from events.clock import aware
from events.errors import EventsError

from ..errors import PandaError
from ..memory.api import Memory
from ..memory.args import BatchQuery

__all__ = ["batch_search"]


def batch_search(memory: Memory, source: Path) -> int:
    """Answer each line in order; the number of lines that failed."""
    failed = 0
    with source.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                line = BatchQuery.model_validate(orjson.loads(raw))
                now = aware(line.now) if line.now else line.now
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

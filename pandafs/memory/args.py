"""The search arguments of the memory tool and of `search --batch` as pydantic models.

`SearchArgs` is built from `indexers.request.SearchRequest`, the one shape of search
arguments: each of its fields with `tool` metadata becomes a field here, under its
tool name, with its description and bounds.  `BatchQuery`, a line of `search
--batch`, adds whose search it is and when.  Only the callers that validate tool or
batch input import this module, so `pandafs search` starts without building them.
"""

from __future__ import annotations

import dataclasses
import typing
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from indexers.request import SearchRequest

__all__ = ["TOOL_FIELDS", "BatchQuery", "SearchArgs"]

TOOL_FIELDS: tuple[tuple[str, str, dict[str, Any]], ...] = tuple(
    (f.name, f.metadata["tool"]["name"] or f.name, f.metadata["tool"])
    for f in dataclasses.fields(SearchRequest)
    if "tool" in f.metadata
)
"""(name in `SearchRequest` and `Memory.search`, name in the tool, spec) per tool argument."""


class _SearchArgsBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def search_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `Memory.search` besides the query and the user."""
        return {name: getattr(self, tool) for name, tool, _ in TOOL_FIELDS if name != "query"}


def _field(name: str, hint: Any, spec: dict[str, Any], default: Any) -> tuple[Any, Any]:
    if "choices" in spec:
        hint = Literal[spec["choices"]] | None
    elif hint == tuple[str, ...]:
        hint = list[str]
    bounds = {k: spec[k] for k in ("ge", "le") if k in spec}
    description = spec.get("description")
    if spec.get("required"):
        return hint, Field(description=description, **bounds)
    if isinstance(default, tuple):
        return hint, Field(default_factory=list, description=description, **bounds)
    return hint, Field(spec.get("default", default), description=description, **bounds)


def _build() -> type[_SearchArgsBase]:
    hints = typing.get_type_hints(SearchRequest)
    defaults = {f.name: f.default for f in dataclasses.fields(SearchRequest)}
    fields = {tool: _field(name, hints[name], spec, defaults[name]) for name, tool, spec in TOOL_FIELDS}
    return create_model(  # type: ignore[call-overload,no-any-return]
        "SearchArgs",
        __base__=_SearchArgsBase,
        __doc__="The arguments of `memory.search` as data: the Planner's tool and `search --batch`.",
        __module__=__name__,
        **fields,
    )


SearchArgs = _build()


class BatchQuery(SearchArgs):  # type: ignore[valid-type,misc]
    """One line of `search --batch` (DESIGN §8): the search arguments, whose search it
    is, and content types spelled `types`."""

    user: str | None = None
    content_types: list[str] = Field(default_factory=list, validation_alias="types")
    limit: int = Field(10, ge=1, le=1000)
    now: datetime | None = Field(None, description="search as of this time (time words resolve to it)")

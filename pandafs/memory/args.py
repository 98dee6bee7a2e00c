"""`SearchArgs`: the arguments of `memory.search` as a pydantic model, for callers that
receive them as data (the Planner's tool call, a line of `search --batch`).

Apart from `memory.api` so that `pandafs search` does not build a pydantic model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SearchArgs"]


class SearchArgs(BaseModel):
    """The arguments of `memory.search` as data: the Planner's tool and `search --batch`."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="natural language or keywords")
    topic: str | None = Field(None, description="hierarchical topic filter, e.g. pet.hamster")
    content_types: list[str] = Field(default_factory=list, description="e.g. preference, research")
    scope: Literal["new", "user", "global"] | None = None
    min_quality: float | None = Field(None, ge=0, le=1)
    include_expired: bool = False
    limit: int = Field(5, ge=1, le=50)
    after: datetime | None = Field(
        None, description="only documents created at or after this date/time (ISO-8601)"
    )
    before: datetime | None = Field(
        None, description="only documents created before this date/time (ISO-8601)"
    )

    def search_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `Memory.search` besides the query and the user."""
        return {
            "topic_filter": self.topic,
            "content_types": self.content_types,
            "scope": self.scope,
            "min_quality": self.min_quality,
            "include_expired": self.include_expired,
            "limit": self.limit,
            "after": self.after,
            "before": self.before,
        }

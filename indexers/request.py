"""What a search asks for (`SearchRequest`) and the weights it ranks by (`Ranking`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .query import Lexicon


@dataclass(frozen=True)
class Ranking:
    """Weights and switches of the ranking formula (docs/search.md).

    No defaults here: a `Ranking` is built from `[search]` in pandafs.toml, whose
    settings class (`pandafs.config.sections.SearchConfig`) holds each default, its
    bounds and its meaning, once."""

    quality_weight: float
    freshness_weight: float
    freshness_half_life_days: float
    trust_weight: float
    topic_boost: float
    title_boost: float
    keywords_boost: float
    synonym_weight: float
    prefix_weight: float
    spread_weight: float
    neighbour_weight: float
    episode_weight: float
    expand_episodes: int
    episode_gap_minutes: float
    episode_reach: int
    latest_weight: float
    latest_band: float
    episode_cap: int
    candidate_pool: int
    feedback_docs: int
    feedback_terms: int
    feedback_weight: float
    time_words: bool
    time_weight: float
    stop_words: bool
    framing: bool
    word_forms: bool

    def lexicon(self) -> Lexicon:
        """Which lexical resources of `indexers.query` the query planner uses."""
        return Lexicon(
            stop_words=self.stop_words,
            framing=self.framing,
            word_forms=self.word_forms,
        )

    def field_boosts(self) -> dict[str, float]:
        boosts = {"title": self.title_boost, "keywords": self.keywords_boost, "body": 1.0}
        return {name: boost for name, boost in boosts.items() if boost > 0}


SCOPES = ("new", "user", "global")
"""Values of a document's `scope` (and of the search filter of that name)."""


def _tool(description: str | None = None, *, name: str | None = None, **spec: Any) -> dict[str, Any]:
    """Field metadata: the field is an argument of the memory tool (and `search --batch`),
    named `name` there (default: its own name); `spec` adds `required`, `default`,
    `choices` and pydantic bounds (`ge`, `le`) for the tool's JSON schema."""
    return {"tool": {"name": name, "description": description, **spec}}


@dataclass(frozen=True)
class SearchRequest:
    """What a search asks for: the one shape of search arguments.

    `Memory.search` takes these fields as keywords under the same names; the fields
    with `tool` metadata are the memory tool's arguments and `search --batch`'s
    (`pandafs.memory.args` builds their JSON schema from this class), where
    `topic_filter` is spelled `topic` (the tool has no boost topic).
    """

    query: str = field(default="", metadata=_tool("natural language or keywords", required=True))
    user: str | None = None
    topic_filter: str | None = field(
        default=None, metadata=_tool("hierarchical topic filter, e.g. pet.hamster", name="topic")
    )
    topic: str | None = None
    """The conversation's current topic: a boost, not a filter."""
    content_types: tuple[str, ...] = field(default=(), metadata=_tool("e.g. preference, research"))
    scope: str | None = field(default=None, metadata=_tool(choices=SCOPES))
    min_quality: float | None = field(default=None, metadata=_tool(ge=0, le=1))
    include_expired: bool = field(default=False, metadata=_tool())
    limit: int = field(default=10, metadata=_tool(default=5, ge=1, le=50))
    now: datetime | None = None
    exclude_ids: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    snippets: bool | int = True  # every hit's, none, or the first that many hits'
    after: datetime | None = field(  # created at or after
        default=None, metadata=_tool("only documents created at or after this date/time (ISO-8601)")
    )
    before: datetime | None = field(  # created strictly before
        default=None, metadata=_tool("only documents created before this date/time (ISO-8601)")
    )

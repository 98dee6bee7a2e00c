"""What a search asks for (`SearchRequest`) and the weights it ranks by (`Ranking`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .query import Lexicon


@dataclass(frozen=True)
class Ranking:
    """Weights of the ranking formula (values come from `[search]` in pandafs.toml)."""

    quality_weight: float = 0.5
    freshness_weight: float = 0.25
    freshness_half_life_days: float = 30.0
    trust_weight: float = 0.2
    topic_boost: float = 0.5
    title_boost: float = 0.25
    keywords_boost: float = 1.5
    synonym_weight: float = 0.7
    prefix_weight: float = 0.5
    spread_weight: float = 0.5
    neighbour_weight: float = 0.4
    episode_weight: float = 0.2
    expand_episodes: int = 8
    episode_gap_minutes: float = 30.0
    latest_weight: float = 1.0
    latest_band: float = 0.4
    episode_cap: int = 3
    candidate_pool: int = 60
    time_words: bool = True
    time_weight: float = 1.0
    stop_words: bool = True
    framing: bool = True
    word_forms: bool = True

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


@dataclass(frozen=True)
class SearchRequest:
    query: str = ""
    user: str | None = None
    topic_filter: str | None = None
    topic: str | None = None
    content_types: tuple[str, ...] = ()
    scope: str | None = None
    min_quality: float | None = None
    include_expired: bool = False
    limit: int = 10
    now: datetime | None = None
    exclude_ids: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    snippets: bool = True  # reading each hit's file for a snippet is half the cost of a search
    after: datetime | None = None  # created at or after
    before: datetime | None = None  # created strictly before

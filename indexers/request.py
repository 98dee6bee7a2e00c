"""What a search asks for (`SearchRequest`) and the weights it ranks by (`Ranking`)."""

import typing
from datetime import datetime
from functools import cache
from typing import Annotated, Any, NamedTuple


class Ranking(NamedTuple):
    """Weights and switches of the ranking formula (docs/search.md), built from `[search]`:
    `pandafs.config.sections.SearchConfig` holds each default, its bounds and its meaning."""

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
    coverage_k1: float
    expand_episodes: int
    episode_gap_minutes: float
    episode_reach: int
    latest_weight: float
    latest_band: float
    episode_cap: int
    candidate_pool: int
    feedback_docs: int
    feedback_always: bool
    feedback_terms: int
    feedback_weight: float
    time_words: bool
    time_weight: float
    stop_words: bool
    framing: bool
    word_forms: bool

    def field_boosts(self) -> dict[str, float]:
        boosts = {"title": self.title_boost, "keywords": self.keywords_boost, "body": 1.0}
        return {name: boost for name, boost in boosts.items() if boost > 0}


SCOPES = ("new", "user", "global")
"""Values of a document's `scope` (and of the search filter of that name)."""
UNITS = ("turn", "episode")
"""What one hit stands for: a document (a turn), or a conversation (its best turn)."""


class Argument(NamedTuple):
    """One search argument as the doors spell it: the field of `SearchRequest` (and keyword
    of `Memory.search`) `name`, the memory tool's argument `tool`, the CLI option `flags`,
    what it means, and its bounds.  The tool may have its own default and upper bound
    (a model asks for few hits)."""

    name: str
    hint: Any
    default: Any
    tool: str
    flags: tuple[str, ...]
    description: str
    choices: tuple[str, ...] | None = None
    ge: float | None = None
    le: float | None = None
    required: bool = False
    tool_default: Any = None
    tool_le: float | None = None


def _arg(description: str, *flags: str, tool: str | None = None, **spec: Any) -> dict[str, Any]:
    """A field's `Annotated` metadata: the field is a search argument of every door (see `Argument`)."""
    return {"description": description, "flags": flags, "tool": tool, **spec}


class SearchRequest(NamedTuple):
    """What a search asks for: the one shape of search arguments.

    `Memory.search` takes these fields as keywords under the same names.  The fields
    annotated with `_arg` metadata (`search_arguments()`) are what a person or a model may
    ask for: the memory tool's JSON schema, the MCP signature, `search --batch`'s lines and
    the `pandafs search` options are derived from them.  The rest are set by the caller
    (whose search, when, what to leave out).
    """

    query: Annotated[str, _arg("natural language or keywords", required=True)] = ""
    user: str | None = None
    topic_filter: Annotated[
        str | None, _arg("hierarchical topic filter, e.g. pet.hamster", "--topic", tool="topic")
    ] = None
    topic: str | None = None
    """The conversation's current topic: a boost, not a filter."""
    content_types: Annotated[
        tuple[str, ...], _arg("content types to keep, e.g. preference, research", "--type")
    ] = ()
    scope: Annotated[str | None, _arg("scope filter", "--scope", choices=SCOPES)] = None
    min_quality: Annotated[float | None, _arg("minimum quality", "--min-quality", ge=0, le=1)] = None
    include_expired: Annotated[bool, _arg("also return expired documents", "--include-expired")] = False
    limit: Annotated[
        int, _arg("hits to return", "--limit", "-k", ge=1, le=1000, tool_default=5, tool_le=50)
    ] = 10
    now: datetime | None = None
    exclude_ids: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    snippets: bool | int = True  # every hit's, none, or the first that many hits'
    unit: Annotated[
        str,
        _arg(
            "turn: one hit per document; episode: one per conversation, its best turn standing for it",
            "--unit",
            choices=UNITS,
        ),
    ] = "turn"
    after: Annotated[
        datetime | None, _arg("only documents created at or after this date/time (ISO-8601)", "--after")
    ] = None
    before: Annotated[
        datetime | None, _arg("only documents created before this date/time (ISO-8601)", "--before")
    ] = None


@cache
def search_arguments() -> tuple[Argument, ...]:
    """The search arguments a person or a model may give, in `SearchRequest`'s order."""
    hints = typing.get_type_hints(SearchRequest, include_extras=True)
    return tuple(
        Argument(
            name,
            hint.__origin__,
            SearchRequest._field_defaults[name],
            **{**spec, "tool": spec["tool"] or name},
        )
        for name, hint in hints.items()
        if (spec := getattr(hint, "__metadata__", (None,))[0]) is not None
    )

"""Episodes of the second stage (`indexers.ranking`): what one is, and the time order of
its turns.  Turns that share one time (an import with only the session's date, a burst of
questions) are ordered by turn number, which no re-index or merge moves."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tantivy
from tantivy import FieldType, Occur, Query

from .filters import any_of

_Key = tuple[int, int]  # a document's (segment, doc id) within one searcher
_Ep = tuple[int, int, int]
"""An episode: (SESSION_EP, owner hash, session hash) for turns imported with a session id;
(GAP_EP, owner hash, first turn's time) for a run of turns with no long gap (before the
second stage knows the run, a turn is its own run, keyed by its own time)."""
SESSION_EP, GAP_EP = 1, 2
GAP_SPAN = 12
"""The second stage looks this many gaps either side of a turn for the rest of its run."""
BY_NUMBER = 128
"""A kept slice of an episode of up to this many turns is scored by turn number (one term
query each), a longer one by its time range: a range beside the terms costs several times
the numbers, but thousands of numbers cost more than their range.  An `episode_reach` of
32 keeps slices of at most 65 turns."""


def in_time_order(keys: list[_Key], created: dict[_Key, int], turn: dict[_Key, int]) -> list[_Key]:
    """`keys` sorted in place by (created, turn number, key): three sorts comparing in C,
    each stable (a turn number is unique per user; the key orders only non-turns)."""
    keys.sort()
    keys.sort(key=turn.__getitem__)
    keys.sort(key=created.__getitem__)
    return keys


def reach_slices(size: int, anchors: list[int], reach: int) -> list[tuple[int, int]]:
    """The slices of an episode of `size` turns (in time order) within `reach` turns of its
    anchors (their ascending positions), so a run of thousands of same-time turns costs no
    more than a conversation; a short episode keeps every turn: `[(0, size)]`."""
    if reach <= 0 or size <= 2 * reach + 1:
        return [(0, size)]
    slices: list[tuple[int, int]] = []
    for i in anchors:
        lo, hi = max(0, i - reach), min(size, i + reach + 1)
        if slices and lo <= slices[-1][1]:
            slices[-1] = (slices[-1][0], hi)
        else:
            slices.append((lo, hi))
    return slices


def cap_episodes(ranked: list[_Key], episode_of: dict[_Key, _Ep | None], cap: int) -> list[_Key]:
    """At most `cap` turns of one episode ahead of every other hit: more episodes in a page."""
    seen: dict[_Ep, int] = {}
    first: list[_Key] = []
    later: list[_Key] = []
    for key in ranked:
        ep = episode_of[key]
        if ep is not None:
            seen[ep] = seen.get(ep, 0) + 1
            if seen[ep] > cap:
                later.append(key)
                continue
        first.append(key)
    return first + later


def episodes_query(
    schema: tantivy.Schema,
    owner_name: Callable[[int], str],
    gaps: list[tuple[int, int, int]],
    *,
    sessions: Sequence[int] = (),
    session_spans: Sequence[tuple[int, int, int]] = (),
    kept_turns: dict[int, list[int]] | None = None,
) -> Query:
    """Turns of the second stage (constant score): each owner's session-less turns in each
    span of `gaps`, the turns of `sessions`, each session's turns in each span of
    `session_spans`, and each owner's `kept_turns` by number; `owner_name` names an owner hash."""

    def owner(owner_h: int) -> tuple[Occur, Query]:
        return (Occur.Must, Query.term_query(schema, "owner", owner_name(owner_h)))

    def created(lo: int, hi: int) -> tuple[Occur, Query]:
        return (Occur.Must, Query.range_query(schema, "created", FieldType.Integer, lo, hi))

    parts: list[Query] = []
    if sessions:
        parts.append(any_of(schema, "episode", sessions))
    for episode, lo, hi in session_spans:
        parts.append(
            Query.boolean_query([(Occur.Must, Query.term_query(schema, "episode", episode)), created(lo, hi)])
        )
    for owner_h, numbers in sorted((kept_turns or {}).items()):
        if numbers:
            parts.append(Query.boolean_query([owner(owner_h), (Occur.Must, any_of(schema, "turn", numbers))]))
    for owner_h, lo, hi in gaps:
        session_less = Query.term_query(schema, "episode", 0)
        turns = Query.range_query(schema, "day", FieldType.Integer, 0, None)
        parts.append(
            Query.boolean_query(
                [owner(owner_h), (Occur.Must, session_less), (Occur.Must, turns), created(lo, hi)]
            )
        )
    return Query.const_score_query(
        parts[0] if len(parts) == 1 else Query.boolean_query([(Occur.Should, q) for q in parts]), 0.0
    )


def prefer_order(
    scores: dict[_Key, float],
    members: dict[_Ep, list[_Key]],
    ep_score: dict[_Ep, float],
    created: dict[_Key, int],
    band_share: float,
    weight: float,
    earliest: bool,
) -> None:
    """Among episodes scoring within `band_share` of the best, the later (or earlier) the
    better: each turn's score times 1 + `weight` · its episode's place between the first
    and the last start (`members` in time order)."""
    best = max(ep_score.values())
    band = [e for e, s in ep_score.items() if s > 0 and s >= band_share * best]
    if not band:
        return
    when = {e: created[members[e][0]] for e in band}
    first, last = min(when.values()), max(when.values())
    if last == first:
        return
    for ep in band:
        share = (when[ep] - first) / (last - first)
        boost = 1.0 + weight * ((1.0 - share) if earliest else share)
        for key in members[ep]:
            if key in scores:
                scores[key] *= boost


def one_per_episode(ranked: list[_Key], episode_of: dict[_Key, _Ep | None]) -> list[_Key]:
    """The best turn of each episode in rank order (a document outside any episode is its own)."""
    seen: set[_Ep] = set()
    out: list[_Key] = []
    for key in ranked:
        ep = episode_of[key]
        if ep is not None:
            if ep in seen:
                continue
            seen.add(ep)
        out.append(key)
    return out

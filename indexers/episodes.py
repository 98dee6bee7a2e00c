"""Episodes of the second stage (`indexers.ranking`): what one is, and the time order of
its turns.

Turns of one conversation often share one time: an import whose lines carry only the
session's date, a burst of same-second questions.  Their order within that time is
their turn number (the order the conversation had, as the vault numbered it); before
the index held it (schema 5), ties fell to the document's address in the index, which a
segment merge can change: which turns were a hit's neighbours, and which were within
`episode_reach`, could change after a merge.
"""

from __future__ import annotations

_Key = tuple[int, int]  # a document's (segment, doc id) within one searcher
_Ep = tuple[int, int, int]
"""An episode: (SESSION_EP, owner hash, session hash) for turns imported with a session id;
(GAP_EP, owner hash, first turn's time) for a run of turns with no long gap (before the
second stage knows the run, a turn is its own run, keyed by its own time)."""
SESSION_EP, GAP_EP = 1, 2
GAP_SPAN = 12
"""The second stage looks this many gaps either side of a turn for the rest of its run."""


def in_time_order(keys: list[_Key], created: dict[_Key, int], turn: dict[_Key, int]) -> list[_Key]:
    """`keys` sorted in place by (created, turn number, key): three sorts comparing in C,
    each stable (a turn number is unique per user; the key orders only non-turns)."""
    keys.sort()
    keys.sort(key=turn.__getitem__)
    keys.sort(key=created.__getitem__)
    return keys


def beyond_reach(run: list[_Key], anchors: set[_Key], reach: int) -> list[_Key]:
    """The turns of an episode (`run`, in time order) more than `reach` turns from each of
    its anchors.  A day of back-to-back questions, or an import whose lines share one
    time, is one run by the gap rule, and scoring all of it made a search's cost grow
    with the run (42 ms at 3,000 same-time turns, against 5 ms in sessions).  An episode
    of a conversation's length keeps every turn (the LongMemEval dev split's longest
    session has 25 turns); other stage-1 hits in a cut episode are still scored, without
    their neighbours."""
    if reach <= 0 or len(run) <= 2 * reach + 1:
        return []
    cut: list[_Key] = []
    start = 0  # the first position not yet kept or cut
    for i in (i for i, key in enumerate(run) if key in anchors):
        cut += run[start : max(start, i - reach)]
        start = max(start, i + reach + 1)
    return cut + run[start:]

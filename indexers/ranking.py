"""The two-stage ranking of a search: the arithmetic of its score, per candidate.

The formula, its two stages and what each weight of `[search]` does are written out in
docs/search.md ("Ranking"); the names there (c_g, F, spread_g, window, ep, final) are the
names here.  Filters are constant-score clauses and never change BM25, and nothing is
computed at index time from other documents: a new turn changes no other document.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from datetime import UTC, datetime
from typing import Any

import tantivy

from .episodes import (
    BY_NUMBER,
    GAP_EP,
    SESSION_EP,
    _Ep,
    _Key,
    cap_episodes,
    in_time_order,
    one_per_episode,
    prefer_order,
    reach_slices,
)
from .request import Ranking, SearchRequest
from .schema import GLOBAL_OWNER, _epoch, _h64, _parent, stored_payload


def _idf(n: float, total: float) -> float:
    return math.log(1.0 + (total - n + 0.5) / (n + 0.5))


_Row = tuple[int, int, int, int, Any]  # flat: a search builds thousands (see `add_members`)
"""A stage-2 member: (created, turn number, segment, doc id, its address if not placed yet)."""


class _Scorer:
    """Candidates of one search and the arithmetic of the module docstring's formula."""

    def __init__(
        self,
        searcher: tantivy.Searcher,
        req: SearchRequest,
        ranking: Ranking,
        now: datetime,
        window: tuple[int, int] | None = None,
    ) -> None:
        self.searcher = searcher
        self.ranking = ranking
        want = req.topic or req.topic_filter
        self.want_h = _h64(want) if want else None
        self.want_ph = _h64(_parent(want)) if want else None
        self.now_s = _epoch(now)
        self.window = window
        self.address: dict[_Key, Any] = {}
        self.created: dict[_Key, int] = {}
        self.turn: dict[_Key, int] = {}  # the turn number: the order of same-time turns
        self.episode_of: dict[_Key, _Ep | None] = {}
        self.factor: dict[_Key, float] = {}
        self.base: dict[_Key, float] = {}
        self.terms: dict[_Key, dict[str, float]] = {}
        self.expanded: set[_Ep] = set()
        self.narrowed: set[_Ep] = set()  # the runs, and the sessions cut: scored by the two below
        self.spans: list[tuple[_Ep, int, int]] = []  # (episode, first, last time) of a kept slice
        self.kept_turns: dict[int, list[int]] = {}  # per owner hash, turn numbers kept
        self._owners: dict[int, str] = {}

    def add_hits(self, hits: list[tuple[float, Any]]) -> None:
        """Stage-1 hits with their BM25 (a document already seen keeps its best)."""
        keys = self._place([a for _, a in hits])
        self._factors(keys)
        for (score, _), key in zip(hits, keys, strict=True):
            value = float(score) * self.factor[key]
            if value > self.base.get(key, -1.0):
                self.base[key] = value

    def add_members(self, addresses: list[Any], episodes: list[_Ep], gap_s: int) -> None:
        """Every turn of the expanded episodes; gap episodes are cut into runs here, and a
        run or session longer than a conversation keeps only the turns near its anchors
        (`episodes.reach_slices`); `narrowed` then names the runs and the sessions it cut,
        and `spans` and `kept_turns` the turns the second stage scores in them (a session
        kept whole is scored whole, by its term).  The members are read as fast-field
        columns, only those kept are placed, each one flat tuple (few objects for the
        garbage collector to walk)."""
        anchors = self._anchors(episodes)  # before the runs re-key their turns
        wanted = {ep for ep in episodes if ep[0] == SESSION_EP}
        centres = {(ep[1], ep[2]) for ep in episodes if ep[0] == GAP_EP}
        runs, sessions = self._member_rows(addresses, wanted, bool(centres))
        for owner_h, rows in runs.items():
            rows.sort()  # time order: (created, turn number, key)
            times = [row[0] for row in rows]
            mine = {at for owner, at in centres if owner == owner_h}
            ends = [i for i in range(1, len(times)) if times[i] - times[i - 1] > gap_s]
            for lo, hi in zip([0, *ends], [*ends, len(rows)], strict=True):
                if mine.isdisjoint(times[lo:hi]):  # one run: no gap longer than `gap_s` inside
                    continue
                ep = (GAP_EP, owner_h, times[lo])
                wanted.add(ep)
                self._keep(rows[lo:hi], ep, anchors)
        for ep, rows in sessions.items():
            rows.sort()
            self._keep(rows, ep, anchors)
        self.expanded = wanted

    def _member_rows(
        self, addresses: list[Any], sessions: set[_Ep], gaps: bool
    ) -> tuple[dict[int, list[_Row]], dict[_Ep, list[_Row]]]:
        """(created, turn number, segment, doc id, address) of each turn of `sessions` and, with `gaps`,
        of each session-less turn, per owner hash and per session: the stage-2 members
        not placed yet (address given) and the stage-1 hits (address None)."""
        runs: dict[int, list[_Row]] = {}
        by_session: dict[_Ep, list[_Row]] = {ep: [] for ep in sessions}
        created, turn = self.created, self.turn
        for key, ep in self.episode_of.items():
            if ep is None:
                continue
            row = (created[key], turn[key], key[0], key[1], None)
            if ep[0] == GAP_EP:
                if gaps:
                    runs.setdefault(ep[1], []).append(row)
            elif ep in by_session:
                by_session[ep].append(row)
        ff = self.searcher.fast_field_values
        names = ("created", "turn", "owner_h", "episode")
        columns = zip(*(ff(n, addresses) for n in names), strict=True)
        known: dict[int, set[int]] = {}  # stage-1 docs per segment: no key tuple per member
        for segment, doc in self.address:
            known.setdefault(segment, set()).add(doc)
        none: set[int] = set()
        for address, (at, number, owner, episode) in zip(addresses, columns, strict=True):
            segment, doc = address.segment_ord, address.doc
            if doc in known.get(segment, none):
                continue
            row = (self.now_s if at is None else at, number or 0, segment, doc, address)
            if episode:
                rows = by_session.get((SESSION_EP, owner, episode))
                if rows is not None:  # else another user's session of the same id
                    rows.append(row)
            elif gaps:
                runs.setdefault(owner, []).append(row)
        return runs, by_session

    def _keep(self, rows: list[_Row], ep: _Ep, anchors: set[_Key]) -> None:
        """Place the turns of episode `ep` (its `rows`, in time order) within reach of its
        anchors (`episodes.reach_slices`); a stage-1 hit stays, as a turn of `ep`, within
        reach or not (scored without its neighbours).  A run, or a session cut, is
        `narrowed`: its kept slices are scored by their turn numbers, or, longer than
        `BY_NUMBER`, by their time range (see there)."""
        at = []
        for key in anchors:
            i = bisect_left(rows, (self.created[key], self.turn[key], *key))
            if i < len(rows) and (rows[i][2], rows[i][3]) == key:
                at.append(i)
        slices = reach_slices(len(rows), sorted(at), self.ranking.episode_reach)
        address, created, turn, episode_of = self.address, self.created, self.turn, self.episode_of
        hits = [i for i, row in enumerate(rows) if row[4] is None]
        for i in hits:
            episode_of[rows[i][2], rows[i][3]] = ep
        for lo, hi in slices:
            for at_s, number, segment, doc, found in rows[lo:hi]:
                if found is not None:
                    key = (segment, doc)
                    address[key], created[key], turn[key], episode_of[key] = found, at_s, number, ep
        if ep[0] == SESSION_EP and slices == [(0, len(rows))]:
            return
        self.narrowed.add(ep)
        numbers = self.kept_turns.setdefault(ep[1], [])
        for lo, hi in slices:
            if hi - lo <= BY_NUMBER:
                numbers.extend(row[1] for row in rows[lo:hi])
            else:
                self.spans.append((ep, rows[lo][0], rows[hi - 1][0]))
        numbers.extend(rows[i][1] for i in hits if not any(lo <= i < hi for lo, hi in slices))

    def _anchors(self, episodes: list[_Ep]) -> set[_Key]:
        """The best stage-1 hit of each of `episodes` as the first stage saw them (a run's
        turns are each their own episode until `add_members` forms the runs)."""
        top = set(episodes)
        at: dict[_Ep, list[_Key]] = {}
        for key in self.base:
            ep = self.episode_of[key]
            if ep is not None and ep in top:
                at.setdefault(ep, []).append(key)
        base, turn = self.base, self.turn
        return {min(keys, key=lambda k: (-base[k], turn[k], k)) for keys in at.values()}

    def _place(self, addresses: list[Any]) -> list[_Key]:
        """Record where each document sits in time (created, episode); its key."""
        keys = [(a.segment_ord, a.doc) for a in addresses]
        known = self.address
        fresh = [(a, k) for a, k in zip(addresses, keys, strict=True) if k not in known]
        if fresh:
            todo = [a for a, _ in fresh]
            ff = self.searcher.fast_field_values
            names = ("created", "turn", "day", "owner_h", "episode")
            columns = zip(*(ff(n, todo) for n in names), strict=True)
            created, turns, episode_of, now_s = self.created, self.turn, self.episode_of, self.now_s
            for (address, key), (at, turn, day, owner, episode) in zip(fresh, columns, strict=True):
                known[key] = address
                at = now_s if at is None else at
                created[key] = at
                turns[key] = turn or 0
                if day is None or day < 0:
                    episode_of[key] = None  # not a turn
                elif episode:
                    episode_of[key] = (SESSION_EP, owner, episode)
                else:
                    episode_of[key] = (GAP_EP, owner, at)
        return keys

    def _factors(self, keys: list[_Key]) -> None:
        """quality · freshness · trust · topic · time window, for the keys that lack it."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.factor]
        if not todo:
            return
        addresses = [self.address[k] for k in todo]
        ff = self.searcher.fast_field_values
        quality, trust = ff("quality", addresses), ff("trust", addresses)
        topic_h, topic_ph = ff("topic_h", addresses), ff("topic_ph", addresses)
        r = self.ranking
        half_life = max(r.freshness_half_life_days, 1e-6)
        for i, key in enumerate(todo):
            age_days = max(0.0, (self.now_s - self.created[key]) / 86400.0)
            f = 1.0 + r.quality_weight * ((quality[i] or 0.0) - 0.5)
            f *= 1.0 + r.freshness_weight * math.pow(2.0, -age_days / half_life)
            t = trust[i]
            if t is not None and t >= 0.0:
                f *= 1.0 + r.trust_weight * (t - 0.5)
            if self.want_h is not None:
                if topic_h[i] == self.want_h:
                    f *= 1.0 + r.topic_boost
                elif topic_ph[i] == self.want_h or topic_h[i] == self.want_ph:
                    f *= 1.0 + r.topic_boost * 0.5
            if self.window is not None and self.window[0] <= self.created[key] < self.window[1]:
                f *= 1.0 + r.time_weight
            self.factor[key] = f

    def owner_name(self, owner_h: int) -> str:
        """The owner (user) whose hash is `owner_h`, from a stage-1 hit's payload."""
        if owner_h not in self._owners:
            eps = self.episode_of
            hit = next((k for k in self.base if (ep := eps[k]) is not None and ep[1] == owner_h), None)
            user = None if hit is None else stored_payload(self.searcher.doc(self.address[hit])).get("user")
            self._owners[owner_h] = user or GLOBAL_OWNER
        return self._owners[owner_h]

    def top_episodes(self, count: int) -> list[_Ep]:
        """The `count` episodes whose best stage-1 turn scores highest."""
        best: dict[_Ep, float] = {}
        for key, score in self.base.items():
            ep = self.episode_of[key]
            if ep is not None and score > best.get(ep, -1.0):
                best[ep] = score
        return sorted(best, key=lambda e: (-best[e], -e[2], e[1]))[:count]

    def set_term_scores(self, stem: str, hits: list[tuple[float, Any]]) -> None:
        """c_g(d) for the expanded episodes' turns that match group `stem`."""
        address = self.address
        found = [(key, score) for score, a in hits if (key := (a.segment_ord, a.doc)) in address]
        self._factors([key for key, _ in found])
        for key, score in found:
            self.terms.setdefault(key, {})[stem] = float(score) * self.factor[key]

    def final(self, order: str | None, per_episode: bool = False) -> list[tuple[float, int, Any, str | None]]:
        """(score, created, address, episode label) best first: see the module docstring.
        With `per_episode`, each episode's best turn only (a document outside any stays)."""
        r = self.ranking
        scores: dict[_Key, float] = {}
        members: dict[_Ep, list[_Key]] = {}
        for key in self.address:
            ep = self.episode_of[key]
            if ep is not None and ep in self.expanded:
                members.setdefault(ep, []).append(key)
            elif key in self.base:
                scores[key] = (1.0 + r.episode_weight) * self.base[key]
        terms, created, beta = self.terms, self.created, r.neighbour_weight
        empty: dict[str, float] = {}
        ep_score: dict[_Ep, float] = {}
        k1 = r.coverage_k1
        for ep, keys in members.items():
            in_time_order(keys, created, self.turn)
            cover: dict[str, float] = {}
            held: dict[str, int] = {}  # per group, the turns of the episode that match it
            for key in keys:
                for stem, value in terms.get(key, empty).items():
                    if value > cover.get(stem, 0.0):
                        cover[stem] = value
                    held[stem] = held.get(stem, 0) + 1
            if k1 > 0:  # BM25's saturation, each turn holding the word one occurrence
                for stem, n in held.items():
                    cover[stem] *= n * (k1 + 1.0) / (n + k1)
            bonus = r.episode_weight * sum(cover.values())
            ep_score[ep] = sum(cover.values())
            last = len(keys) - 1
            for i, key in enumerate(keys):
                own = terms.get(key, empty)
                before = terms.get(keys[i - 1], empty) if i > 0 else empty
                after = terms.get(keys[i + 1], empty) if i < last else empty
                if not (own or before or after):
                    continue
                window = dict(own)
                for side in (before, after):
                    for stem, value in side.items():
                        value *= beta
                        if value > window.get(stem, 0.0):
                            window[stem] = value
                score = sum(window.values())
                if score > 0:
                    scores[key] = score + bonus
        if order is not None and r.latest_weight and ep_score:
            prefer_order(
                scores, members, ep_score, self.created, r.latest_band, r.latest_weight, order == "earliest"
            )
        ranked = sorted(scores, key=lambda k: (-scores[k], -created[k], k))
        if per_episode:
            ranked = one_per_episode(ranked, self.episode_of)
        elif r.episode_cap > 0:
            ranked = cap_episodes(ranked, self.episode_of, r.episode_cap)
        labels: dict[_Ep | None, str | None] = {}  # one per episode: hundreds of hits share one
        out = []
        for k in ranked:
            ep = self.episode_of[k]
            if ep not in labels:
                labels[ep] = self._label(ep)
            out.append((scores[k], created[k], self.address[k], labels[ep]))
        return out

    @staticmethod
    def _label(ep: _Ep | None) -> str | None:
        """How a hit names its episode: the session id, else `gap:` and the run's first time
        (a run's key holds it, whether or not `episode_reach` left that turn out)."""
        if ep is None or ep[0] == SESSION_EP:
            return None  # the session id is in the hit's meta; filled in by the caller
        return "gap:" + datetime.fromtimestamp(ep[2], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

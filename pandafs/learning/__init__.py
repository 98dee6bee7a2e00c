"""The learning loop: how PandaFS gets better with use (docs/memory.md).

trust.py        usage and trust: a pure fold over turn events (the formula is there)
policy.py       scope promotion / demotion rules and their thresholds
engine.py       the incremental fold (sync / rebuild), composed of the parts below
state.py        its cache under indexes/learning/, and what the indexer reads of it
reading.py      a turn's events for the fold: its live folder or its archived part
materialise.py  writing usage / trust / scope into documents and the index
decisions.py    running the scope policy: at Save (on_turn) and for `pandafs promote`
maintenance.py  the hash-chained log of scope changes made outside any turn
promotion.py    `pandafs promote` and `pandafs prune --expired`
catalog.py      the Parquet turn catalog (observability/catalog/)
rollups.py      daily rollups (observability/daily/YYYY-MM-DD.json)
api.py          entry points: sync, rebuild, after_save (Phase 8), trends
"""

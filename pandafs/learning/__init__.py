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

from typing import TYPE_CHECKING

from events.lazy import lazy_exports

if TYPE_CHECKING:
    from .api import CHECKS, after_save, parse_since, rebuild, sync, trends
    from .catalog import Catalog
    from .engine import Learning, SyncReport
    from .maintenance import check_learning, log_path
    from .policy import PROMOTABLE_KINDS, DocState, ScopeDecision, decide, decide_steps
    from .promotion import PromotionReport, PruneReport, promote, prune_expired
    from .rollups import percentile, rollup
    from .rows import CATALOG_SCHEMA, TurnRow, turn_row
    from .trust import Counts, Projection, ScopeRecord, TurnFacts, fold_all, trust_of, turn_facts, verdict

# Loaded on first use (`events.lazy`): search reads trust through `state` alone.
_EXPORTS = {
    "CHECKS": ".api",
    "after_save": ".api",
    "parse_since": ".api",
    "rebuild": ".api",
    "sync": ".api",
    "trends": ".api",
    "CATALOG_SCHEMA": ".rows",
    "Catalog": ".catalog",
    "TurnRow": ".rows",
    "turn_row": ".rows",
    "Learning": ".engine",
    "SyncReport": ".engine",
    "check_learning": ".maintenance",
    "log_path": ".maintenance",
    "PROMOTABLE_KINDS": ".policy",
    "DocState": ".policy",
    "ScopeDecision": ".policy",
    "decide": ".policy",
    "decide_steps": ".policy",
    "PromotionReport": ".promotion",
    "PruneReport": ".promotion",
    "promote": ".promotion",
    "prune_expired": ".promotion",
    "percentile": ".rollups",
    "rollup": ".rollups",
    "Counts": ".trust",
    "Projection": ".trust",
    "ScopeRecord": ".trust",
    "TurnFacts": ".trust",
    "fold_all": ".trust",
    "trust_of": ".trust",
    "turn_facts": ".trust",
    "verdict": ".trust",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

__all__ = [
    "CHECKS",
    "CATALOG_SCHEMA",
    "PROMOTABLE_KINDS",
    "Catalog",
    "Counts",
    "DocState",
    "Learning",
    "Projection",
    "PromotionReport",
    "PruneReport",
    "ScopeDecision",
    "ScopeRecord",
    "SyncReport",
    "TurnFacts",
    "TurnRow",
    "after_save",
    "check_learning",
    "decide",
    "decide_steps",
    "fold_all",
    "log_path",
    "parse_since",
    "percentile",
    "promote",
    "prune_expired",
    "rebuild",
    "rollup",
    "sync",
    "trends",
    "trust_of",
    "turn_facts",
    "turn_row",
    "verdict",
]

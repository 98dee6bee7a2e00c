"""`pandafs rebuild`: every derived artefact, recomputed from the files and events.

1. usage, trust and scope, the turn catalog and the daily rollups (from turn events),
   written into the documents' frontmatter and the trust shards;
2. the full-text index (built beside the live one and swapped in), reading those: each
   document is indexed once, with its trust (folded after the index, every turn whose
   trust changed was indexed a second time, and left a deleted copy that BM25 counts);
3. the per-domain source reliability table and its site notes (from extraction events).

`--user U` rebuilds only that user's index entries (trust comes from the learning
cache, so turns keep theirs).  Delete `indexes/` and run this: the results are the
same as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import learning
from .assembly import open_memory
from .research.reliability import ReliabilityTable, TurnsRead
from .vault import Vault

__all__ = ["rebuild_all"]


def rebuild_all(
    vault: Vault,
    *,
    user: str | None = None,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    stage: Callable[[str], None] | None = None,
    fold_progress: Callable[[int], None] | None = None,
    on_fold_total: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Rebuild it all (see the module docstring); `progress` / `on_total` follow the
    indexing, `fold_progress` / `on_fold_total` the turns the learning fold reads before
    it, `stage` is told what begins."""
    memory = open_memory(vault)
    seen = TurnsRead()  # each events.jsonl is read once, by the learning fold
    folded = None
    if user is None:
        if stage is not None:
            stage("recomputing trust, scope and the turn catalog from every turn's events")
        folded = learning.rebuild(
            vault,
            memory=memory,
            extractions=seen,
            index=False,
            progress=fold_progress,
            on_total=on_fold_total,
        )
    index = memory.rebuild(user=user, progress=progress, on_total=on_total)
    result: dict[str, Any] = index.as_json()
    stages = dict(index.stages)
    if folded is not None:
        stages.update(folded.stages)
        result["learning"] = folded.as_json()
        started = time.perf_counter()
        result["reliability"] = {"domains": len(ReliabilityTable(vault).rebuild(known=seen))}
        stages["research/site rebuild"] = time.perf_counter() - started
    result["stages"] = {k: round(v, 3) for k, v in stages.items()}
    return result

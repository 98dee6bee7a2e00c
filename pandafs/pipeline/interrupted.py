"""Turns whose process died, vault-wide: verify's `interrupted` check and the upkeep job
that closes them (`recovery` handles one turn)."""

from __future__ import annotations

from events.errors import EventsError
from events.fsio import lock_is_held

from ..checks import Problem
from ..turns import INDEXING
from ..vault import Vault
from .recovery import OPEN, UNINDEXED, UNPROJECTED, recover, turn_state
from .turn import Pipeline

__all__ = ["CHECKS", "close_all_interrupted"]

REPAIRED = {
    OPEN: ("interrupted", "events.jsonl"),
    UNPROJECTED: ("missing", "metadata.json"),
    UNINDEXED: ("unindexed", INDEXING),
}
"""How a turn needing recovery is reported, by its `turn_state`: the problem and the file it names."""
UNREPAIRED = {
    OPEN: "the turn never ended (its process died); `verify --repair` closes it as FAIL",
    UNINDEXED: "the turn's index commit never landed (its process died after the answer); "
    "`verify --repair` indexes it",
}


def check_interrupted(vault: Vault, repair: bool) -> list[Problem]:
    """verify's check: every turn left open by a process that died (`--repair` closes it).
    With `repair`, a completed turn left unprojected is re-projected and indexed too; each
    repair is decided again under the turn's lock."""
    problems: list[Problem] = []
    pipeline = None
    try:
        for user in vault.layout.users():
            for folder in vault.layout.turn_dirs(user):
                state = turn_state(vault.root, folder)
                if state is None:
                    continue
                if not repair:  # reported only: what a dead process left open or unindexed
                    if state in UNREPAIRED and not lock_is_held(folder / "events.jsonl"):
                        kind, name = REPAIRED[state]
                        problems.append(Problem(vault.rel(folder / name), kind, UNREPAIRED[state]))
                    continue
                pipeline = pipeline or Pipeline(vault)
                try:
                    what = recover(pipeline, user, folder.name, by="verify --repair", state=state)
                except EventsError:
                    continue  # a damaged log: verify's chain report names it
                if what is not None:  # else a live process holds it, or it ended meanwhile
                    kind, name = REPAIRED[state]
                    problems.append(Problem(vault.rel(folder / name), kind, what, repaired=True))
    finally:
        if pipeline is not None:
            pipeline.close()
    return problems


def close_all_interrupted(vault: Vault) -> dict[str, list[str]]:
    """`watch`'s upkeep job: close every interrupted turn; `{closed, open}` paths."""
    found = check_interrupted(vault, repair=True)
    return {
        "closed": [p.path for p in found if p.repaired],
        "open": [p.path for p in found if not p.repaired],
    }


CHECKS = (check_interrupted,)
"""What verify runs for the pipeline (`pandafs.checks`)."""

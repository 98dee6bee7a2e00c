"""Turns whose process died, vault-wide: verify's `interrupted` check and watch's upkeep
job that closes them and re-projects the complete ones left unprojected (`recovery`
holds how one turn is found, closed and re-projected)."""

from __future__ import annotations

from events.errors import EventsError

from ..checks import Problem
from ..vault import Vault
from .recovery import close_interrupted, find_interrupted, find_unprojected, reproject
from .turn import Pipeline

__all__ = ["CHECKS", "check_interrupted", "close_all_interrupted"]


def check_interrupted(vault: Vault, repair: bool) -> list[Problem]:
    """verify's check: every turn left open by a process that died (`--repair` closes it).

    With `repair`, a complete turn whose process died before projecting it is also
    re-projected and indexed (listed as a repaired `missing`; without `repair` verify's
    own turn checks name its missing files)."""
    problems: list[Problem] = []
    pipeline = None
    try:
        for user in vault.layout.users():
            for folder in vault.layout.turn_dirs(user):
                if repair and find_unprojected(folder):
                    pipeline = pipeline or Pipeline(vault)
                    try:
                        what = reproject(pipeline, user, folder.name)
                    except EventsError:
                        continue  # a damaged log: verify's chain report names it
                    if what is not None:
                        rel = vault.rel(folder / "metadata.json")
                        problems.append(Problem(rel, "missing", what, repaired=True))
                    continue
                if not find_interrupted(folder):
                    continue
                rel = vault.rel(folder / "events.jsonl")
                message = "the turn never ended (its process died); `verify --repair` closes it as FAIL"
                if repair:
                    pipeline = pipeline or Pipeline(vault)
                    what = close_interrupted(pipeline, user, folder.name, by="verify --repair")
                    if what is not None:
                        problems.append(Problem(rel, "interrupted", what, repaired=True))
                        continue
                problems.append(Problem(rel, "interrupted", message))
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

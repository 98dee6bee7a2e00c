"""The plan of one claim: what the claimed file will become, written before any of it
happens, so a restart finishes the same plan."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict


class ClaimPlan(BaseModel):
    """What will become of one claimed file; written before any of it happens."""

    model_config = ConfigDict(extra="ignore")

    v: int = 1
    claim: str
    source: str
    """Where the file was dropped (vault-relative), e.g. `inbox/alice/q.md`."""
    claimed: str
    """Its path inside the claim folder's `query/`, e.g. `alice/q.md`."""
    planned_at: datetime
    planned_fs_ns: int | None = None
    """The file system's clock (`time.time_ns`) when planned: folder mtimes are compared
    with it, not with `planned_at`, which follows the (shiftable) PandaFS clock."""
    decision: Literal["answer", "reject"]
    user: str | None = None
    query_file: str | None = None
    """Where the query ends up (`inbox/processed/NAME`)."""
    turn_key: str | None = None
    """The turn's `turn_started.inbox_file`: the first planned `query_file`, never changed
    (if a stranger takes that name before the move, `query_file` changes, this does not)."""
    answer: str | None = None
    """Where the answer goes (`outbox/{user}/NAME.md`)."""
    after: int = 0
    """Every turn of `user` numbered above this was allocated after the plan."""
    reason: str | None = None
    message: str | None = None
    hint: str | None = None
    rejected: str | None = None
    """`inbox/rejected/NAME` (the query); its explanation is `NAME.error.md`."""
    keep: bool = True
    """False: the rejected entry is not kept at `rejected` (`_parse.Rejection.keep`); the
    inbox's name for it is removed and only `NAME.error.md` is written."""


class Stuck(Exception):
    """A claim that cannot go on now; it stays in `.processing/` and is retried."""

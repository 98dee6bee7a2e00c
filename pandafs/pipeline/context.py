"""What a phase may use: the turn's identity and folder, the vault's services, a clock.

A phase is a function `(ctx, view) -> list[Payload]`: it reads the `TurnView`, may think
(`ctx.think`) and use services, and returns the events it decided on; the orchestrator
appends them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from events.projection import TurnView
from events.schema import TierFailed

from ..config import Config
from ..errors import BadInput, Unreadable
from ..llm.base import Backend
from ..llm.errors import LLMOutputError
from ..llm.usage import Usage
from ..memory.api import Memory
from ..memory.retrieved import Retrieved
from ..tasks.prompts import TASKS
from ..vault import Vault

__all__ = ["RECORD_CACHE", "TurnContext", "context_text", "feedback"]

RECORD_CACHE = "turn_records"
"""`ctx.extras` key of the `memory.turn_records.RecordCache` a Pipeline keeps across its turns."""


@dataclass(eq=False)
class TurnContext:
    """What every phase of one turn works with: the vault, memory, backend, user and clock."""

    vault: Vault
    memory: Memory
    backend: Backend
    user: str
    turn: str
    clock: Callable[[], datetime]
    usage: Usage = field(default_factory=Usage)
    tier_failed: list[TierFailed] = field(default_factory=list)
    """What `read` could not read since last taken (each document is met once a turn)."""
    read_cache: dict[str, Retrieved | None] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Config:
        return self.vault.config

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    def think(self, task_name: str, data: BaseModel) -> Any:
        """Ask the backend for a task's output; usage is added to this phase's tally."""
        task = TASKS[task_name]
        try:
            result, usage = self.backend.run(task, data)
        except LLMOutputError as exc:  # what the failed calls cost still counts
            self.usage = self.usage + (exc.usage or Usage())
            raise
        self.usage = self.usage + usage
        return result

    def read(self, id_or_path: str) -> Retrieved | None:
        """`memory.retrieve`, read once per turn (phases look at the same documents); None
        for one this user cannot read, or that is not there."""
        cache = self.read_cache
        if id_or_path not in cache:
            found: Retrieved | None = None
            try:
                found = self.memory.retrieve(id_or_path, user=self.user, now=self.clock())
            except BadInput:  # not there, or not this user's
                pass
            except Unreadable as exc:  # costs this document, not the turn: said once, as the tier's
                self.tier_failed.append(
                    TierFailed(tier="cold", error_type="Unreadable", message=str(exc)[:500])
                )
            cache[id_or_path] = found
        return cache[id_or_path]

    def take(self) -> tuple[Usage, list[TierFailed]]:
        """What the phase just run spent and could not read; the next starts from nothing."""
        taken = self.usage, self.tier_failed
        self.usage, self.tier_failed = Usage(), []
        return taken


def feedback(view: TurnView, attempt: int) -> list[str]:
    """Why validation did not approve the attempt before `attempt` (nothing for the first)."""
    previous = next((a for a in view.attempts if a.number == attempt - 1), None)
    return list(previous.validation.reasons) if previous and previous.validation else []


def context_text(blocks: Iterable[Any]) -> str:
    """The gathered context's rows as plain lines (`a | b | c`), as the phases' prompts quote them."""
    return "\n".join(" | ".join(row) for block in blocks for row in block.rows)

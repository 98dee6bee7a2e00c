"""What a vault check reports: `Problem`, and the shape of a vault-wide checker.

Each area that keeps something checkable (the archive, the learning loop's logs, the
pipeline's interrupted turns) publishes its checkers as `CHECKS`; `pandafs verify`
runs them beside its own, knowing nothing of how each one works.  A checker returns
Problems; one with `repaired=True` is a repair it made under `--repair`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .vault import Vault

__all__ = ["Checker", "Problem"]


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    message: str
    repaired: bool = False
    """Set by a checker that fixed it under `--repair`: listed as a repair, not a problem."""

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}


Checker = Callable[["Vault", bool], Iterable[Problem]]

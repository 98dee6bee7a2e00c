"""The turn pipeline: phases 0-8 as events.  `Pipeline(vault).ask(query, user=...)` runs
one turn; `resume(user, turn)` finishes one whose process died."""

from .interrupted import CHECKS
from .turn import Pipeline, TurnResult

__all__ = ["CHECKS", "Pipeline", "TurnResult"]

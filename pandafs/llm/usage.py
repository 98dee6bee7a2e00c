"""`Usage`: the tokens a backend spent (every backend returns one with its answer)."""

from typing import NamedTuple

__all__ = ["Usage"]


class Usage(NamedTuple):
    """Tokens spent; `calls` counts completions that returned an answer."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0

    def __add__(self, other: "Usage") -> "Usage":  # type: ignore[override]
        return Usage(
            self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out, self.calls + other.calls
        )

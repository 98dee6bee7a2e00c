"""Token counting for budgets: words and punctuation marks.  Close to a
BPE tokenizer's count on English prose, with no model and the same result everywhere."""

from __future__ import annotations

import re

__all__ = ["count_tokens", "truncate_tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def truncate_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` with at most `budget` tokens (cut at a token end)."""
    if budget <= 0:
        return ""
    for count, match in enumerate(_TOKEN.finditer(text), 1):
        if count == budget:
            return text[: match.end()]
    return text

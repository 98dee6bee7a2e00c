"""Token counting for budgets: words and punctuation marks.  Close to a
BPE tokenizer's count on English prose, with no model and the same result everywhere."""

from __future__ import annotations

import re

__all__ = ["count_tokens", "truncate_tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_ASCII = bytes(range(128))


def _class(char: str) -> str:
    """A character's class as `_TOKEN` sees it: "a" in a word, " " a space, "." a mark."""
    return "a" if char.isalnum() or char == "_" else " " if char.isspace() else "."


_CLASSES = bytes(ord(_class(chr(code))) if code < 128 else ord(".") for code in range(256))


def count_tokens(text: str) -> int:
    """`_TOKEN`'s matches, counted on the text mapped to class letters (marks ".", words runs
    of "a") with bytes' faster `translate` and `count`; text mostly beyond ASCII: the regex."""
    if not text.isascii():
        others = text.encode("utf-8", "surrogatepass").translate(None, _ASCII)
        if len(others) > len(text) >> 4:
            return len(_TOKEN.findall(text))
        for char in set(others.decode("utf-8", "surrogatepass")):
            text = text.replace(char, _class(char))
    classes = text.encode("ascii").translate(_CLASSES)
    return classes.count(b".") + (b" " + classes.replace(b".", b" ")).count(b" a")


def truncate_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` with at most `budget` tokens (cut at a token end)."""
    if budget <= 0:
        return ""
    for count, match in enumerate(_TOKEN.finditer(text), 1):
        if count == budget:
            return text[: match.end()]
    return text

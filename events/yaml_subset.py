"""Reading and writing the YAML subset PandaFS itself writes, without PyYAML (its import and
object construction).  Each returns None for anything it is not sure of, and
`events.documents` falls back to PyYAML."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any

from .stamps import format_ts

__all__ = ["fast_dump", "fast_frontmatter", "single_quoted"]

# The shapes: `key: scalar`, `key:` + block list of scalars, `key:` + one level of
# `  key: scalar`.  Not: quotes other than one-line single quotes, flow style, comments,
# anchors, deeper nesting, a scalar PyYAML might resolve differently.  The writer also
# spells deeper mappings and empty lists (`key: []`), which the reader leaves to PyYAML.
# tests/events/test_documents.py checks it against PyYAML on generated documents.

_FM_STR = re.compile(r"(?:[^\W\d_]|[^\x00-\x7f\s]|\()[^:#\t]*(?::(?=\S)[^:#\t]*)*")
"""A string that starts with a letter, "(" or any other character beyond ASCII ("¿", "“"):
never a number, date or bool; a colon only before a non-space ("7:15", "text:…": ": "
would start a mapping), no "#" (" #" starts a comment).  The runs between colons are each
one repeat of a character set, which sre scans in one step, not a character at a time."""
_FM_DIGITS_ON = re.compile(r"[0-9][^:#\t]*")
_FM_LETTER = re.compile(r"[^\W\d_]")
_FM_NOT_EXPONENT = re.compile(r"[^\W\d_eE]")
_RADIX_PREFIXES = frozenset({"0x", "0X", "0b", "0B", "0o", "0O"})


def _plain_string(value: str) -> bool:
    """`value` reads back as this string when written plain (no quotes): the one rule
    of the reader (`_fm_scalar`) and the writer (`_dump_scalar`) alike."""
    return _FM_STR.fullmatch(value) is not None or _digit_string(value)


def _digit_string(value: str) -> bool:
    """A plain value that starts with a digit but is a string ("8a70ec05_2-t000", "15 ways
    to…"): a letter (other than an exponent's e), no colon, no radix prefix, so no YAML 1.1
    number or timestamp matches it.  Linear scans: one pattern would backtrack quadratically."""
    if value[:2] in _RADIX_PREFIXES or not _FM_DIGITS_ON.fullmatch(value):
        return False
    return (_FM_NOT_EXPONENT if "." in value else _FM_LETTER).search(value) is not None


_FM_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FM_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_FM_TS = re.compile(r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]{6}Z")
_FM_WORDS = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL".split()
)


class _NotFast(Exception):
    pass


def _fm_scalar(value: str) -> Any:
    if not value:
        raise _NotFast  # `key: ` with nothing after the space: PyYAML's null
    if value.startswith("'"):
        inner = value[1:-1]
        if len(value) < 2 or not value.endswith("'") or "'" in inner.replace("''", ""):
            raise _NotFast
        if not inner.isprintable() or inner != inner.strip() or not inner:
            raise _NotFast  # leading/trailing spaces and empty quotes: let PyYAML judge
        return inner.replace("''", "'")
    if value[:1].isdigit() or value[:1] == "-":  # only these can be numbers or timestamps
        if _FM_INT.fullmatch(value):
            return int(value)
        if _FM_FLOAT.fullmatch(value):
            return float(value)
        if _FM_TS.fullmatch(value):
            return datetime.fromisoformat(value)  # (its "Z": `UTC`)
    if value in _FM_WORDS or value[-1] == " " or not value.isprintable():
        raise _NotFast
    if _plain_string(value):
        return value
    raise _NotFast


_OPEN = object()
"""The value of a `key:` line whose children (a list or a map) follow."""


@lru_cache(maxsize=4096)  # most lines (`scope: user`, `- context`…) repeat across documents
def _fm_line(line: str) -> tuple[str, str | None, Any]:
    """One non-empty frontmatter line as ("item", None, value), ("child", key, value) or
    ("top", key, value or `_OPEN`); `_NotFast` if it is not in our simple form."""
    if line.startswith("- "):
        return "item", None, _fm_scalar(line[2:])
    child = line.startswith("  ") and not line.startswith("   ")
    key, colon, rest = (line[2:] if child else line).partition(":")
    # `key:` or `key: value`, the key plain (`_plain_key`'s rule, inline: most lines are read once)
    if not colon or not (key.isascii() and key.isidentifier()) or key in _FM_WORDS:
        raise _NotFast
    if not rest:
        if child:
            raise _NotFast
        return "top", key, _OPEN
    if rest[0] != " ":
        raise _NotFast
    return "child" if child else "top", key, _fm_scalar(rest[1:])


def fast_frontmatter(raw: str) -> dict[str, Any] | None:
    """The frontmatter mapping if `raw` is in the simple form PandaFS writes, else None."""
    out: dict[str, Any] = {}
    open_key: str | None = None  # a `key:` whose children (list or map) follow
    try:
        for line in raw.split("\n"):
            if not line:
                continue
            shape, key, value = _fm_line(line)
            if shape == "item":
                target = out.get(open_key) if open_key else None
                if open_key is not None and target is None:
                    target = out[open_key] = []
                if not isinstance(target, list):
                    raise _NotFast
                target.append(value)
            elif shape == "child":
                target = out.get(open_key) if open_key else None
                if open_key is not None and target is None:
                    target = out[open_key] = {}
                if not isinstance(target, dict) or key in target:
                    raise _NotFast
                target[key] = value
            else:
                if open_key is not None and out.get(open_key) is None:
                    raise _NotFast  # `key:` with nothing under it is null: PyYAML's call
                if key is None or key in out:
                    raise _NotFast
                if value is _OPEN:
                    out[key], open_key = None, key
                else:
                    out[key], open_key = value, None
        if open_key is not None and out.get(open_key) is None:
            raise _NotFast
    except _NotFast:
        return None
    return out


def _dump_scalar(value: Any, quote: Callable[[str], str | None]) -> str:
    """PyYAML's own spelling of a simple scalar, or `_NotFast` if we are not sure of it."""
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        text = repr(value)
        if "e" in text or "n" in text:  # exponents, inf and nan: PyYAML spells them its way
            raise _NotFast
        return text
    if type(value) is datetime:
        return format_ts(value)
    if type(value) is str:
        if (
            len(value) < 5000
            and value not in _FM_WORDS
            and _plain_string(value)
            and value[-1] != " "
            and value.isprintable()
            and "  " not in value  # PyYAML may break a long plain scalar at double spaces
        ):
            return value
        if len(value) < 5000 and value.isprintable() and "\n" not in value:
            # one-line strings PyYAML would quote: it spells each we are not sure of
            quoted = single_quoted(value) or quote(value)
            if quoted is not None:
                return quoted
    raise _NotFast


_START_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")


def single_quoted(value: str) -> str | None:
    """PyYAML's single-quoted spelling of a one-line printable string it cannot write plain,
    for the reasons we can be sure of; None for another case (PyYAML decides)."""
    if not value or not value.isprintable():
        return None
    if not (
        ": " in value
        or " #" in value
        or value[-1] == ":"
        or value[0] in _START_INDICATORS
        or value[0] == " "
        or value[-1] == " "
    ):
        return None
    return "'" + value.replace("'", "''") + "'"


def _plain_key(key: Any) -> bool:
    """A key written and read plain: an ASCII identifier that is no YAML word (`yes`, `null`…)."""
    return type(key) is str and key.isascii() and key.isidentifier() and key not in _FM_WORDS


def _dump_mapping(data: dict[str, Any], indent: str, quote: Callable[[str], str | None]) -> list[str]:
    """`data` as PyYAML writes a block mapping at `indent`: a list of scalars at its key's
    own indent (`[]` when empty), a mapping two spaces deeper; `_NotFast` for anything else."""
    lines: list[str] = []
    for key, value in data.items():
        if not _plain_key(key):
            raise _NotFast
        if type(value) is list:
            if not value:
                lines.append(f"{indent}{key}: []")
            else:
                lines.append(f"{indent}{key}:")
                lines += [f"{indent}- {_dump_scalar(item, quote)}" for item in value]
        elif type(value) is dict:
            if not value:
                raise _NotFast
            lines.append(f"{indent}{key}:")
            lines += _dump_mapping(value, indent + "  ", quote)
        else:
            lines.append(f"{indent}{key}: {_dump_scalar(value, quote)}")
    return lines


def fast_dump(data: dict[str, Any], quote: Callable[[str], str | None]) -> str | None:
    """What `yaml.dump` writes for the simple shapes we write ourselves, or None; `quote`
    is PyYAML's spelling of a one-line string it would quote (None: not one line)."""
    try:
        return "\n".join(_dump_mapping(data, "", quote)) + "\n"
    except _NotFast:
        return None

"""Wikilinks to turns that keep resolving in Obsidian while turns move to the archive and back.

A turn is linked by its path, `[[users/alice/turns/turn_000007/context|…]]`, or, archived, by
its stub, `[[archive/stubs/alice/turn_000007|…]]`.  `relink` points every turn link where the
turn is now (label kept, a heading anchor dropped); `same_but_turn_links` says whether two
texts differ only so, which is not drift."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

__all__ = ["relink", "same_but_turn_links", "turn_keys"]

Where = Callable[[str, str], Literal["live", "archived"] | None]

_USER = r"[a-z0-9][a-z0-9_-]{0,63}"
_TURN = r"turn_\d{6,}"
TURN_LINK = re.compile(
    r"(?P<open>!?\[\[)"
    rf"(?:users/(?P<lu>{_USER})/turns/(?P<lt>{_TURN})(?P<file>/[^\]|#\n\\]*)?"
    rf"|archive/stubs/(?P<au>{_USER})/(?P<at>{_TURN})(?:\.md)?)"
    r"(?P<anchor>#[^\]|\n\\]*)?(?P<label>\\?\|[^\]\n]*)?\]\]"
)


def _key(match: re.Match[str]) -> tuple[str, str, str]:
    if match.group("lu") is not None:
        return match.group("lu"), match.group("lt"), "live"
    return match.group("au"), match.group("at"), "archived"


def turn_keys(text: str) -> set[tuple[str, str]]:
    """(user, turn) of every turn link in `text`."""
    return {_key(m)[:2] for m in TURN_LINK.finditer(text)}


def relink(text: str, where: Where) -> str:
    """`text` with every turn link pointing at where its turn is now."""
    if "[[" not in text:
        return text

    def fix(match: re.Match[str]) -> str:
        user, turn, form = _key(match)
        now = where(user, turn)
        if now is None or now == form:
            return match.group(0)
        target = f"users/{user}/turns/{turn}/context" if now == "live" else f"archive/stubs/{user}/{turn}"
        return f"{match.group('open')}{target}{match.group('label') or ''}]]"

    return TURN_LINK.sub(fix, text)


def _canonical(text: str) -> str:
    return TURN_LINK.sub(
        lambda m: "{}turn:{}/{}{}]]".format(m.group("open"), *_key(m)[:2], m.group("label") or ""), text
    )


def same_but_turn_links(a: bytes, b: bytes) -> bool:
    """True when `a` and `b` differ only in where their turn links point."""
    if a == b:
        return True
    if b"[[" not in a or b"[[" not in b:
        return False
    try:
        return _canonical(a.decode("utf-8")) == _canonical(b.decode("utf-8"))
    except UnicodeDecodeError:
        return False

"""How commands print: `--json` one JSON document on stdout, else text; progress on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import click

__all__ = ["LazyProgress", "echo_err", "emit"]


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    """`data` as one JSON document with `--json`, else what `human` prints."""
    if as_json:
        import orjson  # not at module level: `pandafs --help` prints no JSON

        click.echo(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode())
    else:
        human()


def echo_err(message: str) -> None:
    click.echo(message, err=True)


class LazyProgress(AbstractContextManager["LazyProgress"]):
    """A bar on stderr whose length is known once the work has counted it (`start(total)`),
    drawn only on a terminal (piped, a bar is noise) and not when `quiet`."""

    def __init__(self, label: str, *, quiet: bool = False) -> None:
        self.label = label
        self.quiet = quiet
        self._bar: Any = None

    def start(self, total: int) -> None:
        if self.quiet or total == 0 or not sys.stderr.isatty():
            return
        # drawn each thousandth of the way: each step would cost a large rebuild visibly
        steps = max(1, total // 1000)
        self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr, update_min_steps=steps)
        self._bar.__enter__()

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update_min_steps = 1
            self._bar.update(0)  # the steps still waiting to be drawn: the bar ends where the work did
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __exit__(self, *exc: object) -> None:
        self.close()

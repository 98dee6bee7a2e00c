"""How commands print: `--json` one JSON document on stdout, else text; progress on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

__all__ = ["LazyProgress", "echo_err", "emit", "json_option", "progress_bar"]


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(func)


def emit(data: Any, as_json: bool, human: Callable[[], None] | None = None) -> None:
    import orjson  # not at module level: `pandafs --help` prints no JSON

    if as_json:
        click.echo(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode())
    elif human is not None:
        human()
    else:
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


def echo_err(message: str) -> None:
    click.echo(message, err=True)


@contextmanager
def progress_bar(total: int | None, label: str, *, quiet: bool = False) -> Iterator[Callable[[int], None]]:
    """Yield an `advance(n)` drawing a bar on stderr, only on a terminal and not when `quiet`."""
    if quiet or total == 0 or not sys.stderr.isatty():
        yield lambda n: None
        return
    # drawn each thousandth of the way: each step would cost a large rebuild visibly
    steps = max(1, (total or 0) // 1000)
    bar: Any
    with click.progressbar(length=total, label=label, file=sys.stderr, update_min_steps=steps) as bar:
        try:
            yield bar.update
        finally:
            bar.update_min_steps = 1
            bar.update(0)  # the steps still waiting to be drawn, if any: the bar ends where the work did


class LazyProgress:
    """A bar whose length is known only once the work has counted it (`start(total)`)."""

    def __init__(self, label: str, *, quiet: bool = False) -> None:
        self.label = label
        self.quiet = quiet
        self._bar: Any = None
        self._advance: Callable[[int], None] = lambda n: None

    def start(self, total: int) -> None:
        self._bar = progress_bar(total, self.label, quiet=self.quiet)
        self._advance = self._bar.__enter__()

    def advance(self, n: int) -> None:
        self._advance(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> LazyProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Errors of the `pandafs` package.

    PandaError                 root; carries the CLI exit code
    ├── BadInput               what the user gave us is wrong (exit 2)
    ├── ProblemFound           a check found damage or drift (exit 1)
    ├── Unreadable             a stored file cannot be read now (a damaged archive part):
    │                          what it holds is missing, the rest goes on (exit 1)
    └── Busy                   another process holds what we need (exit 1)

Errors of `events` and `indexers` are translated at the CLI edge by `exit_code_for`.
"""

from __future__ import annotations

__all__ = [
    "BadInput",
    "Busy",
    "PandaError",
    "ProblemFound",
    "Unreadable",
    "exit_code_for",
    "first_line",
]


class PandaError(Exception):
    exit_code = 1


class BadInput(PandaError):
    exit_code = 2


class ProblemFound(PandaError):
    pass


class Busy(PandaError):
    pass


class Unreadable(PandaError):
    """A file PandaFS keeps cannot be read (a damaged archive part), named vault-relative."""


def first_line(exc: BaseException) -> str:
    """An error as an event or an outcome records it: its first line (500 characters at most),
    else its repr."""
    return str(exc).splitlines()[0][:500] if str(exc) else repr(exc)


def exit_code_for(exc: BaseException) -> int:
    """Ours carry their code; those of `events` and `indexers` say whether the input was bad."""
    if isinstance(exc, PandaError):
        return exc.exit_code
    is_bad_input = getattr(exc, "is_bad_input", None)
    if is_bad_input is not None:
        return 2 if is_bad_input else 1
    return 1

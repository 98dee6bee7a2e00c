"""The `pandafs` command line: thin commands over the library API.

Each command calls one library function and prints text or, with `--json`, one JSON document.
Exit codes: 0 success, 1 a problem was found (damage, drift, failed lines), 2 bad usage or
input — always with one line on stderr.  A command's module is imported only when it runs
(`base.COMMANDS`), so start-up stays instant however heavy a command's imports are.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import types
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .base import cli

__all__ = ["cli", "main", "program"]


def __getattr__(name: str) -> Any:
    """`pandafs.cli.cli` (the click group), imported when first asked for."""
    if name == "cli":
        from .base import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every known error to a one-line message and exit code."""
    # pydantic would scan every package's entry points for plugins; the CLI uses none
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _skip_plugin_loader()
    import click

    from events.errors import EventsError
    from indexers.errors import IndexingError

    from ..errors import PandaError, exit_code_for
    from ..output import echo_err
    from .base import cli

    def fail(message: str, code: int) -> NoReturn:
        """The error on one line, however its message was laid out (click's choice lists)."""
        echo_err(" ".join(f"error: {message}".split()))
        sys.exit(code)

    args = sys.argv[1:] if argv is None else argv
    for arg in args:  # bytes that are not UTF-8 arrive as lone surrogates, which no file can hold
        if any("\udc80" <= c <= "\udcff" for c in arg):
            fail(f"an argument is not UTF-8 text: {os.fsencode(arg)[:60]!r}", 2)
    try:
        code = cli.main(args=args, prog_name="pandafs", standalone_mode=False)
    except click.exceptions.Abort:
        echo_err("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        usage = isinstance(exc, click.UsageError | click.BadParameter)
        fail(exc.format_message(), 2 if usage else exc.exit_code)
    except (PandaError, EventsError, IndexingError) as exc:
        fail(str(exc), exit_code_for(exc))
    except OSError as exc:
        fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    except Exception as exc:  # a bug of ours: still one line, never a traceback to the user
        if os.environ.get("PANDAFS_DEBUG"):
            raise
        fail(f"internal error {type(exc).__name__}: {exc} (PANDAFS_DEBUG=1 shows where)", 1)
    sys.exit(code if isinstance(code, int) else 0)


def _skip_plugin_loader() -> None:
    """With every pydantic plugin disabled, pydantic's loader would still import
    `importlib.metadata` (email, zipfile, csv, socket) to find none: stand in for it."""
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] not in ("__all__", "1", "true"):
        return
    loader = types.ModuleType("pydantic.plugin._loader", "No pydantic plugins (disabled).")
    loader.get_plugins = tuple  # type: ignore[attr-defined]  # get_plugins() -> ()
    sys.modules.setdefault(loader.__name__, loader)


def program() -> None:
    """The `pandafs` program (and `python -m pandafs`): `main`, then the process ends.

    Imported modules live as long as the process, so the collector stays off until the
    command's module is imported (`LazyGroup.get_command`), which freezes what exists.  The
    process then ends as a normal exit does, less freeing every object one by one
    (`_exit_now`).  Only here: a caller of `main` in its own process keeps its collector."""
    gc.disable()
    try:
        main()
    except SystemExit as done:
        # a profiler or tracer (cProfile, coverage) writes its results after this returns
        watched = sys.getprofile() is not None or sys.gettrace() is not None
        if not watched and (done.code is None or isinstance(done.code, int)):
            _exit_now(done.code or 0)
        raise
    finally:
        gc.freeze()


def _exit_now(code: int) -> None:
    """End the process with `code` after what a normal exit waits for: the threads that are
    not daemons (an index commit's merges) joined, the atexit handlers run, stdout and stderr
    flushed.  Returns, for the normal exit to report it, if the output cannot be flushed.

    What is skipped is freeing the objects still alive, which a normal exit of this program
    does not finalize either: the collector is frozen over them."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]  # what a normal exit calls first
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)

"""`pandafs rebuild`: every derived artefact, recomputed from the files and events.

1. usage, trust and scope, the turn catalog and daily rollups (the learning fold);
2. the full-text index, built beside the live one and swapped in;
3. the per-domain source reliability table and its site notes.

The fold (1 and 3) runs in a forked process while this one indexes the turns with the trust
the learning cache held; if the fold's trust differs, the new index is built again with it
before the swap, so the index is the same either way.  Without `fork`, the fold runs first."""

from __future__ import annotations

import os
import pickle
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from events.layout import TURN_KINDS, classify
from indexers.writer import Learned

from .assembly import open_memory
from .learning import api as learning_api
from .learning.state import LearnedReader, cache_is_there
from .memory.api import Memory
from .research.reliability import ReliabilityTable, TurnsRead
from .vault import Vault

__all__ = ["rebuild_all"]

Progress = Callable[[int], None]


def rebuild_all(
    vault: Vault,
    *,
    user: str | None = None,
    progress: Progress | None = None,
    on_total: Progress | None = None,
    stage: Callable[[str], None] | None = None,
    fold_progress: Progress | None = None,
    on_fold_total: Progress | None = None,
    beside: bool | None = None,
) -> dict[str, Any]:
    """Rebuild it all (`user`: only that user's entries).  `progress` / `on_total` follow the
    indexing, `fold_progress` / `on_fold_total` a fold run first, `stage` hears what begins;
    `beside` runs the fold beside the indexing (None: where we can fork)."""
    memory = open_memory(vault)
    if user is not None:
        index = memory.rebuild(user=user, progress=progress, on_total=on_total)
        return _result(index.as_json(), dict(index.stages))
    say = stage or (lambda line: None)
    folding = "recomputing trust, scope and the turn catalog from every turn's events"
    if beside is None:
        beside = hasattr(os, "fork")
    if beside:
        say(f"{folding}, beside the indexing")
        try:
            return _beside(vault, memory, progress, on_total)
        except _TrustMoved as moved:
            why = "out of step" if moved.cached else "not there (the turns have earned trust)"
            say(f"the learning cache was {why}: indexing the turns again with the recomputed trust")
            index = memory.rebuild(progress=progress, on_total=on_total)
            return _result(index.as_json(), dict(index.stages), moved.folded)
    say(folding)
    folded = _fold(vault, memory, fold_progress, on_fold_total)
    index = memory.rebuild(progress=progress, on_total=on_total)
    return _result(index.as_json(), dict(index.stages), folded)


def _result(
    result: dict[str, Any], stages: dict[str, float], folded: dict[str, Any] | None = None
) -> dict[str, Any]:
    if folded is not None:
        stages.update(folded["stages"])
        result["learning"] = folded["learning"]
        result["reliability"] = folded["reliability"]
    result["stages"] = {k: round(v, 3) for k, v in stages.items()}
    return result


def _fold(
    vault: Vault, memory: Memory, progress: Progress | None = None, on_total: Progress | None = None
) -> dict[str, Any]:
    """Steps 1 and 3 (the table from the extraction events the fold read: each log read once)."""
    seen = TurnsRead()
    folded = learning_api.rebuild(
        vault, memory=memory, extractions=seen, index=False, progress=progress, on_total=on_total
    )
    started = time.perf_counter()
    domains = len(ReliabilityTable(vault).rebuild(known=seen))
    stages = {**folded.stages, "research/site rebuild": time.perf_counter() - started}
    return {"learning": folded.as_json(), "reliability": {"domains": domains}, "stages": stages}


class _TrustMoved(Exception):
    """A turn was indexed with a trust the fold did not recompute (`cached`: the cache's)."""

    def __init__(self, folded: dict[str, Any], cached: bool) -> None:
        super().__init__("a turn's trust moved")
        self.folded = folded
        self.cached = cached


def _is_turn(path: str) -> bool:
    ref = classify(path)
    return ref is not None and ref.kind in TURN_KINDS


def _beside(
    vault: Vault, memory: Memory, progress: Progress | None, on_total: Progress | None
) -> dict[str, Any]:
    """The fold in a forked process, the turns indexed meanwhile (module docstring)."""
    cached = LearnedReader(vault).table()  # read before the fork: the fold rewrites it
    was_there = cache_is_there(vault)
    wait = _fork(lambda: _fold(vault, memory))
    folded: dict[str, Any] | None = None
    waited = False

    def barrier() -> None:
        nonlocal folded, waited
        waited = True
        folded = wait()  # the other documents are indexed next, with what it wrote
        if LearnedReader(vault).table() != cached:
            raise _TrustMoved(folded, was_there)

    given = memory.index.learned
    memory.index.learned = Learned(trust=cached.get, shared=given.shared)
    try:
        index = memory.rebuild(
            progress=progress, on_total=on_total, held=lambda p: not _is_turn(p), barrier=barrier
        )
    finally:
        memory.index.learned = given
        if not waited:  # the indexing failed first: the fold still ends on its own
            with suppress(Exception):  # the indexing's error is the one to tell
                wait()
    return _result(index.as_json(), dict(index.stages), folded)


def _fork(work: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """Run `work` in a forked process that dies with this one; `wait()` gives its result or raises."""
    parent = os.getpid()
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's code
        os.close(reading)
        status = 1
        try:
            _die_with(parent)
            payload = pickle.dumps((True, work()))
            status = 0
        except BaseException as exc:  # told to the parent, which raises it
            payload = _pickled_error(exc)
        try:
            with os.fdopen(writing, "wb") as out:
                out.write(payload)
        finally:
            os._exit(status)
    os.close(writing)

    def wait() -> dict[str, Any]:
        with os.fdopen(reading, "rb") as source:
            data = source.read()
        os.waitpid(pid, 0)
        if not data:
            raise RuntimeError("the learning fold's process ended without a result")
        ok, value = pickle.loads(data)
        if not ok:
            raise _raised(*value)
        return value  # type: ignore[no-any-return]

    return wait


def _pickled_error(exc: BaseException) -> bytes:
    """`exc` pickled as class, arguments and attributes (a plain pickle loses some `__init__`s)."""
    try:
        return pickle.dumps((False, (type(exc), exc.args, dict(vars(exc)))))
    except Exception:  # an attribute that does not pickle
        return pickle.dumps((False, (RuntimeError, (f"{type(exc).__name__}: {exc}",), {})))


def _raised(kind: type[BaseException], args: tuple[Any, ...], attributes: dict[str, Any]) -> BaseException:
    error = kind.__new__(kind)
    BaseException.__init__(error, *args)
    vars(error).update(attributes)
    return error


def _die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (elsewhere: nothing)."""
    with suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that was asked
        os._exit(1)

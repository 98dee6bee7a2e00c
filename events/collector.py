"""Python's cycle collector paused while a pass over the whole vault builds what it keeps
(millions of objects in no cycle, which each full pass would walk for nothing).  Objects
are still freed by reference counting; the collector runs again when the pass ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cycle collector for the block (then as it was: a caller's pause stays)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

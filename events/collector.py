"""Python's cycle collector paused while a pass over the whole vault builds what it keeps.

A full learning fold keeps a catalog row and the trust facts of every turn it reads
(millions of objects at 100k turns), none of them in a reference cycle.  Each of the
collector's full passes walks all of them, and their number grows by a quarter between
two passes: at 100k turns ~1 s of a 9 s fold went to passes that freed nothing
(measured with the collector on and off, alternated).  Objects are still freed as their
last reference goes; the collector runs again when the pass ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cycle collector for the block (as it was after: a caller that had
    paused it keeps it paused)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

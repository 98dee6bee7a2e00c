"""What changed in a vault: the batch a consumer gets, and the pending changes a batch
is sealed from (merged into one the consumer has not taken yet)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ChangeBatch", "PendingChanges"]


@dataclass(frozen=True)
class ChangeBatch:
    """Everything that may have changed in the vault since the previous batch."""

    paths: frozenset[str]
    """Vault-relative POSIX paths of files that may have changed (any kind of file)."""
    rescan_dirs: frozenset[str]
    """Vault-relative folders whose whole subtree must be rescanned (or dropped if gone)."""
    overflow: bool
    """Events may have been lost: run a full reconcile scan."""
    first_seen: float
    """`time.monotonic()` when the oldest change in this batch reached the watcher."""
    error: str | None = None
    """Set on the last batch of a watcher whose observer process died."""

    def covers(self, rel_path: str) -> bool:
        """True if the consumer will look at `rel_path` when it handles this batch."""
        if self.overflow or rel_path in self.paths:
            return True
        parts = rel_path.split("/")
        return any("/".join(parts[:i]) in self.rescan_dirs for i in range(1, len(parts)))


@dataclass
class PendingChanges:
    """Changes seen but not yet sealed into a batch."""

    paths: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    overflow: bool = False
    error: str | None = None
    first_seen: float | None = None
    last_seen: float = 0.0

    def touch(self, now: float) -> None:
        if self.first_seen is None:
            self.first_seen = now
        self.last_seen = now

    def count(self) -> int:
        return len(self.paths) + len(self.dirs)

    def seal(self, previous: ChangeBatch | None) -> ChangeBatch:
        """This pending state as a batch, merged into a batch the consumer has not taken yet."""
        assert self.first_seen is not None
        previous = previous or ChangeBatch(frozenset(), frozenset(), False, self.first_seen)
        return ChangeBatch(
            paths=previous.paths | self.paths,
            rescan_dirs=previous.rescan_dirs | self.dirs,
            overflow=previous.overflow or self.overflow,
            first_seen=min(previous.first_seen, self.first_seen),
            error=self.error or previous.error,
        )

"""What a vault check reports (`Problem`) and the shape of a checker (each area's `CHECKS`)."""

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .vault import Vault

__all__ = ["Checker", "Problem", "frontmatter_of"]


class Problem(NamedTuple):
    """What a check found at `path`: its kind and a one-line message."""

    path: str
    kind: str
    message: str
    repaired: bool = False
    """Set by a checker that fixed it under `--repair`: listed as a repair, not a problem."""
    warning: bool = False
    """Named, but nothing is damaged: listed as a warning, and verify still exits 0."""

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}


Checker = Callable[["Vault", bool], Iterable[Problem]]


def frontmatter_of(vault: "Vault", rel: str) -> dict[str, Any] | None:
    """The frontmatter of the document at `rel`, None if unreadable (the index check names why)."""
    from events.documents import parse_document
    from events.errors import EventsError
    from events.fsio import read_vault_file

    try:
        data, _ = read_vault_file(vault.root, rel, limit=vault.config.index.max_file_bytes)
        return dict(parse_document(data.decode("utf-8"), rel).frontmatter)
    except (OSError, UnicodeDecodeError, EventsError):
        return None

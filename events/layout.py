"""The vault layout: where every kind of file lives and what its document id is.  The
one place that knows paths; user ids are validated here, before any path is built."""

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from .errors import InvalidUserId, NotInVault
from .fsio import is_real_dir, open_vault_folder, read_vault_file

__all__ = [
    "DocRef",
    "NOT_DOCUMENTS",
    "Layout",
    "SHAREABLE_KINDS",
    "STAGING_DIR",
    "TURN_DIR_RE",
    "TURN_DOCUMENTS",
    "TURN_KINDS",
    "candidate_paths",
    "classify",
    "effective_scope",
    "is_user_id",
    "turn_name",
    "turn_number",
    "validate_user_id",
]

USER_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
RESERVED_USER_IDS = frozenset({"knowledge", "site"})
"""What global documents' ids begin with: a user of that name would give a private document a
global one's id (`users/knowledge/facts.md` and `knowledge/facts.md`: `knowledge/facts`)."""
TURN_DIR_RE = re.compile(r"turn_(\d{6,})")
STAGING_DIR = ".staging"
"""Under `users/{u}/turns/`: where bulk writers build turn folders before placing them."""

TURN_KINDS = frozenset({"turn", "archived_turn"})
"""The kinds `classify` gives a turn's context.md: live, or its archive stub."""
TURN_DOCUMENTS = ("context.md", "research.md")
"""The documents a turn folder can hold (`classify`: nothing else in it is one)."""
SHAREABLE_KINDS = frozenset({"research"})
"""Documents under `users/{u}/` every user may see once their scope is `global`: what PandaFS
inferred about the world.  Everything else there stays the user's whatever its frontmatter
claims; it reaches others only when copied to `knowledge/` (`pandafs save --scope global`)."""

NOT_DOCUMENTS = frozenset({"indexes", "inbox", "outbox", "observability", ".obsidian", ".trash"})
"""Folders under the vault root that never hold documents."""


def validate_user_id(user: object) -> str:
    """Return `user` if it is a safe, canonical user id; raise `InvalidUserId` otherwise."""
    if not isinstance(user, str):
        raise InvalidUserId(user, "not a string")
    if not user:
        raise InvalidUserId(user, "empty")
    if len(user) > 64:
        raise InvalidUserId(user, f"{len(user)} characters long (at most 64)")
    if not USER_ID_RE.fullmatch(user):
        raise InvalidUserId(user, "contains characters that are not allowed")
    if user in RESERVED_USER_IDS:
        raise InvalidUserId(user, "is reserved: the ids of global documents begin with it")
    return user


def is_user_id(name: str) -> bool:
    """`name` is a valid user id (`validate_user_id` without the reason)."""
    return USER_ID_RE.fullmatch(name) is not None and name not in RESERVED_USER_IDS


def turn_name(number: int) -> str:
    return f"turn_{number:06d}"


def turn_number(name: str) -> int:
    match = TURN_DIR_RE.fullmatch(name)
    if not match:
        raise ValueError(f"not a turn folder name: {name!r}")
    return int(match.group(1))


@dataclass(eq=False)
class Layout:
    """Paths of one vault.  Construct with the vault root; every method validates users."""

    root: Path

    def __post_init__(self) -> None:
        root = self.root
        self.config_file = root / "pandafs.toml"
        self.users_dir = root / "users"
        self.import_lock = self.users_dir / ".import.lock"  # held by `import-turns` for its whole run
        self.inbox = root / "inbox"
        self.outbox = root / "outbox"
        self.knowledge = root / "knowledge"
        self.site_knowledge = root / "site_knowledge"
        self.observability = root / "observability"
        self.indexes = root / "indexes"
        self.archive = root / "archive"

    def user_dir(self, user: str) -> Path:
        return self.users_dir / validate_user_id(user)

    def turns_dir(self, user: str) -> Path:
        return self.user_dir(user) / "turns"

    def turn_dir(self, user: str, turn: str) -> Path:
        turn_number(turn)
        return self.turns_dir(user) / turn

    def preferences(self, user: str) -> Path:
        return self.user_dir(user) / "preferences.md"

    def facts(self, user: str) -> Path:
        return self.user_dir(user) / "facts.md"

    def memories_dir(self, user: str) -> Path:
        return self.user_dir(user) / "memories"

    def stubs_dir(self, user: str) -> Path:
        """The folder of `user`'s archive stubs (`archive/stubs/{user}`)."""
        return self.archive / "stubs" / validate_user_id(user)

    def archive_stub(self, user: str, turn: str) -> Path:
        return self.stubs_dir(user) / f"{turn}.md"

    def has_user(self, user: str) -> bool:
        """Whether the vault holds anything of `user`: their folder or their archive stubs."""
        return is_real_dir(self.user_dir(user)) or is_real_dir(self.stubs_dir(user))

    def users(self) -> list[str]:
        """Every valid user folder, sorted.  Folders with invalid names, and symlinks, are ignored."""
        if not is_real_dir(self.users_dir):
            return []
        return sorted(p.name for p in self.users_dir.iterdir() if is_user_id(p.name) and is_real_dir(p))

    def turn_dirs(self, user: str) -> list[Path]:
        """Live turn folders of `user`, oldest first (`turn_names`)."""
        turns = self.turns_dir(user)
        return [turns / name for name in self.turn_names(user)]

    def turn_names(self, user: str) -> list[str]:
        """The names of `user`'s live turn folders, oldest first (symlinked folders are not
        turns, and a `turns/` that is a link, or under one, holds none: `_names_in`)."""
        names = self._names_in(
            self.turns_dir(user),
            lambda e: TURN_DIR_RE.fullmatch(e.name) is not None and e.is_dir(follow_symlinks=False),
        )
        return sorted(names, key=turn_number)

    def _names_in(self, folder: Path, keep: Callable[[os.DirEntry[str]], bool]) -> list[str]:
        """The names in `folder` that `keep` takes, listed by its descriptor as checked from the
        root: a folder that is a link, under one, or missing lists nothing."""
        try:
            fd = open_vault_folder(self.root, folder.relative_to(self.root).as_posix())
        except (OSError, NotInVault):
            return []
        try:
            with os.scandir(fd) as entries:
                return [entry.name for entry in entries if keep(entry)]
        finally:
            os.close(fd)

    def turn_counter(self, user: str) -> int | None:
        """The allocation counter of `user` (`turns/.counter`, the next turn number to try):
        a hint, None when it is missing, unreadable or not plainly a file of the vault."""
        try:
            data, _ = read_vault_file(self.root, f"users/{validate_user_id(user)}/turns/.counter", limit=64)
            return int(data.strip())
        except (OSError, ValueError, NotInVault):
            return None

    def turn_numbers(self, user: str, *, staged: bool = False) -> set[int]:
        """Every turn number `user` holds on disk: live folders, archive stubs and, with
        `staged`, folders an import is building.  A folder that is a link, or under one, holds none."""
        turns = self.turns_dir(user)
        folders = [turns, turns / STAGING_DIR] if staged else [turns]
        found: set[int] = set()
        for directory in [*folders, self.stubs_dir(user)]:
            for name in self._names_in(directory, lambda _: True):
                match = TURN_DIR_RE.fullmatch(name.removesuffix(".md"))
                if match:
                    found.add(int(match.group(1)))
        return found

    def highest_turn(self, user: str) -> int:
        """The highest turn number allocated to `user` (0 for none): one below the counter hint,
        else the highest live, archived or staged; allocation starts above it."""
        counter = self.turn_counter(user)
        if counter is not None:
            return counter - 1
        return max(self.turn_numbers(user, staged=True), default=0)

    def newest_turn(self, user: str, at_least: int = 0) -> int:
        """The highest turn number `user` holds (0 for none), never below `at_least`: the
        counter hint (else a scan), probed upward, since the counter is not fsynced."""
        counter = self.turn_counter(user)
        high = counter - 1 if counter is not None else max(self.turn_numbers(user), default=0)
        high = max(high, at_least)
        while (
            is_real_dir(self.turn_dir(user, turn_name(high + 1)))
            or self.archive_stub(user, turn_name(high + 1)).exists()
        ):
            high += 1
        return high

    def recent_turn_dirs(self, user: str, before: str, count: int, *, probe: int = 200) -> list[Path]:
        """Up to `count` live turn folders numbered below `before`, newest first, probed by
        number rather than listed, so the cost does not grow with the history."""
        turns = self.turns_dir(user)
        found: list[Path] = []
        number = turn_number(before) - 1
        while number > 0 and len(found) < count and probe > 0:
            path = turns / turn_name(number)
            if is_real_dir(path):
                found.append(path)
            number -= 1
            probe -= 1
        return found

    def relative(self, path: Path) -> str:
        """Vault-relative POSIX path, as spelled under the root (not where a link inside the
        vault leads; writers then refuse the link).  Outside the vault: `NotInVault`."""
        try:
            rel = PurePosixPath(os.path.abspath(path)).relative_to(os.path.abspath(self.root))
        except ValueError:
            try:
                rel = PurePosixPath(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                raise NotInVault(str(path), "resolves outside the vault") from None
        return rel.as_posix()


class DocRef(NamedTuple):
    """What a vault-relative markdown path is, as far as the layout can tell."""

    doc_id: str
    # turn | research | preferences | facts | memory | knowledge | site | archived_turn | note
    kind: str
    user: str | None
    turn: str | None = None


def classify(rel_path: str) -> DocRef | None:
    """Map a vault-relative path to its document identity, or None if it is not a document.

    Ids come from paths, never frontmatter, so they are unique and stable: `alice/turn_000001`,
    `alice/preferences`, `alice/memories/x`, `knowledge/x`, `site/example.com`.  An archive
    stub keeps its turn's id; `candidate_paths` is the inverse."""
    if not rel_path.endswith(".md"):
        return None
    if rel_path.startswith("/"):
        return None  # vault-relative paths only
    if rel_path.startswith("./") or "//" in rel_path or "/./" in rel_path:
        rel_path = PurePosixPath(rel_path).as_posix()  # odd spellings: normalise first
    parts = tuple(rel_path.split("/"))
    if rel_path.startswith(".") or "/." in rel_path or parts[0] in NOT_DOCUMENTS:  # a hidden part
        return None
    stem = rel_path[: -len(".md")]
    head = parts[0]
    if head == "users" and len(parts) >= 3 and is_user_id(parts[1]):
        user = parts[1]
        rest = parts[2:]
        if len(rest) == 3 and rest[0] == "turns" and TURN_DIR_RE.fullmatch(rest[1]):
            if rest[2] == TURN_DOCUMENTS[0]:
                return DocRef(f"{user}/{rest[1]}", "turn", user, rest[1])
            if rest[2] == TURN_DOCUMENTS[1]:
                return DocRef(f"{user}/{rest[1]}/research", "research", user, rest[1])
            return None
        if rest[0] == "turns":
            return None
        if rest in (("preferences.md",), ("facts.md",)):  # a user's two lists
            kind = rest[0].removesuffix(".md")
            return DocRef(f"{user}/{kind}", kind, user)
        if rest[0] == "memories":
            return DocRef(f"{user}/{'/'.join(rest)[:-3]}", "memory", user)
        if TURN_DIR_RE.fullmatch(rest[0].removesuffix(".md")):
            return None  # a note named like a turn would take its id (`u/turn_000001`, `…/research`)
        return DocRef(f"{user}/{'/'.join(rest)[:-3]}", "note", user)
    if head == "knowledge" and len(parts) >= 2:
        return DocRef(stem, "knowledge", None)
    if head == "site_knowledge" and len(parts) == 2:
        return DocRef(f"site/{parts[1][:-3]}", "site", None)
    if head == "archive" and len(parts) == 4 and parts[1] == "stubs":
        user, name = parts[2], parts[3][:-3]
        if is_user_id(user) and TURN_DIR_RE.fullmatch(name):
            return DocRef(f"{user}/{name}", "archived_turn", user, name)
        return None
    return None


def effective_scope(ref: DocRef, claimed: Any) -> Any:
    """The scope a document really has: its frontmatter's claim where the path allows it.
    `global` under `users/{u}/` holds only for SHAREABLE_KINDS (else `user`); outside
    `users/` a document is `global` unless it says `new`."""
    if claimed is None:
        return "user" if ref.user else "global"
    if claimed not in ("new", "user", "global"):
        return claimed  # not a scope: validation names it
    if ref.user is None:
        return "new" if claimed == "new" else "global"
    if claimed == "global" and ref.kind not in SHAREABLE_KINDS:
        return "user"
    return claimed


def candidate_paths(doc_id: str) -> list[str]:
    """Vault-relative paths a document id may live at, most likely first (inverse of classify)."""
    parts = doc_id.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return []
    head = parts[0]
    if head == "knowledge" and len(parts) >= 2:
        return [doc_id + ".md"]
    if head == "site" and len(parts) == 2:
        return [f"site_knowledge/{parts[1]}.md"]
    if not is_user_id(head) or len(parts) < 2:
        return []
    rest = parts[1:]
    if TURN_DIR_RE.fullmatch(rest[0]):
        if len(rest) == 1:
            return [f"users/{head}/turns/{rest[0]}/context.md", f"archive/stubs/{head}/{rest[0]}.md"]
        if rest[1:] == ["research"]:
            return [f"users/{head}/turns/{rest[0]}/research.md"]
        return []
    return [f"users/{head}/{'/'.join(rest)}.md"]

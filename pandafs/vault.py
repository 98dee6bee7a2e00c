"""A vault on disk: its layout, its config, creating it, and allocating turn numbers.

Turn numbers are per user and never reused: under `users/{u}/turns/.alloc.lock` each is claimed
by `mkdir` from the counter hint `.counter`, skipping numbers whose folder or stub exists.  A
turn folder without events is live exactly while a process holds a `flock` on it (released
by the kernel when it dies), so removing or adopting one takes both locks (`held_turn`)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from events.fsio import atomic_write, check_folders, checked_folders, held_lock, vault_folder
from events.layout import STAGING_DIR, Layout, turn_name, validate_user_id

from .config import Config, load_config, render_default_config
from .errors import BadInput, Busy

__all__ = ["STAGING_DIR", "Vault", "file_lock"]

ALLOC_LOCK = ".alloc.lock"

VAULT_DIRS = (
    "inbox",
    "outbox",
    "users",
    "knowledge",
    "site_knowledge",
    "observability/daily",
    "observability/interventions",
    "indexes",
    "archive",
)

OBSIDIAN_APP = {
    "userIgnoreFilters": ["indexes/", "archive/turns/", "inbox/.processing/"],
    "showUnsupportedFiles": False,
    "newLinkFormat": "absolute",
    "useMarkdownLinks": False,
    "alwaysUpdateLinks": True,
}
OBSIDIAN_CORE_PLUGINS = [
    "file-explorer",
    "global-search",
    "switcher",
    "graph",
    "backlink",
    "outgoing-link",
    "tag-pane",
    "properties",
    "page-preview",
    "outline",
]

HOME_NOTE = """\
# PandaFS vault

This folder is the memory of a local assistant. Everything here is plain files:

- **users/** — one folder per user: `preferences.md`, `facts.md`, `memories/` and
  `turns/turn_NNNNNN/` (each turn's `events.jsonl` log and its readable `context.md`).
- **knowledge/** and **site_knowledge/** — documents shared by every user.
- **inbox/** — drop a `.md` or `.txt` query here (or in `inbox/<user>/`); the answer
  appears in **outbox/<user>/** while `pandafs watch` runs.
- **archive/** — old turns in Parquet plus searchable summary stubs.
- **indexes/** — derived search index; safe to delete, `pandafs rebuild` recreates it.

Useful commands: `pandafs ask "…" --user me`, `pandafs search "…"`, `pandafs verify`.
"""


def file_lock(
    path: Path, *, wait_s: float | None = None, what: str = "lock", root: Path | None = None
) -> AbstractContextManager[None]:
    """Exclusive lock on `path`; after `wait_s` (None: forever) `Busy` naming the holder."""

    def busy(holder: str) -> Exception:
        return Busy(f"{what} is busy, held by pid {holder}; try again when it finishes")

    return held_lock(path, wait_s=wait_s, on_busy=busy, root=root)


@dataclass(eq=False)
class Vault:
    """An opened vault.  Construct with `Vault.open(root)` or `Vault.init(root)`."""

    root: Path
    layout: Layout = field(init=False)
    _config: Config | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.layout = Layout(self.root)

    @classmethod
    def open(cls, root: Path | str) -> Vault:
        vault = cls(Path(root))
        if not vault.layout.config_file.is_file():
            raise BadInput(f"no PandaFS vault at {vault.root} (run `pandafs --root {root} init`)")
        return vault

    @classmethod
    def init(cls, root: Path | str) -> tuple[Vault, list[str]]:
        """Create the layout, config, `.obsidian/` and home note; keep what exists."""
        vault = cls(Path(root))
        outer = next((p for p in vault.root.parents if Layout(p).config_file.is_file()), None)
        if outer is not None:  # its files would be the outer vault's documents (a user's, in users/)
            raise BadInput(f"{vault.root} is inside the vault at {outer}: a vault cannot hold another")
        created: list[str] = []
        try:
            vault.root.mkdir(parents=True, exist_ok=True)
        except (NotADirectoryError, FileExistsError):  # a file where a folder must be
            path = next(p for p in (vault.root, *vault.root.parents) if p.exists() and not p.is_dir())
            raise BadInput(f"cannot make a vault at {vault.root}: {path} is a file, not a folder") from None
        for name in VAULT_DIRS:
            path = vault.root / name
            if not path.is_dir():
                vault_folder(vault.root, path)  # from the root down, never through a link
                created.append(name + "/")
        files = {
            vault.layout.config_file: render_default_config().encode(),
            vault.root / ".obsidian" / "app.json": orjson.dumps(OBSIDIAN_APP, option=orjson.OPT_INDENT_2),
            vault.root / ".obsidian" / "core-plugins.json": orjson.dumps(
                OBSIDIAN_CORE_PLUGINS, option=orjson.OPT_INDENT_2
            ),
            vault.root / "Home.md": HOME_NOTE.encode(),
        }
        for path, data in files.items():
            if not path.exists():
                atomic_write(path, data, root=vault.root)
                created.append(vault.layout.relative(path))
        return vault, created

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.layout.config_file)
        return self._config

    def rel(self, path: Path) -> str:
        return self.layout.relative(path)

    def require_user(self, user: str) -> str:
        """`user`, if the vault holds anything of theirs: a mistyped user is refused, not "0 turns: ok"."""
        if not self.layout.has_user(validate_user_id(user)):
            raise BadInput(f"no user {user!r} in {self.root}")
        return user

    def memory_lock(self, owner: str | None, *, wait_s: float | None = 120.0) -> AbstractContextManager[None]:
        """The one lock over an owner's memory documents (`None`: the global ones); every writer
        holds it and re-reads under it, so no acknowledged line is overwritten."""
        if owner is None:
            path, what = self.layout.indexes / "global-memory.lock", "the global memory"
        else:
            validate_user_id(owner)
            path, what = self.layout.user_dir(owner) / ".memory.lock", f"the memory of {owner}"
            check_folders(self.root, self.layout.memories_dir(owner))
        vault_folder(self.root, path.parent)
        return file_lock(path, wait_s=wait_s, what=what, root=self.root)

    @contextmanager
    def new_turn(self, user: str) -> Iterator[str]:
        """Claim one new turn folder for `user`, made and locked, held while the block runs."""
        held: list[int] = []

        def made(turns: int, name: str) -> bool:
            try:
                os.mkdir(name, dir_fd=turns)
            except FileExistsError:
                return False
            fd = _lock_folder(name, turns)
            if fd is None:  # nobody locks a folder without the allocation lock we hold
                raise Busy(f"turn folder {user}/{name} was locked as it was made")
            held.append(fd)
            return True

        try:
            [name] = self._claim_numbers(user, 1, made)
            yield name
        finally:
            for fd in held:
                os.close(fd)  # closing releases the lock

    @contextmanager
    def held_turn(self, user: str, turn: str) -> Iterator[bool]:
        """Hold `turn`'s folder if no live process does; yields whether it is held (not if gone)."""
        turns = vault_folder(self.root, self.layout.turns_dir(user))
        with file_lock(turns / ALLOC_LOCK, what=f"turn allocation for {user}", root=self.root):
            fd = _lock_folder(turns / turn)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                os.close(fd)

    def reserve_turns(self, user: str, count: int) -> list[str]:
        """Reserve `count` turn numbers for folders placed later (`place_turns`)."""

        def free(turns: int, name: str) -> bool:
            try:
                os.stat(name, dir_fd=turns, follow_symlinks=False)
            except FileNotFoundError:
                return True
            return False

        return self._claim_numbers(user, count, free)

    def _claim_numbers(self, user: str, count: int, take: Callable[[int, str], bool]) -> list[str]:
        """Under the allocation lock, the first `count` numbers from the counter hint that
        `take(turns folder fd, name)` accepts, archived ones skipped; the counter moves past them."""
        validate_user_id(user)
        turns = vault_folder(self.root, self.layout.turns_dir(user))  # never a linked folder
        counter = turns / ".counter"
        with (
            file_lock(turns / ALLOC_LOCK, what=f"turn allocation for {user}", root=self.root),
            checked_folders(self.root, durable=False) as checked,
        ):
            number = self.layout.highest_turn(user) + 1
            folder = checked.fd(turns)
            stubs = self._stubs_dir(user)
            names: list[str] = []
            while len(names) < count:
                name = turn_name(number)
                number += 1
                if not (stubs and os.path.lexists(f"{stubs}/{name}.md")) and take(folder, name):
                    names.append(name)
            atomic_write(counter, str(number), durable=False, root=self.root)  # stale: a few probes more
        return names

    def place_turns(self, user: str, staged: list[tuple[str, Path]]) -> list[str]:
        """Rename complete folders into place (seen whole or not at all); names taken are returned."""
        turns = vault_folder(self.root, self.layout.turns_dir(user))
        taken: list[str] = []
        with (
            checked_folders(self.root) as moved,  # fsynced once the lock is released
            file_lock(turns / ALLOC_LOCK, what=f"turn allocation for {user}", root=self.root),
        ):
            stubs = self._stubs_dir(user)
            for name, source in staged:
                target = turns / name
                if os.path.lexists(target) or (stubs and os.path.lexists(f"{stubs}/{name}.md")):
                    taken.append(name)
                    continue
                moved.rename(source, target)
        return taken

    def _stubs_dir(self, user: str) -> str | None:
        """The folder of `user`'s archive stubs if it exists (checked once per batch)."""
        stubs = self.layout.stubs_dir(user)
        return str(stubs) if stubs.is_dir() else None


def _lock_folder(path: Path | str, dir_fd: int | None = None) -> int | None:
    """A descriptor of the folder `path` holding its `flock`; None if held elsewhere, gone or a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd

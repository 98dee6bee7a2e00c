"""Keeping wikilinks to turns resolvable after archive and restore (`pandafs.links`).

After turns move, every markdown file PandaFS writes for their users goes through
`relink`; only turn links change.  A turn whose writer holds its log is skipped (the next
pass fixes it), memory documents are rewritten under the memory lock, every write is
atomic.  The users are recorded in `archive/.journal/relink.users` before any turn moves,
so a pass a crash cut short is finished by the next archive, restore or `verify --repair`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from events.fsio import atomic_write, is_real_dir, read_vault_bytes, sync_all, unlink_in_vault, vault_folder
from events.layout import classify, is_user_id

from ..links import relink
from ..memory.api import Memory
from ..vault import Vault
from ._common import TurnKey, journal_dir, log_held, reindex, stub_file, turn_folder

RELINK_FILE = "relink.users"


def _pending(vault: Vault) -> Path:
    return journal_dir(vault) / RELINK_FILE


def mark_relink(vault: Vault, users: Iterable[str]) -> None:
    """Record that these users' links must be brought in step (before anything moves)."""
    wanted = set(users) | set(pending_relink(vault))
    if wanted:
        vault_folder(vault.root, _pending(vault).parent)  # archive/.journal: never through a link
        atomic_write(_pending(vault), ("\n".join(sorted(wanted)) + "\n").encode(), root=vault.root)


def pending_relink(vault: Vault) -> list[str]:
    """The users recorded by `mark_relink` (none if the record is missing or a link)."""
    data = read_vault_bytes(vault.root, _pending(vault))
    if data is None:
        return []
    return [u for u in data.decode("utf-8").split() if is_user_id(u)]


def finish_relink(vault: Vault, memory: Memory) -> list[str]:
    """Run the pass for the recorded users, reindex what changed, clear the record; the
    paths rewritten.  Call with the archive lock held."""
    users = pending_relink(vault)
    if not users:
        return []
    changed = relink_users(vault, users)
    reindex(vault, memory, [rel for rel in changed if classify(rel) is not None])
    unlink_in_vault(vault.root, _pending(vault), missing_ok=True)
    return changed


def _markdown(base: Path) -> Iterator[Path]:
    """Markdown files under `base`, not in hidden folders, no symlink followed (nor read:
    `fixed_text` reads each through `read_vault_bytes`, a file swapped for a link since)."""
    if not is_real_dir(base):
        return
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".md") and not path.is_symlink():
                yield path


def relink_users(vault: Vault, users: Iterable[str]) -> list[str]:
    """Rewrite turn links in the files PandaFS writes for `users`; returns what changed."""
    state: dict[TurnKey, Literal["live", "archived"] | None] = {}

    def where(user: str, turn: str) -> Literal["live", "archived"] | None:
        key = (user, turn)
        if key not in state:
            if (turn_folder(vault, key) / "context.md").is_file():
                state[key] = "live"
            elif stub_file(vault, key).is_file():
                state[key] = "archived"
            else:
                state[key] = None
        return state[key]

    changed: list[str] = []

    def fixed_text(path: Path) -> str | None:
        """The file's text with its turn links fixed, or None when nothing changes."""
        try:  # a link (made since the walk saw a file) is not read, so never copied in
            data = read_vault_bytes(vault.root, path)
        except OSError:
            return None
        if data is None:
            return None
        if b"[[users/" not in data and b"[[archive/stubs/" not in data:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        fixed = relink(text, where)
        return fixed if fixed != text else None

    def rewrite(path: Path) -> None:
        fixed = fixed_text(path)
        if fixed is not None:
            atomic_write(path, fixed.encode("utf-8"), durable=False, root=vault.root)  # one sync for the pass
            changed.append(vault.rel(path))

    root = vault.root
    for user in sorted(set(users)):
        home = vault.layout.user_dir(user)
        turns = vault.layout.turns_dir(user)
        if turns.is_dir() and not turns.is_symlink():
            for folder in sorted(turns.iterdir()):
                if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
                    continue
                stale = [path for path in _markdown(folder) if fixed_text(path) is not None]
                if stale:  # read again under the turn's log lock: a writer may have just projected
                    with log_held(folder) as refused:
                        for path in () if refused else stale:
                            rewrite(path)
        if home.is_dir() and not home.is_symlink():
            with vault.memory_lock(user):
                for path in _markdown(home):
                    if turns not in path.parents:
                        rewrite(path)
        for path in _markdown(root / "outbox" / user):
            rewrite(path)
        for path in _markdown(vault.layout.stubs_dir(user)):
            rewrite(path)
        for path in _markdown(root / "observability" / "interventions"):
            if f"-{user}-" in path.name:
                rewrite(path)
    if changed:
        sync_all()
    return changed

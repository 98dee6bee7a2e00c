"""Deciding what a dropped file is: whose question it holds, or why it cannot be one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from events.clock import out_of_range
from events.documents import parse_document
from events.errors import FrontmatterError, InvalidUserId, NotInVault
from events.fsio import REASONS, is_temp_name, open_vault_file, refusal_at
from events.layout import validate_user_id

from ..memory.turn_records import parse_time
from ..pipeline.turn import MAX_QUERY_CHARS
from ..vault import Vault

QUERY_SUFFIXES = (".md", ".txt")
RESERVED_FOLDERS = frozenset({"processed", "rejected"})
"""Folders of `inbox/` that are not user folders (a user named so uses frontmatter)."""


def is_query_candidate(rel_path: str) -> bool:
    """True if a vault-relative path is where a query file may be dropped: `inbox/NAME` and
    `inbox/FOLDER/NAME`, except processed/, rejected/, hidden and temporary files.  Any
    extension is a candidate: a wrong one is rejected with an explanation."""
    parts = rel_path.split("/")
    if parts[0] != "inbox" or len(parts) not in (2, 3):
        return False
    if len(parts) == 3 and parts[1] in RESERVED_FOLDERS:
        return False
    name = parts[-1]
    return not (
        any(p.startswith(".") for p in parts)
        or is_temp_name(name)
        or name.startswith("~$")
        or name.endswith(".crdownload")
    )


@dataclass(frozen=True)
class Query:
    user: str
    text: str
    now: datetime | None = None
    """The frontmatter's `now:`: the question is asked at that time (`Pipeline.ask`'s `now`)."""


HINTS = {
    "not_a_file": "Save the question as a plain .md or .txt file and drop it into inbox/ again.",
    "wrong_extension": "Save the question as a .md or .txt file and drop it into inbox/ again.",
    "too_large": "Put only the question in the file (long material belongs in a document "
    "under knowledge/), or raise `[inbox] max_bytes`.",
    "empty": "Write the question into the file, then drop it into inbox/ again.",
    "binary": "Save the question as plain UTF-8 text (.md or .txt).",
    "bad_frontmatter": "Fix the YAML between the `---` lines (or remove it) and drop the file again.",
    "user_conflict": "Keep one of them: move the file or fix `user:` in the frontmatter.",
    "unknown_user": "Put the file in inbox/<user>/ or set `user:` in its frontmatter to a valid user "
    "id (lowercase letters, digits, '-' and '_').",
    "too_long": "Shorten the question; long material belongs in a document under knowledge/.",
}
"""What to do about a rejected file, by reason (where the reason alone says it)."""


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str
    hint: str = ""
    """What to do; by default `HINTS[reason]`."""
    keep: bool = True
    """False: the inbox's name for it is removed, not moved to `inbox/rejected/` (a link, FIFO,
    device or second name of a file elsewhere: a name kept there would still be that file's)."""

    def __post_init__(self) -> None:
        if not self.hint:
            object.__setattr__(self, "hint", HINTS.get(self.reason, HINTS["not_a_file"]))


def not_a_file(kind: str) -> Rejection:
    """A dropped entry the one rule refuses, never read: a folder is kept, anything else unnamed."""
    reason = {"symlink": "symlink", "hard_link": "hard_link"}.get(kind, "not_a_file")
    why = REASONS[kind]
    if kind == "hard_link":
        why = "has other names (a hard link): the same file is also elsewhere, maybe another user's"
    return Rejection(
        reason,
        f"the dropped entry {why}: PandaFS reads only plain files with one name",
        keep=kind == "folder",
    )


def validate_query(vault: Vault, source: str, path: Path) -> Query | Rejection:
    """The question a claimed file holds and whose it is, or why it cannot be a query."""
    cfg = vault.config.inbox
    name = path.name
    parts = source.split("/")
    kind = refusal_at(path)
    if kind is not None:
        return not_a_file(kind)
    if not name.lower().endswith(QUERY_SUFFIXES):
        return Rejection(
            "wrong_extension", f"`{name}` is not a .md or .txt file; the inbox only reads text queries"
        )
    try:  # the vault is the boundary: a link swapped in after the claim is never read
        with open_vault_file(vault.root, path.relative_to(vault.root).as_posix()) as handle:
            size = os.fstat(handle.fileno()).st_size
            raw = handle.read(cfg.max_bytes + 1)
    except NotInVault as exc:  # swapped since the look above: dropped, never read
        return Rejection("symlink", f"the file {exc.reason}: PandaFS never reads through links", keep=False)
    if size > cfg.max_bytes:
        return Rejection(
            "too_large",
            f"the file is {size:,} bytes; query files may be at most {cfg.max_bytes:,} "
            "bytes (`[inbox] max_bytes` in pandafs.toml)",
        )
    if size == 0:
        return Rejection("empty", "the file is empty")
    nul = raw.find(b"\0")
    if nul >= 0:
        return Rejection("binary", f"the file contains NUL bytes (the first at byte {nul:,}): it is not text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Rejection("binary", f"the file is not UTF-8 text (invalid byte at offset {exc.start:,})")
    try:
        parsed = parse_document(text, source)
    except FrontmatterError as exc:
        return Rejection("bad_frontmatter", str(exc))
    folder_user = parts[1] if len(parts) == 3 else None
    fm_user = parsed.frontmatter.get("user")
    if folder_user is not None and fm_user is not None and fm_user != folder_user:
        return Rejection(
            "user_conflict", f"the file is in inbox/{folder_user}/ but its frontmatter says user: {fm_user!r}"
        )
    user = folder_user if folder_user is not None else fm_user if fm_user is not None else cfg.default_user
    try:
        validate_user_id(user)
    except InvalidUserId as exc:
        return Rejection("unknown_user", f"unknown user: {exc}")
    if cfg.allowed_users and user not in cfg.allowed_users:
        allowed = ", ".join(cfg.allowed_users)
        return Rejection(
            "unknown_user",
            f"unknown user {user!r}: not in `[inbox] allowed_users` ({allowed})",
            HINTS["unknown_user"].replace("a valid user id", "one of the allowed users")
            + " Or add the user to `[inbox] allowed_users`.",
        )
    query = parsed.body.strip()
    if not query:
        return Rejection(
            "empty",
            "the file holds no question (only frontmatter or blank lines)",
            "Write the question below the frontmatter, then drop it into inbox/ again.",
        )
    if len(query) > MAX_QUERY_CHARS:
        return Rejection(
            "too_long", f"the question is {len(query):,} characters long (at most {MAX_QUERY_CHARS:,})"
        )
    now = _asked_at(parsed.frontmatter.get("now"))
    if isinstance(now, Rejection):
        return now
    return Query(user, query, now)


def _asked_at(value: object) -> datetime | None | Rejection:
    """The frontmatter's `now:` as a UTC time (naive = UTC), or why it is not one."""
    if value is None:
        return None
    when = parse_time(value)
    problem = f"`now: {value}` is not an ISO-8601 time" if when is None else out_of_range(when)
    if problem is None:
        return when
    return Rejection(
        "bad_frontmatter",
        problem,
        "Write `now:` as an ISO time (2023-05-20T14:00:00) or remove it, then drop the file again.",
    )

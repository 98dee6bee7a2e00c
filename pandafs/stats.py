"""`pandafs stats`: counts per user, content type and scope, read from the files."""

from __future__ import annotations

from collections import Counter
from typing import Any

from events.documents import parse_document
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.layout import classify
from indexers.walk import walk_documents

from .vault import Vault

__all__ = ["vault_stats"]


def vault_stats(vault: Vault) -> dict[str, Any]:
    users = {user: {"turns": len(vault.layout.turn_dirs(user))} for user in vault.layout.users()}
    types: Counter[str] = Counter()
    scopes: Counter[str] = Counter()
    broken = 0
    for rel, _ in walk_documents(vault.root):
        ref = classify(rel)
        if ref is None:
            continue
        try:
            data, _ = read_vault_file(vault.root, rel)
        except (OSError, NotInVault):  # a hard link or a vanished file: not a document of the vault
            continue
        try:
            meta = parse_document(data.decode("utf-8"), rel).frontmatter
        except (FrontmatterError, UnicodeDecodeError):
            broken += 1
            continue
        for content_type in meta.get("content_types") or [ref.kind]:
            types[str(content_type)] += 1
        scopes[str(meta.get("scope", "user" if ref.user else "global"))] += 1
        if ref.user is not None and ref.kind != "turn":
            counts = users.setdefault(ref.user, {"turns": 0})
            counts["documents"] = counts.get("documents", 0) + 1
    return {
        "users": users,
        "content_types": dict(sorted(types.items())),
        "scopes": dict(sorted(scopes.items())),
        "unparseable_documents": broken,
    }

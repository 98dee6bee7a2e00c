"""`verify`'s check of what files claim that only their path decides (`check_claims`)."""

from __future__ import annotations

import os
from pathlib import Path

from events.layout import candidate_paths, classify, effective_scope, is_user_id

from .checks import Problem, frontmatter_of
from .vault import Vault

__all__ = ["check_claims"]


NOT_A_USER = "its name is reserved or no user id: nothing in it is searched or served"


def check_claims(vault: Vault, repair: bool) -> list[Problem]:
    """Frontmatter that claims what only the path decides: `scope: global` on a user's
    document that cannot be shared, an `id:` other than the path's (a warning, unless it is
    another document's), a folder under users/ that is no user's.  `--repair` changes
    nothing: the file is the person's to edit."""
    problems: list[Problem] = []
    roots = [vault.layout.knowledge]
    for e in sorted(vault.layout.users_dir.iterdir()) if vault.layout.users_dir.is_dir() else []:
        if e.is_dir() and not e.is_symlink() and not e.name.startswith("."):
            if is_user_id(e.name):
                roots.append(e)
            else:  # reserved (`knowledge`, `site`) or no user id: nothing in it is read
                problems.append(
                    Problem(f"users/{e.name}", "not_a_user", "is no user's folder: " + NOT_A_USER)
                )
    for top in roots:
        for dirpath, dirnames, filenames in os.walk(top):  # never into a linked folder
            dirnames[:] = sorted(d for d in dirnames if d != "turns" and not d.startswith("."))
            for name in sorted(filenames):
                rel = vault.rel(Path(dirpath)) + "/" + name
                ref = classify(rel)
                if ref is None:
                    continue
                front = frontmatter_of(vault, rel)
                if front is None:
                    continue
                claimed = front.get("scope")
                if claimed == "global" and effective_scope(ref, claimed) != "global":
                    problems.append(
                        Problem(
                            rel,
                            "scope_claim",
                            "says `scope: global`, but what a user keeps under users/ stays theirs "
                            "(searched as theirs); publish it with `pandafs save --scope global`",
                        )
                    )
                claimed_id = front.get("id")
                if claimed_id not in (None, ref.doc_id):
                    why = f"says `id: {claimed_id}`, but its id is {ref.doc_id} (ids come from paths: "
                    taken = [p for p in candidate_paths(str(claimed_id)) if (vault.root / p).is_file()]
                    if taken:  # another document's id: a reader of the file could mistake the two
                        problems.append(Problem(rel, "id_claim", f"{why}{taken[0]} has that id)"))
                    else:  # a note's own id, as people and other tools write them: ignored, named
                        problems.append(Problem(rel, "id_claim", why + "the id is ignored)", warning=True))
    return problems

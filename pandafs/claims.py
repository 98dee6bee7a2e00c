"""`verify`'s check of what files claim that only their path decides (`check_claims`)."""

from __future__ import annotations

from events.layout import candidate_paths, classify, effective_scope, is_user_id
from indexers.walk import walk_documents

from .checks import Problem, frontmatter_of
from .vault import Vault

__all__ = ["check_claims"]


NOT_A_USER = "its name is reserved or no user id: nothing in it is searched or served"


def check_claims(vault: Vault, repair: bool) -> list[Problem]:
    """Frontmatter that claims what only the path decides: `scope: global` on a user's document,
    an `id:` other than the path's (a warning, unless another document's), a folder under
    users/ that is no user's.  `--repair` changes nothing: the file is the person's to edit."""
    problems: list[Problem] = []
    roots = ["knowledge"]
    for e in sorted(vault.layout.users_dir.iterdir()) if vault.layout.users_dir.is_dir() else []:
        if e.is_dir() and not e.is_symlink() and not e.name.startswith("."):
            if is_user_id(e.name):
                roots.append(f"users/{e.name}")
            else:  # reserved (`knowledge`, `site`) or no user id: nothing in it is read
                problems.append(
                    Problem(f"users/{e.name}", "not_a_user", "is no user's folder: " + NOT_A_USER)
                )
    for top in roots:  # turn folders are listed aside, not entered: a turn claims nothing
        for rel in sorted(rel for rel, _ in walk_documents(vault.root, top, turn_folders=[])):
            ref = classify(rel)
            front = frontmatter_of(vault, rel) if ref is not None else None
            if ref is None or front is None:
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

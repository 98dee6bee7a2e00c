"""New turn folders for a test, claimed as an ask claims its own (`Vault.new_turn`) and
released at once: what an ask killed before its first event leaves."""

from __future__ import annotations

from pandafs.vault import Vault

__all__ = ["allocate_turns"]


def allocate_turns(vault: Vault, user: str, count: int = 1) -> list[str]:
    """Claim `count` new turn folders for `user`; their names in order."""
    names = []
    for _ in range(count):
        with vault.new_turn(user) as name:
            names.append(name)
    return names

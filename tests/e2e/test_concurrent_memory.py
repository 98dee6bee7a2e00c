"""Concurrent writers of one user's memory: every acknowledged line is in the vault.

Four real processes at once, each looping: two run `ask "I prefer …"` turns (Phase 8
commits to preferences.md, then the learning engine rewrites its usage and trust
counters), one saves preferences and one saves facts.  Each prints a statement's word
only once its write was acknowledged; afterwards every printed word must be in
preferences.md / facts.md and `verify` must pass.  Before every writer took the user's
memory lock and re-read the file under it, the learning engine wrote back a copy of
preferences.md read before a concurrent save, and acknowledged lines were lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from events import parse_document
from pandafs.memory import parse_entries
from pandafs.vault import Vault

from ..conftest import REPO, run_pandafs

ROUNDS = 40

WRITER = """
import sys
from pathlib import Path
from pandafs.memory import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault

root, kind, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
vault = Vault.open(root)
for r in range(rounds):
    word = f"{kind}{r}w"
    if kind.startswith("ask"):
        with Pipeline(vault) as pipeline:
            result = pipeline.ask(f"I prefer {word} notebooks", user="alice")
        if result.outcome != "APPROVE":
            continue
    else:
        doc_type = "fact" if kind == "fact" else "preference"
        Memory(vault).save(f"likes {word} things", user="alice", doc_type=doc_type)
    print(word, flush=True)
"""


def _entries(vault: Vault, name: str) -> str:
    path = vault.layout.user_dir("alice") / name
    body = parse_document(path.read_text(encoding="utf-8")).body if path.exists() else ""
    return "\n".join(e.text.lower() for e in parse_entries(body))


def run_writers(root: Path, rounds: int) -> dict[str, list[str]]:
    """Start the four writers at once; the words each acknowledged."""
    kinds = ("ask_a", "ask_b", "pref", "fact")
    procs = {
        kind: subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), kind, str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for kind in kinds
    }
    acknowledged: dict[str, list[str]] = {}
    for kind, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        acknowledged[kind] = out.split()
    return acknowledged


def test_concurrent_writers_lose_no_acknowledged_line(vault: Vault) -> None:
    acknowledged = run_writers(vault.root, ROUNDS)
    assert sum(map(len, acknowledged.values())) >= ROUNDS * 3
    missing = []
    for kind, words in acknowledged.items():
        text = _entries(vault, "facts.md" if kind == "fact" else "preferences.md")
        missing += [w for w in words if w.lower() not in text]
    assert missing == []
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0

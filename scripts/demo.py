"""The demo behind `scripts/demo`: a fresh vault, imported history, real turns, a search.

Every step runs the real `pandafs` CLI in a child process, exactly as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VAULT = Path(os.environ.get("DEMO_VAULT", REPO / "demo-vault")).resolve()
PANDAFS = [sys.executable, "-m", "pandafs", "--root", str(VAULT)]


def step(title: str, *args: str, ok_codes: tuple[int, ...] = (0,)) -> str:
    print(f"\n$ pandafs {' '.join(args)}    # {title}", flush=True)
    proc = subprocess.run([*PANDAFS, *args], capture_output=True, text=True, cwd=REPO)
    print(proc.stdout.rstrip())
    if proc.returncode not in ok_codes:
        print(proc.stderr.rstrip(), file=sys.stderr)
        raise SystemExit(f"demo step failed with exit {proc.returncode}: pandafs {' '.join(args)}")
    return proc.stdout


def main() -> None:
    if VAULT.exists():
        if not (VAULT / "pandafs.toml").exists():
            raise SystemExit(f"{VAULT} exists and is not a PandaFS vault; set DEMO_VAULT elsewhere")
        shutil.rmtree(VAULT)
    print(f"PandaFS demo — vault at {VAULT}")
    step("create the vault", "init")
    step("load earlier conversations", "import-turns", str(REPO / "scripts/demo_data/history.jsonl"))
    step(
        "remember a product we looked at",
        "save",
        "Lenovo LOQ 15 gaming laptop with an RTX 4050 GPU: $697 at Best Buy, in stock.",
        "--user",
        "demo",
        "--topic",
        "electronics.laptop",
        "--keywords",
        "lenovo,laptop,rtx",
        "--scope",
        "user",
    )
    step("a preference, stated in a turn", "ask", "I prefer Lenovo laptops", "--user", "demo")
    step(
        "a question that uses memory",
        "ask",
        "Which Lenovo laptop with an RTX GPU did we look at?",
        "--user",
        "demo",
    )
    step(
        "a follow-up: 'that one' is resolved from the previous turn",
        "ask",
        "How much was that one?",
        "--user",
        "demo",
    )
    step("a turn with nothing to act on asks back", "ask", "hmm", "--user", "demo")
    step("one search over every document", "search", "hamster cage", "--user", "demo", "--limit", "3")
    step("the preference the first turn committed", "retrieve", "demo/preferences")
    step("verify hash chains, projections and the index", "verify")
    step("counts", "stats")
    print(
        f"\nOpen {VAULT} as a vault in Obsidian: start at Home.md, then users/demo/turns/ —"
        " each turn's context.md is its §0-§6 lesson, events.jsonl its record."
    )
    venv = REPO / ".venv" / "bin" / "pandafs"
    on_path = shutil.which("pandafs")
    where = f"is {on_path}" if on_path else "is not on your PATH yet"
    print(
        f"\n`pandafs` {where}. Run this checkout's as"
        f"\n    {venv} --root {VAULT} search hamster --user demo"
        "\nor put it on your PATH for good, from this folder, with one of"
        "\n    pipx install .        uv tool install .        pip install --user ."
        "\nthen make your own vault: pandafs --root ~/assistant init"
    )


if __name__ == "__main__":
    main()

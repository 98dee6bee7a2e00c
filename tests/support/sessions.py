"""A user's conversations imported as sessions, and the sessions a search finds: for ranking tests."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson

from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

Turn = tuple[str, str, str, str]
"""(session id, ISO timestamp, what the user said, the answer): one turn per session."""


def memory_with(vault: Vault, tmp_path: Path, turns: list[Turn], user: str = "alice") -> Memory:
    """A memory over `turns` of `user`, imported and indexed as `import-turns` does."""
    lines = [
        {
            "user": user,
            "external_id": f"{session}-t000",
            "timestamp": when,
            "query": text,
            "response": answer,
            "meta": {"session": session},
        }
        for session, when, text, answer in turns
    ]
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    return memory


def sessions_found(memory: Memory, query: str, now: datetime, user: str = "alice") -> list[str]:
    """The session of each hit, best first."""
    hits = memory.search(query, user=user, now=now, limit=10, snippets=False)
    return [h["episode"] for h in hits]

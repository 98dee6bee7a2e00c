"""What `pandafs --help` lists: the commands, the module of each, their one-liners.

`base` builds the lazy click group from these, so `pandafs --help` lists every command
without importing the modules that define them.
"""

from __future__ import annotations

__all__ = [
    "COMMANDS",
    "DESCRIPTION",
    "ROOT_DEFAULT",
    "ROOT_ENV",
    "ROOT_HELP",
]

DESCRIPTION = "PandaFS: the file-first, event-sourced memory of a local assistant."
ROOT_DEFAULT = "./panda-system-docs"
ROOT_ENV = "PANDAFS_ROOT"
ROOT_HELP = f"Vault folder (or set {ROOT_ENV})."

# command → (module under pandafs.cli, the first line of its help: shown by --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("records", "Create a vault (layout, pandafs.toml, .obsidian/, home note); keeps what exists."),
    "ask": ("turns", "Run one turn through the pipeline and print the answer."),
    "watch": ("watch", "Keep the search index in step with the vault and answer queries dropped in inbox/."),
    "search": ("memory", "Unified search over every document (natural language or keywords)."),
    "retrieve": ("memory", "Print one document by id (alice/turn_000001) or vault-relative path."),
    "save": ("memory", "Save a memory document and index it."),
    "import-turns": ("records", "Import past turns from JSON Lines."),
    "import": ("imports", "Import a chat history: each question and its answer become one turn."),
    "rebuild": ("memory", "Rebuild every derived artefact from the files: the index, trust, the catalog."),
    "archive": ("archive", "Move old, rarely used turns to Parquet, leaving a searchable summary stub."),
    "restore": ("archive", "Put archived turns (IDS like alice/turn_000001) back as byte-identical folders."),
    "replay": (
        "records",
        "Re-project context.md and metadata.json from events (TARGET: user or user/turn_NNNNNN).",
    ),
    "verify": ("records", "Check hash chains, torn tails and projections (TARGET: user or user/turn)."),
    "promote": ("learning", "Run scope promotion and demotion (new → user → global) now."),
    "prune": ("learning", "Move expired documents to the archive (archive/expired/…); nothing is deleted."),
    "edit": ("forgetting", "Change a memory document: an entry's text, or a memory's text, title, topic."),
    "delete": ("forgetting", "Delete a memory document or entry: it moves to archive/expired/."),
    "forget": ("forgetting", "Remove a statement, memory or turn from everything the vault keeps."),
    "tools": ("turns", "The memory tools as LLM tool schemas (OpenAI function-calling format)."),
    "mcp": ("mcp", "Serve the memory tools and documents over MCP, bound to one user."),
    "stats": ("records", "Counts per user, content type and scope; with --since, the daily rollups."),
}

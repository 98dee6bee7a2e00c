"""What `pandafs --help` lists, without click: the commands, their one-liners, the options.

`base` builds the click group from these; `print_top_help` prints the same page
without importing click (or any command), laid out as click's `HelpFormatter` does —
tests/test_architecture.py compares the two at several terminal widths.  Both list
the commands with `command_rows`, the one place their one-liners are cut.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "COMMANDS",
    "DESCRIPTION",
    "ROOT_DEFAULT",
    "ROOT_ENV",
    "ROOT_HELP",
    "command_rows",
    "print_top_help",
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

# The group's options as click shows them (`--root` is a directory path with a default;
# the two others are click's own --version and --help).
_OPTIONS = (
    ("--root DIRECTORY", f"{ROOT_HELP}  [default: {ROOT_DEFAULT}]"),
    ("--version", "Show the version and exit."),
    ("-h, --help", "Show this message and exit."),
)


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size().columns` gives it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _wrap(text: str, width: int, indent: str = "", subsequent: str = "") -> list[str]:
    import textwrap

    wrapper = textwrap.TextWrapper(
        width, initial_indent=indent, subsequent_indent=subsequent, replace_whitespace=False
    )
    return wrapper.wrap(text.expandtabs())


def _short(text: str, limit: int) -> str:
    """The first sentence of `text`, cut to `limit` characters at a word (click's short help)."""
    words = text.split()
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            words = words[: i + 1]
            break
    short = " ".join(words)
    if len(short) <= limit:
        return short
    if limit < 3:
        return "..."
    import textwrap

    return textwrap.shorten(short, limit, placeholder="...", break_on_hyphens=False)


def _definitions(rows: list[tuple[str, str]], width: int, indent: int = 2) -> list[str]:
    first_col = min(max(len(term) for term, _ in rows), 30) + 2
    text_width = max(width - first_col - 2, 10)
    lines = []
    for term, text in rows:
        wrapped = _wrap(text, text_width)
        if len(term) <= first_col - 2:
            head = " " * indent + term + " " * (first_col - len(term))
        else:
            lines.append(" " * indent + term)
            head = " " * (first_col + indent)
        lines.append(head + (wrapped[0] if wrapped else ""))
        lines += [" " * (first_col + indent) + line for line in wrapped[1:]]
    return lines


def top_help(columns: int) -> str:
    """The text of `pandafs --help` for a terminal `columns` wide."""
    width = max(min(columns, 80) - 2, 50)
    lines = _wrap("[OPTIONS] COMMAND [ARGS]...", width, "Usage: pandafs ", " " * len("Usage: pandafs "))
    lines += ["", *_wrap(DESCRIPTION, width, "  ", "  ")]
    lines += ["", "Options:", *_definitions(list(_OPTIONS), width)]
    lines += ["", "Commands:", *_definitions(command_rows(width), width)]
    return "\n".join(lines)


def command_rows(width: int) -> list[tuple[str, str]]:
    """The `Commands:` rows of `pandafs --help` for a page `width` wide: each command and
    its one-liner, cut as click cuts a short help.  Both writers of the page use it
    (`top_help` and click's, `base.LazyGroup`)."""
    names = sorted(COMMANDS)
    limit = width - 6 - max(len(name) for name in names)
    return [(name, _short(COMMANDS[name][1], limit)) for name in names]


def print_top_help() -> None:
    """`pandafs --help` without click: the commonest help, printed instantly."""
    sys.stdout.write(top_help(_columns()) + "\n")
    sys.stdout.flush()

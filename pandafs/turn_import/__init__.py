"""`pandafs import-turns FILE.jsonl`: bulk-load past conversations as completed turns.

Each line `{"user", "external_id"?, "timestamp", "query", "response", "meta"?}`
becomes one turn folder numbered like any other, holding its events (turn_started,
context_synthesized when it has context or a conversation, response_synthesized,
turn_completed) and their projections.  A line whose turn would be larger than the index
takes is refused by name; a line already in completes its turn if it holds more.

The jobs, one module each: `lines` streams and validates the file (memory bounded
by the batch size, whatever the file's size: what grows is one set of external ids
per user); `render` renders a turn in memory; `place` writes folders in staging
(every file fsynced, no `os.sync()`) and renames them into place whole; `ledger`
keeps the per-user summary of imported ids and marks that makes a killed import
safe to re-run (no line twice, no turn unindexed); `indexing` hands each batch's
documents to the indexer in the background; `threads` links the turns of one
conversation and `complete` completes turns whose line grew, links a turn to the one
after it and writes conversations' notes; `run` drives the batches.
"""

from .lines import ImportLine
from .run import ImportReport, import_turns

__all__ = ["ImportLine", "ImportReport", "import_turns"]

"""`pandafs import-turns FILE.jsonl`: bulk-load past conversations as completed turns.

Each line `{"user", "external_id"?, "timestamp", "query", "response", "meta"?}` becomes
one turn folder numbered like any other, holding its events and their projections.  A
line whose turn is larger than the index takes is refused by name; a line already in
completes its turn if it holds more.  `run` drives the batches."""

from .lines import ImportLine
from .run import ImportReport, import_turns

__all__ = ["ImportLine", "ImportReport", "import_turns"]

"""`pandafs import-turns FILE.jsonl`: bulk-load past conversations as completed turns.

Each line `{"user", "external_id"?, "timestamp", "query", "response", "meta"?}` becomes one
turn folder numbered like any other; one larger than the index takes is refused by name; one
already in completes its turn if it holds more."""

from .run import import_turns

__all__ = ["import_turns"]

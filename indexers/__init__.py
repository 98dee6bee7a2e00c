"""Derived state of a vault: the tantivy full-text index, the Parquet archive, the watcher.
Imports `events` only; never the pipeline or the CLI."""

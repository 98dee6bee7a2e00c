"""`pandafs import chatgpt|claude|claude-code PATH --user U` (docs/importing.md).

Each reader turns an export into `import-turns` lines, one per question and answer, which
`turn_import.import_turns` takes as `pandafs import-turns` does.  `external_id` is
`{format}:{conversation}:{message}`, parts percent-encoded (a content sha256 for a message
without an id).  Each import accounts for every conversation and message
(`HistoryReport.account`).  Shapes of each format: tests/pandafs/fixtures/shapes/."""

from .history import FORMATS, import_history

__all__ = ["FORMATS", "import_history"]

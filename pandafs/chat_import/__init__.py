"""`pandafs import chatgpt|claude|claude-code PATH --user U`: the chat histories people
have (docs/importing.md).

Each reader turns one export format into `import-turns` lines, one per question and
answer, and `import_history` hands them to `turn_import.import_turns`, so numbering,
events, idempotence and indexing are those of `pandafs import-turns`.  `external_id` is
`{format}:{conversation}:{message}`, each part percent-encoded (a content sha256 for a
message without an id).  Each import ends with an account of every conversation and
message (`HistoryReport.account`).  Shapes of each format: tests/pandafs/fixtures/shapes/."""

from ._common import Conversion
from .history import FORMATS, HistoryReport, convert, import_history

__all__ = ["FORMATS", "Conversion", "HistoryReport", "convert", "import_history"]

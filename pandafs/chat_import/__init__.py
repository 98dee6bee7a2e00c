"""`pandafs import chatgpt|claude|claude-code PATH --user U`: the chat histories people have.

Each reader turns one export format into the lines `import-turns` takes
(`{"user", "external_id", "timestamp", "query", "response", "context", "meta"}`, one per
question-and-answer pair) and `import_history` hands them to `turn_import.import_turns`,
so numbering, events, the ledger that makes re-import add nothing, batching and
indexing are exactly those of `pandafs import-turns`.

Formats (as the exports are written; fixtures in tests/pandafs/fixtures/, where each shape comes from
in shapes/README.md):

- **chatgpt** — `conversations.json` of a ChatGPT data export, or the ZIP it comes in, or
  one conversation object: conversations `{id|conversation_id, title, create_time,
  update_time, mapping, current_node}`; `mapping` is a tree of nodes `{id, message,
  parent, children}`.  The branch the user last saw (from `current_node` up to the root)
  is imported; messages on other branches (edited or regenerated) are counted.
- **claude** — `conversations.json` of a claude.ai export (or its ZIP): a list (or
  `{"conversations": [...]}`) of `{uuid, name, created_at, updated_at, chat_messages}`,
  messages `{uuid, sender: human|assistant, text, content: [blocks], attachments, files,
  created_at, parent_message_uuid?}`; attached files' `extracted_content` comes with the
  question as context.
- **claude-code** — Claude Code's transcripts (`~/.claude/projects/<project>/<session>.jsonl`,
  a file or a folder of them): every chain of every session in a file (see
  `claude_code`).

One turn = one question and the assistant's words until the next question.  Tool calls
and results are not part of the answer text: their names and count go to `meta` (`tools`,
`tool_messages`).  Every turn keeps its conversation's title, times and id in `meta` and
`external_id` = `{format}:{conversation}:{message}`, each part percent-encoded (a sha256 of
the content when a message has no id), so importing the same export twice adds nothing
and an export that grew completes what grew.  Each import ends with an account of every
conversation and message (`HistoryReport.account`).

Exports are read under the vault's one rule for outside files and at most `[index]
import_max_bytes`; a large JSON export is read as a stream (`_common.array_items`).

One module a format (`chatgpt`, `claude`, `claude_code`), what they share in `_common`
(opening an export, the conversion a reader fills, pairs to import lines), and `history`
(the format's reader, then `import_turns`, and the account).
"""

from ._common import Conversion
from .history import FORMATS, HistoryReport, convert, import_history

__all__ = ["FORMATS", "Conversion", "HistoryReport", "convert", "import_history"]

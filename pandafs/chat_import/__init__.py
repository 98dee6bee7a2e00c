"""`pandafs import chatgpt|claude|claude-code PATH --user U`: the chat histories people have.

Each reader turns one export format into the lines `import-turns` takes
(`{"user", "external_id", "timestamp", "query", "response", "meta"}`, one per
question-and-answer pair) and `import_history` hands them to `turn_import.import_turns`,
so numbering, events, the ledger that makes re-import add nothing, batching and
indexing are exactly those of `pandafs import-turns`.

Formats (as the exports are written; fixtures in tests/pandafs/fixtures/):

- **chatgpt** — `conversations.json` of a ChatGPT data export: a list of
  conversations `{id|conversation_id, title, create_time, update_time, mapping,
  current_node}`; `mapping` is a tree of nodes `{id, message, parent, children}`.
  Only the branch the user last saw is imported: the path from `current_node` up to
  the root (edited and regenerated branches are left out).
- **claude** — `conversations.json` of a claude.ai export: a list (or
  `{"conversations": [...]}`) of `{uuid, name, created_at, updated_at, chat_messages}`,
  messages `{uuid, sender: human|assistant, text, content: [blocks], created_at,
  parent_message_uuid?}`; with parent links, the path to `current_leaf_message_uuid`
  (else to the last message) is followed.
- **claude-code** — Claude Code's transcripts (`~/.claude/projects/<project>/<session>.jsonl`,
  a file or a folder of them): one JSON record per line `{type: user|assistant|summary|…,
  uuid, parentUuid, sessionId, timestamp, message: {role, content}}`; the path from the
  session's last message back through `parentUuid` (and `logicalParentUuid` across a
  compaction) is followed; sub-agent side chains (`isSidechain`, `agent-*.jsonl`) and
  meta records are left out.

One turn = one user message and the assistant's text until the next user message.
Tool calls and tool results are not part of the answer text: their names and count go
to `meta` (`tools`, `tool_messages`).  Every turn keeps its conversation's title, times
and id in `meta` and `external_id` = `{format}:{conversation id}:{message id}` (a
sha256 of the content when an id is missing), so importing the same export twice, or
an export that grew, adds only what is new.

One module a format (`chatgpt`, `claude`, `claude_code`), what they share in `_common`
(the conversion a reader fills, pairs to import lines), and `history` (the format's
reader, then `import_turns`).
"""

from ._common import Conversion
from .history import FORMATS, HistoryReport, convert, import_history

__all__ = ["FORMATS", "Conversion", "HistoryReport", "convert", "import_history"]

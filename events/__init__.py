"""The record layer of PandaFS: turn events, documents, vault layout.

Needs only pydantic, orjson and PyYAML; never imports `indexers` or `pandafs`.
"""

from .documents import (
    SECTION_TITLES,
    DocumentMetadata,
    ParsedDocument,
    dump_frontmatter,
    get_section,
    parse_document,
    render_document,
    split_sections,
)
from .errors import (
    ChainError,
    EventLogError,
    EventsError,
    FrontmatterError,
    InvalidUserId,
    LogBusyError,
    ProjectionError,
    TornTailError,
)
from .fsio import atomic_write, is_temp_name, sync_all
from .layout import (
    DocRef,
    Layout,
    candidate_paths,
    classify,
    turn_name,
    turn_number,
    validate_user_id,
)
from .log import (
    GENESIS,
    EventWriter,
    LogRead,
    append_events,
    check_chain,
    event_hash,
    format_ts,
    read_events,
    read_log,
    repair_torn_tail,
)
from .projection import Attempt, TurnView, project_turn
from .render import PROJECTED_FILES, render_turn, turn_metadata, wikilink
from .schema import PAYLOADS, SCHEMA_VERSION, AnyEvent, Event, Payload, UnknownEvent, parse_event

__all__ = [
    "GENESIS",
    "PAYLOADS",
    "PROJECTED_FILES",
    "SCHEMA_VERSION",
    "SECTION_TITLES",
    "AnyEvent",
    "Attempt",
    "ChainError",
    "DocRef",
    "DocumentMetadata",
    "Event",
    "EventLogError",
    "EventWriter",
    "EventsError",
    "FrontmatterError",
    "InvalidUserId",
    "Layout",
    "LogBusyError",
    "LogRead",
    "ParsedDocument",
    "Payload",
    "ProjectionError",
    "TornTailError",
    "TurnView",
    "UnknownEvent",
    "append_events",
    "atomic_write",
    "candidate_paths",
    "check_chain",
    "classify",
    "dump_frontmatter",
    "event_hash",
    "format_ts",
    "get_section",
    "is_temp_name",
    "parse_document",
    "parse_event",
    "project_turn",
    "read_events",
    "read_log",
    "render_document",
    "render_turn",
    "repair_torn_tail",
    "split_sections",
    "sync_all",
    "turn_metadata",
    "turn_name",
    "turn_number",
    "validate_user_id",
    "wikilink",
]

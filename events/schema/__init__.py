"""Typed turn events.

An event is one JSON line in a turn's `events.jsonl`:

    {"v":1,"seq":3,"ts":"…Z","user":"alice","turn":"turn_000001","phase":"planner",
     "type":"plan_created","data":{…},"prev":"<sha256 of event 2>","hash":"<sha256>"}

Each event type is a frozen pydantic payload class (`data`) registered under its
`type` name; `Event` is the envelope.  `parse_event` validates a raw record into the
discriminated union `any_event()`; a type this version does not know becomes an
`UnknownEvent` that keeps its data untouched (a newer PandaFS wrote it), so nothing
is ever dropped.  Payloads allow extra keys for the same reason.
"""

from ..clock import utcnow
from .envelope import (
    PAYLOAD_CLASSES,
    PAYLOADS,
    Event,
    UnknownEvent,
    any_event,
    event_class,
    parse_event,
)
from .phases import (
    SCHEMA_VERSION,
    Candidate,
    ContentReference,
    ContextBlock,
    ContextRetrieved,
    ContextSynthesized,
    Decision,
    DocumentsUsed,
    ExecutorStepped,
    GateResult,
    MemoryCandidate,
    MemoryCommitted,
    MemoryDiscarded,
    MemoryEntry,
    MemoryStaged,
    Outcome,
    Payload,
    PhaseMetrics,
    PlanCreated,
    QueryAnalyzed,
    ReflectionDecided,
    ResponseSynthesized,
    SourceRef,
    Todo,
    ToolExecuted,
    ToolRequest,
    TurnCompleted,
    TurnOutcome,
    TurnStarted,
    ValidationDecided,
)
from .records import (
    ExtractionRecorded,
    FeedbackRecorded,
    Forgotten,
    PhaseFailed,
    ScopeChanged,
    TierFailed,
    TornTailRepaired,
)

__all__ = [
    "Candidate",
    "ContentReference",
    "ContextBlock",
    "ContextRetrieved",
    "ContextSynthesized",
    "Decision",
    "DocumentsUsed",
    "Event",
    "ExecutorStepped",
    "ExtractionRecorded",
    "FeedbackRecorded",
    "Forgotten",
    "GateResult",
    "MemoryCandidate",
    "MemoryCommitted",
    "MemoryDiscarded",
    "MemoryEntry",
    "MemoryStaged",
    "Outcome",
    "PAYLOADS",
    "PAYLOAD_CLASSES",
    "Payload",
    "PhaseFailed",
    "PhaseMetrics",
    "PlanCreated",
    "QueryAnalyzed",
    "ReflectionDecided",
    "ResponseSynthesized",
    "SCHEMA_VERSION",
    "ScopeChanged",
    "SourceRef",
    "TierFailed",
    "Todo",
    "ToolExecuted",
    "ToolRequest",
    "TornTailRepaired",
    "TurnCompleted",
    "TurnOutcome",
    "TurnStarted",
    "UnknownEvent",
    "any_event",
    "event_class",
    "ValidationDecided",
    "parse_event",
    "utcnow",
]

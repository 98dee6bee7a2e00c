"""The envelope every log line shares, the registry of payload types, and `parse_event`,
which validates a raw record into its typed event (an unknown type is kept verbatim).

Each type's event class is built when first asked for (`event_class`): a turn reads and
writes a few of the types."""

# No `from __future__ import annotations`: the models' annotations are objects when the
# classes are built, which pydantic would otherwise compile from their strings one by one.

from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, create_model

from .phases import (
    SCHEMA_VERSION,
    ContextRetrieved,
    ContextSynthesized,
    DocumentsUsed,
    ExecutorStepped,
    MemoryCommitted,
    MemoryDiscarded,
    MemoryStaged,
    Payload,
    PlanCreated,
    QueryAnalyzed,
    ReflectionDecided,
    ResponseSynthesized,
    ToolExecuted,
    TurnCompleted,
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

PAYLOAD_CLASSES: tuple[type[Payload], ...] = (
    TurnStarted,
    QueryAnalyzed,
    ReflectionDecided,
    ContextRetrieved,
    ContextSynthesized,
    PlanCreated,
    ExecutorStepped,
    ToolExecuted,
    MemoryStaged,
    ResponseSynthesized,
    ValidationDecided,
    MemoryCommitted,
    MemoryDiscarded,
    DocumentsUsed,
    TurnCompleted,
    PhaseFailed,
    TornTailRepaired,
    FeedbackRecorded,
    TierFailed,
    ExtractionRecorded,
    ScopeChanged,
    Forgotten,
)
PAYLOADS: dict[str, type[Payload]] = {cls.TYPE: cls for cls in PAYLOAD_CLASSES}


class Event(BaseModel):
    """The envelope every line shares.  `data` is typed by the concrete subclass."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    v: int = SCHEMA_VERSION
    seq: int = Field(ge=0)
    ts: datetime
    user: str
    turn: str
    phase: str
    type: str
    data: Any
    prev: str
    hash: str

    @property
    def known(self) -> bool:
        return True


class UnknownEvent(Event):
    """An event type this version does not know; kept verbatim and reported."""

    data: dict[str, Any]

    @property
    def known(self) -> bool:
        return False


@cache
def event_class(kind: str) -> type[Event]:
    """The envelope class of the known event type `kind`, named after its payload."""
    payload = PAYLOADS[kind]
    return create_model(  # type: ignore[no-any-return]  # built at run time
        f"{payload.__name__}Event",
        __base__=Event,
        type=(Literal[kind], kind),  # type: ignore[arg-type,valid-type]
        data=(payload, ...),
    )


def _tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in PAYLOADS else "unknown"


@cache
def any_event() -> Any:
    """The discriminated union of every event class and `UnknownEvent`, by `type`."""
    members = tuple(Annotated[event_class(t), Tag(t)] for t in PAYLOADS)
    members += (Annotated[UnknownEvent, Tag("unknown")],)
    return Annotated[Union[members], Discriminator(_tag)]  # type: ignore[valid-type]  # noqa: UP007 (built from the registry)


@cache
def _validate_any() -> Any:
    """`any_event()`'s own validator (`TypeAdapter.validate_python` wraps it in Python)."""
    from pydantic import TypeAdapter

    return TypeAdapter(any_event()).validator.validate_python


def parse_event(record: dict[str, Any]) -> Event:
    """Validate one raw log record into its typed event (or an `UnknownEvent`).

    The class its type names validates it, as `any_event()` would, without building every
    event class; a record that does not fit is validated by `any_event()`, whose error is
    the one to report (it names the type)."""
    kind = _tag(record)
    cls = UnknownEvent if kind == "unknown" else event_class(kind)
    try:
        return cls.__pydantic_validator__.validate_python(record)  # type: ignore[no-any-return]
    except ValidationError:
        return _validate_any()(record)  # type: ignore[no-any-return]  # raises that error

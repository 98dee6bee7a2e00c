"""Read an import file as a stream of numbered lines and validate each one into an `ImportLine`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator

from events.clock import aware, out_of_range
from events.errors import NotInVault, json_problem
from events.fsio import open_outside_file
from events.layout import validate_user_id

from ..errors import BadInput

__all__ = ["ImportLine", "chunks", "json_object", "open_source", "parse_line"]


def open_source(path: Path | str) -> IO[bytes]:
    """An import source opened under the one rule for outside files (a pipe too), else BadInput."""
    try:
        return open_outside_file(path)
    except NotInVault as exc:
        raise BadInput(
            f"{path}: {exc.reason}; not read (PandaFS reads only plain files with one name)"
        ) from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None


class ImportContext(BaseModel):
    """Text that came with the question (an attachment, a compaction's summary), shown in §2."""

    model_config = ConfigDict(extra="forbid")
    heading: str
    text: str


class ImportLine(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)
    user: Annotated[str, AfterValidator(validate_user_id)]  # an InvalidUserId is a ValueError
    external_id: str | None = None
    timestamp: datetime
    query: str
    response: str = ""
    context: list[ImportContext] = []
    meta: dict[str, Any] | None = None
    _number: int = PrivateAttr(0)  # the line of the file it came from

    @property
    def number(self) -> int:
        return self._number

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        problem = out_of_range(value)  # the range every other time PandaFS takes is held to
        if problem is not None:
            raise ValueError(problem)
        return aware(value).astimezone(UTC)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is empty")
        return value


def _error_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "line"
        parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def json_object(raw: bytes) -> dict[str, Any] | str:
    """One line of JSON Lines as an object, or why it is not one."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return json_problem(raw, exc)
    return data if isinstance(data, dict) else "not a JSON object"


def parse_line(number: int, raw: bytes) -> ImportLine | dict[str, Any]:
    """The validated line, or its failure `{line, error}`."""
    data = json_object(raw)
    if isinstance(data, str):
        return {"line": number, "error": data}
    try:
        line = ImportLine.model_validate(data)
    except ValidationError as exc:
        return {"line": number, "error": _error_text(exc)}
    line._number = number
    return line


def chunks(handle: Iterable[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    """Numbered non-blank lines of an open file, `size` at a time, read as a stream."""
    chunk: list[tuple[int, bytes]] = []
    for number, raw in enumerate(handle, 1):
        if raw.strip():
            chunk.append((number, raw))
            if len(chunk) >= size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk

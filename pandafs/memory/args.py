"""The search arguments of the memory tool and of `search --batch` as pydantic models,
built from `indexers.request.search_arguments()`.  `batch_query()`, a line of `search
--batch`, adds whose search it is and when."""

from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, create_model

from indexers.request import Argument, search_arguments

__all__ = ["SearchArgs", "SearchArgsModel", "batch_query", "empty_list"]

BATCH_SPELLING = {"content_types": "types"}
"""How a `search --batch` line may also spell a tool argument (as `--type` does)."""


def empty_list() -> list[Any]:
    """A list argument's default factory: pydantic reads a factory's signature, and that of
    `list` itself is parsed from its text (which compiles `tokenize`'s patterns)."""
    return []


class SearchArgsModel(BaseModel):
    """What every model of search arguments has (its fields come from `search_arguments()`)."""

    # built when first used: a command validates one of them at most
    model_config = ConfigDict(extra="forbid", defer_build=True)
    if TYPE_CHECKING:  # the one field every caller reads by name
        query: str

    def search_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `Memory.search` besides the query and the user."""
        return {a.name: getattr(self, a.tool) for a in search_arguments() if a.name != "query"}


def _field(arg: Argument, *, batch: bool = False) -> tuple[Any, Any]:
    hint = arg.hint
    if arg.choices:
        hint = Literal[arg.choices] | None
    elif hint == tuple[str, ...]:
        hint = list[str]
    le = arg.le if batch else (arg.tool_le if arg.tool_le is not None else arg.le)
    if arg.required:
        return hint, Field(..., description=arg.description, ge=arg.ge, le=le)
    if isinstance(arg.default, tuple):
        alias = (
            AliasChoices(BATCH_SPELLING[arg.tool], arg.tool) if batch and arg.tool in BATCH_SPELLING else None
        )
        return hint, Field(default_factory=empty_list, description=arg.description, validation_alias=alias)
    default = arg.default if batch or arg.tool_default is None else arg.tool_default
    return hint, Field(default, description=arg.description, ge=arg.ge, le=le)


def _build(name: str, base: type[BaseModel], doc: str, *, batch: bool = False) -> Any:
    fields = {a.tool: _field(a, batch=batch) for a in search_arguments()}
    return create_model(name, __base__=base, __doc__=doc, __module__=__name__, **fields)  # type: ignore[call-overload]


SearchArgs: type[SearchArgsModel] = _build(
    "SearchArgs", SearchArgsModel, "The arguments of `search_memory`, the memory tool."
)


class _BatchBase(SearchArgsModel):
    user: str | None = None
    now: datetime | None = Field(None, description="search as of this time (time words resolve to it)")


@cache
def batch_query() -> type[_BatchBase]:
    """The model of a line of `search --batch`, made when a batch is read (no other command
    reads one)."""
    return _build(  # type: ignore[no-any-return]
        "BatchQuery",
        _BatchBase,
        "One line of `search --batch`: the search arguments, whose search it is, and content "
        "types also spelled `types`.",
        batch=True,
    )

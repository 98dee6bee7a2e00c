"""Checked settings: the type-and-bounds checking a `pandafs.toml` section needs.

`setting(…)` declares a key (default, description, bounds, old names); `_Section` subclasses
check every value on construction (an int becomes a float where one is wanted, finite,
`Literal` choices, `ge`/`le`/`gt`, no unknown keys), so `TiersConfig(hot_turns=9)` fails like
a bad file; `model_validate` keeps the name its callers knew.
"""

import math
import typing
from collections.abc import Callable
from typing import Any, Literal

from ..errors import BadInput

# No `from __future__ import annotations`: the checks read annotations as types.


class ConfigError(BadInput):
    """A value `pandafs.toml` (or a constructor) may not hold; `where` is its dotted key."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


class Setting:
    """One key of a section: its default (or `factory`), what it means, its bounds."""

    __slots__ = ("aliases", "default", "description", "factory", "ge", "gt", "kind", "le", "name")

    def __init__(
        self,
        default: Any = None,
        *,
        description: str,
        factory: Callable[[], Any] | None = None,
        ge: float | None = None,
        le: float | None = None,
        gt: float | None = None,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.default, self.factory, self.description = default, factory, description
        self.ge, self.le, self.gt, self.aliases = ge, le, gt, aliases
        self.name = ""
        self.kind: Any = None

    def check(self, value: Any) -> Any:
        value = _coerce(value, self.kind, self.name)
        for limit, ok, word in (
            (self.ge, lambda v, b: v >= b, "greater than or equal to"),
            (self.le, lambda v, b: v <= b, "less than or equal to"),
            (self.gt, lambda v, b: v > b, "greater than"),
        ):
            if limit is not None and not ok(value, limit):
                raise ConfigError(self.name, f"Input should be {word} {limit}")
        return value


setting: Callable[..., Any] = Setting
"""Declare a key of a `_Section` subclass (typed `Any` so `x: int = setting(...)` reads well)."""


def _coerce(value: Any, kind: Any, where: str) -> Any:
    """`value` as the annotated `kind`, or ConfigError (messages worded like pydantic's)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if isinstance(kind, type) and issubclass(kind, _Section):
        if isinstance(value, kind):
            return value
        if isinstance(value, dict):
            return kind.model_validate(value, where)
        raise ConfigError(where, "Input should be a table (a [section] or {key = value})")
    if origin is Literal:
        if value not in args:
            raise ConfigError(where, "Input should be " + " or ".join(repr(a) for a in args))
        return value
    if origin is list:
        if not isinstance(value, list | tuple):
            raise ConfigError(where, "Input should be a valid list")
        return [_coerce(item, args[0], f"{where}.{i}") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(where, "Input should be a valid dictionary (a table)")
        return {str(k): _coerce(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):  # TOML has nan and inf; no setting means either
            raise ConfigError(where, "Input should be a finite number")
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind is bool and type(value) is int and value in (0, 1):  # pydantic's lax booleans
        return bool(value)
    if isinstance(kind, type) and isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    name = {int: "integer", float: "number", bool: "boolean", str: "string"}.get(kind, str(kind))
    raise ConfigError(where, f"Input should be a valid {name}")


class _Section:
    """A section of pandafs.toml: immutable, keyword-only, checked on construction (not a
    dataclass: generating its methods compiles code every command pays for at start-up)."""

    settings: typing.ClassVar[dict[str, Setting]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.settings = {}
        for name, kind in cls.__dict__.get("__annotations__", {}).items():
            spec = cls.__dict__.get(name)
            if isinstance(spec, Setting):
                spec.name, spec.kind = name, kind
                cls.settings[name] = spec
                delattr(cls, name)  # instances hold the values

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(self.settings))
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        for name, spec in self.settings.items():
            value = values[name] if name in values else spec.factory() if spec.factory else spec.default
            object.__setattr__(self, name, spec.check(value))
        self._after_init()

    def _after_init(self) -> None:
        """What a section adds once its values are checked."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), *(repr(v) for v in vars(self).values())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @classmethod
    def model_validate(cls, data: Any, where: str = "") -> Any:
        """The section from a TOML table: keys by name (or an old alias), nothing unknown."""
        if not isinstance(data, dict):
            raise ConfigError(where, "Input should be a table")
        prefix = f"{where}." if where else ""
        known: dict[str, str] = {}
        for spec in cls.settings.values():
            for key in spec.aliases or (spec.name,):
                known.setdefault(key, spec.name)
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ConfigError(f"{prefix}{key}", "Extra inputs are not permitted")
            values.setdefault(known[key], value)
        try:
            return cls(**values)
        except ConfigError as exc:
            raise ConfigError(f"{prefix}{exc.where}", exc.message) from None

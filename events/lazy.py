"""Package exports loaded on first use, so `import events` (or any package) costs nothing.

A command that only searches must not build every event schema at start-up: a
package's `__init__` maps each public name to the submodule defining it, and
`lazy_exports` returns the module-level `__getattr__` / `__dir__` (PEP 562) that
import the submodule when the name is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`exports` maps a public name to the submodule (relative, e.g. `.log`) defining it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # the next read is a plain global
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__

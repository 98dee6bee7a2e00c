"""PandaFS: the file-first, event-sourced memory and turn store of a local assistant.

    from pandafs import Vault, Memory, Pipeline

    vault, _ = Vault.init("my-vault")          # or Vault.open("my-vault")
    Memory(vault).search("hamster", user="alice")
    with Pipeline(vault) as pipeline:
        print(pipeline.ask("What does my hamster eat?", user="alice").answer)

The names are imported when first used: every `pandafs` command imports this package, and
their imports (tantivy, pyarrow, the event schema) would cost each command's start-up.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = ["Memory", "Pipeline", "Vault", "__version__"]

_MODULES = {"Vault": ".vault", "Memory": ".memory.api", "Pipeline": ".pipeline"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module 'pandafs' has no attribute {name!r}")

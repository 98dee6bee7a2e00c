"""`pandafs.toml`: one frozen settings class per section, defaults and their reasons in one place.

`render_default_config()` writes the commented file `pandafs init` creates from these classes,
so file and code cannot disagree; `load_config(path)` reads it back, an unknown key an error
that names it.  Plain `_Section` classes (`checked`), not pydantic models: every command loads
this file, and building pydantic would cost `pandafs search` several times the search itself.
"""

import json
import tomllib
from pathlib import Path
from typing import Any

from events.errors import NotInVault
from events.fsio import read_vault_file

from ..errors import BadInput
from .checked import ConfigError, _Section
from .sections import (
    Config,
    LLMConfig,
    MemoryConfig,
    ResearchConfig,
    RoleConfig,
    SearchConfig,
    TiersConfig,
)

__all__ = [
    "Config",
    "ConfigError",
    "LLMConfig",
    "MemoryConfig",
    "ResearchConfig",
    "RoleConfig",
    "SearchConfig",
    "TiersConfig",
    "load_config",
    "render_default_config",
]


def load_config(path: Path) -> Config:
    """The settings in `path`, or the defaults if missing; a link there is refused (`BadInput`)."""
    try:
        data = tomllib.loads(read_vault_file(path.parent, path.name)[0].decode("utf-8"))
    except FileNotFoundError:
        return Config()
    except NotInVault as exc:
        raise BadInput(f"{path}: {exc.reason}; not read (put the file itself there)") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    try:
        return Config.model_validate(data)
    except ConfigError as exc:
        raise BadInput(f"{path}: {exc}") from None


def _render_section(name: str, section: _Section, out: list[str]) -> None:
    out.append(f"[{name}]")
    nested: list[tuple[str, Any]] = []
    for spec in section.settings.values():
        value = getattr(section, spec.name)
        if isinstance(value, _Section | dict):
            nested.append((spec.name, value))
            continue
        if spec.description:
            out.append(f"# {spec.description}")
        out.append(f"# {spec.name} = {json.dumps(value, ensure_ascii=False)}")  # (its JSON spelling is TOML)
    out.append("")
    for field_name, value in nested:
        if isinstance(value, _Section):
            _render_section(f"{name}.{field_name}", value, out)
        else:
            for key, item in value.items():
                _render_section(f"{name}.{field_name}.{key}", item, out)


def render_default_config() -> str:
    config = Config()
    out = [
        "# PandaFS vault configuration: every setting with its default, commented out.",
        "# Uncomment a line to change it; a setting left commented follows PandaFS's",
        "# default, in later versions too. A key PandaFS does not know is an error that names it.",
        "",
    ]
    for spec in Config.settings.values():
        value = getattr(config, spec.name)
        out.append(f"# --- {spec.description} ---")
        if isinstance(value, _Section):
            _render_section(spec.name, value, out)
        else:
            out.append(f"# uncomment [{spec.name}] and what you keep of it: it replaces the defaults whole")
            out.append(f"# [{spec.name}]")
            for key, words in value.items():
                out.append(f"# {json.dumps(key)} = {json.dumps(words, ensure_ascii=False)}")
            out.append("")
    return "\n".join(out)

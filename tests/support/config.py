"""Changing a setting of a vault's `pandafs.toml` as a user would: uncomment its line
(init writes every setting commented out, with its default) and give it a value."""

from __future__ import annotations

import json
import re
from pathlib import Path


def set_setting(root: Path, name: str, value: object, section: str = "") -> None:
    """The first line that sets `name` (commented or not; within `[section]` if given) now
    sets it to `value`: a str written as it is (pass `'"text"'` for a TOML string), any
    other value as JSON spells it, which for numbers, booleans and lists is TOML too."""
    config = root / "pandafs.toml"
    text = config.read_text(encoding="utf-8")
    start = 0
    if section:
        header = re.search(rf"(?m)^(?:# )?\[{re.escape(section)}\]$", text)
        assert header, f"[{section}] is not a section of {config}"
        start = header.end()
    line = re.compile(rf"(?m)^(?:# )?{re.escape(name)} = .*$").search(text, start)
    assert line, f"{name} is not a setting of {config}"
    spelled = value if isinstance(value, str) else json.dumps(value)
    config.write_text(f"{text[: line.start()]}{name} = {spelled}{text[line.end() :]}", encoding="utf-8")

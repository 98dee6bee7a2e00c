"""How the tests start `pandafs mcp` over stdio: a real child process bound to one user."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def server(root: Path, user: str) -> Any:
    """The stdio parameters of `pandafs --root ROOT mcp --user USER` (no PANDAFS_ROOT leaks in)."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pandafs", "--root", str(root), "mcp", "--user", user],
        env={k: v for k, v in os.environ.items() if k != "PANDAFS_ROOT"},
    )

"""The words of document metadata callers check without parsing a document (content types,
the types `save` accepts, the topic syntax), apart so option checks need no YAML or schema."""

from __future__ import annotations

import re

__all__ = ["CONTENT_TYPES", "ENTRY_TYPES", "SAVE_TYPES", "SESSION_KEYS", "TOPIC_RE"]

CONTENT_TYPES = tuple(
    """context preference fact memory note research vendor_info pricing site_pattern knowledge
    intervention""".split()
)
"""The content types PandaFS writes (docs/vault-format.md).  Search treats the list as open — a
hand-written document may carry its own types, and an unknown one only earns a warning —
while `save` accepts SAVE_TYPES and nothing else, so a typo never becomes a new type."""

SAVE_TYPES = tuple(t for t in CONTENT_TYPES if t not in ("context", "intervention", "site_pattern"))

ENTRY_TYPES = ("preference", "fact")
"""The types `save` appends as one line of a user's list (preferences.md, facts.md), which
may carry a key; every other type is a document of its own."""

TOPIC_RE = re.compile(r"[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*){0,15}")
"""A hierarchical topic: dot-separated lowercase segments, e.g. `electronics.laptop`."""

SESSION_KEYS = ("session", "session_id", "conversation", "conversation_id")
"""Keys of a turn's `meta` naming the conversation it belongs to (the first one set wins)."""

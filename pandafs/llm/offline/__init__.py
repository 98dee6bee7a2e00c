"""The offline backend: every pipeline task answered by deterministic rules.  No model,
no network, same input → same output; the default, and the reference the
OpenAI-compatible backend is tested against."""

from .backend import RULES, OfflineBackend
from .text import entities_in, sentences, stems_overlap

__all__ = ["RULES", "OfflineBackend", "entities_in", "sentences", "stems_overlap"]

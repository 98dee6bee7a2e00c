"""The offline backend: every pipeline task answered by deterministic rules.

No model, no network, same input → same output.  It is the default backend, the
one the demo and the tests run, and the reference the OpenAI-compatible backend is
tested against (the loopback test server answers with these very rules).

text.py        sentences, word stems and names of memory text
understand.py  analyze_query, reflect (phases 0-1)
gather.py      plan_retrieval, synthesize_context (phase 2)
planning.py    plan, call_tools (phases 3-4)
answering.py   answer, validate (phases 6-7)
summary.py     summarize_turn (save)
backend.py     `OfflineBackend` and `RULES`, task name → rule
"""

from .backend import RULES, OfflineBackend
from .text import entities_in, sentences, stems_overlap

__all__ = ["RULES", "OfflineBackend", "entities_in", "sentences", "stems_overlap"]

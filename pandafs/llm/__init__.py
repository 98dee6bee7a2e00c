"""LLM backends: what the pipeline phases call to think.

`OpenAIChat` talks to any OpenAI-compatible server; its errors all derive from
`LLMError`, itself a `PandaError`, so the CLI reports them like any other.
"""

from .errors import LLMError, LLMOutputError, LLMRejected, LLMTimeout, LLMUnavailable
from .openai_compat import OpenAIChat, Usage

__all__ = [
    "LLMError",
    "LLMOutputError",
    "LLMRejected",
    "LLMTimeout",
    "LLMUnavailable",
    "OpenAIChat",
    "Usage",
]

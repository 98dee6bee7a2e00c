"""Errors of the LLM backends.

    PandaError                      (pandafs.errors)
    └── LLMError                    a reply that is not a chat completion, or a bad configuration
        ├── LLMRejected             the server refused the request (4xx other than 429)
        ├── LLMUnavailable          unreachable, or 429 / 5xx until the retries ran out
        ├── LLMTimeout              no answer within [llm] timeout_s, every attempt
        └── LLMOutputError          no valid JSON for the schema, even after one corrective retry

Each message is one line ending with what to try: it is what `pandafs` prints when a
turn fails.  Foreign errors are translated once, in `openai_compat`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pandafs.errors import PandaError

if TYPE_CHECKING:
    from .usage import Usage

__all__ = ["LLMError", "LLMOutputError", "LLMRejected", "LLMTimeout", "LLMUnavailable"]


class LLMError(PandaError):
    """Root of every error raised by an LLM backend."""


class LLMRejected(LLMError):
    """The server refused the request (HTTP 4xx other than 429): `status` and its own words."""

    def __init__(self, message: str, *, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(message)


class LLMUnavailable(LLMError):
    def __init__(self, base_url: str, reason: str, *, attempts: int, status: int | None = None) -> None:
        self.status = status
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if status is None:
            message = (
                f"cannot reach the LLM server at {base_url} ({reason}; {tries}): "
                "is it running? check [llm] base_url in pandafs.toml"
            )
        else:
            message = (
                f"the LLM server at {base_url} kept failing (HTTP {status}: {reason}; {tries}): "
                "check the server's log, or raise [llm] max_retries / backoff_s in pandafs.toml"
            )
        super().__init__(message)


class LLMTimeout(LLMError):
    def __init__(self, base_url: str, timeout_s: float, *, attempts: int) -> None:
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        super().__init__(
            f"the LLM server at {base_url} did not answer within {timeout_s:g} s ({tries}): "
            "is the model loaded? raise [llm] timeout_s in pandafs.toml or use a smaller model"
        )


class LLMOutputError(LLMError):
    """The model could not produce the structured output a phase needs: `raw` is the last
    reply, `validation` why it was rejected, `usage` what the two calls cost."""

    def __init__(
        self,
        *,
        role: str,
        model: str,
        schema: str,
        raw: str,
        validation: str,
        usage: Usage | None = None,
    ) -> None:
        self.raw = raw
        self.validation = validation
        self.usage = usage
        super().__init__(
            f"model {model!r} ({role}) did not return valid JSON for {schema} even after a "
            f"corrective retry ({validation}): try a stronger model in [llm.roles.{role}] "
            "of pandafs.toml"
        )

"""LLM backends: what the pipeline phases call to think.

`base` holds the Protocol and `make_backend`, `usage` the tokens spent;
`openai_compat.OpenAIChat` talks to any OpenAI-compatible server (it alone imports
httpx); `offline` answers by rules.  Errors all derive from `errors.LLMError`, itself a
`PandaError`, so the CLI reports them like any other.
"""

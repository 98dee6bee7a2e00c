"""LLM backends: what the pipeline phases call to think (`base.make_backend`)."""

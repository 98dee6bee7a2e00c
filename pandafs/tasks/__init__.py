"""What the pipeline asks of a thinking step, and what an answer may be built from.

schemas.py   the typed input and output of every phase's task
prompts.py   `TASKS`: each step's role, instructions and example (the LLM contract)
grounding.py facts and answer checks, pure functions over memory text

This layer sits beneath the LLM backends and the pipeline, so both answer the same
contracts; it imports only `events`, `indexers` and nothing of `pandafs` above the base.
"""

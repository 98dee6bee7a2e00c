"""The learning loop: how PandaFS gets better with use (docs/memory.md).  `api` holds the
entry points; `engine` the incremental fold; `trust` the formula."""

"""PandaFS: the file-first, event-sourced memory and turn store of a local assistant."""

__version__ = "0.1.0"

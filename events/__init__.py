"""The record layer of PandaFS: turn events, documents, vault layout.

Needs only pydantic, orjson and PyYAML; never imports `indexers` or `pandafs`.  Import
each name from the module that defines it (`events.log`, `events.schema`,
`events.documents`…): the package itself imports nothing, so a command pays only for
the modules it uses.
"""

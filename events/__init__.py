"""The record layer of PandaFS: turn events, documents, vault layout.  Needs only
pydantic, orjson and PyYAML; import each name from the module that defines it."""

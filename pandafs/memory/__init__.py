"""Memory: the unified search, save and retrieve API over a vault.

`api.Memory` searches, saves and retrieves; saving (`store`), retrieving (`retrieved`)
and the memory tool's argument models (`args`) live in their own modules, imported by
what uses them, so `pandafs search` never builds them.
"""

"""`pandafs mcp`: the memory tools and the vault's documents over the Model Context Protocol.

Built on the official Python SDK's high-level server (`mcp.server.mcpserver.MCPServer`,
mcp 2.x).  The server is bound to ONE user, given when it starts: no tool takes a
user argument (an unknown argument is refused, not ignored), every search runs as that
user, every save writes under `users/{user}/`, `retrieve_memory` is
`Memory.retrieve(…, user=)` (what that user may see, as in search: their own documents
and global ones), and resource reads accept only the user's own documents
(`users/{user}/…`, `archive/stubs/{user}/…`) and the global areas (`knowledge/`,
`site_knowledge/`).  Ownership comes from the path, never from a file's frontmatter; a
path with a symlink anywhere below the vault root is refused, as is anything outside it.

Tools (names and argument spellings follow the memory servers people already use —
`search_memory` / `save_memory` / `retrieve_memory` as in mem0's and
mcp-memory-service's servers, `identifier` as in basic-memory's `read_note`):

  search_memory    read-only   unified search: the user's documents plus global ones
  retrieve_memory  read-only   one document by id or vault-relative path (archived turns expanded)
  save_memory      additive    a memory, preference or fact, through `Memory.save` (locks, index)
  ask              additive    one turn through the pipeline, exactly as `pandafs ask`

Resources: `pandafs://vault/{+path}` reads one visible document; the listing names the
user's memory documents, global knowledge and the user's latest turns.

The library calls run on the SDK's worker threads; one lock serialises them, so two
tool calls of one client never write the index at the same time from this process
(other processes are handled by the index's own writer lock).
"""

from __future__ import annotations

import inspect
import os
import stat
import threading
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from events import NotInVault, classify, read_vault_file, validate_user_id
from events.errors import EventsError
from events.fsio import mode_at, open_vault_folder
from indexers.errors import IndexingError

from .assembly import open_memory
from .errors import BadInput, PandaError
from .memory.args import SearchArgs
from .vault import Vault

__all__ = ["RESOURCE_PREFIX", "build_server", "visible_path"]

RESOURCE_PREFIX = "pandafs://vault/"
LATEST_TURNS = 50  # how many of the user's turns the resource listing names


def visible_path(vault: Vault, user: str, rel: str) -> Path:
    """The file behind vault-relative `rel` if `user` may read it, else `BadInput`.

    Visible: documents under `users/{user}/`, the user's archive stubs, and global
    documents (no owner in their path).  The same message is given for "not yours" and
    "not there", so a client cannot probe another user's documents.
    """
    text = rel.strip().removeprefix("./")
    refused = BadInput(f"no document {rel!r} visible to user {user!r}")
    if not text or "\x00" in text or "\\" in text or text.startswith("/"):
        raise refused
    parts = PurePosixPath(text).parts
    if any(p in ("", ".", "..") for p in parts):
        raise refused
    ref = classify(text)
    if ref is None or (ref.user is not None and ref.user != user):
        raise refused
    path = vault.root
    for part in parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            raise refused from None
        if stat.S_ISLNK(mode):
            raise refused
    if not stat.S_ISREG(mode):
        raise refused
    return path


def _listing(vault: Vault, user: str) -> list[tuple[str, str]]:
    """(vault-relative path, name) of the documents the resource listing names.  Each
    folder is opened and checked from the vault root and listed by descriptor
    (`open_vault_folder`, `os.fwalk`): a folder that is a link, or under one (say
    `users/{user}` itself), names nothing, and one swapped for a link after it was
    opened names nothing of the link's target."""
    found: list[tuple[str, str]] = []
    home = f"users/{user}"
    for name in ("preferences.md", "facts.md"):
        if _plain_files(vault.root, home, [name]):
            found.append((f"{home}/{name}", f"{user}/{name[:-3]}"))
    for base in (f"{home}/memories", "knowledge", "site_knowledge"):
        for rel in _documents_under(vault.root, base):
            ref = classify(rel)
            if ref is not None:
                found.append((rel, ref.doc_id))
    turns = sorted(vault.layout.turn_dirs(user), key=lambda p: p.name)[-LATEST_TURNS:]
    for folder in reversed(turns):
        rel = f"{home}/turns/{folder.name}"
        if _plain_files(vault.root, rel, ["context.md"]):
            found.append((f"{rel}/context.md", f"{user}/{folder.name}"))
    return found


def _plain_files(root: Path, folder: str, names: list[str]) -> list[str]:
    """Which of `names` are regular files (not links) in the vault folder `folder`."""
    try:
        fd = open_vault_folder(root, folder)
    except (OSError, NotInVault):
        return []
    try:
        return [n for n in names if _is_file_at(fd, n)]
    finally:
        os.close(fd)


def _is_file_at(fd: int, name: str) -> bool:
    return stat.S_ISREG(mode_at(fd, name) or 0)


def _documents_under(root: Path, base: str) -> list[str]:
    """Vault-relative paths of the files under the vault folder `base`, in walk order,
    not in hidden folders, no link followed or named."""
    try:
        top = open_vault_folder(root, base)
    except (OSError, NotInVault):
        return []
    found: list[str] = []
    try:
        for dirpath, dirnames, filenames, fd in os.fwalk(".", dir_fd=top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            folder = base if dirpath == "." else f"{base}/{dirpath.removeprefix('./')}"
            found += [f"{folder}/{name}" for name in sorted(filenames) if _is_file_at(fd, name)]
    finally:
        os.close(top)
    return found


def _signature_of(model: type[BaseModel]) -> inspect.Signature:
    """The keyword parameters of `model`'s fields, which the SDK turns into the tool's
    JSON schema: the MCP tool takes the memory tool's own arguments, not a copy of them."""
    params = []
    for name, spec in model.model_fields.items():
        hint = Annotated[(spec.annotation, *spec.metadata, Field(description=spec.description))]
        default = (
            inspect.Parameter.empty if spec.is_required() else spec.get_default(call_default_factory=True)
        )
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
    return inspect.Signature(params, return_annotation=list[dict[str, Any]])


def build_server(vault: Vault, user: str) -> Any:
    """An `MCPServer` over `vault`, bound to `user` (imported here: the CLI stays fast)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.server.mcpserver.resources import ResourceSecurity
    from mcp.types import Resource, ToolAnnotations

    validate_user_id(user)
    memory = open_memory(vault)
    lock = threading.Lock()
    research = bool(vault.config.research.search_url)

    def guarded(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                return fn(*args, **kwargs)
            except (PandaError, EventsError, IndexingError) as exc:
                raise ToolError(str(exc)) from None

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            """Refuse arguments a tool does not declare (the SDK would drop them silently):
            a client passing `user` must learn that it cannot act as someone else."""
            declared = {t.name: set(t.input_schema.get("properties", {})) for t in await self.list_tools()}
            unknown = sorted(set(arguments) - declared.get(name, set(arguments)))
            if unknown:
                raise ToolError(
                    f"unknown argument(s) {', '.join(unknown)}: this server acts only as user {user!r}"
                )
            return await super().call_tool(name, arguments, context)

        async def list_resources(self) -> list[Resource]:
            return [
                Resource(uri=RESOURCE_PREFIX + rel, name=name, mime_type="text/markdown")
                for rel, name in _listing(vault, user)
            ]

    server: Any = Server(
        name="pandafs",
        title="PandaFS memory",
        instructions=(
            f"Memory of user {user!r}: search it before answering from assumptions, retrieve a "
            "hit's full document by its doc_id, save what the user states about themselves "
            "(type preference or fact) or asks to remember. Every call acts as this user."
        ),
    )

    def search_memory(**arguments: Any) -> list[dict[str, Any]]:
        """Search everything this user may see (their documents plus global ones): turns,
        preferences, facts, memories, research, knowledge, archived turns' summaries."""
        args = SearchArgs.model_validate(arguments)
        return guarded(memory.search, args.query, user=user, **args.search_kwargs())

    search_memory.__signature__ = _signature_of(SearchArgs)  # type: ignore[attr-defined]
    server.tool(
        annotations=ToolAnnotations(
            title="Search memory", read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )(search_memory)

    @server.tool(
        annotations=ToolAnnotations(
            title="Retrieve a document", read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    def retrieve_memory(
        identifier: Annotated[
            str, Field(description="a doc_id from search (alice/turn_000001) or a vault-relative path")
        ],
    ) -> dict[str, Any]:
        """One document in full; an archived turn is expanded from the archive."""

        return guarded(lambda: memory.retrieve(identifier, user=user).as_json())

    @server.tool(
        annotations=ToolAnnotations(
            title="Save a memory",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    def save_memory(
        content: Annotated[str, Field(description="the statement to remember")],
        type: Annotated[
            str, Field(description="preference and fact go to preferences.md / facts.md; others to memories/")
        ] = "memory",
        topic: Annotated[str, Field(description="hierarchical topic, e.g. travel.flights")] = "general",
        keywords: list[str] | None = None,
        key: Annotated[str | None, Field(description="key of a preference or fact, e.g. seat")] = None,
        scope: Literal["new", "user"] = "new",
        ttl_hours: Annotated[float | None, Field(gt=0)] = None,
    ) -> dict[str, Any]:
        """Save a memory for this user (never overwrites; saving the same statement again adds
        nothing).  Publishing to everyone (scope global) is not possible from here."""
        saved = guarded(
            memory.save,
            content,
            user=user,
            doc_type=type,
            topic=topic,
            keywords=keywords or (),
            scope=scope,
            ttl_hours=ttl_hours,
            key=key,
        )
        return saved.as_json()

    @server.tool(
        annotations=ToolAnnotations(
            title="Ask the assistant",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=research,
        ),
    )
    def ask(
        question: Annotated[str, Field(description="the question or statement, as the user would say it")],
    ) -> dict[str, Any]:
        """Run one turn of the assistant's pipeline for this user (recorded as a turn, like
        `pandafs ask`); returns the answer, the turn id and its outcome."""
        from .pipeline import Pipeline

        def run() -> dict[str, Any]:
            with Pipeline(vault, memory=memory) as pipeline:
                return pipeline.ask(question, user=user).as_json()

        return guarded(run)

    @server.resource(
        RESOURCE_PREFIX + "{+path}",
        name="document",
        description="A document of the vault this user may read (vault-relative path).",
        mime_type="text/markdown",
        security=ResourceSecurity(),
    )
    def read_document(path: str) -> str:
        with lock:
            try:
                rel = vault.rel(visible_path(vault, user, path))
                return read_vault_file(vault.root, rel)[0].decode("utf-8")  # no link, even one made since
            except (BadInput, NotInVault, UnicodeDecodeError, OSError) as exc:
                raise ResourceError(str(exc)) from None

    return server

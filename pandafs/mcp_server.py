"""`pandafs mcp`: the memory tools and the vault's documents over the Model Context Protocol.

The server is bound to ONE user, given when it starts: no tool takes a user, every call acts
as that user, resource reads accept only that user's documents and the global areas
(ownership from the path; a path through a link is refused).  Tools: those of the registry
(`pipeline.tools`) that serve this door.  Resources: `pandafs://vault/{+path}`; the listing
names the user's memory documents, global knowledge and latest turns.  One lock serialises
the library calls of the SDK's worker threads."""

from __future__ import annotations

import codecs
import inspect
import threading
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import BaseModel, Field

from events.clock import utcnow
from events.errors import EventsError, NotInVault
from events.fsio import read_vault_file
from events.layout import classify, validate_user_id
from indexers.errors import IndexingError
from indexers.walk import walk_documents

from .assembly import open_memory
from .errors import PandaError
from .pipeline.tools import TOOLS, Tool, ToolSession
from .vault import Vault

__all__ = ["build_server"]

RESOURCE_PREFIX = "pandafs://vault/"
LATEST_TURNS = 50  # how many of the user's turns the resource listing names


def visible(user: str, rel: str) -> bool:
    """Does `rel` name a document `user` may read: theirs, or one of a global area?"""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return False
    if any(p in ("", ".", "..") for p in PurePosixPath(rel).parts):
        return False
    ref = classify(rel)
    return ref is not None and ref.user in (None, user)


def _listing(vault: Vault, user: str) -> list[tuple[str, str]]:
    """(vault-relative path, name) of the documents the resource listing names."""
    found: list[tuple[str, str]] = []
    home = f"users/{user}"
    for name in ("preferences.md", "facts.md"):
        if _served_text(vault.root, f"{home}/{name}"):
            found.append((f"{home}/{name}", f"{user}/{name[:-3]}"))
    for base in (f"{home}/memories", "knowledge", "site_knowledge"):
        for rel in sorted(rel for rel, _ in walk_documents(vault.root, base)):
            ref = classify(rel)
            if ref is not None and _served_text(vault.root, rel):
                found.append((rel, ref.doc_id))
    turns = sorted(vault.layout.turn_dirs(user), key=lambda p: p.name)[-LATEST_TURNS:]
    for folder in reversed(turns):
        rel = f"{home}/turns/{folder.name}"
        if _served_text(vault.root, f"{rel}/context.md"):
            found.append((f"{rel}/context.md", f"{user}/{folder.name}"))
    return found


def _served_text(root: Path, rel: str) -> bool:
    """Whether the file at `rel` would be served: readable by the one rule, its head UTF-8 text."""
    try:
        head, _ = read_vault_file(root, rel, limit=_HEAD_BYTES)
    except (OSError, NotInVault):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return b"\0" not in head


_HEAD_BYTES = 8192


def _signature_of(model: type[BaseModel], returns: Any) -> inspect.Signature:
    """The keyword parameters of `model`'s fields, which the SDK turns into the tool's schema."""
    params = []
    for name, spec in model.model_fields.items():
        factory: dict[str, Any] = {"default_factory": spec.default_factory} if spec.default_factory else {}
        described = Field(description=spec.description, **factory)
        hint = Annotated[(spec.annotation, *spec.metadata, described)]  # type: ignore[name-defined]
        default = inspect.Parameter.empty if spec.is_required() or factory else spec.default
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
    return inspect.Signature(params, return_annotation=returns)


def _served(tool: Tool, session: ToolSession, guarded: Any, failure: type[Exception]) -> Any:
    """`tool` as a function the SDK serves, its arguments validated by the tool's own model."""

    def call(**arguments: Any) -> Any:
        args = tool.args.model_validate(arguments)
        outcome = guarded(tool.run, session, args)
        if not outcome.ok:
            raise failure(outcome.error or outcome.summary)
        return outcome.reply()

    call.__name__ = tool.name
    call.__doc__ = tool.description
    call.__signature__ = _signature_of(tool.args, tool.returns)  # type: ignore[attr-defined]
    return call


def build_server(vault: Vault, user: str) -> Any:
    """An `MCPServer` over `vault`, bound to `user` (imported here: the CLI stays fast)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    from mcp.server.mcpserver.resources import ResourceSecurity
    from mcp.types import Resource, ToolAnnotations

    validate_user_id(user)
    memory = open_memory(vault)
    lock = threading.Lock()

    def guarded(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                return fn(*args, **kwargs)
            except (PandaError, EventsError, IndexingError) as exc:
                raise ToolError(str(exc)) from None

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            """Refuse arguments a tool does not declare: a client passing `user` learns it cannot."""
            declared = {t.name: set(t.input_schema.get("properties", {})) for t in await self.list_tools()}
            unknown = sorted(set(arguments) - declared.get(name, set(arguments)))
            if unknown:
                takes = ", ".join(sorted(declared[name]))
                bound = f"; this server acts only as user {user!r}" if "user" in unknown else ""
                raise ToolError(
                    f"unknown argument(s) {', '.join(unknown)} of {name} (it takes {takes}){bound}"
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

    def ask(question: str, now: datetime | None) -> dict[str, Any]:
        from .pipeline import Pipeline

        with Pipeline(vault, memory=memory) as pipeline:
            return pipeline.ask(question, user=user, now=now).as_json()

    session = ToolSession(vault, memory, user, utcnow, ask=ask)
    for tool in TOOLS.values():
        if "mcp" in tool.doors:
            server.tool(
                name=tool.name,
                description=tool.description,
                annotations=ToolAnnotations(
                    title=tool.title,
                    read_only_hint=tool.read_only,
                    destructive_hint=tool.destructive,
                    idempotent_hint=tool.idempotent,
                    open_world_hint=tool.open_world,
                ),
            )(_served(tool, session, guarded, ToolError))

    @server.resource(
        RESOURCE_PREFIX + "{+path}",
        name="document",
        description="A document of the vault this user may read (vault-relative path).",
        mime_type="text/markdown",
        security=ResourceSecurity(),
    )
    def read_document(path: str) -> str:
        with lock:
            rel = path.strip().removeprefix("./")
            refused = ResourceError(f"no document {path!r} visible to user {user!r}")
            if not visible(user, rel):
                raise refused
            try:  # the one read rule: no link on the way, a plain file with one name
                text = read_vault_file(vault.root, rel)[0].decode("utf-8")
            except (NotInVault, OSError):
                raise refused from None
            except UnicodeDecodeError as exc:
                raise ResourceError(f"{rel} is not UTF-8 text ({exc.reason})") from None
            if "\x00" in text:
                raise ResourceError(f"{rel} is binary (it holds NUL bytes): not served")
            return text

    return server

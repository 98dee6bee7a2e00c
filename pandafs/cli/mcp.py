"""`pandafs mcp`: serve one user's memory over the Model Context Protocol."""

from __future__ import annotations

import importlib.util
import ipaddress
import socket

import click

from ..errors import BadInput
from .base import App, command, user_option


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_free(host: str, port: int) -> None:
    """Refuse a port in use before the server starts (its own failure is a multi-line log)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        reason = exc.strerror or exc
        raise BadInput(f"cannot listen on {host}:{port}: {reason} (choose another --port)") from None


@command("mcp", json=False)
@user_option(required=True, help="The one user this server acts as (its documents plus global ones).")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the client starts `pandafs mcp` itself; http: streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP only; loopback addresses only.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP only.")
def mcp(app: App, user: str, transport: str, host: str, port: int) -> None:
    """Tools: search_memory, retrieve_memory (read-only), save_memory, edit_memory,
    delete_memory, forget, ask.  Resources:
    pandafs://vault/{path} for the user's documents and global ones.  No tool takes a
    user: every call acts as --user, and what other users keep to themselves cannot be
    read (ownership from the path; symlinks are never followed).
    The HTTP transport has no authentication, so it listens on loopback only.
    """
    if transport == "http" and not _loopback(host):
        raise BadInput(f"--host {host} is not a loopback address: the HTTP transport has no authentication")
    if importlib.util.find_spec("mcp") is None:
        raise BadInput("the MCP server needs the `mcp` package: pip install 'pandafs[mcp]'")
    if transport == "http":
        _check_free(host, port)
    from ..mcp_server import build_server  # imports the SDK: paid only by this command

    server = build_server(app.vault(), user)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)

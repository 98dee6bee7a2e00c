"""One tool contract: the Planner, `pandafs tools --json` and the MCP server serve the
registry's tools under the same names with the same argument schemas."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

import pytest

from pandafs.memory.api import Memory
from pandafs.pipeline.context import TurnContext
from pandafs.pipeline.tools import TOOLS, Tool, available_tools, register, tool_schemas
from pandafs.vault import Vault

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _plain(schema: Any) -> Any:
    """A JSON schema without its titles (each generator spells them its own way)."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _served(door: str) -> list[str]:
    return [t.name for t in TOOLS.values() if door in t.doors]


def test_every_door_lists_the_registrys_tools_with_the_same_schemas(cli, vault: Vault) -> None:
    pytest.importorskip("mcp")
    from pandafs.mcp_server import build_server

    listed = cli("--root", vault.root, "tools", "--json").json
    assert listed == [tool.schema() for tool in TOOLS.values()]
    by_name = {s["function"]["name"]: s["function"]["parameters"] for s in listed}

    ctx = TurnContext(
        vault=vault, memory=Memory(vault), backend=None, user="alice", turn="t", clock=lambda: NOW
    )
    assert [t.name for t in available_tools(ctx)] == _served("planner")
    assert [s["function"]["name"] for s in tool_schemas("planner")] == _served("planner")

    mcp_tools = asyncio.run(build_server(vault, "alice").list_tools())
    assert [t.name for t in mcp_tools] == _served("mcp")
    for served in mcp_tools:
        tool = TOOLS[served.name]
        ours = _plain(by_name[served.name])
        theirs = _plain(served.input_schema)
        assert theirs["properties"] == ours["properties"], served.name
        assert sorted(theirs.get("required", [])) == sorted(ours.get("required", [])), served.name
        hints = served.annotations
        assert (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ) == (
            tool.read_only,
            tool.destructive,
            tool.idempotent,
            tool.open_world,
        )
    assert {"search_memory", "retrieve_memory", "save_memory"} <= set(_served("planner")) & set(
        _served("mcp")
    )


def test_one_registration_adds_a_tool_to_every_door(tmp_path) -> None:
    """A tool registered once is listed by `tools --json`, offered to the Planner and
    served over MCP (in a fresh process, so the registry here stays as shipped)."""
    pytest.importorskip("mcp")
    script = f"""
import asyncio, json
from pydantic import BaseModel
from pandafs.pipeline.tools import Tool, ToolOutcome, register, tool_schemas
from pandafs.mcp_server import build_server
from pandafs.vault import Vault

class EchoArgs(BaseModel):
    text: str

register(Tool("echo_memory", "Echo", "Say it back.", EchoArgs, lambda s, a: ToolOutcome(True, a.text)))
vault, _ = Vault.init({str(tmp_path / "v")!r})
names = [t.name for t in asyncio.run(build_server(vault, "alice").list_tools())]
print(json.dumps([names, [s["function"]["name"] for s in tool_schemas("planner")]]))
"""
    import subprocess

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    mcp_names, planner_names = json.loads(out.stdout.splitlines()[-1])
    assert "echo_memory" in mcp_names and "echo_memory" in planner_names


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="twice"):
        register(Tool("search_memory", "x", "x", TOOLS["search_memory"].args, TOOLS["search_memory"].run))


def test_every_door_takes_the_search_arguments_of_one_definition(vault: Vault) -> None:
    """`pandafs search`'s options, the memory tool's model (hence its JSON schema and MCP
    signature), `search --batch`'s lines and `Memory.search` all take the arguments of
    `search_arguments()`, under their names there, with the same bounds and choices."""
    import click

    from indexers.request import SearchRequest, search_arguments
    from pandafs.cli import cli as root
    from pandafs.memory.args import SearchArgs, batch_query

    arguments = search_arguments()
    command = root.get_command(click.Context(root), "search")
    assert command is not None
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    own = {"user", "now", "batch", "as_json"}  # whose search, as of when, and how to print it
    assert set(options) - own == {a.name for a in arguments if a.flags}
    for arg in arguments:
        if not arg.flags:
            assert arg.name == "query"  # the command's argument
            continue
        option = options[arg.name]
        assert tuple(option.opts + option.secondary_opts) == arg.flags
        if arg.choices:
            assert tuple(option.type.choices) == arg.choices
        if arg.ge is not None:
            assert (option.type.min, option.type.max) == (arg.ge, arg.le)

    assert list(SearchArgs.model_fields) == [a.tool for a in arguments]
    assert list(batch_query().model_fields) >= [a.tool for a in arguments]
    kwargs = SearchArgs.model_validate({"query": "x"}).search_kwargs()
    assert set(kwargs) == {a.name for a in arguments} - {"query"}
    assert set(kwargs) <= {f for f in SearchRequest._fields}
    assert Memory(vault).search("x", user="alice", **kwargs) == []  # Memory.search takes them all
    with pytest.raises(TypeError):
        Memory(vault).search("x", topik="pets")

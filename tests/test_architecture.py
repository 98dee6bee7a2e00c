"""The house rules that keep the layers apart and the front door honest."""

from __future__ import annotations

import ast
import subprocess
import sys

import click
import pytest

from pandafs.cli import cli
from pandafs.cli.base import COMMANDS
from pandafs.memory.api import Memory
from pandafs.vault import Vault

from .conftest import REPO

STDLIB = set(sys.stdlib_module_names)


def _imports(package: str) -> dict[str, set[str]]:
    """Top-level modules each file of `package` imports (relative imports resolved)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add(package if node.level else (node.module or "").split(".")[0])
        found[str(path.relative_to(REPO))] = names
    return found


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("events", {"events", "pydantic", "orjson", "yaml"}),
        ("indexers", {"indexers", "events", "pydantic", "orjson", "yaml", "tantivy", "pyarrow", "watchdog"}),
    ],
)
def test_imports_go_one_way(package: str, allowed: set[str]) -> None:
    for path, names in _imports(package).items():
        foreign = names - STDLIB - allowed - {"__future__"}
        assert not foreign, f"{path} imports {sorted(foreign)}"


# The layers inside `pandafs/`, bottom to top (docs/code.md draws them).  A module
# may import its own layer and any lower one, never a higher one — at module level,
# under TYPE_CHECKING or inside a function alike, so no cycle between layers can hide
# behind a lazy import.  Lower layers are handed what they need from
# above (`Memory(trust=…, archive=…)`, each area's verify `CHECKS`).
LAYERS: list[tuple[str, list[str]]] = [
    (
        "base",
        [
            "pandafs.errors",
            "pandafs.config",
            "pandafs.tokens",
            "pandafs.links",
            "pandafs.vault",
            "pandafs.turns",
            "pandafs.checks",
        ],
    ),
    ("memory", ["pandafs.memory"]),
    ("sources", ["pandafs.research", "pandafs.tasks"]),
    ("model", ["pandafs.llm"]),
    ("learning", ["pandafs.learning"]),
    ("archive", ["pandafs.archive"]),
    ("assembly", ["pandafs.assembly", "pandafs.rebuild"]),
    ("forgetting", ["pandafs.forget"]),
    ("pipeline", ["pandafs.pipeline"]),
    ("operations", ["pandafs.turn_import", "pandafs.stats", "pandafs.verify"]),
    ("imports", ["pandafs.chat_import"]),
    ("doors", ["pandafs.inbox", "pandafs.mcp_server", "pandafs.output"]),
    ("watch", ["pandafs.watch"]),
    ("cli", ["pandafs.cli", "pandafs.__main__"]),
    ("package", ["pandafs"]),  # `from pandafs import Vault, Memory, Pipeline`
]
RANK = {area: rank for rank, (_, areas) in enumerate(LAYERS) for area in areas}


def _area(module: str) -> str:
    """The area a dotted module belongs to: the longest name in LAYERS it starts with."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in RANK:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} is in no layer of LAYERS: add it")


def _pandafs_imports(*, lazy: bool | None = None) -> list[tuple[str, str, int]]:
    """(module, imported pandafs module, line) for every import anywhere in pandafs/
    (`lazy=True`: only those inside a function; `False`: only those outside)."""
    found = []
    for path in sorted((REPO / "pandafs").rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        module = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = {
            id(sub)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            for sub in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if lazy is not None and (id(node) in inside) != lazy:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1]
                module_name = ".".join([*base, node.module] if node.module else base)
                targets = [module_name] * bool(node.module) + [f"{module_name}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [(module, t, node.lineno) for t in targets if t in MODULES]
    return found


MODULES = {
    ".".join(
        p.relative_to(REPO).with_suffix("").parts[:-1]
        if p.name == "__init__.py"
        else p.relative_to(REPO).with_suffix("").parts
    )
    for p in (REPO / "pandafs").rglob("*.py")
}


def test_no_import_inside_a_function_breaks_a_cycle() -> None:
    """An import inside a function is for start-up speed only: were it at module level,
    it would close no loop (the module it imports does not, through module-level imports,
    come back to the importer)."""
    graph: dict[str, set[str]] = {}
    for module, target, _ in _pandafs_imports(lazy=False):
        graph.setdefault(module, set()).add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo += graph.get(here, ())
                parent = here.rpartition(".")[0]  # importing a module runs its package first,
                # unless that package is the importer's own or one above it: it has run by then
                if parent and parent != goal and not goal.startswith(parent + "."):
                    todo.append(parent)
        return False

    loops = [
        f"{module}:{line} imports {target} inside a function, and {target} imports {module} back"
        for module, target, line in _pandafs_imports(lazy=True)
        if target != module and reaches(target, module)
    ]
    assert not loops, "\n".join(loops)


def test_pandafs_imports_go_down_the_layers() -> None:
    upward = []
    for module, target, line in _pandafs_imports():
        here, there = _area(module), _area(target)
        if RANK[there] > RANK[here]:
            upward.append(f"{module}:{line} imports {target} ({there} is above {here})")
    assert not upward, "\n".join(upward)


def test_the_layer_rule_sees_lazy_imports(tmp_path) -> None:
    """The check reads imports inside functions too (a lazy import cannot hide a cycle)."""
    module = "pandafs.memory.api"
    assert RANK[_area("pandafs.cli.base")] > RANK[_area(module)] > RANK[_area("pandafs.vault")]
    inside = [t for m, t, _ in _pandafs_imports() if m == "pandafs.cli.base"]
    assert "pandafs.assembly" in inside  # imported inside `Context.memory`, found all the same


def test_nothing_imports_the_cli() -> None:
    for package in ("events", "indexers", "pandafs"):
        for path in (REPO / package).rglob("*.py"):
            if "cli" in path.relative_to(REPO).parts or path.name == "__main__.py":
                continue
            text = path.read_text(encoding="utf-8")
            assert "pandafs.cli" not in text and "from .cli" not in text and "from ..cli" not in text, path


def _commands() -> dict[str, click.Command]:
    """Every command, its module imported (the group loads them lazily)."""
    ctx = click.Context(cli)
    found = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    assert all(found.values()), [name for name, command in found.items() if command is None]
    return found  # type: ignore[return-value]


def test_every_command_has_help_and_is_in_the_docs() -> None:
    readme = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for name, command in _commands().items():
        assert command.help and command.help.strip(), f"`pandafs {name}` has no help text"
        assert f"`{name}" in readme, f"docs/cli.md's command table does not show `{name}`"
        for option in command.params:
            if getattr(option, "help", None) is None and option.param_type_name == "option":
                assert option.name in ("as_json",) or option.help, f"{name} {option.name} has no help"


def test_the_lazy_command_list_tells_the_truth() -> None:
    """`pandafs --help` shows `COMMANDS`' one-liners without importing the commands:
    each must be the first line of the command's own help, in the module named."""
    for name, command in _commands().items():
        module, short = COMMANDS[name]
        assert command.callback is not None and command.callback.__module__ == f"pandafs.cli.{module}", name
        assert command.help is not None and command.help.strip().splitlines()[0] == short, name


@pytest.mark.parametrize(
    "args",
    [["--help"], ["search", "hamster", "--json"], ["search", "--help"]],
)
def test_start_up_imports_only_what_the_command_needs(args: list[str], vault: Vault) -> None:
    """An instant CLI: no pydantic (event, document, task or config schemas), YAML,
    pipeline, learning loop, Parquet or HTTP client are imported to show help or to
    search a vault that has its index (benchmarks/bench_startup.py times it)."""
    Memory(vault).reconcile()  # a search of a fresh vault would first index its notes
    heavy = [
        "pydantic",
        "yaml",
        "events.schema",
        "events.documents",
        "pandafs.pipeline",
        "pandafs.learning.engine",
        "pyarrow",
        "httpx",
        "watchdog",
        "hashlib",  # OpenSSL: only where something is hashed (indexing, save)
        "indexers.sync",  # the index's writers
        "indexers.documents",  # reading a document for the index
        "pandafs.memory.store",  # saving
        "pandafs.memory.retrieved",  # retrieving
    ]
    if "--help" not in args:  # click's help formatter asks shutil for the terminal width
        heavy.append("shutil")  # with bz2 and lzma: only where a folder is removed
    if args == ["--help"]:  # the command list comes from `COMMANDS`: no command module, no index
        heavy += ["pandafs.cli.memory", "pandafs.memory", "pandafs.config", "tantivy"]
        heavy += ["events.layout", "orjson"]
    root = [] if args == ["--help"] else ["--root", str(vault.root)]
    assert _imported_by([*root, *args], heavy) == []


def _imported_by(args: list[str], modules: list[str]) -> list[str]:
    """Which of `modules` a `pandafs ARGS` process has imported by its end."""
    probe = (
        "import sys\n"
        "from pandafs.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {modules!r} if m in sys.modules], file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    last = proc.stderr.strip().splitlines()[-1:] or [""]
    assert last[0].startswith("["), proc.stderr
    return ast.literal_eval(last[0])


def test_a_command_runs_with_the_collector_on_and_its_imports_frozen(vault: Vault) -> None:
    """`pandafs` imports a command's modules with the cycle collector off (each collection
    would walk them again); the command itself, a long-running `watch` or `mcp` among them,
    runs with the collector on and what the imports made frozen out of its collections."""
    probe = (
        "import gc, sys\n"
        "import pandafs.cli.base as base\n"
        "get = base.LazyGroup.get_command\n"
        "def spy(self, ctx, name):\n"
        "    command = get(self, ctx, name)\n"
        "    callback = command.callback\n"
        "    def observed(*args, **kwargs):\n"
        "        print([gc.isenabled(), gc.get_freeze_count() > 1000], file=sys.stderr)\n"
        "        return callback(*args, **kwargs)\n"
        "    command.callback = observed\n"
        "    return command\n"
        "base.LazyGroup.get_command = spy\n"
        "from pandafs.cli import program\n"
        "program()\n"
    )
    args = ["--root", str(vault.root), "stats", "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert ast.literal_eval(proc.stderr.strip().splitlines()[-1]) == [True, True]


def test_a_rebuild_imports_no_http_client(vault: Vault) -> None:
    """`pandafs rebuild` reads the research tool's reliability table, not the web: the
    research package loads its exports on first use, so neither httpx nor the page
    reader is imported (they were ~45 ms of every rebuild's start)."""
    web = ["httpx", "urllib.request", "pandafs.research.fetch", "pandafs.research.extract"]
    assert _imported_by(["--root", str(vault.root), "rebuild", "--json"], web) == []


def test_an_offline_ask_imports_no_parquet_or_http_client(vault: Vault) -> None:
    """A whole offline `ask` (its turn written, indexed and folded) needs neither pyarrow
    (the catalog, the archive, the reliability table) nor httpx (the OpenAI backend, the
    research fetcher): each is imported by the code that uses it, when it does.  Nor
    `importlib.metadata`, which pydantic's plugin loader imports to find plugins the CLI
    turns off, nor PyYAML (the fast subset reads and writes a turn's frontmatter), nor
    the packages of other commands (archive, imports, forget, inbox, watch, research's
    web tool, MCP).  (A vault's first ask builds the learning cache, catalog included:
    the second is the everyday one.)"""
    heavy = [
        "pyarrow",
        "httpx",
        "pandafs.learning.catalog",
        "indexers.archive",
        "pandafs.research.fetch",
        "pandafs.research.tool",
        "pandafs.llm.openai_compat",
        "importlib.metadata",
        "yaml",
        "watchdog",
        "mcp",
        "pandafs.archive",
        "pandafs.chat_import",
        "pandafs.turn_import",
        "pandafs.forget",
        "pandafs.inbox",
        "pandafs.watch",
        "pandafs.mcp_server",
        "pandafs.verify",
        "pandafs.rebuild",
    ]
    args = ["--root", str(vault.root), "ask", "what do I like for breakfast", "--user", "alice"]
    _imported_by(args, heavy)
    assert _imported_by(args, heavy) == []


def _mixins() -> list[str]:
    """Classes of ours built on a class of another module of ours that declares attributes
    without setting them (`x: T` in its body and no `__init__`): a mixin, whose methods
    use state only the final class sets."""
    declared: dict[str, str] = {}  # class name -> module, for bases that only declare state
    bases: list[tuple[str, str, str]] = []  # (module, class, base name)
    for package in ("events", "indexers", "pandafs"):
        for path in sorted((REPO / package).rglob("*.py")):
            module = path.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
            for node in ast.parse(path.read_text()).body:
                if not isinstance(node, ast.ClassDef):
                    continue
                body = node.body
                state = [n for n in body if isinstance(n, ast.AnnAssign) and n.value is None]
                init = any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in body)
                dataclass = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
                model = any(ast.unparse(b) in ("BaseModel", "Protocol") for b in node.bases)
                if state and not init and not dataclass and not model:
                    declared[node.name] = module
                bases += [(module, node.name, ast.unparse(b)) for b in node.bases]
    return [
        f"{module}.{name} mixes in {base} ({declared[base]})"
        for module, name, base in bases
        if base in declared and declared[base] != module
    ]


def test_no_class_is_mixed_from_other_modules() -> None:
    """A class lives whole in one module and holds its parts (`FullTextIndex`,
    `Learning`, `Inbox`): no base class of another module whose state the final class sets."""
    assert _mixins() == []


def test_front_door_scripts_exist() -> None:
    for script in ("scripts/demo", "scripts/test", ".ci/run"):
        path = REPO / script
        assert path.exists() and path.stat().st_mode & 0o111, script
    assert "scripts/test" in (REPO / ".ci/run").read_text()


WALL_CLOCK = ("datetime.now(", "datetime.utcnow(", "date.today(", "datetime.today(")


def test_one_wall_clock() -> None:
    """Only `events.clock.utcnow` reads the wall clock, so PANDAFS_CLOCK_SHIFT moves every
    reader of it (library, CLI, subprocesses, tests) and no test depends on today's date."""
    for package in ("events", "indexers", "pandafs", "tests", "scripts", "benchmarks"):
        for path in (REPO / package).rglob("*.py"):
            if path == REPO / "events" / "clock.py" or path.name == "test_architecture.py":
                continue
            text = path.read_text(encoding="utf-8")
            for needle in WALL_CLOCK:
                assert needle not in text, f"{path.relative_to(REPO)} reads the wall clock ({needle}…)"


def test_every_module_says_its_job() -> None:
    """Each module does one job, and its docstring says which."""
    for package in ("events", "indexers", "pandafs"):
        for path in sorted((REPO / package).rglob("*.py")):
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert path.name == "__main__.py" or docstring, f"{path.relative_to(REPO)} has no docstring"


def test_code_tells_what_and_why_not_its_history() -> None:
    """Timings, dated notes and references to a contract outside the repository go stale
    in a docstring or a comment; they belong in commit messages and benchmarks/HISTORY.md."""
    import io
    import re
    import tokenize

    timing = re.compile(r"\d ?(µs|us|ms)\b")
    dated = re.compile(r"\b(until|since|seen|before|as of|audit)\b[^.]{0,20}\b20\d\d-[01]\d-[0-3]\d", re.I)
    outside = re.compile(r"DESIGN(\.md)?\b|\bissue \d+\b|\bseeds? \d{3}\b")
    found = []
    for package in ("events", "indexers", "pandafs"):
        for path in sorted((REPO / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            texts = [
                (node.lineno, node.value.value)
                for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ]
            texts += [
                (tok.start[0], tok.string)
                for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT
            ]
            found += [
                f"{path.relative_to(REPO)}:{line}: {text.strip()[:60]}"
                for line, text in texts
                if timing.search(text) or dated.search(text) or outside.search(text)
            ]
    assert not found, "\n".join(found)


# Modules on every ask's path that declare pydantic models or NamedTuples keep their
# annotations as objects: `from __future__ import annotations` would turn each into a
# string that pydantic or typing compiles one by one when the class is made.
ANNOTATIONS_AS_OBJECTS = [
    "events/documents.py",
    "events/projection.py",
    "events/schema.py",
    "indexers/documents.py",
    "indexers/query.py",
    "indexers/request.py",
    "pandafs/learning/materialise.py",
    "pandafs/learning/policy.py",
    "pandafs/learning/rows.py",
    "pandafs/memory/args.py",
    "pandafs/memory/retrieved.py",
    "pandafs/memory/store.py",
    "pandafs/memory/tiers.py",
    "pandafs/pipeline/tools.py",
    "pandafs/pipeline/turn.py",
    "pandafs/tasks/schemas.py",
]


@pytest.mark.parametrize("module", ANNOTATIONS_AS_OBJECTS)
def test_ask_path_models_keep_annotations_as_objects(module: str) -> None:
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    future = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    assert not future, f"{module} postpones its annotations"

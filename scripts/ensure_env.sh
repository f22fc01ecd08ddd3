#!/usr/bin/env bash
# Creates (once) or reuses the project's Python 3.12 environment, outside the work tree, keyed by the
# hash of requirements.txt. Prints the path of the environment's python on its last line.
# Override the location with ARENA_VENV_ROOT (default: ~/.cache/isaaclab_arena).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${ARENA_VENV_ROOT:-$HOME/.cache/isaaclab_arena}
key=$(cat "$repo/requirements.txt" | sha256sum | cut -c1-12)
venv="$root/venv-$key"
py312=${ARENA_PYTHON312:-}
if [ -z "$py312" ]; then
  for c in /root/.pyenv/versions/3.12.1/bin/python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3.12" python3.12; do
    if command -v "$c" >/dev/null 2>&1; then py312=$(command -v "$c"); break; fi
  done
fi
if [ ! -f "$venv/.complete" ]; then
  [ -n "$py312" ] || { echo "ensure_env: Python 3.12 not found; set ARENA_PYTHON312=/path/to/python3.12" >&2; exit 2; }
  echo "ensure_env: creating $venv (first run: a few minutes, ~8 GB)" >&2
  rm -rf "$venv"; mkdir -p "$root"
  "$py312" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -r "$repo/requirements.txt" >&2
  touch "$venv/.complete"
fi
# The package itself is installed editable from this checkout each time (cheap, keeps clones honest).
if ! (cd / && "$venv/bin/python" -c "import isaaclab_arena, isaaclab_arena_environments, isaaclab_arena_curobo, os, sys; sys.exit(0 if os.path.dirname(os.path.dirname(isaaclab_arena.__file__)) == '$repo' else 1)") >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$repo" >&2
fi
echo "$venv/bin/python"

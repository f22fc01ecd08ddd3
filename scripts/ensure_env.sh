#!/usr/bin/env bash
# Creates (once) or reuses the project's Python 3.12 environment, outside the work tree, keyed by the
# hash of requirements.txt. Prints the path of the environment's python on its last line.
# Override the location with ARENA_VENV_ROOT (default: ~/.cache/isaaclab_arena).
#
# Safe to run from several processes and checkouts at once: creation holds a lock (flock) and builds
# into a temporary folder that is renamed into place only when complete, so no process ever deletes or
# uses an environment another one is still building. The checkout is not installed into the environment:
# scripts/arena_python.sh puts the calling checkout first on PYTHONPATH, so switching checkouts installs
# nothing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${ARENA_VENV_ROOT:-$HOME/.cache/isaaclab_arena}
key=$(sha256sum < "$repo/requirements.txt" | cut -c1-12)
venv="$root/venv-$key"
if [ ! -f "$venv/.complete" ]; then
  py312=${ARENA_PYTHON312:-}
  if [ -z "$py312" ]; then
    for c in /root/.pyenv/versions/3.12.1/bin/python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3.12" python3.12; do
      if command -v "$c" >/dev/null 2>&1; then py312=$(command -v "$c"); break; fi
    done
  fi
  [ -n "$py312" ] || { echo "ensure_env: Python 3.12 not found; set ARENA_PYTHON312=/path/to/python3.12" >&2; exit 2; }
  mkdir -p "$root"
  exec 9>"$root/.lock-$key"
  if ! flock -n 9; then
    echo "ensure_env: another process is creating $venv; waiting for it" >&2
    flock 9
  fi
  if [ ! -f "$venv/.complete" ]; then
    echo "ensure_env: creating $venv (first run: a few minutes, ~8 GB)" >&2
    # a venv records its own path: build it where it will live, under the lock, then mark it complete
    [ -e "$venv" ] && mv "$venv" "$venv.stale.$$"
    "$py312" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q -r "$repo/requirements.txt" >&2
    touch "$venv/.complete"
    rm -rf "$venv.stale.$$"
  fi
  flock -u 9
fi
echo "$venv/bin/python"

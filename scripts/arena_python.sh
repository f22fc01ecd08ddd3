#!/usr/bin/env bash
# Runs the project's Python 3.12 environment (created on first use, reused after) in the caller's directory.
# Usage: <checkout>/scripts/arena_python.sh <python args...>
#
# Every path is taken from the directory you call it from (scripts, --env_spec, outputs). A script path that
# is not there but is in this checkout (e.g. isaaclab_arena/scripts/environment_runner.py run from another
# folder) runs the checkout's script, with a note on stderr. This checkout comes first on PYTHONPATH, so it
# wins over whichever checkout the shared environment was created from.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$("$repo/scripts/ensure_env.sh" | tail -n 1)
export PYTHONUNBUFFERED=1
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export ARENA_LAUNCHER="$repo/scripts/arena_python.sh"
if [ $# -gt 0 ] && [[ "$1" != -* ]] && [[ "$1" != /* ]] && [ ! -e "$1" ] && [ -f "$repo/$1" ]; then
  echo "arena_python: $1 is not in $PWD; running $repo/$1" >&2
  script="$repo/$1"
  shift
  exec "$py" "$script" "$@"
fi
exec "$py" "$@"

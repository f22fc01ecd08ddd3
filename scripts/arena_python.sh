#!/usr/bin/env bash
# Runs the project's Python 3.12 environment (created on first use, reused after), from the repo root.
# Usage: scripts/arena_python.sh <python args...>
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=$("$repo/scripts/ensure_env.sh" | tail -n 1)
cd "$repo"
export PYTHONUNBUFFERED=1
# This checkout always wins over whichever checkout the shared venv was last installed from.
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" "$@"

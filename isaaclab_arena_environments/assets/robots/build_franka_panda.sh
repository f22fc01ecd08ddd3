#!/usr/bin/env bash
# Rebuilds the shipped Franka Panda USD (isaaclab_arena_environments/assets/robots/franka_panda/) offline
# from the pybullet sdist on PyPI. The result is committed: users and CI never need to run this.
#
# Uses a separate tool venv (never the project venv): ~/.cache/isaaclab_arena/tools-robot, override with
# ARENA_TOOLS_ROBOT. Needs Python 3.12 and access to PyPI (pip download of the sdist, ~80 MB, cached).
# Usage: isaaclab_arena_environments/assets/robots/build_franka_panda.sh [output_dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tools=${ARENA_TOOLS_ROBOT:-$HOME/.cache/isaaclab_arena/tools-robot}
py312=${ARENA_PYTHON312:-}
if [ -z "$py312" ]; then
  for c in /root/.pyenv/versions/3.12.1/bin/python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3.12" python3.12; do
    if command -v "$c" >/dev/null 2>&1; then py312=$(command -v "$c"); break; fi
  done
fi
if [ ! -x "$tools/bin/python" ]; then
  [ -n "$py312" ] || { echo "build_franka_panda: Python 3.12 not found; set ARENA_PYTHON312" >&2; exit 2; }
  "$py312" -m venv "$tools"
fi
"$tools/bin/python" -m pip install -q "urdf-usd-converter==0.3.4" "trimesh==5.2.0" >&2
exec "$tools/bin/python" "$here/build_franka_panda.py" --tools "$tools" --out "${1:-$here/franka_panda}"

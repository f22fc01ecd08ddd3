#!/usr/bin/env bash
# Rebuilds a shipped robot USD (isaaclab_arena_environments/assets/robots/<robot>/) offline from the pybullet
# sdist on PyPI, with build_<robot>.py (that robot's section) and robot_usd_build.py (the shared steps). The
# result is committed: users and CI never need to run this.
#
# Uses a separate tool venv (never the project venv): ~/.cache/isaaclab_arena/tools-robot, override with
# ARENA_TOOLS_ROBOT. Needs Python 3.12 and access to PyPI (pip download of the sdist, ~80 MB, cached).
# Usage: isaaclab_arena_environments/assets/robots/build_robot.sh <robot> [output_dir]
#        robot: franka_panda | kuka_iiwa
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
robot=${1:-}
if [ -z "$robot" ] || [ ! -f "$here/build_$robot.py" ]; then
  echo "usage: build_robot.sh <robot> [output_dir]; robots: $(cd "$here" && ls build_*.py | sed 's/^build_//; s/\.py$//' | tr '\n' ' ')" >&2
  exit 2
fi
tools=${ARENA_TOOLS_ROBOT:-$HOME/.cache/isaaclab_arena/tools-robot}
py312=${ARENA_PYTHON312:-}
if [ -z "$py312" ]; then
  for c in /root/.pyenv/versions/3.12.1/bin/python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3.12" python3.12; do
    if command -v "$c" >/dev/null 2>&1; then py312=$(command -v "$c"); break; fi
  done
fi
if [ ! -x "$tools/bin/python" ]; then
  [ -n "$py312" ] || { echo "build_robot: Python 3.12 not found; set ARENA_PYTHON312" >&2; exit 2; }
  "$py312" -m venv "$tools"
fi
"$tools/bin/python" -m pip install -q "urdf-usd-converter==0.3.4" "trimesh==5.2.0" "scipy==1.14.1" >&2
exec "$tools/bin/python" "$here/build_$robot.py" --tools "$tools" --out "${2:-$here/$robot}"

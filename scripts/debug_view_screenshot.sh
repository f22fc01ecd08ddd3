#!/usr/bin/env bash
# Renders one picture of the Rerun debug view of a recording, headless: a virtual display (Xvfb) and the
# viewer's own --screenshot-to, drawn by Mesa's software Vulkan (lavapipe). Debian packages: xvfb,
# mesa-vulkan-drivers (apt-get install -y xvfb mesa-vulkan-drivers). Used for docs/images/debug_view_failing_scene.png.
# Usage: scripts/debug_view_screenshot.sh recording.rrd out.png
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rrd=$(realpath "$1"); out=$(realpath -m "$2")
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
if [ -z "${DISPLAY:-}" ]; then
  display=:$(( 90 + RANDOM % 100 ))
  Xvfb "$display" -screen 0 1600x1000x24 >/dev/null 2>&1 &
  xvfb=$!
  trap 'kill $xvfb' EXIT
  export DISPLAY=$display
  sleep 2
fi
"$repo/scripts/arena_python.sh" -m isaaclab_arena.debug.rrd_contents "$rrd" --screenshot "$out" >/dev/null 2>&1
echo "$out"

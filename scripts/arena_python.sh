#!/usr/bin/env bash
# Runs the project's Python 3.12 environment (created on first use, reused after) in the caller's directory.
# Usage: <checkout>/scripts/arena_python.sh <python args...>
#
# Every path is taken from the directory you call it from (scripts, --env_spec, outputs). A script path that
# is not there but is in this checkout (e.g. isaaclab_arena/scripts/environment_runner.py run from another
# folder) runs the checkout's script, with a note on stderr; so does the script of
# `-m torch.distributed.run ... <script> ...` (torchrun). This checkout comes first on PYTHONPATH, so it
# wins over whichever checkout the shared environment was created from.
set -euo pipefail
# a Ctrl-C before Python starts (the environment check below): the runners' one line and status 130
trap 'echo interrupted >&2; exit 130' INT
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$("$repo/scripts/ensure_env.sh" | tail -n 1)
export PYTHONUNBUFFERED=1
# torch's OpenMP threads spin for milliseconds (GOMP's default, ~300,000 spins) after every parallel torch op, on
# the cores the placer's threads need next: on 2 cores that halved boxes3's check pass at batch 65,536 and slowed
# a reset's refill 1.4-1.7x. A short spin keeps torch's quick wake-up and frees the cores (docs/BENCHMARKS.md,
# "OpenMP spin"). Yours wins: set GOMP_SPINCOUNT or OMP_WAIT_POLICY yourself and neither is touched.
if [ -z "${GOMP_SPINCOUNT:-}" ] && [ -z "${OMP_WAIT_POLICY:-}" ]; then
  export GOMP_SPINCOUNT=10000
fi
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export ARENA_LAUNCHER="$repo/scripts/arena_python.sh"
if [ $# -gt 0 ] && [[ "$1" != -* ]] && [[ "$1" != /* ]] && [ ! -e "$1" ] && [ -f "$repo/$1" ]; then
  echo "arena_python: $1 is not in $PWD; running $repo/$1" >&2
  script="$repo/$1"
  shift
  exec "$py" "$script" "$@"
fi
if [ $# -gt 1 ] && [ "$1" = "-m" ] && [ "$2" = "torch.distributed.run" ]; then
  # torchrun: its script is the first *.py argument; resolve it like a script given directly
  args=()
  found=0
  for a in "$@"; do
    if [ $found -eq 0 ] && [[ "$a" == *.py ]] && [[ "$a" != -* ]] && [[ "$a" != /* ]] && [ ! -e "$a" ] && [ -f "$repo/$a" ]; then
      echo "arena_python: $a is not in $PWD; running $repo/$a" >&2
      a="$repo/$a"
      found=1
    elif [[ "$a" == *.py ]]; then
      found=1
    fi
    args+=("$a")
  done
  # torchrun through isaaclab_arena.utils.torchrun: a refused run exits 2 with its ranks' one line, no report
  exec "$py" -m isaaclab_arena.utils.torchrun "${args[@]:2}"
fi
exec "$py" "$@"

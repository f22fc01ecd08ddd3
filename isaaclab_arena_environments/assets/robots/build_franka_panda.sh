#!/usr/bin/env bash
# Rebuilds the shipped Franka Panda USD (franka_panda/): build_robot.sh franka_panda [output_dir].
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/build_robot.sh" franka_panda "$@"

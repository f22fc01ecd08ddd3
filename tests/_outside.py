"""Helpers of the tests that run the user-facing commands the way a user does: through ``scripts/arena_python.sh``,
from a temporary working directory outside the repository."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

from isaaclab_arena import ARENA_ROOT

LAUNCHER = os.path.join(ARENA_ROOT, "scripts", "arena_python.sh")
RUNNER = "isaaclab_arena/scripts/environment_runner.py"
POLICY_RUNNER = "isaaclab_arena/evaluation/policy_runner.py"
RECORDER = "isaaclab_arena/scripts/record_placement_layouts.py"
TABLETOP = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "tabletop")
CLUTTER = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "clutter")


def arena(cwd, *args, timeout: float = 900, umask: int | None = None) -> subprocess.CompletedProcess:
    """``<checkout>/scripts/arena_python.sh <args>`` run from ``cwd`` (script paths as the README gives them)."""
    cmd = [LAUNCHER, *map(str, args)]
    if umask is not None:
        cmd = ["sh", "-c", f"umask {umask:03o}; exec {shlex.join(cmd)}"]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def arena_popen(cwd, *args, umask: int | None = None) -> subprocess.Popen:
    cmd = [LAUNCHER, *map(str, args)]
    if umask is not None:
        cmd = ["sh", "-c", f"umask {umask:03o}; exec {shlex.join(cmd)}"]
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def refusal(out: subprocess.CompletedProcess) -> str:
    """The single stderr line of a refused command (exit status 2, no traceback)."""
    assert out.returncode == 2, (out.returncode, out.stdout[-2000:], out.stderr[-3000:])
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip() and not ln.startswith("arena_python:")]
    assert len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: "), lines
    return lines[0]


def summary(folder) -> dict:
    with open(os.path.join(folder, "run_summary.json")) as f:
        return json.load(f)


def without_recording_block(spec_path: str, folder) -> str:
    """A copy of ``spec_path`` in ``folder`` without its top-level ``recording:`` block (the spec's own recorder
    settings), for tests of what the recorder does without them."""
    out, skipping = [], False
    with open(spec_path) as f:
        for line in f:
            if line.startswith("recording:"):
                skipping = True
                continue
            if skipping and (line.startswith((" ", "\t")) or not line.strip()):
                continue
            skipping = False
            out.append(line)
    path = os.path.join(str(folder), "no_recording_" + os.path.basename(spec_path))
    with open(path, "w") as f:
        f.write("".join(out))
    return path

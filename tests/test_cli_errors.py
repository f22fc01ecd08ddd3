"""Runners refuse bad input with one clear line (no traceback) and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys

from isaaclab_arena import ARENA_ROOT
import pytest

pytestmark = [pytest.mark.slow]

RUNNER = os.path.join(ARENA_ROOT, "isaaclab_arena", "scripts", "environment_runner.py")

SELF_RELATION = """\
env_name: bad
background: {id: table_background, registry_name: table_background}
object_references:
  - {id: table, parent_id: table_background, prim_path: table, object_type: base}
objects:
  - {id: mug, registry_name: mug}
relations:
  - {kind: is_anchor, subject: table}
  - kind: next_to
    subject: mug
    reference: mug
"""


def _run(*args):
    return subprocess.run([sys.executable, RUNNER, *args], cwd=ARENA_ROOT, capture_output=True, text=True, timeout=300)


def test_bad_spec_is_one_error_line_naming_file_line_and_relation(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(SELF_RELATION)
    out = _run("--env_spec", str(spec))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {spec}:11:") and "relation to itself" in last and "'mug'" in last


def test_missing_spec_file_is_refused(tmp_path):
    out = _run("--env_spec", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "spec file does not exist" in out.stderr

"""Command-line basics, run from a folder outside the repository: ``--help`` answers without loading torch or
Isaac Lab and lists what a user can type, no flag is matched by prefix, and refusals (backend, device, flags)
are one line with exit status 2 before anything is loaded or solved. ``scripts/arena_python.sh`` runs a
user's own script from their folder."""

from __future__ import annotations

import ast
import glob
import os
import subprocess

import pytest
import torch

from isaaclab_arena import ARENA_ROOT
from _outside import POLICY_RUNNER, RECORDER, RUNNER, TABLETOP, arena, refusal

pytestmark = [pytest.mark.slow]

SPEC = os.path.join(TABLETOP, "mug_bowl_table.yaml")

HELP_PROBE = """\
import runpy, sys
sys.argv = [{script!r}, "--help"]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit:
    pass
heavy = sorted(m for m in ("torch", "warp", "isaaclab", "pxr") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


@pytest.mark.parametrize("script", [RUNNER, POLICY_RUNNER, RECORDER])
def test_help_loads_neither_torch_nor_isaac_lab(tmp_path, script):
    path = os.path.join(ARENA_ROOT, script)
    out = arena(tmp_path, "-c", HELP_PROBE.format(script=path), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY=", out.stdout[-500:]


def test_policy_runner_help_lists_the_registered_environments_and_their_flags(tmp_path):
    from isaaclab_arena_environments.registered import REGISTERED_ENVIRONMENTS

    out = arena(tmp_path, POLICY_RUNNER, "--help", timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout.split("registered environments", 1)[1]
    for name in REGISTERED_ENVIRONMENTS:
        assert f"\n  {name}\n" in text
    assert "--additional_table_objects" in text
    assert "--env_spec" not in out.stdout  # a flag it would refuse is not offered
    line = refusal(arena(tmp_path, POLICY_RUNNER, "--env_spec", SPEC, "table_pick_and_place", timeout=120))
    assert "unrecognized arguments: --env_spec" in line


def test_flags_are_never_matched_by_prefix(tmp_path):
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", SPEC, "--num_env", "4", timeout=300))
    assert "unrecognized arguments: --num_env 4" in line
    line = refusal(arena(tmp_path, POLICY_RUNNER, "--num_env", "4", "table_pick_and_place", timeout=300))
    assert "--num_env" in line
    line = refusal(arena(tmp_path, os.path.join(ARENA_ROOT, "scripts", "bench_resting.py"), "--num_env", "4",
                         timeout=120))
    assert "unrecognized arguments: --num_env" in line


def _argparse_calls(path: str) -> list[tuple[int, bool]]:
    """(line, allow_abbrev=False given) of every ``ArgumentParser(...)`` call in a file."""
    tree = ast.parse(open(path).read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "ArgumentParser":
            ok = any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False
                     for k in node.keywords)
            out.append((node.lineno, ok))
    return out


def test_every_command_line_parser_refuses_prefixes():
    files = glob.glob(os.path.join(ARENA_ROOT, "scripts", "*.py"))
    files += glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "**", "*.py"), recursive=True)
    bad = [f"{os.path.relpath(f, ARENA_ROOT)}:{line}" for f in files for line, ok in _argparse_calls(f) if not ok]
    assert not bad, f"ArgumentParser without allow_abbrev=False (use ArenaArgumentParser): {bad}"
    assert _argparse_calls(os.path.join(ARENA_ROOT, "isaaclab_arena", "utils", "arena_argparse.py")) == []


def test_the_scanner_sees_a_parser_that_allows_prefixes(tmp_path):
    f = tmp_path / "cli.py"
    f.write_text("import argparse\np = argparse.ArgumentParser()\nq = argparse.ArgumentParser(allow_abbrev=False)\n")
    assert _argparse_calls(str(f)) == [(2, False), (3, True)]


def test_a_backend_this_install_lacks_is_refused_before_the_spec_is_solved(tmp_path):
    out = arena(tmp_path, RUNNER, "--env_spec", SPEC, "--physics", "isaacsim_physx", timeout=300)
    line = refusal(out)
    assert line.startswith("error: physics 'isaacsim_physx' needs Isaac Sim (Kit), which is not installed here; use "
                           "'ovphysx'")
    assert "[solver]" not in out.stdout
    out = arena(tmp_path, POLICY_RUNNER, "--physics", "isaacsim_physx", "table_pick_and_place", timeout=300)
    assert "needs Isaac Sim" in refusal(out) and "[solver]" not in out.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: cuda:0 is not refused here")
def test_a_cuda_device_without_a_gpu_is_refused_in_one_line(tmp_path):
    out = arena(tmp_path, RUNNER, "--env_spec", SPEC, "--device", "cuda:0", timeout=300)
    assert refusal(out).startswith("error: device 'cuda:0': no CUDA GPU is usable here (torch.cuda.is_available() is "
                                   "False); use --device cpu")
    assert "[solver]" not in out.stdout
    assert "no CUDA GPU" in refusal(arena(tmp_path, RECORDER, f"env_spec={SPEC}", "output=x.jsonl", "--device",
                                          "cuda:0", timeout=300))


def test_a_device_name_that_means_nothing_is_refused(tmp_path):
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", SPEC, "--device", "gpu", timeout=300))
    assert line.startswith("error: device='gpu' is not accepted; use cpu or cuda:<index>")


def test_a_missing_spec_names_the_working_directory(tmp_path):
    line = refusal(arena(tmp_path, RUNNER, "--env_spec", "nope.yaml", timeout=300))
    assert "nope.yaml" in line and str(tmp_path) in line


def test_the_launcher_runs_a_users_script_from_their_folder(tmp_path):
    (tmp_path / "my_script.py").write_text(
        "import os, isaaclab_arena\nprint(os.getcwd()); print(isaaclab_arena.ARENA_ROOT)\n")
    out = arena(tmp_path, "my_script.py", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(tmp_path), ARENA_ROOT]
    # a script path that is only in the checkout (the README's commands from another folder) runs the checkout's
    out = arena(tmp_path, "scripts/bench_resting.py", "--help", timeout=120)
    assert out.returncode == 0 and "Resting contact" in out.stdout
    assert f"arena_python: scripts/bench_resting.py is not in {tmp_path}; running {ARENA_ROOT}/scripts/bench_resting.py" \
        in out.stderr


def test_the_launcher_passes_the_exit_status_through(tmp_path):
    out = subprocess.run([os.path.join(ARENA_ROOT, "scripts", "arena_python.sh"), "-c", "import sys; sys.exit(7)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 7


def test_the_registered_environments_spell_out_every_side():
    from isaaclab_arena.relations.relation_base import Side
    from isaaclab_arena_environments.registered import SIDES

    assert set(SIDES) == {s.value for s in Side}

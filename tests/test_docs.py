"""Every code snippet in docs/ runs as written.

A page's fenced blocks run in order, in one working folder per page, as a reader would type them:

- ```` ```yaml ```` whose first line is ``# <file name>`` is saved under that name (the reader saves it), and
  every yaml block must parse; one holding ``env_name`` must load as an env spec.
- ```` ```bash ```` runs as one ``bash -euo pipefail`` script from the folder (for pages other than getting
  started, the repository root).
- ```` ```python ```` runs in a fresh interpreter from the same folder; it must exit 0.

Blocks in other languages (``text``, output, file formats with elisions) are shown, not run. Getting
started runs in a clean clone of the repository in a temporary folder outside it (the newcomer's path).
Each block must run; what it prints is checked where the page states it.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from isaaclab_arena import ARENA_ROOT

DOCS = os.path.join(ARENA_ROOT, "docs")
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", flags=re.S | re.M)
RUN = ("bash", "python", "yaml")


def blocks(page: str) -> list[tuple[str, str]]:
    """(language, text) of the fenced blocks of ``page`` that run (bash, python, yaml), in order."""
    with open(os.path.join(DOCS, page)) as f:
        return [(lang, text) for lang, text in FENCE.findall(f.read()) if lang in RUN]


def pages() -> list[str]:
    return sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))


def run_page(page: str, cwd: str, repo: str) -> list[str]:
    """Runs every block of ``page`` from ``cwd`` with the checkout ``repo``; returns each block's stdout."""
    outs = []
    env = {**os.environ, "PATH": f"{os.path.join(repo, 'scripts')}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    for k, (lang, text) in enumerate(blocks(page)):
        where = f"{page} block {k + 1} ({lang})"
        if lang == "yaml":
            data = yaml.safe_load(text)
            first = text.splitlines()[0].strip()
            if first.startswith("# ") and first.endswith((".yaml", ".yml")):
                with open(os.path.join(cwd, first[2:].strip()), "w") as f:
                    f.write(text)
            if isinstance(data, dict) and "env_name" in data:
                path = os.path.join(cwd, f"_docs_block_{k}.yaml")
                with open(path, "w") as f:
                    f.write(text)
                code = ("from isaaclab_arena.env_spec.arena_env_graph_spec import ArenaEnvGraphSpec\n"
                        f"ArenaEnvGraphSpec.from_yaml({path!r}).to_arena_env()\n")
                cmd = [os.path.join(repo, "scripts", "arena_python.sh"), "-c", code]
            else:
                outs.append("")
                continue
        elif lang == "bash":
            cmd = ["bash", "-euo", "pipefail", "-c", text]
        else:
            cmd = [os.path.join(repo, "scripts", "arena_python.sh"), "-c", text]
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f"{where} failed:\n{text}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"
        outs.append(out.stdout)
    return outs


def user_folder(tmp_path) -> str:
    """A working folder outside the checkout that sees the checkout's top-level entries (symlinks), so the
    snippets' repo-relative paths resolve while everything they write lands in this folder, not the checkout."""
    ws = tmp_path / "user"
    ws.mkdir()
    for name in os.listdir(ARENA_ROOT):
        if not name.startswith(".") and name != "outputs" and not name.startswith("_docs_block_"):
            os.symlink(os.path.join(ARENA_ROOT, name), ws / name)
    return str(ws)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in pages() if p != "GETTING_STARTED.md" and blocks(p)])
def test_every_snippet_of_the_page_runs(page, tmp_path):
    before = set(os.listdir(ARENA_ROOT))
    run_page(page, user_folder(tmp_path), ARENA_ROOT)
    assert set(os.listdir(ARENA_ROOT)) - before == set()  # the checkout gains nothing


def test_docs_pages_are_linked_from_the_index_and_the_readme():
    with open(os.path.join(DOCS, "README.md")) as f:
        index = f.read()
    missing = [p for p in pages() if p != "README.md" and f"({p})" not in index]
    assert not missing, f"docs/README.md does not link {missing}"
    with open(os.path.join(ARENA_ROOT, "README.md")) as f:
        assert "docs/GETTING_STARTED.md" in f.read()


@pytest.mark.sim
@pytest.mark.slow
def test_getting_started_from_a_clean_clone(tmp_path):
    """A newcomer's path: clone, then every block of docs/GETTING_STARTED.md in order, from the clone."""
    clone = tmp_path / "arena"
    subprocess.run(["git", "clone", "-q", ARENA_ROOT, str(clone)], check=True, timeout=300)
    # the clone gets the working tree as committed plus what this checkout changed (tests run before commits too)
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ARENA_ROOT,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    for line in changed:
        path = line[3:].split(" -> ")[-1]
        src, dst = os.path.join(ARENA_ROOT, path), os.path.join(clone, path)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(src, "rb") as a, open(dst, "wb") as b:
                b.write(a.read())
        elif os.path.exists(dst):
            os.remove(dst)
    outs = "\n".join(run_page("GETTING_STARTED.md", str(clone), str(clone)))
    # what the page says the reader will see
    assert "[placement] Validated" in outs
    assert "not_next_to: 'bowl' not_next_to(mug, positive_x): inside the keep-out region" in outs
    assert os.path.isfile(clone / "outputs" / "first" / "layouts.png")
    assert "every env was reset to a recorded layout: True" in outs
    # every console line the page shows (its ```text blocks; "..." stands for anything, numbers may differ)
    # is one that some command of the page printed
    printed = outs.splitlines()
    for expected in expected_console_lines("GETTING_STARTED.md"):
        pattern = console_pattern(expected)
        assert any(pattern.fullmatch(ln.rstrip()) for ln in printed), f"the page shows {expected!r}; never printed"


def expected_console_lines(page: str) -> list[str]:
    """Lines of the page's ```text blocks that a runner prints (``[arena]``, ``[placement]``, ``success:``)."""
    with open(os.path.join(DOCS, page)) as f:
        text = f.read()
    out = []
    for block in re.findall(r"```text\n(.*?)```", text, flags=re.S):
        out += [ln.rstrip() for ln in block.splitlines() if ln.startswith(("[arena]", "[placement]", "success:"))]
    return out


def console_pattern(expected: str) -> re.Pattern:
    """``...`` matches anything; every number matches any number (seeds, counts, metres, paths differ)."""
    parts = []
    for piece in re.split(r"(\.\.\.|[-+]?\d+(?:\.\d+)?)", expected):
        if piece == "...":
            parts.append(".*")
        elif re.fullmatch(r"[-+]?\d+(?:\.\d+)?", piece or "x"):
            parts.append(r"[-+]?\d+(?:\.\d+)?")
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts))

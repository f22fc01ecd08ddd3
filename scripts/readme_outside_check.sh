#!/usr/bin/env bash
# Runs the README's commands from a folder outside the repository, as a user who keeps their work elsewhere:
#  1. every command of the README's first code block, from a fresh temporary folder, with each word that names a
#     path of the checkout given as that path (scripts/arena_python.sh -> <checkout>/scripts/arena_python.sh);
#  2. the README's "from any other folder" block as written, with ARENA set to the checkout, a copy of the
#     shipped scene as my_scene.yaml and a small my_script.py in that folder.
# Then checks that outputs landed in the temporary folder's ./outputs and that the checkout gained no file.
#
# Usage: scripts/readme_outside_check.sh [--quick]
#   --quick  runs the test command on tests/test_readme.py only (the full suite takes long; CI runs it in full).
# Exit status 0 when every command exits 0 and the checks hold.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
[ "${1:-}" = "--quick" ] && quick=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
before=$(cd "$repo" && git status --porcelain --untracked-files=all --ignored 2>/dev/null | sort)
blocks() {  # prints fenced bash block number $1 of README.md
  awk -v want="$1" '/^```bash/{n++; inb=(n==want); next} /^```/{inb=0; next} inb{print}' "$repo/README.md"
}
absolute() {  # rewrites words that are paths of the checkout into absolute paths
  local out="" w
  for w in $1; do
    if [[ "$w" != -* && "$w" != /* && -e "$repo/$w" ]]; then out+="$repo/$w "; else out+="$w "; fi
  done
  echo "${out% }"
}
rc=0
run() {  # run <label> <folder> <command line>
  local label=$1 dir=$2 line=$3 start code
  echo "== [$label] (in $dir) $line"
  start=$(date +%s)
  (cd "$dir" && bash -c "$line") > "$work/out.log" 2>&1; code=$?
  echo "== [$label] exit $code after $(( $(date +%s) - start )) s; last lines:"; tail -n 8 "$work/out.log"
  if [ $code -ne 0 ]; then
    rc=1
    # which tests failed, and the start of each failure's report (the tail alone shows only the last one's end)
    if grep -qE '^(FAILED|ERROR) ' "$work/out.log"; then
      echo "== [$label] failing tests:"; grep -E '^(FAILED|ERROR) ' "$work/out.log" | cut -c1-400
      echo "== [$label] failure reports (first 60 lines):"
      awk '/^=+ (FAILURES|ERRORS) =+$/{on=1} /^=+ short test summary info =+$/{on=0} on' "$work/out.log" | head -n 60
    fi
  fi
}

mkdir -p "$work/user"
i=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue;; esac
  i=$((i+1))
  cmd=$(absolute "$line")
  if [ $quick -eq 1 ] && [[ "$cmd" == *"-m pytest"* ]]; then cmd="${cmd/ $repo\/tests/ $repo/tests/test_readme.py}"; fi
  run "readme $i" "$work/user" "$cmd"
done <<< "$(blocks 1)"
if [ ! -f "$work/user/outputs/arena/run_summary.json" ]; then
  echo "== outputs did not land in the working directory ($work/user/outputs/arena)"; rc=1
fi

mkdir -p "$work/other"
cp "$repo/isaaclab_arena_environments/tabletop/mug_bowl_table.yaml" "$work/other/my_scene.yaml"
printf 'import isaaclab_arena\nprint("my_script sees", isaaclab_arena.ARENA_ROOT)\n' > "$work/other/my_script.py"
j=0
while IFS= read -r line; do
  case "$line" in ''|'#'*|ARENA=*) continue;; esac
  j=$((j+1))
  run "other folder $j" "$work/other" "ARENA='$repo'; $line"
done <<< "$(blocks 2)"
if [ ! -f "$work/other/outputs/arena/run_summary.json" ]; then
  echo "== the other-folder run wrote no ./outputs/arena/run_summary.json"; rc=1
fi

after=$(cd "$repo" && git status --porcelain --untracked-files=all --ignored 2>/dev/null | sort)
added=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '__pycache__\|\.pytest_cache' || true)
if [ -n "$added" ]; then echo "== the checkout gained files:"; echo "$added"; rc=1; fi
echo "== readme_outside_check: $([ $rc -eq 0 ] && echo passed || echo FAILED)"
exit $rc

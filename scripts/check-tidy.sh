#!/usr/bin/env bash
# Static checks, run by CI (scripts/test.sh) after the clang build: clang-tidy-16 with the root
# .clang-tidy (its comments say why each check family is on or off) over every C++ file under
# FOLDER that the build compiles, as compile_commands.json compiles it (for build/clang: all of
# src/ but the CUDA backend's host files and kernels; CI then checks those host files in
# build/cuda, FOLDER src/backend/cuda/; kernels, .cu, are not C++ to clang-tidy). Any finding
# fails, and so does clang-tidy failing.
# Usage: scripts/check-tidy.sh [BUILD_DIR [FOLDER]]   (default build/clang src/; configure it first)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build/clang}
folder=${2:-src/}
[[ $folder == /* ]] || folder=$PWD/$folder
folder=${folder%/}/  # a folder, not every name it begins
tidy=${CLANG_TIDY:-clang-tidy-16}
command -v "$tidy" >/dev/null 2>&1 || { echo "check-tidy: $tidy not found (scripts/install-deps.sh installs it)"; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "check-tidy: no $build/compile_commands.json (configure $build first)"; exit 1; }
mapfile -t files < <(python3 - "$build/compile_commands.json" "$folder" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))
print("\n".join(sorted({e["file"] for e in entries if e["file"].startswith(sys.argv[2]) and e["file"].endswith(".cpp")})))
PY
)
[[ ${#files[@]} -gt 0 ]] || { echo "check-tidy: no C++ files under ${folder#"$PWD"/} in $build/compile_commands.json"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# (g++'s warning flags, in the cuda build's commands, are unknown to clang: not a finding.)
printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet \
  --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1
status=$?
findings=$(grep -E "(warning|error): " "$log" | sort -u)
if [[ $status -ne 0 || -n $findings ]]; then
  echo "check-tidy: clang-tidy findings in ${#files[@]} files:"
  if [[ -n $findings ]]; then echo "$findings"; else tail -n 20 "$log"; fi
  exit 1
fi
echo "check-tidy: ${#files[@]} files clean"

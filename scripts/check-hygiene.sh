#!/usr/bin/env bash
# Repository hygiene, checked by CI (scripts/test.sh) before any build:
#   1. no build or cache artifacts are committed (object files, Python caches, node_modules,
#      CMake caches, anything under build/);
#   2. every test file or folder a "Tested by ..." sentence names exists (a comment that
#      points nowhere sends a reader to a test that was renamed or never written). The
#      sentence may wrap onto the next comment lines; "tested by" in any case counts.
# Prints each offence on a line of its own and exits 1 if there is any.
# Usage: scripts/check-hygiene.sh
set -uo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "check-hygiene: not a git work tree"; exit 1; }
status=0
artifacts=$(git ls-files | grep -E '(^|/)__pycache__/|\.pyc$|\.o$|\.a$|\.so$|(^|/)node_modules/|(^|/)CMakeCache\.txt$|(^|/)\.ninja_|^build/' || true)
if [[ -n $artifacts ]]; then
  while IFS= read -r file; do echo "check-hygiene: committed build or cache artifact: $file"; done <<<"$artifacts"
  status=1
fi
# Each "Tested by" sentence, from those words to the first ". " or line-ending "." (at most
# four lines, comment markers dropped), as FILE:LINE:TEXT.
sentences=$(git grep -l -I -i 'tested by' -- src tests tools scripts | while IFS= read -r file; do
  awk -v file="$file" '
    function flush() { if (text != "") print file ":" start ":" text; text = ""; lines = 0 }
    {
      line = $0
      if (lines > 0) {
        sub(/^[ \t]*(\/\/+|#+|\*+)?[ \t]*/, "", line)
        text = text " " line; lines++
      } else {
        at = index(tolower(line), "tested by")
        if (at == 0) next
        text = substr(line, at); start = NR; lines = 1
      }
      if (text ~ /\.([ \t]|$)/ || lines >= 4) flush()
    }
    END { flush() }' "$file"
done)
while IFS=: read -r file line text; do
  [[ -z $file ]] && continue
  for path in $(grep -oE 'tests/[A-Za-z0-9_./-]*[A-Za-z0-9_]' <<<"${text%%. *}"); do
    if [[ ! -e $path ]]; then
      echo "check-hygiene: $file:$line: \"Tested by\" names $path, which does not exist"
      status=1
    fi
  done
done <<<"$sentences"
[[ $status -eq 0 ]] && echo "check-hygiene: clean"
exit $status

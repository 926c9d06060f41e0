#!/usr/bin/env bash
# Repository hygiene, checked by CI (scripts/test.sh) before any build:
#   1. no build or cache artifacts are committed (object files, Python caches, node_modules,
#      CMake caches, anything under build/);
#   2. every test file a "Tested by ..." comment names exists (a comment that points nowhere
#      sends a reader to a test that was renamed or never written).
# Prints each offence on a line of its own and exits 1 if there is any.
# Usage: scripts/check-hygiene.sh
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
artifacts=$(git ls-files | grep -E '(^|/)__pycache__/|\.pyc$|\.o$|\.a$|\.so$|(^|/)node_modules/|(^|/)CMakeCache\.txt$|(^|/)\.ninja_|^build/' || true)
if [[ -n $artifacts ]]; then
  while IFS= read -r file; do echo "check-hygiene: committed build or cache artifact: $file"; done <<<"$artifacts"
  status=1
fi
# "Tested by" and the rest of its line; the test paths in it must exist (files or folders).
while IFS=: read -r file line text; do
  for path in $(grep -oE 'tests/[A-Za-z0-9_./-]*[A-Za-z0-9_]' <<<"$text"); do
    if [[ ! -e $path ]]; then
      echo "check-hygiene: $file:$line: \"Tested by\" names $path, which does not exist"
      status=1
    fi
  done
done < <(git grep -n -I -E 'Tested by' -- src tests tools scripts | sed -E 's/^([^:]+:[0-9]+:).*Tested by/\1/')
[[ $status -eq 0 ]] && echo "check-hygiene: clean"
exit $status

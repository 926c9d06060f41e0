#!/usr/bin/env bash
# Formatting, checked by CI (scripts/test.sh): every tracked C++ and CUDA file must be exactly
# what clang-format-16 makes of it under the root .clang-format. Prints each file that differs
# and exits 1 if there is any.
# Usage: scripts/check-format.sh          check
#        scripts/check-format.sh --fix    reformat those files in place
set -uo pipefail
cd "$(dirname "$0")/.."
format=${CLANG_FORMAT:-clang-format-16}
command -v "$format" >/dev/null 2>&1 || { echo "check-format: $format not found (scripts/install-deps.sh installs it)"; exit 1; }
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cc' '*.hpp' '*.cu' '*.cuh')
if [[ ${1:-} == --fix ]]; then
  "$format" -i "${files[@]}" || { echo "check-format: $format failed"; exit 1; }
  exit 0
fi
# One clang-format process for all files: it names each line that would change.
report=$("$format" --dry-run --Werror "${files[@]}" 2>&1)
rc=$?
[[ $rc -eq 0 && -z $report ]] && exit 0
[[ -z $report ]] && { echo "check-format: $format failed (exit $rc) and said nothing"; exit 1; }
grep -E "error:" <<<"$report" | cut -d: -f1 | sort -u | sed 's/^/check-format: not clang-formatted: /'
echo "check-format: run scripts/check-format.sh --fix; the first differences:"
head -n 12 <<<"$report"
exit 1

#!/usr/bin/env bash
# Runs one golden regression case: run_case.sh SIM ROOT NAME. Compares the fresh stats with
# tests/regression/golden/NAME.json through scripts/compare-stats --strict (an improvement
# fails too: the golden is updated on purpose, with scripts/update-golden).
set -euo pipefail
sim="$1" root="$2" name="$3"
args=$(awk -v n="$name" '$1 == n { $1 = ""; print }' "$root/tests/regression/cases.txt")
[ -n "$args" ] || { echo "no case $name in cases.txt" >&2; exit 2; }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
read -r -a words <<<"$args"
if [ "${words[0]}" = nki ]; then  # an NKI case: scripts/nki's arguments, from the source root
    (cd "$root" && BUILD_DIR="$(dirname "$sim")" TRNSIM_SKIP_BUILD=1 TRNSIM_NKI_QUIET=1 \
        scripts/nki --stats-out "$out" "${words[@]:1}" >/dev/null)
else
    "$sim" "${words[@]}" --quiet --stats-out "$out"
fi
# The frontend's programs must stay exactly the same (no tolerance); the drivers' cases allow
# 0.01% for the floating-point sums of their stats.
tol=0.01
[ "${words[0]}" != nki ] || tol=0
"$root/scripts/compare-stats" "$root/tests/regression/golden/$name.json" "$out" \
    --default-tol "$tol" --strict --quiet

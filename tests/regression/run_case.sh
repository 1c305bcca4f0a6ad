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
# shellcheck disable=SC2086
"$sim" $args --quiet --stats-out "$out"
"$root/scripts/compare-stats" "$root/tests/regression/golden/$name.json" "$out" \
    --default-tol 0.01 --strict --quiet

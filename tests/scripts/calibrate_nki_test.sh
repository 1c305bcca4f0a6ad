#!/usr/bin/env bash
# scripts/calibrate --nki: points run from the project's NKI kernels give the drivers' values
# exactly; a point with no NKI kernel yet is reported as not run, with the reason.
source "$(dirname "$0")/common.sh"
cal="$ROOT/scripts/calibrate"
grep -E '^(id|V4|W4|W7|W7d|C4b),' "$ROOT/calibration/hardware-points.csv" >"$TMP/p.csv"
"$cal" --points "$TMP/p.csv" >"$TMP/driver" 2>&1
expect_status 0 $? "the drivers' table"
"$cal" --nki --points "$TMP/p.csv" >"$TMP/nki" 2>&1
expect_status 1 $? "--nki with a point it cannot run exits 1"
for id in V4 W4 W7 W7d; do
    d="$(awk -v id=$id '$1 == id { print $(NF-1) }' "$TMP/driver")"
    n="$(awk -v id=$id '$1 == id { print $(NF-1) }' "$TMP/nki")"
    [ -n "$d" ] && [ "$d" = "$n" ] || fail "$id: NKI error '$n', driver error '$d'"
done
expect_grep "^C4b .*not run: calibration_point: no project NKI kernel for conv2d" "$TMP/nki" \
    "conv2d point not run"
finish

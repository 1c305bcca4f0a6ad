#!/usr/bin/env bash
# scripts/compare-stats: identical dumps pass, a change beyond tolerance is a regression (1),
# per-key tolerances apply, unreadable input is 2.
source "$(dirname "$0")/common.sh"
cs="$ROOT/scripts/compare-stats"
echo '{"total_time_ns": 1000, "dma": {"transfers": 3}, "run": {"kernel": "x"}}' >"$TMP/a.json"
echo '{"total_time_ns": 1100, "dma": {"transfers": 3}, "run": {"kernel": "y"}}' >"$TMP/b.json"
echo '{"total_time_ns": 1000}' >"$TMP/c.json"
"$cs" "$TMP/a.json" "$TMP/a.json" >"$TMP/out" 2>&1; expect_status 0 $? "identical"
"$cs" "$TMP/a.json" "$TMP/b.json" >"$TMP/out" 2>&1; expect_status 1 $? "10% slower"
expect_grep "total_time_ns: 1000 -> 1100 \(\+10.000%\)  REGRESSION" "$TMP/out" "10% slower"
"$cs" "$TMP/a.json" "$TMP/b.json" --tol total_time_ns=15 >"$TMP/out" 2>&1
expect_status 0 $? "per-key tolerance"
"$cs" "$TMP/a.json" "$TMP/b.json" --default-tol 20 >"$TMP/out" 2>&1
expect_status 0 $? "default tolerance"
"$cs" "$TMP/a.json" "$TMP/c.json" >"$TMP/out" 2>&1; expect_status 1 $? "missing key"
expect_grep "dma.transfers: only in old" "$TMP/out" "missing key"
echo '{ not json' >"$TMP/bad.json"
"$cs" "$TMP/a.json" "$TMP/bad.json" >"$TMP/out" 2>&1; expect_status 2 $? "bad json"
expect_grep "bad.json" "$TMP/out" "bad json names the file"
"$cs" "$TMP/a.json" "$TMP/nope.json" >"$TMP/out" 2>&1; expect_status 2 $? "missing file"
"$cs" "$TMP/a.json" "$TMP/b.json" --tol oops >"$TMP/out" 2>&1; expect_status 2 $? "bad --tol"
finish

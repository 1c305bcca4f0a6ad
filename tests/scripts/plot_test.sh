#!/usr/bin/env bash
# scripts/plot: a PNG from a results.csv, one line per --by value; unknown columns are exit 2.
source "$(dirname "$0")/common.sh"
cat >"$TMP/results.csv" <<CSV
point,set.core.hbm.bandwidth,param.variant,total_time_us
a,100GB/s,x,50
b,200GB/s,x,30
c,100GB/s,y,60
d,200GB/s,y,35
CSV
"$ROOT/scripts/plot" "$TMP/results.csv" --x set.core.hbm.bandwidth --y total_time_us \
    --by param.variant --out "$TMP/p.png" >"$TMP/log" 2>&1
expect_status 0 $? "plot"
[ "$(head -c 4 "$TMP/p.png" | od -An -tx1 | tr -d ' ')" = "89504e47" ] || fail "not a PNG"
[ "$(stat -c %s "$TMP/p.png")" -gt 2000 ] || fail "PNG suspiciously small"
"$ROOT/scripts/plot" "$TMP/results.csv" --x nope --y total_time_us >"$TMP/log" 2>&1
expect_status 2 $? "unknown column"
expect_grep "no column 'nope'" "$TMP/log" "unknown column named"
finish

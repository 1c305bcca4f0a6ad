#!/usr/bin/env bash
# scripts/plot: a PNG from a results.csv, one line per --by value (and per unlisted varying
# input); units normalised per column; unknown columns and mixed kinds of unit are exit 2.
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
# Units: 0.8TB/s is 800 GB/s, beside 400GB/s; the axis names the unit.
cat >"$TMP/units.csv" <<CSV
point,config,set.core.hbm.bandwidth,total_time_us
a,trn1,400GB/s,50
b,trn1,0.8TB/s,30
c,trn2,400GB/s,40
d,trn2,0.8TB/s,20
CSV
"$ROOT/scripts/plot" "$TMP/units.csv" --x set.core.hbm.bandwidth --y total_time_us --print \
    --out "$TMP/u.png" >"$TMP/log" 2>"$TMP/err"
expect_status 0 $? "plot with units"
expect_grep "^config=trn1	400	50$" "$TMP/log" "400GB/s at 400"
expect_grep "^config=trn1	800	30$" "$TMP/log" "0.8TB/s at 800"
# config varies but is not in --by: it splits the lines rather than joining trn1 and trn2.
expect_grep "^config=trn2	800	20$" "$TMP/log" "a line per config"
expect_grep "also one line per config" "$TMP/err" "said on stderr"
printf 'point,set.x,total_time_us\na,1us,5\nb,2GB/s,6\n' >"$TMP/mixed.csv"
"$ROOT/scripts/plot" "$TMP/mixed.csv" --x set.x --y total_time_us --out "$TMP/m.png" \
    >"$TMP/log" 2>&1
expect_status 2 $? "mixed kinds of unit"
expect_grep "column 'set.x' mixes kinds of value" "$TMP/log" "mixed kinds named"
"$ROOT/scripts/plot" "$TMP/results.csv" --x nope --y total_time_us >"$TMP/log" 2>&1
expect_status 2 $? "unknown column"
expect_grep "no column 'nope'" "$TMP/log" "unknown column named"
finish

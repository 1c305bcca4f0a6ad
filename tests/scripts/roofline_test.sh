#!/usr/bin/env bash
# scripts/roofline: a kernel's arithmetic intensity and achieved rate against the roofs of its
# configuration (taken from the stats dump), a table and a PNG; a kernel without matmuls is
# listed, not drawn; a dump without a configuration is exit 2.
source "$(dirname "$0")/common.sh"
sim="$BUILD_DIR/sim"
"$sim" --config trn1 --workload ffnn --param matmul=fully_optimized --param n=2048 \
    --param d=1024 --param h=1024 --param c=1024 --quiet --stats-out "$TMP/opt.json"
"$sim" --config trn1 --workload vector_add --param variant=stream --quiet --stats-out "$TMP/va.json"
"$ROOT/scripts/roofline" "$TMP/opt.json" "$TMP/va.json" --out "$TMP/r.png" >"$TMP/out" 2>&1
expect_status 0 $? "roofline"
expect_grep "roofs \(trn1\): Tensor engine 91750 GFLOP/s bf16 \(22938 fp32\); HBM 410 GB/s" \
    "$TMP/out" "the roofs of trn1"
expect_grep "no matmuls: not drawn" "$TMP/out" "vector_add listed, not drawn"
[ "$(head -c 4 "$TMP/r.png" | od -An -tx1 | tr -d ' ')" = "89504e47" ] || fail "not a PNG"
# The achieved rate is FLOPs over time, and no kernel beats its roof.
python3 - "$TMP/opt.json" "$TMP/out" <<'PY' || fail "achieved rate or roof share wrong"
import json, re, sys
s = json.load(open(sys.argv[1]))
rate = s["engines"]["pe"]["flops"] / s["total_time_ns"]
line = [l for l in open(sys.argv[2]) if l.startswith("ffnn")][0].split()
got, share = float(line[-4]), float(line[-2].rstrip("%"))
assert abs(got - rate) < 0.1, (got, rate)
assert 0 < share <= 100, share
PY
# Two configurations: each one's roofs, the kernels labelled by configuration, a title naming
# both; two of one name with different roofs are told apart by the roof that differs.
"$sim" --config trn2 --workload ffnn --param matmul=fully_optimized --param n=2048 \
    --param d=1024 --param h=1024 --param c=1024 --quiet --stats-out "$TMP/opt2.json"
"$sim" --config trn2 --workload ffnn --param matmul=fully_optimized --param n=2048 \
    --param d=1024 --param h=1024 --param c=1024 --set core.hbm.bandwidth=300GB/s --quiet \
    --stats-out "$TMP/opt3.json"
TRN_ROOFLINE_SCRIPT="$TMP/gp.txt" "$ROOT/scripts/roofline" "$TMP/opt.json" "$TMP/opt2.json" \
    "$TMP/opt3.json" --out "$TMP/r2.png" >"$TMP/out" 2>&1
expect_status 0 $? "roofline of three configurations"
expect_grep "^roofs \(trn1\): .*HBM 410 GB/s" "$TMP/out" "trn1's roofs"
expect_grep "^roofs \(trn2, HBM 750 GB/s\): Tensor engine 78643 GFLOP/s" "$TMP/out" "trn2's roofs"
expect_grep "^roofs \(trn2, HBM 300 GB/s\): " "$TMP/out" "the --set variant's roofs"
expect_grep "^ffnn .*\[trn2, HBM 300 GB/s\]$" "$TMP/out" "a kernel labelled by configuration"
expect_grep "set title 'roofline: trn1; trn2, HBM 750 GB/s; trn2, HBM 300 GB/s'" "$TMP/gp.txt" \
    "the title names every configuration"
[ "$(grep -o "title '[^']*: HBM [0-9]* GB/s'" "$TMP/gp.txt" | wc -l)" -eq 3 ] ||
    fail "each configuration's HBM roof is drawn"
# Two of one name and the same roofs that differ in another key (a --set of a latency): told
# apart by that key, not given one label.
"$sim" --config trn2 --workload ffnn --param matmul=fully_optimized --param n=2048 \
    --param d=1024 --param h=1024 --param c=1024 --set core.dma.fixed_latency=500ns --quiet \
    --stats-out "$TMP/opt4.json"
"$ROOT/scripts/roofline" "$TMP/opt2.json" "$TMP/opt4.json" --out "$TMP/r3.png" >"$TMP/out3" 2>&1
expect_status 0 $? "roofline of two settings of one configuration"
expect_grep "^roofs \(trn2, core.dma.fixed_latency=500ns\): " "$TMP/out3" "the --set run"
expect_grep "^roofs \(trn2, core.dma.fixed_latency=[0-9.]+us\): " "$TMP/out3" \
    "the other run, by its value of that key"
[ "$(grep -c '^roofs (' "$TMP/out3")" -eq 2 ] || fail "two configurations, two labels"
echo '{"total_time_ns": 5}' >"$TMP/old.json"
"$ROOT/scripts/roofline" "$TMP/old.json" --out "$TMP/x.png" >"$TMP/out2" 2>&1
expect_status 2 $? "a dump without a configuration"
expect_grep "no 'config.core.hbm.bandwidth'" "$TMP/out2" "what is missing is named"
finish

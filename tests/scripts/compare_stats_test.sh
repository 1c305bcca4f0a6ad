#!/usr/bin/env bash
# scripts/compare-stats: identical dumps pass; a change beyond tolerance is judged by the key's
# direction (slower: REGRESSION, exit 1; faster: IMPROVEMENT, exit 0 unless --strict; a count:
# CHANGED, exit 1); per-key tolerances apply; NaN in the new dump fails; different kernels or
# configs warn; a fleet CSV reads; unreadable input is 2.
source "$(dirname "$0")/common.sh"
cs="$ROOT/scripts/compare-stats"
echo '{"total_time_ns": 1000, "dma": {"transfers": 3, "bandwidth_gbps": 10}, "run": {"kernel": "x"}}' >"$TMP/a.json"
echo '{"total_time_ns": 1100, "dma": {"transfers": 3, "bandwidth_gbps": 10}, "run": {"kernel": "y"}}' >"$TMP/b.json"
echo '{"total_time_ns": 900, "dma": {"transfers": 3, "bandwidth_gbps": 12}, "run": {"kernel": "x"}}' >"$TMP/faster.json"
echo '{"total_time_ns": 1000, "dma": {"transfers": 4, "bandwidth_gbps": 10}, "run": {"kernel": "x"}}' >"$TMP/more.json"
echo '{"total_time_ns": NaN, "dma": {"transfers": 3, "bandwidth_gbps": 10}, "run": {"kernel": "x"}}' >"$TMP/nan.json"
echo '{"total_time_ns": 1000}' >"$TMP/c.json"
"$cs" "$TMP/a.json" "$TMP/a.json" >"$TMP/out" 2>&1; expect_status 0 $? "identical"
"$cs" "$TMP/a.json" "$TMP/b.json" >"$TMP/out" 2>&1; expect_status 1 $? "10% slower"
expect_grep "total_time_ns: 1000 -> 1100 \(\+10.000%\)  REGRESSION" "$TMP/out" "10% slower"
expect_grep "warning: run.kernel differs: 'x' vs 'y'" "$TMP/out" "different kernels warn"
"$cs" "$TMP/a.json" "$TMP/faster.json" >"$TMP/out" 2>&1; expect_status 0 $? "faster passes"
expect_grep "total_time_ns: 1000 -> 900 \(-10.000%\)  IMPROVEMENT" "$TMP/out" "faster"
expect_grep "dma.bandwidth_gbps: 10 -> 12 \(\+20.000%\)  IMPROVEMENT" "$TMP/out" "more bandwidth"
grep -q "warning" "$TMP/out" && fail "same kernel: no warning"
"$cs" "$TMP/a.json" "$TMP/faster.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict fails on an improvement"
"$cs" "$TMP/faster.json" "$TMP/a.json" >"$TMP/out" 2>&1; expect_status 1 $? "less bandwidth"
expect_grep "dma.bandwidth_gbps: 12 -> 10 \(-16.667%\)  REGRESSION" "$TMP/out" "less bandwidth"
"$cs" "$TMP/a.json" "$TMP/more.json" >"$TMP/out" 2>&1; expect_status 1 $? "a count changed"
expect_grep "dma.transfers: 3 -> 4 \(\+33.333%\)  CHANGED" "$TMP/out" "a count changed"
"$cs" "$TMP/a.json" "$TMP/nan.json" >"$TMP/out" 2>&1; expect_status 1 $? "NaN in new"
expect_grep "total_time_ns: 1000 -> nan  ERROR" "$TMP/out" "NaN in new"
"$cs" "$TMP/a.json" "$TMP/b.json" --tol total_time_ns=15 >"$TMP/out" 2>&1
expect_status 0 $? "per-key tolerance"
"$cs" "$TMP/a.json" "$TMP/b.json" --default-tol 20 >"$TMP/out" 2>&1
expect_status 0 $? "default tolerance"
"$cs" "$TMP/a.json" "$TMP/c.json" >"$TMP/out" 2>&1; expect_status 1 $? "missing key"
expect_grep "dma.transfers: only in old  ERROR" "$TMP/out" "missing key"
# Fleet CSVs, as sim writes them.
printf 'case,latency_us,mfu_pct,dma_bytes\nc1,100,50,4096\nc2,200,25,8192\n' >"$TMP/f1.csv"
printf 'case,latency_us,mfu_pct,dma_bytes\nc1,100,50,4096\nc2,220,22.7,8192\n' >"$TMP/f2.csv"
"$cs" "$TMP/f1.csv" "$TMP/f2.csv" >"$TMP/out" 2>&1; expect_status 1 $? "fleet CSV slower"
expect_grep "c2.latency_us: 200 -> 220 \(\+10.000%\)  REGRESSION" "$TMP/out" "fleet CSV"
"$cs" "$TMP/f1.csv" "$TMP/f1.csv" >"$TMP/out" 2>&1; expect_status 0 $? "fleet CSV identical"
printf 'case,latency_us\nc1,fast\n' >"$TMP/f3.csv"
"$cs" "$TMP/f1.csv" "$TMP/f3.csv" >"$TMP/out" 2>&1; expect_status 2 $? "bad CSV"
expect_grep "f3.csv:2: column 'latency_us' is not a number" "$TMP/out" "bad CSV names the line"
echo '{ not json' >"$TMP/bad.json"
"$cs" "$TMP/a.json" "$TMP/bad.json" >"$TMP/out" 2>&1; expect_status 2 $? "bad json"
expect_grep "bad.json" "$TMP/out" "bad json names the file"
"$cs" "$TMP/a.json" "$TMP/nope.json" >"$TMP/out" 2>&1; expect_status 2 $? "missing file"
"$cs" "$TMP/a.json" "$TMP/b.json" --tol oops >"$TMP/out" 2>&1; expect_status 2 $? "bad --tol"
# A real run against itself, and two real runs of different kernels.
sim="$BUILD_DIR/sim"
"$sim" --config trn1 --workload vector_add --quiet --stats-out "$TMP/r1.json"
"$sim" --config trn1 --workload vector_add --param variant=stream --quiet --stats-out "$TMP/r2.json"
"$cs" "$TMP/r1.json" "$TMP/r1.json" >"$TMP/out" 2>&1; expect_status 0 $? "a run against itself"
"$cs" "$TMP/r1.json" "$TMP/r2.json" >"$TMP/out" 2>&1
expect_grep "warning: run.kernel differs" "$TMP/out" "two kernels"
"$sim" --config trn1 --workload vector_add --set core.hbm.bandwidth=800GB/s --quiet \
    --stats-out "$TMP/r3.json"
"$cs" "$TMP/r1.json" "$TMP/r3.json" >"$TMP/out" 2>&1
expect_grep "warning: the configurations differ in 1 key\(s\): config.core.hbm.bandwidth" \
    "$TMP/out" "two configurations"
finish

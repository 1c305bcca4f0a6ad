#!/usr/bin/env bash
# scripts/sweep --backend slurm on a real single-node Slurm (scripts/slurm-local): the same
# points and results as the local backend.
source "$(dirname "$0")/common.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "needs root to start Slurm daemons"
    echo "0 passed, 1 failed"
    exit 1
fi
"$ROOT/scripts/slurm-local" start >"$TMP/start.log" 2>&1
expect_status 0 $? "slurm-local start"
[ "$failures" -eq 0 ] || { cat "$TMP/start.log"; finish; }
cat >"$TMP/spec.yaml" <<SPEC
name: s
configs: [trn1, trn2]
workloads:
  - name: matmul
    params: {m: 256, k: 256, n: 512}
set:
  core.hbm.bandwidth: [100GB/s, 400GB/s]
SPEC
"$ROOT/scripts/sweep" "$TMP/spec.yaml" --out "$TMP/slurm" --backend slurm >"$TMP/log" 2>&1
expect_status 0 $? "slurm sweep"
expect_grep "4 of 4 points" "$TMP/log" "all points through Slurm"
ls "$TMP"/slurm/slurm/*.out >/dev/null 2>&1 || fail "no Slurm task logs: did sbatch run the array?"
"$ROOT/scripts/sweep" "$TMP/spec.yaml" --out "$TMP/local" >"$TMP/log2" 2>&1
expect_status 0 $? "local sweep"
cmp -s "$TMP/slurm/results.csv" "$TMP/local/results.csv" || fail "Slurm and local results differ"
finish

#!/usr/bin/env bash
# scripts/sweep, local backend: the cartesian product, a failing point reported and the others
# kept, resuming without redoing finished points, traces and NKI scripts as workloads, and bad
# specs rejected with exit 2.
source "$(dirname "$0")/common.sh"
sweep="$ROOT/scripts/sweep"
cat >"$TMP/spec.yaml" <<SPEC
name: t
configs: [trn1]
workloads:
  - name: vector_add
    params: {variant: stream, n: 25600}
    vary: {free_dim: [20, 200]}
set:
  core.dma.engines: [4, 16, 999]
  core.hbm.bandwidth: {from: 200, to: 400, step: 200, unit: GB/s}
SPEC
"$sweep" "$TMP/spec.yaml" --out "$TMP/out" >"$TMP/log" 2>&1
expect_status 1 $? "a failing point makes the sweep exit 1"
expect_grep "12 points, 0 already done, running 12" "$TMP/log" "point count"
expect_grep "8 of 12 points" "$TMP/log" "finished points"
expect_grep "failed: sim: error: config key 'core.dma.engines'" "$TMP/log" "why a point failed"
[ "$(wc -l <"$TMP/out/results.csv")" -eq 9 ] || fail "results.csv: header + 8 rows expected"
expect_grep "^point,config,workload,param.free_dim,set.core.dma.engines,set.core.hbm.bandwidth,total_time_us" \
    "$TMP/out/results.csv" "results.csv header"
# Fewer DMA engines never make a kernel faster.
python3 - "$TMP/out/results.csv" <<'PY' || fail "4 engines faster than 16"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {(r["param.free_dim"], r["set.core.hbm.bandwidth"], r["set.core.dma.engines"]):
     float(r["total_time_us"]) for r in rows}
assert all(t[(f, b, "4")] >= t[(f, b, "16")] for f in ("20", "200") for b in ("200GB/s", "400GB/s"))
PY
# Resume: finished points are not run again; a removed result is.
stamp="$(stat -c %Y "$TMP"/out/points/00000-*.json)"
rm "$TMP"/out/points/00001-*.json
sleep 1
"$sweep" "$TMP/spec.yaml" --out "$TMP/out" >"$TMP/log2" 2>&1
expect_grep "12 points, 7 already done, running 5" "$TMP/log2" "resume"
[ "$(stat -c %Y "$TMP"/out/points/00000-*.json)" = "$stamp" ] || fail "a finished point ran again"
ls "$TMP"/out/points/00001-*.json >/dev/null 2>&1 || fail "the removed point was not rerun"
# A truncated point file is not a finished point: it is kept aside and the point runs again.
truncated="$(ls "$TMP"/out/points/00002-*.json)"
head -c 100 "$truncated" >"$truncated.cut" && mv "$truncated.cut" "$truncated"
"$sweep" "$TMP/spec.yaml" --out "$TMP/out" >"$TMP/log6" 2>&1
expect_grep "is not a valid stats dump \(truncated\?\)" "$TMP/log6" "truncated point noticed"
expect_grep "12 points, 7 already done, running 5" "$TMP/log6" "truncated point rerun"
python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$truncated" ||
    fail "the truncated point was not rewritten"
grep -q Traceback "$TMP/log6" && fail "a Python traceback"
# A sim killed by a signal is reported as such, not as "did not run".
mkdir -p "$TMP/fakebuild"
cat >"$TMP/fakebuild/sim" <<'FAKE'
#!/usr/bin/env bash
kill -9 $$
FAKE
chmod +x "$TMP/fakebuild/sim"
TRNSIM_SKIP_BUILD=1 BUILD_DIR="$TMP/fakebuild" "$sweep" "$TMP/spec.yaml" --out "$TMP/killed" \
    >"$TMP/log7" 2>&1
expect_status 1 $? "killed points make the sweep exit 1"
expect_grep "failed: sim was killed by signal 9 \(KILL\)" "$TMP/log7" "killed point reported"
# Traces and NKI scripts are workloads too: the same kernel three ways gives the same times.
mkdir -p "$TMP/k"
"$BUILD_DIR/sim" --config trn1 --workload vector_add --param variant=stream --param n=25600 \
    --param free_dim=200 --quiet --dump-trace "$TMP/k/va.trace"
cat >"$TMP/k/spec.yaml" <<SPEC
name: three-ways
configs: [trn1]
workloads:
  - name: vector_add
    params: {variant: stream, n: 25600, free_dim: 200}
  - trace: va.trace
  - nki: $ROOT/workloads/nki/calibration_point.py
    args: [vector_add, variant=stream, n=25600, free_dim=200]
  - nki: $ROOT/workloads/nki/calibration_point.py
    args: [conv2d, variant=optimized, in=8, out=8, h=8, w=8]
set:
  core.dma.engines: [8, 16]
SPEC
"$sweep" "$TMP/k/spec.yaml" --out "$TMP/k/out" >"$TMP/log8" 2>&1
expect_status 1 $? "a script with no kernel for its arguments fails its points"
expect_grep "6 of 8 points" "$TMP/log8" "trace and NKI points"
expect_grep "calibration_point: the project NKI conv2d is the row kernel" "$TMP/log8" \
    "the NKI script's error is the point's"
python3 - "$TMP/k/out/results.csv" <<'PY' || fail "driver, trace and NKI times differ"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["set.core.dma.engines"], {})[r["workload"]] = float(r["total_time_us"])
for engines, t in by.items():
    assert set(t) == {"vector_add", "trace:va.trace", "nki:calibration_point.py"}, t
    assert len(set(t.values())) == 1, (engines, t)
assert by["8"]["vector_add"] > by["16"]["vector_add"]
assert all(r["critical_path.bound"] for r in rows)
# What the summary says limits each run, with the HBM's reason where HBM limits.
assert all(r["limit.by"] and float(r["limit.saving_pct"]) > 0 for r in rows), rows
assert not any(r["limit.by"] == "hbm" for r in rows), "hbm without activations/bandwidth"
PY
# Bad specs: each exits 2 and its message matches.
bad_spec() {  # bad_spec NAME SPEC_TEXT PATTERN
    printf '%b' "$2" >"$TMP/$1.yaml"
    "$sweep" "$TMP/$1.yaml" --out "$TMP/o-$1" >"$TMP/log-$1" 2>&1
    expect_status 2 $? "bad spec $1"
    expect_grep "$3" "$TMP/log-$1" "bad spec $1 says why"
}
bad_spec unknown-key 'name: x\nconfigs: [trn1]\nworkloads: [{name: vector_add}]\ncolour: red\n' \
    "colour"
bad_spec malformed 'configs: [trn1\nworkloads: x\n' "malformed.yaml:[0-9]+: malformed YAML"
bad_spec zip-lengths 'configs: [trn1]\nworkloads: [{name: vector_add}]\nzip: [{core.pe.rows: [1, 2], core.pe.cols: [1]}]\n' \
    "same length"
bad_spec no-trace 'configs: [trn1]\nworkloads: [{trace: nowhere.trace}]\n' \
    "trace file .*nowhere.trace not found"
bad_spec two-kinds 'configs: [trn1]\nworkloads: [{name: vector_add, trace: x}]\n' \
    "exactly one of name"
finish

#!/usr/bin/env bash
# scripts/calibrate --nki: points run from the project's NKI kernels give the drivers' values
# exactly; a point with no NKI kernel is reported as not run, with the reason.
source "$(dirname "$0")/common.sh"
cal="$ROOT/scripts/calibrate"
grep -E '^(id|V4|W4|W7|W7d|C4b),' "$ROOT/calibration/hardware-points.csv" >"$TMP/p.csv"
"$cal" --points "$TMP/p.csv" >"$TMP/driver" 2>&1
expect_status 0 $? "the drivers' table"
"$cal" --nki --points "$TMP/p.csv" >"$TMP/nki" 2>&1
expect_status 0 $? "--nki runs every point"
for id in V4 W4 W7 W7d C4b; do
    d="$(awk -v id=$id '$1 == id { print $(NF-1) }' "$TMP/driver")"
    n="$(awk -v id=$id '$1 == id { print $(NF-1) }' "$TMP/nki")"
    [ -n "$d" ] && [ "$d" = "$n" ] || fail "$id: NKI error '$n', driver error '$d'"
done
# --why: what limits each point in the model, from its critical path.
"$cal" --why --points "$TMP/p.csv" >"$TMP/why" 2>&1
expect_status 0 $? "--why"
expect_grep "bound by \(model\)" "$TMP/why" "--why column"
expect_grep "^C4b .*pe: up to [0-9]+%$" "$TMP/why" "C4b's bound: the Tensor engine"
head -1 "$ROOT/calibration/hardware-points.csv" >"$TMP/q.csv"
echo 'X1,trn2,conv2d,variant=optimized batch=1 in=128 out=128 filter=3 h=16 w=16,latency_us,10,a made-up point,' >>"$TMP/q.csv"
"$cal" --nki --points "$TMP/q.csv" >"$TMP/nki2" 2>&1
expect_status 1 $? "--nki with a point it cannot run exits 1"
expect_grep "^X1 .*not run: calibration_point: the project NKI conv2d is the row kernel" \
    "$TMP/nki2" "a conv2d variant without an NKI kernel is not run"
# A point may be an NKI script (nki:SCRIPT, params its arguments): run through scripts/nki, the
# same with --nki; a missing script is bad input naming the line.
"$ROOT/scripts/nki" --config trn2 --stats-out "$TMP/beta2.json" \
    "$ROOT/workloads/nki/examples/beta2_kernel.py" >/dev/null 2>&1 || fail "beta2 example"
us="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['total_time_ns'] / 1e3)" \
    "$TMP/beta2.json")"
head -1 "$ROOT/calibration/hardware-points.csv" >"$TMP/s.csv"
echo "S1,trn2,nki:workloads/nki/examples/beta2_kernel.py,,latency_us,$us,the model's own value," \
    >>"$TMP/s.csv"
for mode in "" --nki; do
    "$cal" $mode --points "$TMP/s.csv" >"$TMP/script" 2>&1
    expect_status 0 $? "an nki: point $mode"
    expect_grep "^S1 +trn2 +nki:workloads/nki/examples/beta2_kernel.py .* (exact|[+-]0\.0%)$" \
        "$TMP/script" "the script's latency $mode"
done
# A fit runs an NKI point's script once and replays its recordings (scripts/nki --replay):
# the same statistics as the script under other timing values; a value the frontend reads
# (its limits) is not replayed (exit status 3).
nki="$ROOT/scripts/nki"
example="$ROOT/workloads/nki/examples/beta2_kernel.py"
"$nki" --config trn2 --builds-out "$TMP/builds.json" --stats-out "$TMP/b0.json" "$example" \
    >/dev/null 2>&1 || fail "--builds-out"
slow="--set core.dma.fixed_latency=2us --set core.dve.reciprocal_cycles=6"
"$nki" --config trn2 $slow --stats-out "$TMP/b1.json" "$example" >/dev/null 2>&1 ||
    fail "the script under other timing values"
"$nki" --config trn2 $slow --stats-out "$TMP/r1.json" --replay "$TMP/builds.json" \
    >"$TMP/replay.out" 2>&1
expect_status 0 $? "--replay"
cmp -s "$TMP/b1.json" "$TMP/r1.json" || fail "the replay's statistics differ from the script's"
cmp -s "$TMP/b0.json" "$TMP/b1.json" && fail "the timing values moved nothing: no check"
"$nki" --config trn2 --set compiler.hoist_sbuf_share=0.1 --stats-out "$TMP/r2.json" \
    --replay "$TMP/builds.json" >"$TMP/replay.out" 2>&1
expect_status 3 $? "--replay under other limits"
expect_grep "not replayed: the frontend reads other" "$TMP/replay.out" "says why"
"$nki" --config trn2 --replay "$TMP/builds.json" "$example" >"$TMP/replay.out" 2>&1
expect_status 2 $? "--replay with a script"
# A launch's compiler flags yield to the keys --set gives, and read the environment: a replay
# with other such keys or another environment is not one (the script's flags would differ).
NEURON_CC_FLAGS=--disable-dge "$nki" --config trn2 --builds-out "$TMP/dge.json" "$example" \
    >/dev/null 2>&1 || fail "a script with compiler flags"
NEURON_CC_FLAGS=--disable-dge "$nki" --config trn2 --replay "$TMP/dge.json" >/dev/null 2>&1
expect_status 0 $? "--replay under the same flags"
NEURON_CC_FLAGS=--disable-dge "$nki" --config trn2 --set core.dma.hardware_dge=true \
    --replay "$TMP/dge.json" >"$TMP/replay.out" 2>&1
expect_status 3 $? "--replay with a --set key that overrides a flag"
expect_grep "not replayed: launched otherwise" "$TMP/replay.out" "says why"
"$nki" --config trn2 --replay "$TMP/dge.json" >/dev/null 2>&1
expect_status 3 $? "--replay without the flags' environment"
"$nki" --config no_such_config --replay "$TMP/dge.json" >"$TMP/replay.out" 2>&1
expect_status 2 $? "--replay with a bad config"
# A script that configures trnsim itself (its own sets) is not replayed.
{ echo "import trnsim.nki; trnsim.nki.configure(sets=['core.dma.fixed_latency=2us'])"
  cat "$example"; } >"$TMP/configured.py"
"$nki" --config trn2 --builds-out "$TMP/conf.json" "$TMP/configured.py" >/dev/null 2>&1 ||
    fail "a script calling configure()"
"$nki" --config trn2 --replay "$TMP/conf.json" >"$TMP/replay.out" 2>&1
expect_status 3 $? "--replay of a script that configured trnsim"
expect_grep "configured trnsim itself" "$TMP/replay.out" "says why"
# (nki.simulate's launches too: the statistics --stats-out gets)
simulated="$ROOT/workloads/nki/examples/gather_columns.py"
"$nki" --config trn2 --builds-out "$TMP/sim.json" --stats-out "$TMP/s0.json" "$simulated" \
    >/dev/null 2>&1 || fail "an nki.simulate script"
"$nki" --config trn2 --stats-out "$TMP/s1.json" --replay "$TMP/sim.json" >/dev/null 2>&1
expect_status 0 $? "--replay of an nki.simulate launch"
cmp -s "$TMP/s0.json" "$TMP/s1.json" || fail "an nki.simulate launch's replay differs"
for how in "" --no-replay; do
    "$cal" --fit --max-evals 3 $how --points "$TMP/s.csv" >"$TMP/fit$how" 2>"$TMP/fit$how.err"
    expect_status 0 $? "a fit of an nki: point $how"
done
expect_grep "[0-9]+ sim runs \([1-9][0-9]* NKI replays, 0 not replayed\)" "$TMP/fit.err" \
    "the fit replays"
expect_grep "[0-9]+ sim runs \(0 NKI replays, 0 not replayed\)" "$TMP/fit--no-replay.err" \
    "--no-replay"
diff <(grep -v "model evaluations" "$TMP/fit") <(grep -v "model evaluations" "$TMP/fit--no-replay") \
    >/dev/null || fail "a fit's table differs with --no-replay"
diff <(grep -v "sim runs" "$TMP/fit.err") <(grep -v "sim runs" "$TMP/fit--no-replay.err") \
    >/dev/null || fail "a fit's evaluations differ with --no-replay"
sed -i 's/beta2_kernel.py/no_such_kernel.py/' "$TMP/s.csv"
"$cal" --points "$TMP/s.csv" >"$TMP/script" 2>&1
expect_status 2 $? "a missing NKI script"
expect_grep "s\.csv:2: no NKI script .*no_such_kernel\.py" "$TMP/script" "names file and line"
# A script that runs but benchmarks nothing: the point is not run, with the reason.
printf 'print("no benchmark")\n' >"$TMP/nobench.py"
printf 'id,platform,workload,params,metric,value\nN1,trn1,nki:%s,,latency_us,10\n' \
    "$TMP/nobench.py" >"$TMP/n.csv"
"$cal" --points "$TMP/n.csv" >"$TMP/nobench" 2>&1
expect_status 1 $? "a script without nki.benchmark"
expect_grep "^N1 .*not run: the script wrote no statistics" "$TMP/nobench" "says why"
finish

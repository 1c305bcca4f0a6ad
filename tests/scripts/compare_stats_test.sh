#!/usr/bin/env bash
# scripts/compare-stats: identical dumps pass; a change beyond tolerance is judged by the key's
# direction (slower: REGRESSION, exit 1; faster: IMPROVEMENT, exit 0 unless --strict; a count:
# CHANGED, exit 1; a share: SHIFTED); per-key tolerances apply, 1% by default; breakdowns are
# counted, not printed; keys of one dump only are listed; NaN in the new dump fails; different
# kernels or configs warn once; a fleet CSV reads; unreadable input is 2.
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
expect_grep "warning: the dumps are of different things \(run.kernel differs: 'x' vs 'y'\)" \
    "$TMP/out" "different kernels warn"
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
"$cs" "$TMP/a.json" "$TMP/c.json" >"$TMP/out" 2>&1; expect_status 0 $? "keys in one dump only"
expect_grep "^only in old \(2 key\(s\)\): dma.bandwidth_gbps, dma.transfers$" \
    "$TMP/out" "keys in one dump only are listed, not errors"
"$cs" "$TMP/a.json" "$TMP/c.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict: keys in one dump only fail"
# --strict as the goldens use it: where config values came from is never compared; a new kind
# of statistic or config key passes (listed); one more instance of a breakdown the old dump
# holds (a queue, an opcode, a source line), a text of the old dump changed (a config value,
# what bounds the kernel) or a key the new dump lacks fails.
cat >"$TMP/g.json" <<'JSON'
{"total_time_ns": 1000, "dma": {"queues": {"q0": {"bytes": 64}}},
 "engines": {"act": {"opcodes": {"activation": {"count": 2}}}},
 "lines": {"k_py_3": {"place": "k.py:3", "busy_ns": 5}}, "limit": {"by": "pe"},
 "config": {"core": {"pe": {"rows": "128"}}},
 "config_origin": {"core": {"pe": {"rows": "/home/me/configs/trn2.yaml:18"}}}}
JSON
strict_variant() {  # strict_variant NAME PYTHON-EXPR-ON-d: g.json changed by the expression
    python3 -c "import json,sys; d=json.load(open('$TMP/g.json')); $2; json.dump(d, open('$TMP/$1.json','w'))"
}
strict_variant origin "d['config_origin']['core']['pe']['rows'] = 'trn2.yaml:18'"
strict_variant newkey "d['config']['core']['pe']['dummy'] = '0'; d['config_origin']['core']['pe']['dummy'] = 'default'; d['dma']['new_stat_ns'] = 7"
strict_variant newqueue "d['dma']['queues']['q1'] = {'bytes': 0}"
strict_variant newop "d['engines']['act']['opcodes']['exp'] = {'count': 0}"
strict_variant newline "d['lines']['k_py_4'] = {'place': 'k.py:4', 'busy_ns': 0}"
strict_variant cfgtext "d['config']['core']['pe']['rows'] = '256'"
strict_variant bound "d['limit']['by'] = 'dve'"
strict_variant lost "del d['dma']['queues']"
"$cs" "$TMP/g.json" "$TMP/origin.json" --strict >"$TMP/out" 2>&1
expect_status 0 $? "--strict: config_origin is not compared"
"$cs" "$TMP/g.json" "$TMP/newkey.json" --strict >"$TMP/out" 2>&1
expect_status 0 $? "--strict: a new config key and a new stat pass"
expect_grep "^new in NEW, not in OLD \(2 key\(s\), not judged\): config.core.pe.dummy, dma.new_stat_ns$" \
    "$TMP/out" "new kinds are listed"
for v in newqueue newop newline; do
    "$cs" "$TMP/g.json" "$TMP/$v.json" --strict >"$TMP/out" 2>&1
    expect_status 1 $? "--strict: $v (one more instance of a breakdown) fails"
    expect_grep "^only in new \(" "$TMP/out" "$v listed"
done
"$cs" "$TMP/g.json" "$TMP/newqueue.json" >"$TMP/out" 2>&1
expect_status 0 $? "without --strict a new queue is listed, not judged"
"$cs" "$TMP/g.json" "$TMP/cfgtext.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict: a config value changed fails"
expect_grep "config.core.pe.rows: '128' -> '256'  CHANGED" "$TMP/out" "the config value"
"$cs" "$TMP/g.json" "$TMP/bound.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict: what bounds the kernel changed fails"
expect_grep "^limit.by: pe -> dve$" "$TMP/out" "the bound"
"$cs" "$TMP/g.json" "$TMP/lost.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict: a key the new dump lacks fails"
# What each stat measures: a drop of the HBM time set by activations is good, a change of an
# engine's utilisation or of the critical path's split is a shift, not good or bad; the default
# tolerance (1%) keeps small changes out and counts them; a breakdown (per channel) is counted.
cat >"$TMP/d1.json" <<'JSON'
{"total_time_ns": 1000, "mfu_pct": 50, "hbm": {"activation_bound_pct": 100,
 "channels": {"c0": {"busy_ns": 10}, "c1": {"busy_ns": 10}}},
 "engines": {"pe": {"utilisation_pct": 40}}, "critical_path": {"pe_ns": 300, "total_ns": 1000}}
JSON
cat >"$TMP/d2.json" <<'JSON'
{"total_time_ns": 1005, "mfu_pct": 50, "hbm": {"activation_bound_pct": 0,
 "channels": {"c0": {"busy_ns": 20}, "c1": {"busy_ns": 20}}},
 "engines": {"pe": {"utilisation_pct": 60}}, "critical_path": {"pe_ns": 600, "total_ns": 1005}}
JSON
"$cs" "$TMP/d1.json" "$TMP/d2.json" >"$TMP/out" 2>&1; expect_status 0 $? "shifts and improvements"
expect_grep "hbm.activation_bound_pct: 100 -> 0 \(-100.000%\)  IMPROVEMENT" "$TMP/out" \
    "fewer activations are an improvement"
expect_grep "engines.pe.utilisation_pct: 40 -> 60 \(\+50.000%\)  SHIFTED" "$TMP/out" "utilisation"
expect_grep "critical_path.pe_ns: 300 -> 600 \(\+100.000%\)  SHIFTED" "$TMP/out" "path split"
grep -q "total_time_ns" "$TMP/out" && fail "a 0.5% change is within the default tolerance"
grep -q "channels.c0" "$TMP/out" && fail "a breakdown key is not printed by default"
expect_grep "breakdown keys beyond tolerance .*: 2 regression" "$TMP/out" "breakdown counted"
expect_grep "2 more key\(s\) changed within tolerance" "$TMP/out" "within tolerance counted"
"$cs" "$TMP/d1.json" "$TMP/d2.json" --all >"$TMP/out" 2>&1
expect_grep "total_time_ns: 1000 -> 1005 \(\+0.500%\)$" "$TMP/out" "--all prints the small ones"
expect_grep "hbm.channels.c0.busy_ns: 10 -> 20 .*REGRESSION \(breakdown\)" "$TMP/out" \
    "--all prints the breakdown"
"$cs" "$TMP/d1.json" "$TMP/d2.json" --strict >"$TMP/out" 2>&1
expect_status 1 $? "--strict judges breakdowns and shifts"
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
expect_grep "warning: .*run.kernel differs" "$TMP/out" "two kernels"
"$sim" --config trn1 --workload vector_add --set core.hbm.bandwidth=800GB/s --quiet \
    --stats-out "$TMP/r3.json"
"$cs" "$TMP/r1.json" "$TMP/r3.json" >"$TMP/out" 2>&1
expect_grep "warning: .*the configurations differ in 1 key\(s\): config.core.hbm.bandwidth" \
    "$TMP/out" "two configurations"
# Two platforms: one warning, the engines and channels one has more of listed, not errors.
"$sim" --config trn2 --workload vector_add --quiet --stats-out "$TMP/r4.json"
"$cs" "$TMP/r1.json" "$TMP/r4.json" >"$TMP/out" 2>&1
[ "$(grep -c warning "$TMP/out")" -eq 1 ] || fail "trn1 vs trn2: one warning"
expect_grep "^only in new \([0-9]+ key\(s\)\): hbm.channels" "$TMP/out" "trn2's extra channels"
grep -q ERROR "$TMP/out" && fail "trn1 vs trn2: no error"
[ "$(wc -l <"$TMP/out")" -le 50 ] || fail "trn1 vs trn2: $(wc -l <"$TMP/out") lines (noise)"
finish

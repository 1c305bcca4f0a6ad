#!/usr/bin/env bash
# scripts/calibrate --set and --fit: points made by sim with core.launch_overhead=22us are matched
# exactly with --set, and --fit recovers 22 us per platform within 2% from the configs' values;
# without --write no config changes; --write (on a copy) rewrites one line per config.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/calibrate_common.sh"
synthetic_points "$TMP/p.csv" "a1 a2 b1 b2" --set core.launch_overhead=22us || fail "points"

"$cal" --points "$TMP/p.csv" --set core.launch_overhead=22us >"$TMP/out" 2>&1
expect_status 0 $? "--set"
expect_grep "^MAPE trn1: 0\.0% over 2 time points" "$TMP/out" "--set matches trn1"
expect_grep "^MAPE trn2: 0\.0% over 2 time points" "$TMP/out" "--set matches trn2"
"$cal" --points "$TMP/p.csv" >"$TMP/out" 2>&1
grep -qE "^MAPE trn1: 0\.0%" "$TMP/out" && fail "without --set the points should not match"

before="$(md5sum "$ROOT"/configs/*.yaml)"
"$cal" --fit --points "$TMP/p.csv" --params core.launch_overhead >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--fit"
expect_grep "^Fit trn1: 2 time points \(a1, a2\)" "$TMP/out" "fit trn1"
expect_grep "^Fit trn2: 2 time points \(b1, b2\)" "$TMP/out" "fit trn2"
expect_grep "evaluation 1/60" "$TMP/err" "progress on stderr"
expect_grep "^Nothing written" "$TMP/out" "no --write"
[ "$before" = "$(md5sum "$ROOT"/configs/*.yaml)" ] || fail "--fit without --write changed a config"
python3 - "$TMP/out" <<'PY' || fail "fitted values"
import re, sys
text = open(sys.argv[1]).read()
found = re.findall(r"^  apply: --set core\.launch_overhead=([0-9.]+)us$", text, re.M)
assert len(found) == 2, f"expected two apply lines, got {found}"
for v in map(float, found):
    assert abs(v - 22) <= 0.02 * 22, f"fitted {v} us, expected 22 us within 2%"
m = re.findall(r"^MAPE (trn\d): ([0-9.]+)%", text, re.M)
assert len(m) == 2 and all(float(x) < 1.0 for _, x in m), f"MAPE after the fit: {m}"
PY

# --write on a copy of the configs: only the value and the comment's ids change.
cp -r "$ROOT/configs" "$TMP/configs"
"$cal" --fit --points "$TMP/p.csv" --config-dir "$TMP/configs" --params core.launch_overhead --max-evals 12 --write \
    >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--write"
for p in trn1 trn2; do
    diff "$ROOT/configs/$p.yaml" "$TMP/configs/$p.yaml" >"$TMP/diff.$p"
    [ "$(grep -c '^[<>]' "$TMP/diff.$p")" -eq 2 ] ||
        { fail "$p: --write should change exactly one line"; cat "$TMP/diff.$p"; }
    "$sim" --config "$TMP/configs/$p.yaml" --workload vector_add --quiet >/dev/null 2>&1 ||
        fail "$p: the rewritten config does not run"
done
expect_grep "^>   launch_overhead: 2[12](\.[0-9]+)?us +# calibrated: a1, a2" "$TMP/diff.trn1" \
    "trn1 value and comment rewritten"
expect_grep "^>   launch_overhead: 2[12](\.[0-9]+)?us +# calibrated: b1, b2" "$TMP/diff.trn2" \
    "trn2 value and comment rewritten"
finish

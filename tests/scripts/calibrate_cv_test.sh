#!/usr/bin/env bash
# scripts/calibrate --cv: leave-one-group-out on points made by sim with core.launch_overhead=22us.
# Each held-out group is predicted by a fit to the other groups of its platform, which recovers
# 22 us, so every CV error is ~0 while the configs' values are far off; --markdown prints a table.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/calibrate_common.sh"
synthetic_points "$TMP/p.csv" "a1 a2 b1 b2 t1 t2" --set core.launch_overhead=22us ||
    fail "points"

"$cal" --cv --points "$TMP/p.csv" --params core.launch_overhead --max-evals 15 >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--cv"
for id in a1 a2 b1 b2 t1 t2; do
    expect_grep "^$id +" "$TMP/out" "row of $id"
done
expect_grep "^a1 +trn1 vector_add +trn1 +latency_us" "$TMP/out" "group of a1"
expect_grep "^t2 +transpose +trn2 " "$TMP/out" "group of t2"
expect_grep "cv \[transpose\] trn1: fitting core.launch_overhead to 2 time points" "$TMP/err" \
    "trn1 fitted without the transpose group"
# each fold starts from the middle of the range [1 us, 30 us], not from the config
expect_grep "cv \[transpose\] trn1: evaluation 1/15: .*core.launch_overhead=5.47723us" \
    "$TMP/err" "neutral start"
expect_grep "from the middle of each range \(--cv-start neutral\)" "$TMP/out" "start named"
python3 - "$TMP/out" <<'PY' || fail "CV errors"
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r"^([abt][12]) .* ([-+][0-9.]+)% +[0-9.]+ +([-+][0-9.]+)%$", text, re.M)
assert len(rows) == 6, f"expected 6 rows with a config and a CV error, got {rows}"
for pid, config_err, cv_err in rows:
    assert abs(float(cv_err)) < 1.0, f"{pid}: CV error {cv_err}% (fit should recover 22 us)"
    assert abs(float(config_err)) > 5.0, f"{pid}: config error {config_err}% (should be off)"
cv = dict(re.findall(r"^CV MAPE (trn\d): ([0-9.]+)% over 3 time points", text, re.M))
assert set(cv) == {"trn1", "trn2"} and all(float(v) < 1.0 for v in cv.values()), cv
PY

# A group alone on its platform keeps the config values: its CV error is the config's.
"$cal" --cv --points "$TMP/p.csv" --params core.launch_overhead --max-evals 15 --groups-by platform-workload a1 a2 b1 \
    >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--cv, one group per platform"
expect_grep "cv \[trn2 vector_add\] trn2: no time points outside the group: config values" \
    "$TMP/err" "config values kept"
expect_grep "^b1 .* ([-+][0-9.]+%) +[0-9.]+ +\1" "$TMP/out" "b1 CV error is the config error"

"$cal" --cv --cv-start config --points "$TMP/p.csv" --params core.launch_overhead --max-evals 4 \
    a1 t1 >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--cv --cv-start config"
start="$(awk '$1 == "launch_overhead:" { print $2 }' "$ROOT/configs/trn1.yaml")"
expect_grep "cv \[transpose\] trn1: evaluation 1/4: .*core.launch_overhead=${start//./\\.}" "$TMP/err" \
    "config start ($start, trn1's config)"

"$cal" --cv --points "$TMP/p.csv" --params core.launch_overhead --max-evals 4 --markdown a1 t1 >"$TMP/out" 2>/dev/null
expect_status 0 $? "--cv --markdown"
expect_grep "^\| id \| group \| platform \|" "$TMP/out" "markdown header"
expect_grep "^\| a1 \| trn1 vector_add \| trn1 \|" "$TMP/out" "markdown row"
expect_grep "^CV MAPE trn1: " "$TMP/out" "markdown CV MAPE"
finish

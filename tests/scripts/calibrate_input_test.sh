#!/usr/bin/env bash
# scripts/calibrate points files: bands (tol_pct) pass inside and count only their excess outside;
# counts match within their tolerance; a bad file or option exits 2 naming the file and line.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/calibrate_common.sh"
read -r _ _ w1 p1 <<<"${SMALL_POINTS[0]}"  # a trn1 point
read -r _ _ w2 p2 <<<"${SMALL_POINTS[2]}"  # a trn2 point
m1="$(model_value trn1 "$w1" "$p1" total_time_ns)" || fail "sim trn1"
m2="$(model_value trn2 "$w2" "$p2" total_time_ns)" || fail "sim trn2"
c2="$(model_value trn2 "$w2" "$p2" dma.transfers)" || fail "sim trn2 count"
# trn1: the model 10% below the value, band 15%: in band, error 0.
# trn2: the model at value/1.3 (-23.1%), band 10%: 13.1% beyond the lower edge.
# counts: one off by 1 with a band that covers it, one off by 1 without a band.
python3 - "$TMP/band.csv" "$m1" "$m2" "$c2" "$w1" "$p1" "$w2" "$p2" <<'PY'
import sys
path, m1, m2, c2 = sys.argv[1], *map(float, sys.argv[2:5])
w1, p1, w2, p2 = sys.argv[5:9]
with open(path, "w") as f:
    f.write("id,platform,workload,params,metric,value,source,tol_pct\n")
    f.write(f"in1,trn1,{w1},{p1},latency_us,{m1 / 1e3 * 1.1:.9g},test,15\n")
    f.write(f"out2,trn2,{w2},{p2},latency_us,{m2 / 1e3 * 1.3:.9g},test,10\n")
    f.write(f"cb,trn2,{w2},{p2},dma_transfers,{c2 + 1:g},test,{150 / (c2 + 1):.6g}\n")
    f.write(f"cx,trn2,{w2},{p2},dma_transfers,{c2 + 1:g},test,\n")
PY
"$cal" --points "$TMP/band.csv" >"$TMP/out" 2>&1
expect_status 0 $? "band table"
expect_grep "^in1 .* -9\.1% +in band ±15%$" "$TMP/out" "inside the band"
expect_grep "^out2 .* -23\.1% +outside band ±10% \(13\.1% beyond\)$" "$TMP/out" "outside the band"
expect_grep "^cb .* -1 +in band ±[0-9.]+%$" "$TMP/out" "count within its band"
expect_grep "^cx .* -1$" "$TMP/out" "count without a band"
expect_grep "^MAPE trn1: 0\.0% over 1 time points" "$TMP/out" "in band counts 0"
expect_grep "^MAPE trn2: 13\.1% over 1 time points" "$TMP/out" "outside counts the excess"
expect_grep "^counts: 1 of 2 match" "$TMP/out" "counts"
# A fit to a point already inside its band has nothing to move.
"$cal" --fit --points "$TMP/band.csv" --max-evals 6 in1 >"$TMP/out" 2>&1
expect_status 0 $? "fit in band"
expect_grep "rms log error 0\.0000 -> 0\.0000" "$TMP/out" "in band: zero residual"
expect_grep "^  core\.launch_overhead: (\S+) -> \1  \(range" "$TMP/out" "in band: unchanged"

# A check (role check:REASON) is shown but neither in the MAPE nor fitted; conditions are set
# in every run of their point (here one that changes its time: a longer launch).
python3 - "$TMP/role.csv" "$m1" "$w1" "$p1" <<'PY'
import sys
path, m1, w1, p1 = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path, "w") as f:
    f.write("id,platform,workload,params,metric,value,source,tol_pct,conditions,role\n")
    f.write(f"fit1,trn1,{w1},{p1},latency_us,{m1 / 1e3:.9g},test,,,\n")
    f.write(f"chk1,trn1,{w1},{p1},latency_us,{m1 / 1e3 / 2:.9g},test,,,check:another compiler\n")
    f.write(f"cond1,trn1,{w1},{p1},latency_us,{m1 / 1e3:.9g},test,,core.launch_overhead=30us,"
            "check:slower launch\n")
PY
"$cal" --points "$TMP/role.csv" >"$TMP/out" 2>&1
expect_status 0 $? "checks table"
expect_grep "^chk1 .* \+100\.0% +not fitted: another compiler$" "$TMP/out" "a check's note"
expect_grep "^MAPE trn1: 0\.0% over 1 time points" "$TMP/out" "checks are outside the MAPE"
expect_grep "^not fitted \(checks, outside the MAPE\): chk1 \+100\.0%, cond1 \+[0-9.]+%" \
    "$TMP/out" "checks listed"
"$cal" --fit --points "$TMP/role.csv" --max-evals 4 >"$TMP/out" 2>&1
expect_status 0 $? "fit without checks"
expect_grep "Fit trn1: 1 time points \(fit1\)" "$TMP/out" "checks are not fitted"
printf 'id,platform,workload,params,metric,value,source,tol_pct,conditions,role\nr1,trn1,%s,%s,latency_us,5,t,,,maybe\n' \
    "$w1" "$p1" >"$TMP/badrole.csv"
"$cal" --points "$TMP/badrole.csv" >"$TMP/out" 2>&1
expect_status 2 $? "bad role"
expect_grep "badrole.csv:2: role 'maybe' is not empty" "$TMP/out" "bad role names file and line"

# How a point was measured: shown in the table; lnc sets chip.lnc in its runs (trn2: 2 works;
# trn1 has no LNC=2: the file is refused, naming the line); the others are shown only.
printf '%s\n' "id,platform,workload,params,metric,value,source,tol_pct,compiler,lnc,auto_cast,method,conditions,role" \
    "how1,trn1,$w1,$p1,latency_us,5,t,,2024,1,none,nki.benchmark p99,," \
    "how2,trn2,$w2,$p2,latency_us,5,t,,,2,,table,," >"$TMP/how.csv"
"$cal" --points "$TMP/how.csv" >"$TMP/out" 2>&1
expect_status 0 $? "points measured at LNC 1 and 2"
expect_grep "^how1 .* compiler 2024, lnc 1, auto_cast none, nki\.benchmark p99 +latency_us" \
    "$TMP/out" "the conditions of a measurement are shown"
expect_grep "^how2 .* lnc 2, table " "$TMP/out" "LNC 2 on trn2"
# compiler sets runtime.sdk: a point of the 2024 SDK pays core.launch_overhead_2024, the same kernel
# of the 2025 SDK (or of none said) core.launch_overhead.
printf '%s\n' "id,platform,workload,params,metric,value,compiler" "sdk24,trn1,$w1,$p1,latency_us,5,2024" \
    "sdk25,trn1,$w1,$p1,latency_us,5,2025" "sdk0,trn1,$w1,$p1,latency_us,5," >"$TMP/sdk.csv"
"$cal" --points "$TMP/sdk.csv" --set core.launch_overhead=5us --set core.launch_overhead_2024=17us \
    --csv "$TMP/sdk.out.csv" >"$TMP/out" 2>&1
expect_status 0 $? "points of two SDKs"
python3 - "$TMP/sdk.out.csv" <<'PY' || fail "a 2024 point pays the 2024 runtime's launch"
import csv, sys
rows = {r["id"]: float(r["model"]) for r in csv.DictReader(open(sys.argv[1]))}
assert abs(rows["sdk24"] - rows["sdk25"] - 12) < 0.01, rows  # the table rounds
assert rows["sdk25"] == rows["sdk0"], rows
PY
expect_grep "^sdk24 .* compiler 2024 +latency_us" "$TMP/out" "the SDK is shown, not its key"
printf '%s\n' "id,platform,workload,params,metric,value,lnc" "bad1,trn1,$w1,$p1,latency_us,5,2" \
    >"$TMP/lnc.csv"
"$cal" --points "$TMP/lnc.csv" >"$TMP/out" 2>&1
expect_status 2 $? "LNC 2 on trn1"
expect_grep "lnc\.csv:2: lnc 2: trn1 has no logical NeuronCore of two cores" "$TMP/out" \
    "LNC 2 on trn1 is refused, naming the line"
for bad_how in "compiler=24" "lnc=4" "auto_cast=bf16" "method=benchmark p99" "method=profiler p5"; do
    column="${bad_how%%=*}" value="${bad_how#*=}"
    python3 - "$TMP/badhow.csv" "$column" "$value" "$w1" "$p1" <<'PY'
import csv, sys
path, column, value, w1, p1 = sys.argv[1:]
row = {"id": "b1", "platform": "trn1", "workload": w1, "params": p1, "metric": "latency_us",
       "value": "5", column: value}
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, ["id", "platform", "workload", "params", "metric", "value", column])
    w.writeheader()
    w.writerow(row)
PY
    "$cal" --points "$TMP/badhow.csv" >"$TMP/out" 2>&1
    expect_status 2 $? "bad $column"
    expect_grep "badhow\.csv:2: $column '$value' is not" "$TMP/out" "bad $column named"
done

# Bad points files: exit 2, naming the file and line.
good="id,platform,workload,params,metric,value,source,tol_pct
g1,trn1,vector_add,variant=stream n=25600 free_dim=200,latency_us,19,x,"
bad() {  # bad NAME LINE PATTERN CONTENT: the file must be refused at LINE with PATTERN
    printf '%s\n' "$4" >"$TMP/$1.csv"
    "$cal" --points "$TMP/$1.csv" >"$TMP/out" 2>&1
    expect_status 2 $? "$1"
    expect_grep "$1\.csv:$2: .*$3" "$TMP/out" "$1 names the file and line"
}
bad nometric 1 "missing column\(s\) metric" "id,platform,workload,params,value
g1,trn1,vector_add,,19"
bad platform 3 "unknown platform 'trn9'" "$good
g2,trn9,vector_add,,latency_us,19,x,"
bad workload 2 "unknown workload 'vector_mul'" "id,platform,workload,params,metric,value
g1,trn1,vector_mul,,latency_us,19"
bad value 3 "value '19us' is not a number" "$good
g2,trn1,vector_add,,latency_us,19us,x,"
bad zero 2 "must be a positive number" "id,platform,workload,params,metric,value
g1,trn1,vector_add,,latency_us,0"
bad metric 2 "unknown metric 'latency_ms'" "id,platform,workload,params,metric,value
g1,trn1,vector_add,,latency_ms,19"
bad tol 3 "tol_pct 'ten' is not a number" "$good
g2,trn1,vector_add,,latency_us,19,x,ten"
bad dup 3 "id g1 already on line 2" "$good
$(tail -1 <<<"$good")"
bad fields 2 "wrong number of fields" "id,platform,workload,params,metric,value
g1,trn1,vector_add,,latency_us"
"$cal" --points "$TMP/nope.csv" >"$TMP/out" 2>&1; expect_status 2 $? "missing file"
expect_grep "nope\.csv" "$TMP/out" "missing file named"
printf '%s\n' "$good" >"$TMP/good.csv"
for args in "--fit --params core.dma.engines" "--fit --params no.such.key" "--write" \
    "--max-evals 3" "--cv --max-evals 0" "--set nokey" "--fit --groups-by platform" "x9" \
    "--cv-start config" "--cv --cv-start middle" "--prior-weight 1" "--fit --prior-weight -1" \
    "--fit --prior-weight nan"; do
    # shellcheck disable=SC2086
    "$cal" --points "$TMP/good.csv" $args >"$TMP/out" 2>&1
    expect_status 2 $? "bad option: $args"
done
"$cal" --points "$TMP/good.csv" --fit --params core.dma.engines >"$TMP/out" 2>&1
expect_grep "'core\.dma\.engines' is not declared fitted" "$TMP/out" "not fitted named"
finish

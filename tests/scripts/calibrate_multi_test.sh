#!/usr/bin/env bash
# scripts/calibrate --fit with several fitted parameters, through a stand-in simulator whose
# timing is a known formula: two parameters fitted in log space (positive ranges) and one
# linearly (a range through 0) are recovered together; --params fits one and leaves the others.
source "$(dirname "$0")/common.sh"
cal="$ROOT/scripts/calibrate"
mkdir -p "$TMP/configs"
cat >"$TMP/configs/toy.yaml" <<'YAML'
name: toy
core:
  a: 20ns          # calibrated: nothing yet (per-x cost)
  b: 1.5           # calibrated: nothing yet
  c: 0             # calibrated: nothing yet; linear range
YAML
cat >"$TMP/sim" <<'PY'
#!/usr/bin/python3
"""Stand-in for sim: total_time_ns = a * x + 10 * b * y + 500 * (1 + c) (a in ns)."""
import json
import re
import sys
args = sys.argv[1:]


def fit(lo, hi):
    return {"lo": lo, "hi": hi, "why": "test range"}


def opt(name):
    return [args[i + 1] for i, a in enumerate(args) if a == name]


if "--list-workloads" in args:
    print("toy: a formula\n  --param x=  default 1")
    sys.exit(0)
if "--list-params" in args:
    print(json.dumps([
        {"key": "core.a", "unit": "time", "default": "1ns", "fit": fit(1, 1000)},
        {"key": "core.b", "unit": "number", "default": "1", "fit": fit(0.5, 8)},
        {"key": "core.c", "unit": "number", "default": "0", "fit": fit(-0.5, 0.5)},
        {"key": "core.d", "unit": "count", "default": "4"}]))
    sys.exit(0)
vals = {}
for line in open(opt("--config")[0]):
    m = re.match(r"^  (\w+): (\S+)", line)
    if m:
        vals[m.group(1)] = m.group(2)
for s in opt("--set"):
    k, v = s.split("=")
    vals[k.split(".")[-1]] = v
unit = {"ns": 1, "us": 1e3, "ms": 1e6}
m = re.match(r"^([0-9.e+-]+)(ns|us|ms)$", vals["a"])
a = float(m.group(1)) * unit[m.group(2)]
b, c = float(vals["b"]), float(vals["c"])
p = dict(s.split("=") for s in opt("--param"))
x, y = float(p.get("x", 1)), float(p.get("y", 1))
json.dump({"total_time_ns": a * x + 10 * b * y + 500 * (1 + c), "dma": {"transfers": x}},
          open(opt("--stats-out")[0], "w"))
PY
chmod +x "$TMP/sim"
# The truth: a = 70 ns, b = 3, c = 0.2.
python3 - "$TMP/p.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("id,platform,workload,params,metric,value\n")
    for i, (x, y) in enumerate([(1, 1), (100, 1), (1, 100), (50, 50), (10, 300)]):
        f.write(f"p{i},toy,toy,x={x} y={y},latency_us,{(70 * x + 30 * y + 600) / 1e3!r}\n")
    f.write("n0,toy,toy,x=7,dma_transfers,7\n")
PY
run() { "$cal" --sim "$TMP/sim" --config-dir "$TMP/configs" --points "$TMP/p.csv" "$@"; }
# Without the prior (--prior-weight 0) the fit recovers the truth exactly.
run --fit --prior-weight 0 >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "fit of three parameters"
expect_grep "^Fit toy: 5 time points \(p0, p1, p2, p3, p4\)" "$TMP/out" "time points only"
expect_grep "^  core\.a: 20ns -> 70ns  \(range \[1ns, 1us\]: test range\)$" "$TMP/out" "a recovered"
expect_grep "^  core\.b: 1\.5 -> 3  \(range" "$TMP/out" "b recovered"
expect_grep "^  core\.c: 0 -> 0\.2  \(range \[-0\.5, 0\.5\]" "$TMP/out" "c recovered (linear)"
expect_grep "^MAPE toy: 0\.0% over 5 time points" "$TMP/out" "proposed values match"
grep -q "core\.d" "$TMP/out" && fail "core.d is not declared fitted and must not be fitted"

# With the default prior, values the points determine move by well under 1%.
run --fit >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "fit with the prior"
python3 - "$TMP/out" <<'PY2' || fail "the prior moved determined values"
import re, sys
text = open(sys.argv[1]).read()
# within 1% (a and b, fitted in log space) or 1% of its range (c, linear)
for key, truth, tol in (("a", 70, 0.7), ("b", 3, 0.03), ("c", 0.2, 0.01)):
    v = float(re.search(rf"^  core\.{key}: \S+ -> ([-0-9.e]+)", text, re.M).group(1))
    assert abs(v - truth) <= tol, f"core.{key}: {v}, truth {truth}"
PY2

# A parameter no point depends on (b, with every y = 0) stays at the middle of its range (2),
# not at its start (1.5).
python3 - "$TMP/p0.csv" <<'PY2'
import sys
with open(sys.argv[1], "w") as f:
    f.write("id,platform,workload,params,metric,value\n")
    for i, x in enumerate([1, 100, 30]):
        f.write(f"q{i},toy,toy,x={x} y=0,latency_us,{(70 * x + 600) / 1e3!r}\n")
PY2
"$cal" --sim "$TMP/sim" --config-dir "$TMP/configs" --points "$TMP/p0.csv" --fit \
    >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "fit with an undetermined parameter"
expect_grep "^  core\.b: 1\.5 -> 2  \(range" "$TMP/out" "undetermined b at the middle of [0.5, 8]"
expect_grep "^    not determined by these points .*: the prior set it$" "$TMP/out" "b said undetermined"
[ "$(grep -c 'not determined' "$TMP/out")" -eq 1 ] || fail "only b is undetermined"
# --write leaves it out: b keeps its value, a is written.
cp -r "$TMP/configs" "$TMP/configs0"
"$cal" --sim "$TMP/sim" --config-dir "$TMP/configs0" --points "$TMP/p0.csv" --fit --write \
    >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--write with an undetermined parameter"
expect_grep "^  b: 1\.5 " "$TMP/configs0/toy.yaml" "undetermined b not written"
expect_grep "^  a: 70(\.0[0-9])?ns +# calibrated: q0, q1, q2 " "$TMP/configs0/toy.yaml" \
    "determined a written"
expect_grep "the prior set it; not written$" "$TMP/out" "said not written"

run --fit --params core.b --max-evals 10 >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--params core.b"
expect_grep "^  core\.b: 1\.5 -> " "$TMP/out" "b fitted alone"
grep -qE "^  core\.(a|c):" "$TMP/out" && fail "--params core.b fitted others"
[ "$(grep -c 'evaluation [0-9]*/10:' "$TMP/err")" -le 10 ] || fail "--max-evals 10 exceeded"

run --fit --write --prior-weight 0 >"$TMP/out" 2>"$TMP/err"
expect_status 0 $? "--write"
expect_grep "^  a: 70ns          # calibrated: p0, p1, p2, p3, p4 \(per-x cost\)$" \
    "$TMP/configs/toy.yaml" "a written, comment kept after the ids"
expect_grep "^  c: 0\.2           # calibrated: p0, p1, p2, p3, p4; linear range$" \
    "$TMP/configs/toy.yaml" "c written, text after ';' kept"
expect_grep "^name: toy$" "$TMP/configs/toy.yaml" "other lines kept"
finish

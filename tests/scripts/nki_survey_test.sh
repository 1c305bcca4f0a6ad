#!/usr/bin/env bash
# scripts/nki-survey: every kernel script under the folders runs with its own harness, and is
# said to have its values checked, wrong, run, stopped (naming the API and the kernel's line)
# or failed; the summary groups what stopped them; the project's own kernels and examples all
# run.
source "$(dirname "$0")/common.sh"
survey="$ROOT/scripts/nki-survey"
mkdir -p "$TMP/k/sub"
cat >"$TMP/k/good.py" <<'PY'
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def double(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))
    return out

a = np.ones((128, 8), np.float32)
assert np.allclose(double(a), 2 * a)
PY
sed 's/2 \* a)/3 * a)/' "$TMP/k/good.py" >"$TMP/k/wrong.py"
sed 's/^assert np.allclose(double(a), 2 \* a)$/assert (2 * a == double(a)).all()/' \
    "$TMP/k/good.py" >"$TMP/k/equal_all.py"
grep -q '== double(a)).all()' "$TMP/k/equal_all.py" || fail "the (out == want).all() harness"
sed 's/nl.multiply(nl.load(a), 2.0)/nl.rms_norm(nl.load(a))/' "$TMP/k/good.py" >"$TMP/k/sub/stops.py"
cp "$TMP/k/sub/stops.py" "$TMP/k/sub/stops_too.py"
printf 'import nki\nraise RuntimeError("the harness broke")\n' >"$TMP/k/broken.py"
printf 'import nki\n\ndef kernel():\n    pass\n' >"$TMP/k/module.py"
printf 'print("not a kernel")\n' >"$TMP/k/other.py"
"$survey" --json "$TMP/s.json" "$TMP/k" >"$TMP/out" 2>&1
expect_status 1 $? "a stopped, wrong or failed script"
expect_grep "^good.py +values checked .*1 values" "$TMP/out" "the good kernel"
expect_grep "^wrong.py +values wrong" "$TMP/out" "wrong values"
expect_grep "^equal_all.py +values checked" "$TMP/out" "(out == want).all() checks values"
expect_grep "^sub/stops.py +stopped .*nki.language.rms_norm at .*stops.py:8: not supported" \
    "$TMP/out" "the missing API and the kernel's line"
expect_grep "^broken.py +failed .*RuntimeError: the harness broke" "$TMP/out" "a script error"
expect_grep "^module.py +no kernel ran" "$TMP/out" "a module of kernels"
grep -q "other.py" "$TMP/out" && fail "a file that does not import nki was run"
expect_grep "^7 scripts: .*2 stopped" "$TMP/out" "the summary"
expect_grep "^  nki.language.rms_norm: 2 " "$TMP/out" "what stopped them, counted"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); \
assert len(d['results']) == 7" "$TMP/s.json" || fail "the JSON results"
"$survey" "$TMP/none" >"$TMP/out2" 2>&1
expect_status 2 $? "a missing folder"
"$survey" "$ROOT/workloads/nki/kernels" "$ROOT/workloads/nki/examples" \
    "$ROOT/workloads/nki/samples" >"$TMP/own" 2>&1
expect_status 0 $? "the project's own kernels, examples and samples"
expect_grep "^30 scripts: 27 values checked, 3 ran$" "$TMP/own" "all of them run"
finish

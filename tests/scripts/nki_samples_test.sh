#!/usr/bin/env bash
# scripts/nki-samples: the performance tests of a miniature nki-samples copy (written here, in the
# layout of aws-neuron/nki-samples: src/nki_samples/reference, test/unit) run on trnsim; each
# line gives the threshold the test's assertion enforces (times 1.05 when it says so), the
# model's latency and their ratio; a test whose model latency exceeds it fails; tests without a
# threshold are not run.
source "$(dirname "$0")/common.sh"
samples="$ROOT/scripts/nki-samples"
mkdir -p "$TMP/s/src/nki_samples/reference" "$TMP/s/test/unit"
touch "$TMP/s/src/nki_samples/__init__.py" "$TMP/s/src/nki_samples/reference/__init__.py"
cat >"$TMP/s/src/nki_samples/reference/scale.py" <<'PY'
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(t, 2.0))
    return out
PY
cat >"$TMP/s/test/unit/test_scale.py" <<'PY'
import os

import numpy as np
import pytest
from neuronxcc.nki import benchmark
from nki_samples.reference.scale import scale

bench = benchmark(warmup=1, iters=2, save_trace_name='local_trace.ntff')(scale)


@pytest.mark.parametrize('rows, latency', [[256, 1000], [4096, 1]])
def test_scale_perf(rows, latency):
    bench(np.ones((rows, 512), np.float32))
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) <= latency * 1.05


@pytest.mark.parametrize('rows, max_p99_latency', [[128, 500]])
def test_scale_p99_perf(rows, max_p99_latency):
    bench(np.ones((rows, 512), np.float32))
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) <= max_p99_latency
    assert os.path.getsize('local_trace.ntff') > 0


def test_scale_values():
    assert np.allclose(scale(np.ones((128, 8), np.float32)), 2.0)
PY
mkdir "$TMP/run"
(cd "$TMP/run" && "$samples" "$TMP/s" --json t.json) >"$TMP/out" 2>&1
expect_status 0 $? "a run of the copy's performance tests"
[ -e "$TMP/run/local_trace.ntff" ] && fail "a test's profile trace was left in the working directory"
mv "$TMP/run/t.json" "$TMP/t.json" || fail "--json relative to the working directory"
expect_grep "^passed +1050\.0 +[0-9.]+ +0\.0[0-9]x  test/unit/test_scale.py::test_scale_perf\[256-1000\]" \
    "$TMP/out" "a threshold its assertion raises by 1.05"
expect_grep "^failed +1\.1 +[0-9.]+ +[0-9.]+x  test/unit/test_scale.py::test_scale_perf\[4096-1\]" \
    "$TMP/out" "a test the model is slower than"
expect_grep "^passed +500\.0 +[0-9.]+ +0\.[0-9]+x  test/unit/test_scale.py::test_scale_p99_perf" \
    "$TMP/out" "a max_p99_latency threshold, as written"
grep -q "test_scale_values" "$TMP/out" && fail "a test without a threshold was run"
expect_grep "^nki-samples: 3 performance tests" "$TMP/out" "the summary"
python3 -c "
import json, sys
rows = {r['test'].split('::')[-1]: r for r in json.load(open(sys.argv[1]))}
small, large = rows['test_scale_perf[256-1000]'], rows['test_scale_perf[4096-1]']
assert small['factor'] == 1.05 and rows['test_scale_p99_perf[128-500]']['factor'] == 1.0
assert 0 < small['model_us'] < large['model_us'], (small, large)  # 16x the rows: slower
assert abs(large['ratio'] - large['model_us'] / 1.05) < 1e-9" "$TMP/t.json" || fail "the JSON table"
"$samples" "$TMP/none" >"$TMP/out2" 2>&1
expect_status 2 $? "a folder that is not a copy of nki-samples"
expect_grep "is not a copy of aws-neuron/nki-samples" "$TMP/out2" "what is wrong with it"
finish

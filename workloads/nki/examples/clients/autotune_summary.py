"""nki-autotune's ranking input: the profiler summary that
nki.compiler.ncc_driver.extract_perf_metrics(neff, ntff) returns for a run saved with
nki.benchmark(save_neff_name=, save_trace_name=). Under trnsim the summary is the model's, read
from the timeline trnsim writes at save_trace_name. Run: scripts/nki --config trn2
workloads/nki/examples/clients/autotune_summary.py [DIR]"""

import json
import os
import sys
import tempfile

import numpy as np

import nki
from nki.compiler.ncc_driver import extract_perf_metrics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import transposed_matmul  # noqa: E402

where = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
neff, ntff = os.path.join(where, 'file.neff'), os.path.join(where, 'profile.ntff')
rng = np.random.default_rng(3)
a = rng.random((128, 128), dtype=np.float32)
b = rng.random((128, 512), dtype=np.float32)
np.testing.assert_allclose(nki.simulate(transposed_matmul)(a, b), a @ b, rtol=1e-4)
nki.benchmark(transposed_matmul, save_neff_name=neff, save_trace_name=ntff)(a, b)
summary = extract_perf_metrics(neff, ntff)
for key in ('total_time', 'mfu_estimated_percent', 'mbu_estimated_percent',
            'mfu_max_achievable_estimated_percent', 'hardware_flops', 'transpose_flops'):
    assert summary.get(key) is not None, key
print(json.dumps(summary, indent=1))

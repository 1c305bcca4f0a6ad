"""A course-style harness, modelled on the documented nki.baremetal / nki.benchmark API: checks
a kernel against numpy, benchmarks it and prints its latency. It runs unchanged on a Neuron
instance; under `scripts/nki` the imports resolve to trnsim and the latency is the model's.

    scripts/nki --config trn1 workloads/nki/examples/course_harness.py --kernel stream
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile

import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'kernels'))
import matmul  # noqa: E402 (the project's kernels, next to this folder)
import vector_add  # noqa: E402


def vector_add_2024(a_vec, b_vec, out):
    """2024 edition: no decorator, the output is the last argument and nothing is returned."""
    p = nl.tile_size.pmax
    for m in nl.affine_range(a_vec.shape[0] // p):
        a = nl.load(a_vec[m * p:(m + 1) * p])
        b = nl.load(b_vec[m * p:(m + 1) * p])
        nl.store(out[m * p:(m + 1) * p], value=nl.add(a, b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--kernel', choices=['stream', 'strided', '2024', 'matmul'],
                        default='stream')
    parser.add_argument('--n', type=int, default=25600)
    parser.add_argument('--free-dim', type=int, default=200)
    parser.add_argument('--warmup', type=int, default=5)
    parser.add_argument('--iters', type=int, default=20)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    if args.kernel == 'matmul':
        lhsT = rng.uniform(-1, 1, (512, 256)).astype(np.float32)
        rhs = rng.uniform(-1, 1, (512, 1024)).astype(np.float32)
        out = nki.simulate_kernel(matmul.matmul_tiled, lhsT, rhs)
        assert np.allclose(out, lhsT.T @ rhs, rtol=1e-4, atol=1e-4), 'matmul: wrong values'
        # kernel first, on placeholders (no values needed for a latency)
        bench = nki.benchmark(matmul.matmul_tiled, warmup=args.warmup, iters=args.iters)
        bench(nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 1024], nl.float32])
    else:
        a = rng.uniform(0, 1, args.n).astype(np.float32)
        b = rng.uniform(0, 1, args.n).astype(np.float32)
        if args.kernel == '2024':
            out = np.zeros_like(a)
            nki.baremetal(vector_add_2024)(a, b, out)
            assert np.allclose(out, a + b), 'vector_add_2024: wrong values'
            bench = nki.benchmark(warmup=args.warmup, iters=args.iters)(vector_add_2024)
            bench(a, b, np.zeros_like(a))
        else:
            kernel = (vector_add.vector_add_stream if args.kernel == 'stream'
                      else vector_add.vector_add_stream_strided)
            out = nki.baremetal(kernel)(a, b, free_dim=args.free_dim)
            assert np.allclose(out, a + b), f'{args.kernel}: wrong values'

            # (a course harness saves file.neff and profile.ntff in its folder; this one in a
            # folder of its own: under trnsim, the recording and the model's timeline)
            saved = tempfile.mkdtemp()
            atexit.register(shutil.rmtree, saved, True)

            @nki.benchmark(warmup=args.warmup, iters=args.iters,
                           save_neff_name=os.path.join(saved, 'file.neff'),
                           save_trace_name=os.path.join(saved, 'profile.ntff'))
            def bench(a_vec, b_vec):
                return kernel.func(a_vec, b_vec, free_dim=args.free_dim)
            bench(a, b)
    result = bench.benchmark_result.nc_latency
    for p in (0, 1, 10, 25, 50, 90, 99, 100):
        assert result.get_latency_percentile(p) == result.get_latency_percentile(50)
    print(f'Latency: {result.get_latency_percentile(99):.3f} us (P99)')


if __name__ == '__main__':
    main()

"""Benchmarks one step of the matmul tutorial at a shape (by default the reference M1,
4096 x 8192 x 8192 bf16) on inputs given by shape only, and prints the latency.

    scripts/nki --config trn1 workloads/nki/examples/matmul_benchmark.py --variant tiled
"""

import argparse
import os
import sys

from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'kernels'))
import matmul  # noqa: E402 (the project's kernels, next to this folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--variant', default='tiled',
                        choices=['tiled', 'hoist_load', 'block_free_dimension',
                                 'fully_optimized'])
    parser.add_argument('--m', type=int, default=4096)
    parser.add_argument('--k', type=int, default=8192)
    parser.add_argument('--n', type=int, default=8192)
    args = parser.parse_args()
    bench = nki.benchmark(getattr(matmul, f'matmul_{args.variant}'), warmup=2, iters=10)
    bench(nt.tensor[[args.k, args.m], nl.bfloat16], nt.tensor[[args.k, args.n], nl.bfloat16])
    print(f'Latency: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.3f} us')


if __name__ == '__main__':
    main()

"""An SPMD tensor addition in the style of the NKI tutorials (beta 1): each instance of a 2-D
launch grid adds one [128, 512] tile, found by its program ids; the harness checks the values
and asks nki.benchmark for the latency of the whole grid."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_tiles(a, b):
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    cols = nl.program_id(1) * 512 + nl.arange(512)[None, :]
    a_tile = nl.load(a[rows, cols])
    b_tile = nl.load(b[rows, cols])
    nl.store(c[rows, cols], value=nl.add(a_tile, b_tile))
    return c


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 2048)).astype(np.float16)
    b = rng.standard_normal((512, 2048)).astype(np.float16)
    grid = (a.shape[0] // 128, a.shape[1] // 512)
    c = add_tiles[grid](a, b)
    assert np.allclose(c, a + b), 'spmd_tensor_add: wrong values'
    bench = nki.benchmark(add_tiles[grid], warmup=2, iters=10)
    bench(a, b)
    print(f'spmd_tensor_add {grid}: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.2f} us')


if __name__ == '__main__':
    main()

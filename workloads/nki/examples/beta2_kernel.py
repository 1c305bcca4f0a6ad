"""An NKI beta 2 spelling (standalone `import nki`, ISA calls writing into dst=): scales a
matrix, then prints the model's latency.

    scripts/nki workloads/nki/examples/beta2_kernel.py
"""

import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.compiler.skip_middle_end_transformations
@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    for i in nl.affine_range(x.shape[0] // p):
        tile = nl.ndarray((p, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(tile, x[i * p:(i + 1) * p, :])
        twice = nl.ndarray((p, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=twice, data=tile, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(out[i * p:(i + 1) * p, :], twice)
    return out


if __name__ == '__main__':
    x = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    assert np.array_equal(scale_rows(x), 2 * x), 'scale_rows: wrong values'
    bench = nki.benchmark(scale_rows, warmup=2, iters=5)
    bench(x)
    print(f'Latency: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.3f} us')

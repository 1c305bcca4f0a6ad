"""The project's NKI version of the 2025 course transpose (workloads.md, "transpose"): 128 x 128
tiles loaded by DMA, transposed on the Tensor engine into PSUM, copied to SBUF and stored."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.compiler.skip_middle_end_transformations
@nki.jit
def transpose_2d(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    for i in nl.affine_range(rows // p):
        for j in nl.affine_range(cols // p):
            tile = nl.ndarray((p, p), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=x[i * p:(i + 1) * p, j * p:(j + 1) * p])
            flipped = nisa.nc_transpose(tile)
            back = nisa.tensor_copy(flipped, dtype=x.dtype)
            nisa.dma_copy(dst=out[j * p:(j + 1) * p, i * p:(i + 1) * p], src=back)
    return out


if __name__ == '__main__':
    import numpy as np

    x = np.random.default_rng(0).uniform(-1, 1, (512, 384)).astype(np.float32)
    np.testing.assert_array_equal(transpose_2d(x), x.T)
    bench = nki.benchmark(transpose_2d, warmup=1, iters=1)
    bench(x)
    print(f'transpose_2d 512 x 384: '
          f'{bench.benchmark_result.nc_latency.get_latency_percentile(50):.2f} us')

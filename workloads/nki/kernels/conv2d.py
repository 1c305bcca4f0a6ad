"""The project's NKI version of the row-by-row conv2d (workloads.md, "conv2d", variant `row`):
out[b, c, i, j] = bias[c] + sum over (ci, m, n) of X[b, ci, i+m, j+n] * W[c, ci, m, n], then
the max over pool x pool windows. An ISA kernel in program order, as the measured 2025 kernel:
each filter tap is transposed once on the Tensor engine; then, per output row, the K input rows
of each in-channel tile are loaded by DMA and each of the K x K taps is one matmul of the
transposed tap (stationary) and the row shifted by the tap's column (moving), accumulated in
PSUM, copied to SBUF, pooled, biased and stored."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def _channel_tiles(channels, size):
    """(first channel, channels) of each tile of at most `size` channels."""
    return [(c, min(size, channels - c)) for c in range(0, channels, size)]


@nki.compiler.skip_middle_end_transformations
@nki.jit
def conv2d_row(X, W, bias, pool_size=1):
    batch, cin, height, width = X.shape
    cout, _, k, _ = W.shape
    out_h, out_w = height - k + 1, width - k + 1
    pooled_h, pooled_w = out_h // pool_size, out_w // pool_size
    out = nl.ndarray((batch, cout, pooled_h, pooled_w), dtype=X.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    co_part = min(p, nl.tile_size.gemm_stationary_fmax)
    chunk = min(out_w, nl.tile_size.gemm_moving_fmax)
    ci_tiles = _channel_tiles(cin, p)
    co_tiles = _channel_tiles(cout, co_part)

    # The weights, once: each (out tile, in tile) block of W lands as [co, ci, K, K]; tap
    # (i, j) is every K*K-th element of a partition, transposed to [ci, co] for the matmuls.
    w_taps = [[[nl.ndarray((cs, cos), dtype=W.dtype, buffer=nl.sbuf) for _ in range(k * k)]
               for _, cs in ci_tiles] for _, cos in co_tiles]
    w_raw = nl.ndarray((p, p, k, k), dtype=W.dtype, buffer=nl.sbuf)
    w_psum = nl.ndarray((p, p), dtype=nl.float32, buffer=nl.psum)
    for co, (co0, cos) in enumerate(co_tiles):
        for ci, (ci0, cs) in enumerate(ci_tiles):
            nisa.dma_copy(dst=w_raw[:cos, :cs], src=W[co0:co0 + cos, ci0:ci0 + cs, :, :])
            for i in nl.static_range(k):
                for j in nl.static_range(k):
                    nisa.nc_transpose(w_raw[:cos, :cs, i, j], dst=w_psum[:cs, :cos])
                    nisa.tensor_copy(w_psum[:cs, :cos], dst=w_taps[co][ci][i * k + j])

    biases = []
    for co0, cos in co_tiles:
        biases.append(nl.ndarray((cos, 1), dtype=bias.dtype, buffer=nl.sbuf))
        nisa.dma_copy(dst=biases[-1], src=bias.reshape((cout, 1))[co0:co0 + cos, :])

    # One row buffer per (in tile, filter row), two PSUM tiles taken in turn, so that the
    # loads of the next row and the eviction of this one overlap the matmuls.
    row_bufs = [nl.ndarray((cs, width), dtype=X.dtype, buffer=nl.sbuf)
                for _, cs in ci_tiles for _ in range(k)]
    psums = [nl.ndarray((co_part, chunk), dtype=nl.float32, buffer=nl.psum) for _ in range(2)]
    rows_sb = [nl.ndarray((co_part, out_w), dtype=X.dtype, buffer=nl.sbuf)
               for _ in range(pool_size)]
    pooled = nl.ndarray((co_part, pooled_w), dtype=X.dtype, buffer=nl.sbuf)
    turn = 0
    for b in nl.affine_range(batch):
        for co, (co0, cos) in enumerate(co_tiles):
            for r in nl.affine_range(pooled_h):
                for q in nl.static_range(pool_size):
                    oh = r * pool_size + q
                    for ci, (ci0, cs) in enumerate(ci_tiles):
                        for i in nl.static_range(k):
                            nisa.dma_copy(dst=row_bufs[ci * k + i],
                                          src=X[b, ci0:ci0 + cs, oh + i, :])
                    for c0 in range(0, out_w, chunk):
                        n = min(chunk, out_w - c0)
                        acc = psums[turn % 2][:cos, :n]
                        turn += 1
                        first = True
                        for ci, (ci0, cs) in enumerate(ci_tiles):
                            for i in nl.static_range(k):
                                for j in nl.static_range(k):
                                    prod = nisa.nc_matmul(w_taps[co][ci][i * k + j],
                                                          row_bufs[ci * k + i][:, c0 + j:c0 + j + n])
                                    if first:
                                        acc[...] = prod
                                        first = False
                                    else:
                                        acc += prod
                        nisa.tensor_copy(acc, dst=rows_sb[q][:cos, c0:c0 + n])
                dst = pooled[:cos]
                if pool_size == 1:
                    nisa.tensor_scalar(rows_sb[0][:cos], np.add, biases[co], dst=dst)
                else:
                    a = rows_sb[0][:cos]
                    nisa.tensor_tensor(a, rows_sb[1][:cos], np.maximum, dst=a)
                    nisa.tensor_tensor(a[:, 0:2 * pooled_w:2], a[:, 1:2 * pooled_w:2],
                                       np.maximum, dst=dst)
                    nisa.tensor_scalar(dst, np.add, biases[co], dst=dst)
                nisa.dma_copy(dst=out[b, co0:co0 + cos, r, :], src=dst)
    return out


if __name__ == '__main__':
    # Values against a float64 reference at a small shape (with pooling), then the latency
    # of CS149's shape (224 x 224, 256 -> 256 channels, fp16).
    import neuronxcc.nki.typing as nt

    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (1, 130, 9, 10)).astype(np.float32)
    w = rng.uniform(0, 1, (140, 130, 3, 3)).astype(np.float32)
    bias = rng.uniform(0, 50, 140).astype(np.float32)
    ref = np.zeros((1, 140, 7, 8))
    for m in range(3):
        for n in range(3):
            ref += np.einsum('bchw,oc->bohw', x[:, :, m:m + 7, n:n + 8].astype(np.float64),
                             w[:, :, m, n].astype(np.float64))
    ref += bias[None, :, None, None]
    ref = ref[:, :, :6, :8].reshape(1, 140, 3, 2, 4, 2).max(axis=(3, 5))
    np.testing.assert_allclose(conv2d_row(x, w, bias, pool_size=2), ref, rtol=1e-4, atol=1e-4)
    f16 = nl.float16
    bench = nki.benchmark(conv2d_row, warmup=1, iters=1)
    bench(nt.tensor[[1, 256, 224, 224], f16], nt.tensor[[256, 256, 3, 3], f16],
          nt.tensor[[256], f16])
    print(f'conv2d_row CS149: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.1f} us')

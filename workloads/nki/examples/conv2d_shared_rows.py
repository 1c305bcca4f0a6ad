"""A conv2d of known structure, to check the model on a measured kernel it was not fitted to.

The structure (written here from its description; no code is taken from it) is that of a public
CS149 2024 trn1 kernel whose latency its author measured on hardware: robertpare17/asst4-trainium
(part2/conv2d.py, solution.md: 224x224, 256 -> 256 channels, 3x3: 1060 us in fp16 and 3681 us
in fp32; with 2x2 max pooling 1275 and 3741 us). Unlike workloads.md's `row` variant it loads
each input row once per tile of output rows and shares it between all out-channel tiles:
- the weights are loaded once, as [co, ci, ci tile, K*K] per out-channel tile (each load fills
  one ci tile: 128 runs of K*K elements per partition);
- per tile of R output rows (R = the moving limit // out_w, 2 for 222) and in-channel tile, the
  R+K-1 input rows are loaded into one strip; per tap, the moving operand [ci, R*out_w] is built
  by R copies of the strip's shifted rows, and one nl.matmul per out-channel tile (the weight tap
  as x, without transpose_x) accumulates into that tile's PSUM accumulator;
- each accumulator is copied to SBUF; each of its rows is copied into a row tile of its own and
  gets the bias; with pool_size 2, each pair of rows is reduced to its maximum, whose even and
  odd columns are gathered by strided copies and reduced again; the rows are stored.
It is a compiler-scheduled (nl) kernel, so the transposes nl.matmul inserts are done once per
tap (docs/nki.md). With --pretransposed the kernel transposes each tap itself, after the
weights are loaded, and the matmuls take transpose_x=True (docs/results.md, "A kernel of known
structure").

Run: scripts/nki --config trn1 workloads/nki/examples/conv2d_shared_rows.py [float16|float32]
     [pool2] [--pretransposed]"""

import sys

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt


@nki.jit
def conv2d_shared_rows(X, W, bias, pool_size=1, pretransposed=False):
    batch, cin, height, width = X.shape
    cout, _, k, _ = W.shape
    out_h, out_w = height - k + 1, width - k + 1
    p = nl.tile_size.pmax
    assert cin % p == 0 and cout % p == 0, 'channels must be multiples of 128'
    assert out_w <= nl.tile_size.gemm_moving_fmax
    rows = nl.tile_size.gemm_moving_fmax // out_w
    if out_h % rows:
        rows = 1
    assert pool_size in (1, 2) and (pool_size == 1 or rows % 2 == 0), \
        'pooling takes pool_size 2 and tiles of an even number of rows'
    n_ci, n_co, taps, strip_rows = cin // p, cout // p, k * k, rows + k - 1
    out = nl.ndarray((batch, cout, out_h // pool_size, out_w // pool_size), dtype=X.dtype,
                     buffer=nl.shared_hbm)
    x_flat = X.reshape((batch, cin, height * width))
    w_flat = W.reshape((cout, cin, taps))

    # weights[co] holds [co, ci, ci tile, tap]; with pretransposed, [ci, ci tile, tap, co]
    weights, biases = [], []
    for co in nl.static_range(n_co):
        w = nl.ndarray((p, p, n_ci, taps), dtype=W.dtype, buffer=nl.sbuf)
        for ci in nl.affine_range(n_ci):
            w[:, :, ci, :] = nl.load(w_flat[co * p:(co + 1) * p, ci * p:(ci + 1) * p, :])
        if pretransposed:
            wt = nl.ndarray((p, n_ci, taps, p), dtype=W.dtype, buffer=nl.sbuf)
            for ci in nl.affine_range(n_ci):
                for t in nl.affine_range(taps):
                    wt[:, ci, t, :] = nl.copy(nl.transpose(w[:, :, ci, t]), dtype=W.dtype)
            w = wt
        weights.append(w)
        biases.append(nl.load(bias.reshape((cout, 1))[co * p:(co + 1) * p, :]))

    for b in nl.affine_range(batch):
        image = x_flat[b, :, :]
        for r in nl.affine_range(out_h // rows):
            top = r * rows
            accs = [nl.zeros((p, rows * out_w), dtype=nl.float32, buffer=nl.psum)
                    for _ in range(n_co)]
            for ci in nl.affine_range(n_ci):
                strip = nl.ndarray((p, strip_rows * width), dtype=X.dtype, buffer=nl.sbuf)
                for s in nl.affine_range(strip_rows):
                    strip[:, s * width:(s + 1) * width] = nl.load(
                        image[ci * p:(ci + 1) * p, (top + s) * width:(top + s + 1) * width])
                for i in nl.affine_range(k):
                    for j in nl.affine_range(k):
                        moving = nl.ndarray((p, rows * out_w), dtype=X.dtype, buffer=nl.sbuf)
                        for q in nl.affine_range(rows):
                            first = (q + i) * width + j
                            moving[:, q * out_w:(q + 1) * out_w] = \
                                strip[:, first:first + out_w]
                        for co in nl.static_range(n_co):
                            if pretransposed:
                                accs[co] += nl.matmul(weights[co][:, ci, i * k + j, :], moving,
                                                      transpose_x=True)
                            else:
                                accs[co] += nl.matmul(weights[co][:, :, ci, i * k + j], moving)
            for co in nl.static_range(n_co):
                result = nl.copy(accs[co], dtype=X.dtype)
                if pool_size == 1:
                    for q in nl.affine_range(rows):
                        row = _biased_row(result, q, out_w, biases[co], X.dtype)
                        nl.store(out[b, co * p:(co + 1) * p, top + q, :], value=row)
                else:
                    for pair in nl.affine_range(rows // 2):
                        both = nl.maximum(
                            _biased_row(result, 2 * pair, out_w, biases[co], X.dtype),
                            _biased_row(result, 2 * pair + 1, out_w, biases[co], X.dtype))
                        even = nl.ndarray((p, out_w // 2), dtype=X.dtype, buffer=nl.sbuf)
                        odd = nl.ndarray((p, out_w // 2), dtype=X.dtype, buffer=nl.sbuf)
                        even[...] = both[:, 0:out_w // 2 * 2:2]
                        odd[...] = both[:, 1:out_w // 2 * 2:2]
                        nl.store(out[b, co * p:(co + 1) * p, top // 2 + pair, :],
                                 value=nl.maximum(even, odd))
    return out


def _biased_row(result, q, out_w, bias, dtype):
    """Output row q of a tile of rows, copied into a row tile of its own, plus the bias."""
    row = nl.ndarray((result.shape[0], out_w), dtype=dtype, buffer=nl.sbuf)
    row[...] = result[:, q * out_w:(q + 1) * out_w]
    return nl.add(row, bias)


def main(argv):
    dtype = nl.float32 if 'float32' in argv else nl.float16
    bench = nki.benchmark(warmup=1, iters=1)(conv2d_shared_rows)
    bench(nt.tensor[[1, 256, 224, 224], dtype], nt.tensor[[256, 256, 3, 3], dtype],
          nt.tensor[[256], dtype], pool_size=2 if 'pool2' in argv else 1,
          pretransposed='--pretransposed' in argv)
    us = bench.benchmark_result.nc_latency.get_latency_percentile(99)
    print(f'Latency: {us:.1f} us (P99)')


if __name__ == '__main__':
    main(sys.argv[1:])

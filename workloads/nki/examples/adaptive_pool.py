"""Adaptive average pooling of NCHW tensors, the structure of AWS's nki-samples kernel whose
latencies the calibration points AP1-AP9 are (calibration/hardware-points.csv; written here
from the structure the measurements' description gives, no code taken from the sample):
- the N*C planes (at most 128, or a multiple of 128) are tiled by 128 partitions; each tile of
  planes is one iteration of an affine loop;
- each output element (oh, ow) is a window of the input, [h0, h1) x [w0, w1) with
  h0 = oh*H // OH and h1 = ceil((oh+1)*H / OH) (likewise along W), unrolled (static loops);
- per window: a zeroed [P, 1] fp32 accumulator; the window in pieces of at most 128 x 128
  (sequential loops over them, of one iteration but for large windows), each one DMA into the
  same SBUF tile (declared once, before the loops, one block per tile of planes), summed along
  both free axes and added to the accumulator; the mean written into the tile of outputs;
- per tile of planes, one store of its outputs.
Each window is a DMA of many small runs (a window row is its width's elements), the case
"many small transfers" of docs/results.md.

usage: scripts/nki [--config trn1] workloads/nki/examples/adaptive_pool.py [N C H W OH OW DTYPE]
       (DTYPE float32, float16 or bfloat16; OH and OW the output size; without arguments, its
       values on a small case compared with numpy's, then the latency of AP1's shape)
"""
import sys

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

PIECE = 128  # the largest window piece one DMA moves, along each of H and W


def bounds(size, out):
    """The windows [start, end) along an axis of `size` pooled to `out` outputs."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-((-(i + 1) * size) // out) for i in range(out)]
    return list(zip(starts, ends))


@nki.jit
def adaptive_pool(planes, oh_count, ow_count):
    n, c, h, w = planes.shape
    rows_of = bounds(h, oh_count)
    cols_of = bounds(w, ow_count)
    p = min(n * c, nl.tile_size.pmax)
    assert (n * c) % p == 0, 'N * C must be at most 128 or a multiple of 128'
    tiles = n * c // p
    flat = planes.reshape((n * c, h, w))
    result = nl.ndarray((n, c, oh_count, ow_count), dtype=planes.dtype, buffer=nl.shared_hbm)
    flat_out = result.reshape((n * c, oh_count, ow_count))
    tall = min(max(b - a for a, b in rows_of), PIECE)
    wide = min(max(b - a for a, b in cols_of), PIECE)
    window = nl.ndarray((tiles, nl.par_dim(p), tall, wide), dtype=planes.dtype, buffer=nl.sbuf)
    means = nl.ndarray((tiles, nl.par_dim(p), oh_count, ow_count), dtype=planes.dtype,
                       buffer=nl.sbuf)
    for t in nl.affine_range(tiles):
        first = t * p
        for i in nl.static_range(oh_count):
            for j in nl.static_range(ow_count):
                (h0, h1), (w0, w1) = rows_of[i], cols_of[j]
                total = nl.zeros((p, 1), dtype=nl.float32, buffer=nl.sbuf)
                dh, dw = min(PIECE, h1 - h0), min(PIECE, w1 - w0)
                assert (h1 - h0) % dh == 0 and (w1 - w0) % dw == 0, \
                    'a window of more than 128 rows or columns must be whole pieces of 128'
                for ph in nl.sequential_range((h1 - h0) // dh):
                    a = h0 + ph * dh
                    for pw in nl.sequential_range((w1 - w0) // dw):
                        b = w0 + pw * dw
                        nisa.dma_copy(dst=window[t, :, 0:dh, 0:dw],
                                      src=flat[first:first + p, a:a + dh, b:b + dw])
                        part = nl.sum(window[t, :, 0:dh, 0:dw], axis=[1, 2])
                        total[:, :] = total[:, :] + part
                means[t, :, i, j] = nl.divide(total, (h1 - h0) * (w1 - w0))
        nl.store(flat_out[first:first + p, :, :], value=means[t])
    return result


def reference(x, oh_count, ow_count):
    """The same pooling in numpy (float64 sums)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh_count, ow_count), dtype=np.float64)
    for i, (h0, h1) in enumerate(bounds(h, oh_count)):
        for j, (w0, w1) in enumerate(bounds(w, ow_count)):
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].astype(np.float64).mean(axis=(2, 3))
    return out


DTYPES = {'float32': nl.float32, 'float16': nl.float16, 'bfloat16': nl.bfloat16}


def main(argv):
    if not argv:  # its values on a small case, then AP1's latency
        x = np.random.default_rng(3).uniform(-1, 1, (2, 64, 13, 13)).astype(np.float32)
        np.testing.assert_allclose(adaptive_pool(x, 6, 4), reference(x, 6, 4), rtol=1e-5,
                                   atol=1e-6)
        argv = ['1', '64', '56', '56', '7', '7', 'float32']
    if len(argv) != 7 or argv[6] not in DTYPES:
        sys.exit('usage: adaptive_pool.py [N C H W OH OW float32|float16|bfloat16]')
    n, c, h, w, oh_count, ow_count = (int(a) for a in argv[:6])
    bench = nki.benchmark(warmup=2, iters=10)(adaptive_pool)
    bench(nt.tensor[[n, c, h, w], DTYPES[argv[6]]], oh_count, ow_count)
    us = bench.benchmark_result.nc_latency.get_latency_percentile(99)
    print(f'Latency: {us:.1f} us (P99)')


if __name__ == '__main__':
    main(sys.argv[1:])

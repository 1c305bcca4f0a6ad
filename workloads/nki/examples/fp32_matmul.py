"""An fp32 matrix multiply on the Tensor engine, the structure of NKIBench's matmul baseline
(NKIBench/kernels/matmul_M4096_N12288_K5120_0.py in zhang677/AccelOpt) whose latencies the
calibration points NB1 (trn1) and NB1t (trn2) are (calibration/hardware-points.csv; written
here from the structure, no code taken from the benchmark):
- the output in blocks of 128 rows x 1024 columns; per block of columns, the K x 1024 slice of
  rhs loaded once, one DMA per 128 rows of K;
- per 128 rows of lhs: the 128 x K rows loaded in DMAs of 8 tiles (128 x 1024), each 128 x 128
  tile transposed on the Tensor engine (a matmul with the identity in transpose mode) and
  copied from PSUM to SBUF;
- per half (512 columns) of the block: the K/128 fp32 matmuls accumulated in one PSUM bank,
  copied to SBUF; the 128 x 1024 block stored.
Every operand is fp32, so every matmul and transpose runs the Tensor engine's fp32 passes.

usage: scripts/nki [--config trn1] workloads/nki/examples/fp32_matmul.py [M K N [DTYPE]]
       (without arguments, its values on a small case compared with numpy's, then the latency
       of NKIBench's 4096 x 5120 x 12288; DTYPE float32, the default, or bfloat16: the same
       kernel on bf16 operands, for the fp32 / bf16 ratio)
"""
import sys

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

P = 128         # partitions: rows of a tile, and K a matmul
BLOCK = 1024    # output columns a block
HALF = 512      # output columns a PSUM bank holds in fp32
GROUP = 8       # lhs tiles a DMA loads


@nki.jit
def fp32_matmul(lhs, rhs):
    m, k = lhs.shape
    n = rhs.shape[1]
    assert m % P == 0 and k % (GROUP * P) == 0 and n % BLOCK == 0, \
        'M must be a multiple of 128, K of 1024 and N of 1024'
    k_tiles = k // P
    out = nl.ndarray((m, n), dtype=lhs.dtype, buffer=nl.shared_hbm)
    identity = nl.shared_constant(np.identity(P, dtype=np.float32), dtype=lhs.dtype)
    eye = nl.load(identity)
    for jb in nl.affine_range(n // BLOCK):
        right = nl.ndarray((k_tiles, nl.par_dim(P), BLOCK), dtype=rhs.dtype, buffer=nl.sbuf)
        for kk in nl.affine_range(k_tiles):
            right[kk] = nl.load(rhs[kk * P:(kk + 1) * P, jb * BLOCK:(jb + 1) * BLOCK])
        for i in nl.affine_range(m // P):
            rows = nl.ndarray((k_tiles // GROUP, nl.par_dim(P), GROUP * P), dtype=lhs.dtype,
                              buffer=nl.sbuf)
            left_t = nl.ndarray((k_tiles, nl.par_dim(P), P), dtype=lhs.dtype, buffer=nl.sbuf)
            for g in nl.affine_range(k_tiles // GROUP):
                rows[g] = nl.load(lhs[i * P:(i + 1) * P, g * GROUP * P:(g + 1) * GROUP * P])
                for s in nl.affine_range(GROUP):
                    flipped = nisa.nc_matmul(rows[g, :, s * P:(s + 1) * P], eye,
                                             is_moving_onezero=True, is_transpose=True)
                    left_t[g * GROUP + s] = nl.copy(flipped)
            result = nl.ndarray((nl.par_dim(P), BLOCK), dtype=lhs.dtype, buffer=nl.sbuf)
            for h in nl.affine_range(BLOCK // HALF):
                acc = nl.zeros((nl.par_dim(P), HALF), dtype=nl.float32, buffer=nl.psum)
                for kk in nl.affine_range(k_tiles):
                    acc += nisa.nc_matmul(left_t[kk], right[kk, :, h * HALF:(h + 1) * HALF])
                result[:, h * HALF:(h + 1) * HALF] = nl.copy(acc)
            nl.store(out[i * P:(i + 1) * P, jb * BLOCK:(jb + 1) * BLOCK], value=result)
    return out


def main(argv):
    if not argv:  # its values on a small case, then NKIBench's shape
        rng = np.random.default_rng(7)
        a = rng.normal(size=(256, 2048)).astype(np.float32)
        b = rng.normal(size=(2048, 2048)).astype(np.float32)
        np.testing.assert_allclose(fp32_matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4,
                                   atol=1e-3)
        argv = ['4096', '5120', '12288']
    dtypes = {'float32': nl.float32, 'bfloat16': nl.bfloat16}
    if len(argv) == 3:
        argv = argv + ['float32']
    if len(argv) != 4 or not all(a.isdigit() for a in argv[:3]) or argv[3] not in dtypes:
        sys.exit('usage: fp32_matmul.py [M K N [float32|bfloat16]]')
    m, k, n = (int(a) for a in argv[:3])
    bench = nki.benchmark(warmup=2, iters=10)(fp32_matmul)
    bench(nt.tensor[[m, k], dtypes[argv[3]]], nt.tensor[[k, n], dtypes[argv[3]]])
    us = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    print(f'Latency: {us:.1f} us (P50)')


if __name__ == '__main__':
    main(sys.argv[1:])

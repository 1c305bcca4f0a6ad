"""The matmul tutorial's tiled step (by default M1: 4096 x 8192 x 8192 bf16) in NKI 0.7 with
Python `range` loops, as 0.7 kernels write them: the frontend records such loops unrolled
(docs/nki.md), so this is the case of scripts/bench's line on recording against simulation.
The same program as workloads/nki/kernels/matmul_nki0.py's matmul_tiled (affine_range).

usage: scripts/nki --config trn1 workloads/nki/examples/matmul_range.py [M K N]
       (without arguments, its values on a small case compared with numpy's, then M1's latency)
"""
import sys

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt


@nki.jit
def matmul_tiled_range(lhsT, rhs):
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = (nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax,
                  nl.tile_size.gemm_moving_fmax)
    result = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // tm):
        for n in range(n_size // tn):
            acc = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
            for k in range(k_size // tk):
                lhsT_tile = nl.ndarray((tk, tm), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((tk, tn), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * tk:(k + 1) * tk, m * tm:(m + 1) * tm])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * tk:(k + 1) * tk, n * tn:(n + 1) * tn])
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)
            out_tile = nl.ndarray((tm, tn), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(dst=result[m * tm:(m + 1) * tm, n * tn:(n + 1) * tn], src=out_tile)
    return result


def main(argv):
    if not argv:  # its values on a small case, then M1's shape
        rng = np.random.default_rng(11)
        a = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
        b = rng.uniform(-1, 1, (256, 1024)).astype(np.float32)
        np.testing.assert_allclose(matmul_tiled_range(a, b), a.T.astype(np.float64) @ b,
                                   rtol=1e-4, atol=1e-4)
        argv = ['4096', '8192', '8192']
    if len(argv) != 3 or not all(a.isdigit() for a in argv):
        sys.exit('usage: matmul_range.py [M K N]')
    m, k, n = (int(a) for a in argv)
    bench = nki.benchmark(matmul_tiled_range, warmup=2, iters=10)
    bench(nt.tensor[[k, m], nl.bfloat16], nt.tensor[[k, n], nl.bfloat16])
    print(f'Latency: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.1f} us (P50)')


if __name__ == '__main__':
    main(sys.argv[1:])

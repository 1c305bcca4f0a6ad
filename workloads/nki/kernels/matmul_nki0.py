"""The four steps of the AWS NKI matrix multiplication tutorial in the NKI 0.x spelling (beta 2,
`import nki`): ISA calls that write into `dst`, DMA through `nisa.dma_copy`, and the K loop's
products summed by `nisa.nc_matmul`'s default accumulation (the first write to a PSUM location
overwrites it, later ones add to it). result[M, N] = lhsT[K, M].T @ rhs[K, N]. Written here from
the documented API; matmul.py has the same steps in the 2024/2025 spelling."""

import nki
import nki.isa as nisa
import nki.language as nl


def _sizes():
    return (nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax,
            nl.tile_size.gemm_moving_fmax)


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Step 1: per output tile, one lhsT and one rhs tile per k, their products summed in one
    PSUM tile declared in the n loop (so each output tile starts from its first product)."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    result = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // tm):
        for n in nl.affine_range(n_size // tn):
            res_psum = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // tk):
                lhsT_tile = nl.ndarray((tk, tm), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((tk, tn), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * tk:(k + 1) * tk, m * tm:(m + 1) * tm])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * tk:(k + 1) * tk, n * tn:(n + 1) * tn])
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = nl.ndarray((tm, tn), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * tm:(m + 1) * tm, n * tn:(n + 1) * tn], src=res_sb)
    return result


@nki.jit
def matmul_hoist_load(lhsT, rhs):
    """Step 2: the lhsT tiles of an output row loaded once (one tile [K tile, k, M tile]) and
    the rhs tiles of an output column once, shared by the k loop."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    kt = k_size // tk
    result = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // tm):
        lhsT_tiles = nl.ndarray((tk, kt, tm), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            nisa.dma_copy(dst=lhsT_tiles[:, k, :],
                          src=lhsT[k * tk:(k + 1) * tk, m * tm:(m + 1) * tm])
        for n in nl.affine_range(n_size // tn):
            rhs_tiles = nl.ndarray((tk, kt, tn), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                nisa.dma_copy(dst=rhs_tiles[:, k, :],
                              src=rhs[k * tk:(k + 1) * tk, n * tn:(n + 1) * tn])
            res_psum = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(kt):
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tiles[:, k, :],
                               moving=rhs_tiles[:, k, :])
            res_sb = nl.ndarray((tm, tn), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * tm:(m + 1) * tm, n * tn:(n + 1) * tn], src=res_sb)
    return result


@nki.jit
def matmul_block_free_dimension(lhsT, rhs, tiles_m=2, tiles_n=2):
    """Step 3: blocks of tiles_m x tiles_n output tiles; each block's operands loaded once, its
    products summed in one PSUM tile per output tile (a PSUM tile of tiles_n x 512 columns
    would exceed a 2 KiB bank, so the block's accumulators are a Python list of tiles)."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    kt = k_size // tk
    result = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m2 in nl.affine_range(m_size // (tm * tiles_m)):
        lhsT_tiles = nl.ndarray((tk, kt, tm * tiles_m), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            nisa.dma_copy(dst=lhsT_tiles[:, k, :],
                          src=lhsT[k * tk:(k + 1) * tk,
                                   m2 * tm * tiles_m:(m2 + 1) * tm * tiles_m])
        for n2 in nl.affine_range(n_size // (tn * tiles_n)):
            rhs_tiles = nl.ndarray((tk, kt, tn * tiles_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                nisa.dma_copy(dst=rhs_tiles[:, k, :],
                              src=rhs[k * tk:(k + 1) * tk,
                                      n2 * tn * tiles_n:(n2 + 1) * tn * tiles_n])
            for bm in nl.affine_range(tiles_m):
                for bn in nl.affine_range(tiles_n):
                    res_psum = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(kt):
                        nisa.nc_matmul(dst=res_psum,
                                       stationary=lhsT_tiles[:, k, bm * tm:(bm + 1) * tm],
                                       moving=rhs_tiles[:, k, bn * tn:(bn + 1) * tn])
                    res_sb = nl.ndarray((tm, tn), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=res_sb, src=res_psum)
                    m0 = (m2 * tiles_m + bm) * tm
                    n0 = (n2 * tiles_n + bn) * tn
                    nisa.dma_copy(dst=result[m0:m0 + tm, n0:n0 + tn], src=res_sb)
    return result


@nki.jit
def matmul_fully_optimized(lhsT, rhs, tiles_m=4, tiles_n=2, tiles_k=2):
    """Step 4: for each block of output columns, the K blocks in sequence; each K block's
    partial products are added into an SBUF accumulator of the whole column block (zeroed
    first), which is stored at the end."""
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    block_m, block_n, block_k = tm * tiles_m, tn * tiles_n, tk * tiles_k
    result = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n2 in nl.affine_range(n_size // block_n):
        acc = nl.ndarray((tm, m_size // tm, block_n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(acc, 0.0)
        for k2 in nl.sequential_range(k_size // block_k):
            rhs_tiles = nl.ndarray((tk, tiles_k, block_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(tiles_k):
                k0 = (k2 * tiles_k + bk) * tk
                nisa.dma_copy(dst=rhs_tiles[:, bk, :],
                              src=rhs[k0:k0 + tk, n2 * block_n:(n2 + 1) * block_n])
            for m2 in nl.affine_range(m_size // block_m):
                lhsT_tiles = nl.ndarray((tk, tiles_k, block_m), dtype=lhsT.dtype,
                                        buffer=nl.sbuf)
                for bk in nl.affine_range(tiles_k):
                    k0 = (k2 * tiles_k + bk) * tk
                    nisa.dma_copy(dst=lhsT_tiles[:, bk, :],
                                  src=lhsT[k0:k0 + tk, m2 * block_m:(m2 + 1) * block_m])
                for bm in nl.affine_range(tiles_m):
                    for bn in nl.affine_range(tiles_n):
                        res_psum = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_k):
                            nisa.nc_matmul(dst=res_psum,
                                           stationary=lhsT_tiles[:, bk, bm * tm:(bm + 1) * tm],
                                           moving=rhs_tiles[:, bk, bn * tn:(bn + 1) * tn])
                        part = acc[:, m2 * tiles_m + bm, bn * tn:(bn + 1) * tn]
                        nisa.tensor_tensor(dst=part, data1=part, data2=res_psum, op=nl.add)
        for mt in nl.affine_range(m_size // tm):
            out_sb = nl.ndarray((tm, block_n), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_sb, src=acc[:, mt, :])
            nisa.dma_copy(dst=result[mt * tm:(mt + 1) * tm, n2 * block_n:(n2 + 1) * block_n],
                          src=out_sb)
    return result


if __name__ == '__main__':
    import numpy as np

    rng = np.random.default_rng(0)
    lhsT = rng.uniform(-1, 1, (1024, 2048)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (1024, 2048)).astype(np.float32)
    steps = (matmul_tiled, matmul_hoist_load, matmul_block_free_dimension,
             matmul_fully_optimized)
    for kernel in steps:
        np.testing.assert_allclose(kernel(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    for kernel in steps:
        bench = nki.benchmark(kernel, warmup=1, iters=1)
        bench(lhsT, rhs)
        print(f'{kernel.__name__} 2048 x 1024 x 2048 fp32: '
              f'{bench.benchmark_result.nc_latency.get_latency_percentile(50):.1f} us')

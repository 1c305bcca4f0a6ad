"""The project's NKI versions of the four steps of the AWS NKI matrix multiplication tutorial
(workloads.md, "matmul"): result[M, N] = lhsT[K, M].T @ rhs[K, N], accumulated in PSUM."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def _sizes():
    return (nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax,
            nl.tile_size.gemm_moving_fmax)


def _check(lhsT, rhs, tiles_m=1, tiles_n=1, tiles_k=1):
    """The shapes must be whole blocks of tiles (as the tutorial's kernels assume)."""
    k_size, m_size = lhsT.shape
    tm, tk, tn = _sizes()
    for name, size, block in (('M', m_size, tm * tiles_m), ('K', k_size, tk * tiles_k),
                              ('N', rhs.shape[1], tn * tiles_n)):
        if size % block:
            raise ValueError(f'matmul: {name}={size} is not a multiple of its block of {block}')
    if rhs.shape[0] != k_size:
        raise ValueError(f'matmul: lhsT is {lhsT.shape} but rhs is {rhs.shape} (K differs)')


def _result(lhsT, rhs):
    return nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Step 1: for each output tile, load a lhsT and a rhs tile per k and accumulate."""
    result = _result(lhsT, rhs)
    tiled_into(lhsT, rhs, result)
    return result


def tiled_into(lhsT, rhs, result):
    """Step 1's body, writing `result` (as ffnn uses it)."""
    _check(lhsT, rhs)
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    for m in nl.affine_range(m_size // tm):
        for n in nl.affine_range(n_size // tn):
            res_psum = nl.zeros((tm, tn), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // tk):
                lhsT_tile = nl.ndarray((tk, tm), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((tk, tn), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * tk:(k + 1) * tk, m * tm:(m + 1) * tm])
                rhs_tile[...] = nl.load(rhs[k * tk:(k + 1) * tk, n * tn:(n + 1) * tn])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * tm:(m + 1) * tm, n * tn:(n + 1) * tn], value=res_sb)


def blocked_into(lhsT, rhs, result, tiles_m, tiles_n):
    """Steps 2 and 3: the K tiles of lhsT loaded once per block of tiles_m output rows, those
    of rhs once per block of tiles_n output columns, then the products of the block."""
    _check(lhsT, rhs, tiles_m, tiles_n)
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    kt = k_size // tk
    for m2 in nl.affine_range(m_size // (tm * tiles_m)):
        lhsT_tiles = nl.ndarray((tiles_m, kt, nl.par_dim(tk), tm), dtype=lhsT.dtype,
                                buffer=nl.sbuf)
        for bm in nl.affine_range(tiles_m):
            m0 = (m2 * tiles_m + bm) * tm
            for k in nl.affine_range(kt):
                lhsT_tiles[bm, k] = nl.load(lhsT[k * tk:(k + 1) * tk, m0:m0 + tm])
        for n2 in nl.affine_range(n_size // (tn * tiles_n)):
            rhs_tiles = nl.ndarray((tiles_n, kt, nl.par_dim(tk), tn), dtype=rhs.dtype,
                                   buffer=nl.sbuf)
            for bn in nl.affine_range(tiles_n):
                n0 = (n2 * tiles_n + bn) * tn
                for k in nl.affine_range(kt):
                    rhs_tiles[bn, k] = nl.load(rhs[k * tk:(k + 1) * tk, n0:n0 + tn])
            for bm in nl.affine_range(tiles_m):
                for bn in nl.affine_range(tiles_n):
                    res_psum = nl.zeros((tm, tn), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(kt):
                        res_psum += nl.matmul(lhsT_tiles[bm, k], rhs_tiles[bn, k],
                                              transpose_x=True)
                    res_sb = nl.copy(res_psum, dtype=result.dtype)
                    m0 = (m2 * tiles_m + bm) * tm
                    n0 = (n2 * tiles_n + bn) * tn
                    nl.store(result[m0:m0 + tm, n0:n0 + tn], value=res_sb)


@nki.jit
def matmul_hoist_load(lhsT, rhs):
    """Step 2: loads hoisted out of the n loop (lhsT) and shared by the k loop."""
    result = _result(lhsT, rhs)
    blocked_into(lhsT, rhs, result, 1, 1)
    return result


@nki.jit
def matmul_block_free_dimension(lhsT, rhs):
    """Step 3: 2 x 2 output tiles per block (BLOCK_M = 256, BLOCK_N = 1024)."""
    result = _result(lhsT, rhs)
    blocked_into(lhsT, rhs, result, 2, 2)
    return result


@nki.jit
def matmul_fully_optimized(lhsT, rhs, tiles_in_block_m=16, tiles_in_block_n=2,
                           tiles_in_block_k=8):
    """Step 4: n blocks, then K blocks in sequence (the rhs block loaded once per K block), then
    m blocks; partial results accumulate in SBUF across K blocks and are stored at the end."""
    result = _result(lhsT, rhs)
    fully_optimized_into(lhsT, rhs, result, tiles_in_block_m, tiles_in_block_n,
                         tiles_in_block_k)
    return result


def fully_optimized_into(lhsT, rhs, result, tiles_in_block_m=16, tiles_in_block_n=2,
                         tiles_in_block_k=8):
    """Step 4's body, writing `result`."""
    _check(lhsT, rhs, tiles_in_block_m, tiles_in_block_n, tiles_in_block_k)
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    tm, tk, tn = _sizes()
    block_m, block_n = tm * tiles_in_block_m, tn * tiles_in_block_n
    block_k = tk * tiles_in_block_k
    nbm, nbn, nbk = m_size // block_m, n_size // block_n, k_size // block_k
    for n2 in nl.affine_range(nbn):
        result_tiles = nl.zeros((nbm, tiles_in_block_m, nl.par_dim(tm), block_n),
                                dtype=result.dtype, buffer=nl.sbuf)
        for k2 in nl.sequential_range(nbk):
            rhs_tiles = nl.ndarray((tiles_in_block_k, nl.par_dim(tk), block_n),
                                   dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(tiles_in_block_k):
                k0 = (k2 * tiles_in_block_k + bk) * tk
                rhs_tiles[bk] = nl.load(rhs[k0:k0 + tk, n2 * block_n:(n2 + 1) * block_n])
            for m2 in nl.affine_range(nbm):
                lhsT_tiles = nl.ndarray((tiles_in_block_k, nl.par_dim(tk), block_m),
                                        dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(tiles_in_block_k):
                    k0 = (k2 * tiles_in_block_k + bk) * tk
                    lhsT_tiles[bk] = nl.load(lhsT[k0:k0 + tk,
                                                  m2 * block_m:(m2 + 1) * block_m])
                for bn in nl.affine_range(tiles_in_block_n):
                    for bm in nl.affine_range(tiles_in_block_m):
                        res_tile = nl.zeros((tm, tn), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_in_block_k):
                            res_tile += nl.matmul(lhsT_tiles[bk, :, bm * tm:(bm + 1) * tm],
                                                  rhs_tiles[bk, :, bn * tn:(bn + 1) * tn],
                                                  transpose_x=True)
                        acc = result_tiles[m2, bm, :, bn * tn:(bn + 1) * tn]
                        result_tiles[m2, bm, :, bn * tn:(bn + 1) * tn] = nl.add(res_tile, acc)
        for m2 in nl.affine_range(nbm):
            for bm in nl.affine_range(tiles_in_block_m):
                m0 = (m2 * tiles_in_block_m + bm) * tm
                nl.store(result[m0:m0 + tm, n2 * block_n:(n2 + 1) * block_n],
                         value=result_tiles[m2, bm])


if __name__ == '__main__':
    # Each step against numpy at a small shape (bf16 inputs rounded as the device rounds
    # them), then each step's latency at the tutorial's shape M1 (4096 x 8192 x 8192 bf16).
    import numpy as np
    import neuronxcc.nki.typing as nt
    from trnsim.nki import as_bfloat16

    rng = np.random.default_rng(0)
    lhsT = as_bfloat16(rng.uniform(-1, 1, (1024, 2048)))
    rhs = as_bfloat16(rng.uniform(-1, 1, (1024, 2048)))
    want = np.asarray(lhsT, np.float64).T @ np.asarray(rhs, np.float64)
    steps = (matmul_tiled, matmul_hoist_load, matmul_block_free_dimension,
             matmul_fully_optimized)
    for kernel in steps:
        np.testing.assert_allclose(np.asarray(kernel(lhsT, rhs), np.float64), want, rtol=2e-2,
                                   atol=0.3)
    for kernel in steps:
        bench = nki.benchmark(kernel, warmup=1, iters=1)
        bench(nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16])
        print(f'{kernel.__name__} M1: '
              f'{bench.benchmark_result.nc_latency.get_latency_percentile(50):.1f} us')

"""The project's NKI versions of CS149's vector_add kernels (workloads.md, "vector_add"),
written from the documented NKI API. Each returns the sum of two 1-D HBM vectors."""

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_naive(a_vec, b_vec):
    """The whole vectors as one (n, 1) tile each: only valid for n <= 128."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    a = nl.load(a_vec)
    b = nl.load(b_vec)
    nl.store(out, value=nl.add(a, b))
    return out


@nki.jit
def vector_add_tiled(a_vec, b_vec, row_chunk=1):
    """row_chunk rows (partitions) of one element per iteration."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    n = a_vec.shape[0]
    for m in nl.affine_range(n // row_chunk):
        rows = slice(m * row_chunk, (m + 1) * row_chunk)
        a = nl.load(a_vec[rows])
        b = nl.load(b_vec[rows])
        nl.store(out[rows], value=nl.add(a, b))
    return out


@nki.jit
def vector_add_stream(a_vec, b_vec, free_dim=2):
    """2024 edition: the vector as (n / (128 free_dim), 128, free_dim); tile m is one block."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    tiles = a_vec.shape[0] // (p * free_dim)
    a3 = a_vec.reshape((tiles, p, free_dim))
    b3 = b_vec.reshape((tiles, p, free_dim))
    o3 = out.reshape((tiles, p, free_dim))
    for m in nl.affine_range(tiles):
        a = nl.load(a3[m])
        b = nl.load(b3[m])
        nl.store(o3[m], value=nl.add(a, b))
    return out


@nki.jit
def vector_add_stream_strided(a_vec, b_vec, free_dim=2):
    """2025 edition: the vector as (128, n / 128); tile m is the column slice m (strided)."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    cols = a_vec.shape[0] // p
    a2 = a_vec.reshape((p, cols))
    b2 = b_vec.reshape((p, cols))
    o2 = out.reshape((p, cols))
    i_p = nl.arange(p)[:, None]
    i_f = nl.arange(free_dim)[None, :]
    for m in nl.affine_range(cols // free_dim):
        a = nl.load(a2[i_p, m * free_dim + i_f])
        b = nl.load(b2[i_p, m * free_dim + i_f])
        nl.store(o2[i_p, m * free_dim + i_f], value=nl.add(a, b))
    return out


@nki.compiler.skip_middle_end_transformations
@nki.jit
def vector_add_stream_isa(a_vec, b_vec, free_dim=2):
    """2025 ISA style of the strided stream: dma_copy and tensor_tensor, program order."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    cols = a_vec.shape[0] // p
    a2 = a_vec.reshape((p, cols))
    b2 = b_vec.reshape((p, cols))
    o2 = out.reshape((p, cols))
    for m in nl.affine_range(cols // free_dim):
        part = nl.ds(m * free_dim, free_dim)
        a = nl.ndarray((p, free_dim), dtype=a_vec.dtype, buffer=nl.sbuf)
        b = nl.ndarray((p, free_dim), dtype=a_vec.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=a2[:, part])
        nisa.dma_copy(dst=b, src=b2[:, part])
        res = nisa.tensor_tensor(a, b, op=nl.add)
        nisa.dma_copy(dst=o2[:, part], src=res)
    return out


@nki.compiler.skip_middle_end_transformations
@nki.jit
def vector_add_tiled_isa(a_vec, b_vec, row_chunk=1):
    """2025 ISA style of the tiled kernel: row_chunk partitions of one element per iteration."""
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    n = a_vec.shape[0]
    for m in nl.affine_range(n // row_chunk):
        rows = nl.ds(m * row_chunk, row_chunk)
        a = nl.ndarray((row_chunk, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        b = nl.ndarray((row_chunk, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=a_vec[rows])
        nisa.dma_copy(dst=b, src=b_vec[rows])
        res = nisa.tensor_tensor(a, b, op=nl.add)
        nisa.dma_copy(dst=out[rows], src=res)
    return out


def _direct(a_vec, b_vec, free_dim, buffers, bad):
    out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
    p = nl.tile_size.pmax
    tiles = a_vec.shape[0] // (p * free_dim)
    a3 = a_vec.reshape((tiles, p, free_dim))
    b3 = b_vec.reshape((tiles, p, free_dim))
    o3 = out.reshape((tiles, p, free_dim))
    span = buffers * free_dim * 4  # bytes per partition of `buffers` float32 tiles
    a_t = nl.ndarray((tiles, nl.par_dim(p), free_dim), dtype=a_vec.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(buffers,)))
    b_t = nl.ndarray((tiles, nl.par_dim(p), free_dim), dtype=a_vec.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0 if bad else span,
                                               num_free_tiles=(buffers,)))
    r_t = nl.ndarray((tiles, nl.par_dim(p), free_dim), dtype=a_vec.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0 if bad else 2 * span,
                                               num_free_tiles=(buffers,)))
    for m in nl.affine_range(tiles):
        a_t[m] = nl.load(a3[m])
        b_t[m] = nl.load(b3[m])
        r_t[m] = nl.add(a_t[m], b_t[m])
        nl.store(o3[m], value=r_t[m])
    return out


@nki.jit
def vector_add_direct_alloc(a_vec, b_vec, free_dim=1000, buffers=4):
    """2024: `buffers` physical buffers per tensor (modulo allocation) at distinct offsets."""
    return _direct(a_vec, b_vec, free_dim, buffers, False)


@nki.jit
def vector_add_alloc_bad(a_vec, b_vec, free_dim=1000, buffers=4):
    """As direct_alloc with all three tensors at SBUF offset 0: a wrong result on hardware."""
    return _direct(a_vec, b_vec, free_dim, buffers, True)


if __name__ == '__main__':
    # A small check of every variant against numpy, then each one's latency on the model.
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0, 1, 25600).astype(np.float32) for _ in range(2))
    runs = [(vector_add_tiled, {'row_chunk': 128}), (vector_add_tiled_isa, {'row_chunk': 128}),
            (vector_add_stream, {'free_dim': 200}), (vector_add_stream_strided, {'free_dim': 100}),
            (vector_add_stream_isa, {'free_dim': 50})]
    for kernel, kwargs in runs:
        np.testing.assert_allclose(kernel(a, b, **kwargs), a + b, rtol=1e-6)
    big = [rng.uniform(0, 1, 256000).astype(np.float32) for _ in range(2)]
    np.testing.assert_allclose(vector_add_direct_alloc(*big), big[0] + big[1], rtol=1e-6)
    for kernel, kwargs in runs:
        bench = nki.benchmark(kernel, warmup=1, iters=1)
        bench(a, b, **kwargs)
        print(f'{kernel.__name__} {kwargs}: '
              f'{bench.benchmark_result.nc_latency.get_latency_percentile(50):.2f} us')

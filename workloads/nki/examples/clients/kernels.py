"""The kernels the client examples run (NKI 0.7, written here): a scaled add that also writes
one of its arguments in place, and a matmul whose left operand is transposed on the Tensor
engine first."""

import nki.isa as nisa
import nki.language as nl


def scaled_add(a, b, out):
    """out[...] = a + b (an argument written in place); returns 2 a. By 128-row tiles, each
    logical core (nl.program_id) its share of them when launched on two."""
    share = a.shape[0] // nl.num_programs(axes=0)
    twice = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for k in range(share // 128):
        rows = slice(nl.program_id(0) * share + k * 128, nl.program_id(0) * share + (k + 1) * 128)
        ta = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((128, a.shape[1]), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a[rows, :])
        nisa.dma_copy(dst=tb, src=b[rows, :])
        t = nl.ndarray(ta.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=t, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[rows, :], src=t)
        nisa.tensor_scalar(dst=t, data=ta, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=twice[rows, :], src=t)
    return twice


def transposed_matmul(a, b):
    """a [128, 128] and b [128, N]: returns a @ b. nc_matmul contracts over partitions
    (stationary.T @ moving), so a is transposed on the Tensor engine first."""
    n = b.shape[1]
    out = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray((128, n), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    at_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=at_psum, data=ta)
    at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=at, src=at_psum)
    acc = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=at, moving=tb)
    res = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


if __name__ == '__main__':  # the kernels' values against numpy: scripts/nki kernels.py
    import numpy as np

    import nki

    rng = np.random.default_rng(5)
    a, b = rng.random((256, 64), dtype=np.float32), rng.random((256, 64), dtype=np.float32)
    out = np.zeros_like(a)
    np.testing.assert_allclose(nki.simulate(scaled_add)(a, b, out), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    m, n = rng.random((128, 128), dtype=np.float32), rng.random((128, 256), dtype=np.float32)
    np.testing.assert_allclose(nki.simulate(transposed_matmul)(m, n), m @ n, rtol=1e-4)
    print('kernels: values right')

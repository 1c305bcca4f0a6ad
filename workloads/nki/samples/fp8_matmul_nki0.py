"""An fp8 matrix product in NKI 0.x: float8_e4m3 operands made with numpy, nc_matmul into a
float32 PSUM tile (products accumulated over K), run with nki.simulate, whose returned object
also holds the model's latency."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def product(lhsT, rhs):
    k, m = lhsT.shape
    n = rhs.shape[1]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for kt in nl.affine_range(k // 128):
        a = nl.ndarray((128, m), dtype=lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, n), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(a, lhsT[kt * 128:(kt + 1) * 128, :])
        nisa.dma_copy(b, rhs[kt * 128:(kt + 1) * 128, :])
        nisa.nc_matmul(acc, a, b)
    res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nisa.dma_copy(out, res)
    return out


def main():
    rng = np.random.default_rng(2)
    fp8 = np.dtype(nl.float8_e4m3)
    lhsT = rng.uniform(-2, 2, (512, 128)).astype(fp8)
    rhs = rng.uniform(-2, 2, (512, 256)).astype(fp8)
    sim = nki.simulate(product)
    got = sim(lhsT, rhs)
    want = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    print(f'fp8_matmul_nki0: values match; model latency {sim.latency_us:.2f} us')


if __name__ == '__main__':
    main()

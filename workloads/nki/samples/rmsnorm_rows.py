"""RMS normalisation of the rows of x (beta 1), y = x / sqrt(mean(x^2) + eps) * g, with the
weight row g broadcast across partitions; bfloat16 inputs through ml_dtypes, as harnesses make
them, compared with a float32 reference."""

import ml_dtypes
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm(x, g, eps=1e-6):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, width = x.shape
    weight = nl.load(g).broadcast_to((128, width))
    for i in nl.affine_range(rows // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :], dtype=x.dtype)
        sq = nl.multiply(t, t, dtype=nl.float32)
        ms = nl.sum(sq, axis=[1], dtype=nl.float32) * (1.0 / width)
        inv = nl.rsqrt(nl.add(ms, eps))
        y = nl.multiply(nl.multiply(t, inv, dtype=nl.float32), weight, dtype=x.dtype)
        nl.store(out[i * 128:(i + 1) * 128, :], value=y)
    return out


def main():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 384)).astype(ml_dtypes.bfloat16)
    g = rng.uniform(0.5, 1.5, (1, 384)).astype(ml_dtypes.bfloat16)
    got = rmsnorm(x, g).astype(np.float32)
    xf, gf = x.astype(np.float32), g.astype(np.float32)
    want = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * gf
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    print('rmsnorm_rows: values match')


if __name__ == '__main__':
    main()

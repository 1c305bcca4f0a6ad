"""Two fp32 elementwise kernels written as one instruction a step, the trn1 points NS1 and NS2
(calibration/hardware-points.csv): NKIBench's SiLU and AdamW baselines as AccelOpt profiled
them on trn1, where the Vector engine is the busiest engine.

The structure is written here from the points' description (docs/results.md, "Where the
engines' time goes"; no code is taken from the benchmark):
- silu: x [128, 32, 7168]; per one of 32 x 7 blocks, one load of [128, 1024], then per half of
  512 columns: exp(-x) on the Scalar engine, + 1 (a tensor_scalar left to the compiler), its
  reciprocal (nisa.reciprocal, the Vector engine) and x times that (a tensor_tensor) into the
  block's output tile; one store of the block. 235 MB moved.
- adamw: theta, g, m, v of [10944, 2048]; per one of 86 row tiles (the last of 64 rows, masked)
  and 2 halves of 1024 columns, four loads, then per half of 512 columns: the update in single
  steps (seven scalings or additions of a constant left to the compiler, a square root on the
  Scalar engine, a reciprocal and six tensor_tensors on the Vector engine); one store of the
  new theta. 448 MB moved.

usage: scripts/nki [--config trn1] workloads/nki/examples/elementwise_steps.py silu|adamw
"""
import sys

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

HALF = 512


@nki.jit
def silu(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    width = 2 * HALF
    zero = nl.zeros((x.shape[0], 1), dtype=nl.float32)
    for i in nl.affine_range(x.shape[1]):
        for j in nl.affine_range(x.shape[2] // width):
            block = nl.load(x[:, i, j * width:(j + 1) * width])
            result = nl.ndarray((x.shape[0], width), dtype=x.dtype, buffer=nl.sbuf)
            for h in nl.affine_range(2):
                part = block[:, h * HALF:(h + 1) * HALF]
                e = nisa.activation(op=nl.exp, data=part, bias=zero, scale=-1.0)
                d = nisa.tensor_scalar(data=e, op0=nl.add, operand0=1.0)
                r = nisa.reciprocal(data=d)
                result[:, h * HALF:(h + 1) * HALF] = nl.multiply(part, r)
            nl.store(out[:, i, j * width:(j + 1) * width], value=result)
    return out


@nki.jit
def adamw(theta, g, m, v):
    rows, cols = theta.shape
    out = nl.ndarray(theta.shape, dtype=theta.dtype, buffer=nl.shared_hbm)
    width = 2 * HALF
    ip = nl.arange(128)[:, None]
    jf = nl.arange(width)[None, :]
    zero = nl.zeros((128, 1), dtype=nl.float32)
    for i in nl.affine_range((rows + 127) // 128):
        inside = i * 128 + ip < rows
        for j in nl.affine_range(cols // width):
            at = (i * 128 + ip, j * width + jf)
            t_in, g_in = nl.load(theta[at], mask=inside), nl.load(g[at], mask=inside)
            m_in, v_in = nl.load(m[at], mask=inside), nl.load(v[at], mask=inside)
            result = nl.ndarray((128, width), dtype=theta.dtype, buffer=nl.sbuf)
            for h in nl.affine_range(2):
                cut = (ip, h * HALF + nl.arange(HALF)[None, :])
                t, gh, mh, vh = t_in[cut], g_in[cut], m_in[cut], v_in[cut]
                decay = nisa.tensor_scalar(data=t, op0=nl.multiply, operand0=1e-5, mask=inside)
                kept = nl.subtract(t, decay, mask=inside)
                m1 = nisa.tensor_scalar(data=mh, op0=nl.multiply, operand0=0.9, mask=inside)
                m2 = nisa.tensor_scalar(data=gh, op0=nl.multiply, operand0=0.1, mask=inside)
                m_new = nl.add(m1, m2, mask=inside)
                step = nisa.tensor_scalar(data=m_new, op0=nl.multiply, operand0=0.01,
                                          mask=inside)
                v1 = nisa.tensor_scalar(data=vh, op0=nl.multiply, operand0=0.999, mask=inside)
                g1 = nisa.tensor_scalar(data=gh, op0=nl.multiply, operand0=0.001, mask=inside)
                g2 = nl.multiply(g1, gh, mask=inside)
                v_new = nl.add(v1, g2, mask=inside)
                root = nisa.activation(op=nl.sqrt, data=v_new, bias=zero, scale=1000.0,
                                       mask=inside)
                eps = nisa.tensor_scalar(data=root, op0=nl.add, operand0=1e-8, mask=inside)
                inv = nisa.reciprocal(data=eps, mask=inside)
                change = nl.multiply(step, inv, mask=inside)
                result[cut] = nl.subtract(kept, change, mask=inside)
            nl.store(out[at], value=result, mask=inside)
    return out


def main(argv):
    f32 = nl.float32
    if 'adamw' in argv:
        bench = nki.benchmark(warmup=2, iters=10)(adamw)
        bench(*[nt.tensor[[10944, 2048], f32] for _ in range(4)])
    elif 'silu' in argv:
        bench = nki.benchmark(warmup=2, iters=10)(silu)
        bench(nt.tensor[[128, 32, 7168], f32])
    else:  # their values on small shapes, then nothing timed
        rng = np.random.default_rng(5)
        x = rng.uniform(-3, 3, (128, 2, 2048)).astype(np.float32)
        np.testing.assert_allclose(silu(x), x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
        t, g, m, v = (rng.uniform(0.1, 1, (200, 1024)).astype(np.float32) for _ in range(4))
        m_new, v_new = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        want = t * (1 - 1e-5) - 0.01 * m_new / (np.sqrt(1000 * v_new) + 1e-8)
        np.testing.assert_allclose(adamw(t, g, m, v), want, rtol=1e-5, atol=1e-6)
        print('values: as numpy')
        return
    us = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    print(f'Latency: {us:.1f} us (P50)')


if __name__ == '__main__':
    main(sys.argv[1:])

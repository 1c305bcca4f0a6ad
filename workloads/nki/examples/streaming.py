"""Two streaming kernels of known structure, the trn2 points S1 and S2
(calibration/hardware-points.csv): one NeuronCore-v3 alone moving fp32 tensors through HBM.

The structure is written here from the points' description (calibration/README.md; no code is
taken from the measured project):
- silu: x [128, 32, 7168]; per one of 32 slices of the middle axis, one load of [128, 7168],
  one Scalar-engine activation (SiLU) into a second tile and one store. 235 MB moved.
- adamw: four [10944, 2048] tensors (theta, g, m, v) viewed as [128, 171, 1024]; per one of 171
  slices, four loads of [128, 1024], two Scalar-engine activations (square, rsqrt), four
  Vector-engine scalar_tensor_tensor and one store of the updated theta. 448 MB moved.

usage: scripts/nki [--config trn2] workloads/nki/examples/streaming.py silu|adamw
"""
import sys

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt


@nki.jit
def silu(v1):
    out = nl.ndarray(v1.shape, dtype=v1.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(v1.shape[1]):
        x = nl.load(v1[:, i, :])
        y = nisa.activation(op=nl.silu, data=x)
        nl.store(out[:, i, :], value=y)
    return out


@nki.jit
def adamw(theta, g, m, v):
    shape = (128, theta.shape[0] * theta.shape[1] // (128 * 1024), 1024)
    out = nl.ndarray(shape, dtype=theta.dtype, buffer=nl.shared_hbm)
    theta3, g3, m3, v3 = (t.reshape(shape) for t in (theta, g, m, v))
    for j in nl.affine_range(shape[1]):
        t = nl.load(theta3[:, j, :])
        gj = nl.load(g3[:, j, :])
        mj = nl.load(m3[:, j, :])
        vj = nl.load(v3[:, j, :])
        g2 = nisa.activation(op=nl.square, data=gj)
        vhat = nisa.scalar_tensor_tensor(data=vj, op0=nl.multiply, operand0=999.0, op1=nl.add,
                                         operand1=g2)
        r = nisa.activation(op=nl.rsqrt, data=vhat)
        mm = nisa.scalar_tensor_tensor(data=mj, op0=nl.multiply, operand0=9.0, op1=nl.add,
                                       operand1=gj)
        step = nisa.scalar_tensor_tensor(data=mm, op0=nl.multiply, operand0=0.001,
                                         op1=nl.multiply, operand1=r)
        o = nisa.scalar_tensor_tensor(data=t, op0=nl.multiply, operand0=0.99999,
                                      op1=nl.subtract, operand1=step)
        nl.store(out[:, j, :], value=o)
    return out


def main(argv):
    if 'adamw' in argv:
        bench = nki.benchmark(warmup=2, iters=10)(adamw)
        bench(*[nt.tensor[[10944, 2048], nl.float32] for _ in range(4)])
    else:
        bench = nki.benchmark(warmup=2, iters=10)(silu)
        bench(nt.tensor[[128, 32, 7168], nl.float32])
    us = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    print(f'Latency: {us:.1f} us (P50)')


if __name__ == '__main__':
    main(sys.argv[1:])

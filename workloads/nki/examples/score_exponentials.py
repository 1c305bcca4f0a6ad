"""The exponentials of attention scores, two ways, to compare NeuronCore-v4's Vector-engine
exponential with the Scalar engine's: scores q k^T of 512 queries (4 tiles of 128) against 4096
keys (d = 128, bf16), 512 keys per Tensor-engine matmul into PSUM, then exp(scores - 8) and each
row's sum per block (the probabilities stay in SBUF for the next matmul; the sums are stored),
by nisa.activation(op=nl.exp) on the Scalar engine (the only way before NeuronCore-v4) or by
nisa.exponential on the Vector engine (NeuronCore-v4: 4x the Scalar engine's rate).

    scripts/nki --config trn3 workloads/nki/examples/score_exponentials.py --way vector
    scripts/nki --config trn3 workloads/nki/examples/score_exponentials.py --way scalar
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

BLOCK = 512


@nki.jit
def score_exponentials(qt, kt, way):
    d, n = kt.shape
    tiles, blocks = qt.shape[1] // 128, n // BLOCK
    sums = nl.ndarray((128, tiles * blocks), dtype=nl.float32, buffer=nl.shared_hbm)
    q = nl.ndarray(qt.shape, dtype=qt.dtype, buffer=nl.sbuf)
    nisa.dma_copy(q, qt)
    k = nl.ndarray(kt.shape, dtype=kt.dtype, buffer=nl.sbuf)
    nisa.dma_copy(k, kt)
    s = nl.ndarray((128, tiles * blocks), dtype=nl.float32, buffer=nl.sbuf)
    shift = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(shift, -8.0)
    # four PSUM banks and four SBUF tiles in turn, so that matmuls run ahead of the exponentials
    banks = [nl.ndarray((128, BLOCK), dtype=nl.float32, buffer=nl.psum) for _ in range(4)]
    probs = [nl.ndarray((128, BLOCK), dtype=nl.bfloat16, buffer=nl.sbuf) for _ in range(4)]
    for i in range(tiles):
        for j in range(blocks):
            c = i * blocks + j
            scores, e = banks[c % 4], probs[c % 4]
            nisa.nc_matmul(scores, q[:, i * 128:(i + 1) * 128], k[:, j * BLOCK:(j + 1) * BLOCK],
                           accumulate=False)
            if way == 'vector':
                nisa.exponential(dst=e, src=scores, max_value=8.0, reduce_res=s[:, c:c + 1],
                                 reduce_cmd=nisa.reduce_cmd.reset_reduce)
            else:
                nisa.activation(e, nl.exp, scores, bias=shift, reduce_op=nl.add,
                                reduce_res=s[:, c:c + 1], reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.dma_copy(sums, s)
    return sums


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--way', choices=['vector', 'scalar'], default='scalar',
                        help='vector: nisa.exponential (NeuronCore-v4, --config trn3); scalar: '
                        'nisa.activation(op=nl.exp), any NeuronCore (the default)')
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    qt = (rng.standard_normal((128, 512)) / 8).astype(nl.bfloat16)
    kt = (rng.standard_normal((128, 4096)) / 8).astype(nl.bfloat16)
    run = nki.simulate(score_exponentials)
    sums = run(qt, kt, args.way)
    scores = qt.astype(np.float32).T @ kt.astype(np.float32)  # [512 queries, 4096 keys]
    want = np.exp(scores - 8.0).reshape(4, 128, -1, BLOCK).sum(axis=3)  # [tile, q, block]
    want = want.transpose(1, 0, 2).reshape(128, -1)
    assert np.allclose(sums, want, rtol=2e-2), 'wrong sums'
    print(f'score exponentials ({args.way} engine): {run.latency_us:.2f} us')


if __name__ == '__main__':
    main()

"""A chain of dependent work on 4 tiles of [128, 512] (each loaded, put through 8 activations on
the Scalar engine, stored) while the weights of a next phase, [128, 8192] fp32 (4 MiB), are
prefetched into SBUF, to compare NeuronCore-v4's DMA quality of service with what a kernel gets
without it: with --priority 3 the prefetch is of the lowest level, so each of the chain's loads
takes the DMA engines before the prefetch's transfers still waiting (the chain starts at once
and the prefetch fills the gaps); without it (and before NeuronCore-v4), the chain's first load
waits for the whole prefetch, rung before it.

    scripts/nki --config trn3 workloads/nki/examples/dma_priority.py --priority 3
    scripts/nki --config trn3 workloads/nki/examples/dma_priority.py
    scripts/nki --config trn2 workloads/nki/examples/dma_priority.py
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

CHUNK = 2048  # the prefetch's columns per transfer
STEPS = 8  # activations per tile of the chain


@nki.jit
def chain_with_prefetch(x, weights, priority):
    count, rows, width = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.ndarray(weights.shape, dtype=nl.float32, buffer=nl.sbuf)
    for j in range(weights.shape[1] // CHUNK):  # the next phase's weights, rung first
        nisa.dma_copy(dst=w[:, j * CHUNK:(j + 1) * CHUNK],
                      src=weights[:, j * CHUNK:(j + 1) * CHUNK], priority=priority)
    for k in range(count):
        t = nl.ndarray((rows, width), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[k])
        for _ in range(STEPS):
            nisa.activation(dst=t, op=nl.tanh, data=t)
        nisa.dma_copy(dst=out[k], src=t)
    s = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=w, axis=1)  # the next phase starts
    nisa.dma_copy(dst=sums, src=s)
    return out, sums


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--priority', type=int, choices=[0, 1, 2, 3], default=None,
                        help="the prefetch's DMA priority= (NeuronCore-v4; 0 the highest, the "
                        'level of every other transfer; default: none given)')
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 128, 512)).astype(np.float32)
    weights = rng.standard_normal((128, 8192)).astype(np.float32)
    run = nki.simulate(chain_with_prefetch)
    out, sums = run(x, weights, args.priority)
    want = x
    for _ in range(STEPS):
        want = np.tanh(want)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-6), 'wrong values'
    assert np.allclose(sums[:, 0], weights.sum(axis=1), rtol=1e-4, atol=1e-3), 'wrong sums'
    level = 'none' if args.priority is None else args.priority
    print(f'chain_with_prefetch (prefetch priority {level}): {run.latency_us:.2f} us')


if __name__ == '__main__':
    main()

"""The sum of 32 fp32 tiles of [128, 2048] in HBM (a gradient accumulation), two ways, to
compare the DMA engines' read-add-write into SBUF with the Vector engine's add: each tile added
into one of four accumulators in SBUF in turn, by nisa.dma_compute(dst=acc, srcs=[acc, tile])
(a DMA that reads the accumulator, adds in fp32 and writes it back: at a copy's rate on
NeuronCore-v4, half of it before) or by a load into a buffer and nisa.tensor_tensor on the
Vector engine (any NeuronCore); the four accumulators are then added on the Vector engine.

    scripts/nki --config trn3 workloads/nki/examples/dma_accumulate.py --way dma
    scripts/nki --config trn3 workloads/nki/examples/dma_accumulate.py --way engine
    scripts/nki --config trn2 workloads/nki/examples/dma_accumulate.py --way dma
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

ACCUMULATORS = 4


@nki.jit
def accumulate(x, way):
    count, rows, width = x.shape
    out = nl.ndarray((rows, width), dtype=nl.float32, buffer=nl.shared_hbm)
    accs = [nl.ndarray((rows, width), dtype=nl.float32, buffer=nl.sbuf)
            for _ in range(ACCUMULATORS)]
    bufs = [nl.ndarray((rows, width), dtype=nl.float32, buffer=nl.sbuf)
            for _ in range(ACCUMULATORS)]
    for a in range(ACCUMULATORS):  # the first tiles start the accumulators
        nisa.dma_copy(dst=accs[a], src=x[a])
    for k in range(ACCUMULATORS, count):
        acc = accs[k % ACCUMULATORS]
        if way == 'dma':
            nisa.dma_compute(dst=acc, srcs=[acc, x[k]], reduce_op=nl.add)
        else:
            buf = bufs[k % ACCUMULATORS]
            nisa.dma_copy(dst=buf, src=x[k])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=buf, op=nl.add)
    for a in range(1, ACCUMULATORS):
        nisa.tensor_tensor(dst=accs[0], data1=accs[0], data2=accs[a], op=nl.add)
    nisa.dma_copy(dst=out, src=accs[0])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--way', choices=['dma', 'engine'], default='engine',
                        help='dma: nisa.dma_compute read-add-writes; engine: loads and Vector-'
                        'engine adds (the default)')
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((32, 128, 2048)).astype(np.float32)
    run = nki.simulate(accumulate)
    got = run(x, args.way)
    assert np.allclose(got, x.sum(axis=0), rtol=1e-4, atol=1e-4), 'wrong sum'
    moved = x.nbytes / (run.latency_us * 1e3)
    print(f'accumulate ({args.way}): {run.latency_us:.2f} us, {moved:.0f} GB/s of tiles')


if __name__ == '__main__':
    main()

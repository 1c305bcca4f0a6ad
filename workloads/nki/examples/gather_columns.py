"""exp of 64 scattered columns of each of 4 fp32 tiles of [128, 512] (the columns a router or a
top-k picked, their offsets in an int32 tensor), two ways, to compare NeuronCore-v4's tensor
indirection with what a kernel does without it: one nisa.activation per tile reading the
columns through `tile.indirect(offsets)` (a gather by the engine, the offsets read from SBUF),
or one nisa.activation per column (each column one instruction, its offset known when the
kernel is traced: the way before NeuronCore-v4, where non-uniform columns are not one access
pattern).

    scripts/nki --config trn3 workloads/nki/examples/gather_columns.py --way indirect
    scripts/nki --config trn3 workloads/nki/examples/gather_columns.py --way columns
    scripts/nki --config trn2 workloads/nki/examples/gather_columns.py --way columns
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

COLUMNS = 64
GROUP = 16  # the Scalar engine's partition group: offset i is at index[i % 16, i // 16]


@nki.jit
def gather_exp(x, index, offsets, way):
    count, rows, width = x.shape
    out = nl.ndarray((count, rows, COLUMNS), dtype=nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((rows, COLUMNS // GROUP), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=index)
    for k in range(count):
        t = nl.ndarray((rows, width), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[k])
        g = nl.ndarray((rows, COLUMNS), dtype=nl.float32, buffer=nl.sbuf)
        if way == 'indirect':
            nisa.activation(dst=g, op=nl.exp, data=t.indirect(idx, COLUMNS))
        else:
            for i, c in enumerate(offsets):
                nisa.activation(dst=g[:, i:i + 1], op=nl.exp, data=t[:, c:c + 1])
        nisa.dma_copy(dst=out[k], src=g)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--way', choices=['indirect', 'columns'], default='columns',
                        help='indirect: one activation per tile through tile.indirect() '
                        '(NeuronCore-v4); columns: one activation per column (the default)')
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 128, 512)).astype(np.float32)
    offsets = np.sort(rng.choice(512, COLUMNS, replace=False))
    # offset i at [i % 16, i // 16] (the rows past 16 unused, as the view reads them)
    index = np.zeros((128, COLUMNS // GROUP), dtype=np.int32)
    index[np.arange(COLUMNS) % GROUP, np.arange(COLUMNS) // GROUP] = offsets
    run = nki.simulate(gather_exp)
    got = run(x, index, tuple(int(c) for c in offsets), args.way)
    assert np.allclose(got, np.exp(x[:, :, offsets]), rtol=1e-5), 'wrong values'
    print(f'gather_exp ({args.way}): {run.latency_us:.2f} us for {x.shape[0]} x {COLUMNS} '
          'columns')


if __name__ == '__main__':
    main()

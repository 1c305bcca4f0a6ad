"""A weight w [K, 128] in HBM brought into SBUF transposed, [128, K] (the layout a matmul's
stationary operand wants when w is stored row-major), two ways, to compare the DMA engines'
transpose with the Tensor engine's: one nisa.dma_transpose of all of w (its rows the tile's
128 partitions, at core.dma.transpose_rate of a plain copy's rate: 0.58 on trn1, 0.9 on trn2
and trn3), or plain loads of [128, 128] blocks, each transposed by the Tensor engine into PSUM
(a matmul by the identity) and copied back into SBUF by the Vector engine.

    scripts/nki --config trn1 workloads/nki/examples/dma_transpose.py --way dma
    scripts/nki --config trn1 workloads/nki/examples/dma_transpose.py --way pe
    scripts/nki --config trn2 workloads/nki/examples/dma_transpose.py --way dma
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

BLOCK = 128


@nki.jit
def transposed(w, way):
    k_size, m_size = w.shape
    out = nl.ndarray((m_size, k_size), dtype=w.dtype, buffer=nl.shared_hbm)
    wt = nl.ndarray((m_size, k_size), dtype=w.dtype, buffer=nl.sbuf)
    if way == 'dma':
        nisa.dma_transpose(dst=wt, src=w)
    else:
        for b in range(k_size // BLOCK):
            rows = nl.ndarray((BLOCK, m_size), dtype=w.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=rows, src=w[b * BLOCK:(b + 1) * BLOCK, :])
            ps = nl.ndarray((m_size, BLOCK), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=ps, data=rows)
            nisa.tensor_copy(dst=wt[:, b * BLOCK:(b + 1) * BLOCK], src=ps)
    nisa.dma_copy(dst=out, src=wt)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--way', choices=['dma', 'pe'], default='dma',
                        help='dma: one DMA transpose (the default); pe: plain loads and '
                        'Tensor-engine transposes')
    parser.add_argument('--rows', type=int, default=4096, help="K, w's rows (a multiple of 128)")
    args = parser.parse_args()
    w = np.random.default_rng(0).standard_normal((args.rows, 128)).astype(np.float32)
    run = nki.simulate(transposed)
    got = run(w, args.way)
    assert np.array_equal(got, w.T), 'wrong transpose'
    print(f'transpose ({args.way}): {run.latency_us:.2f} us for {w.nbytes >> 10} KiB')


if __name__ == '__main__':
    main()

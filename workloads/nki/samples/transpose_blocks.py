"""Each row's [F1, F2] block transposed inside SBUF with index expressions, in the style of the
NKI transpose2d tutorial (beta 1), on bfloat16 values made with .astype(nl.bfloat16)."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def transpose_rows(x, f1, f2):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(x.shape[0])[:, None, None]
    i1 = nl.arange(f1)[None, :, None]
    i2 = nl.arange(f2)[None, None, :]
    tile = nl.load(x)
    flipped = nl.ndarray((x.shape[0], f2, f1), dtype=x.dtype, buffer=nl.sbuf)
    flipped[ip, i2, i1] = nl.copy(tile[ip, i1 * f2 + i2])
    nl.store(out, value=flipped.reshape((x.shape[0], f1 * f2)))
    return out


def main():
    f1, f2 = 8, 6
    x = np.arange(128 * f1 * f2, dtype=np.float32).reshape(128, f1 * f2) / 7
    xb = x.astype(nl.bfloat16)
    got = transpose_rows(xb, f1, f2)
    want = xb.reshape(128, f1, f2).transpose(0, 2, 1).reshape(128, f1 * f2)
    assert got.dtype == xb.dtype
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32)), 'wrong values'
    print('transpose_blocks: values match')


if __name__ == '__main__':
    main()

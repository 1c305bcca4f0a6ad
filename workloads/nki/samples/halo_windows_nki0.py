"""Halo windows of an NCHW activation (NKI 0.x): each [C, K, W] window of rows h0 .. h0+K is
read from HBM with one DMA of several runs, and its inner columns averaged over the window
rows; torch CPU tensors in and out through nki.simulate, as AWS's simulator takes them."""

import numpy as np
import torch

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def window_sums(x, k):
    n, c, h, w = x.shape
    out = nl.ndarray((n, c, h - k + 1, w - 2), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in range(n):
        for h0 in range(h - k + 1):
            win = nl.ndarray((c, k, w), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(win, x[b, :, h0:h0 + k, :])
            acc = nl.ndarray((c, 1, w - 2), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(acc, win[:, 0:1, 1:w - 1])
            for r in range(1, k):
                nisa.tensor_tensor(acc, acc, win[:, r:r + 1, 1:w - 1], nl.add)
            res = nl.ndarray((c, 1, w - 2), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(res, acc)
            nisa.dma_copy(out[b, :, h0:h0 + 1, :], res)
    return out


def main():
    torch.manual_seed(3)
    x = torch.rand(2, 64, 6, 10)
    got = nki.simulate(window_sums)(x, 3)
    assert isinstance(got, torch.Tensor)
    xs = x.numpy()
    want = np.stack([xs[:, :, r:r + 4, 1:9] for r in range(3)]).sum(axis=0)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    print('halo_windows_nki0: values match')


if __name__ == '__main__':
    main()

"""PSUM accumulation as the API reference defines it (SDK 2.30-2.33): nisa.nc_matmul(dst, ...,
accumulate=None) overwrites a PSUM location on its first write and adds on later ones,
accumulate=True always adds, False always overwrites; the APIs that write a dst without reading
it overwrite. The matmul tutorial in the NKI 0.x spelling (every step) gives numpy's values, and
its first step the C++ driver's program. A direct call and nki.benchmark check the same
things."""

import unittest

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
import matmul_nki0
import nki_support as s
from trnsim.nki import KernelError


def _product_into(acc, a, b, accumulate=None):
    """nc_matmul of a [128, 128] x [128, 512] pair of HBM tensors into acc."""
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=b)
    if accumulate is None:
        nisa.nc_matmul(dst=acc, stationary=x, moving=y)
    else:
        nisa.nc_matmul(dst=acc, stationary=x, moving=y, accumulate=accumulate)


def _store(out, acc):
    t = nl.ndarray(acc.shape, dtype=out.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t, src=acc)
    nisa.dma_copy(dst=out, src=t)


@nki.jit
def three_writes(a0, b0, a1, b1, a2, b2, first, second, third):
    """Three products into one PSUM tile, with the given accumulate flags."""
    out = nl.ndarray((a0.shape[1], b0.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((a0.shape[1], b0.shape[1]), dtype=nl.float32, buffer=nl.psum)
    _product_into(acc, a0, b0, first)
    _product_into(acc, a1, b1, second)
    _product_into(acc, a2, b2, third)
    _store(out, acc)
    return out


def _operands(a, b):
    """a and b in SBUF, and a PSUM tile for their product."""
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=b)
    return x, y, nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)


@nki.jit
def halves(a, b):
    """Products into each half of a PSUM tile's columns, then into the whole: the halves are
    first writes, the whole a later one."""
    n = b.shape[1]
    out = nl.ndarray((a.shape[1], n), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y, acc = _operands(a, b)
    nisa.nc_matmul(dst=acc[:, 0:n // 2], stationary=x, moving=y[:, 0:n // 2])
    nisa.nc_matmul(dst=acc[:, n // 2:n], stationary=x, moving=y[:, n // 2:n])
    nisa.nc_matmul(dst=acc, stationary=x, moving=y)
    _store(out, acc)
    return out


@nki.jit
def half_then_whole(a, b):
    """A product into half of a PSUM tile, then one into the whole with accumulate=None: half
    of its locations were written and half not."""
    n = b.shape[1]
    out = nl.ndarray((a.shape[1], n), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y, acc = _operands(a, b)
    nisa.nc_matmul(dst=acc[:, 0:n // 2], stationary=x, moving=y[:, 0:n // 2])
    nisa.nc_matmul(dst=acc, stationary=x, moving=y)  # the error's line
    _store(out, acc)
    return out


@nki.jit
def reused_psum(a, b, reset_each_row):
    """One PSUM tile declared before the row loop and reused by every row: with the default
    accumulation its locations keep adding up across rows; with accumulate=(k > 0) each row
    starts afresh."""
    kt = a.shape[0] // 128
    rows = a.shape[1] // 128
    out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, b.shape[1]), dtype=nl.float32, buffer=nl.psum)
    for m in nl.affine_range(rows):
        for k in nl.affine_range(kt):
            x = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
            y = nl.ndarray((128, b.shape[1]), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=x, src=a[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            nisa.dma_copy(dst=y, src=b[k * 128:(k + 1) * 128, :])
            if reset_each_row:
                nisa.nc_matmul(dst=acc, stationary=x, moving=y, accumulate=k > 0)
            else:
                nisa.nc_matmul(dst=acc, stationary=x, moving=y)
        _store(out[m * 128:(m + 1) * 128, :], acc)
    return out


@nki.jit
def overwrites(a, b):
    """Each API that writes dst without reading it, twice into one tile: the second write's
    values are what remains."""
    outs = [nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(5)]
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=y, src=b)
    t = [nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf) for _ in range(4)]
    for src in (x, y):
        nisa.tensor_copy(dst=t[0], src=src)
        nisa.tensor_tensor(dst=t[1], data1=src, data2=src, op=nl.add)
        nisa.tensor_scalar(dst=t[2], data=src, op0=nl.multiply, operand0=3.0)
        nisa.activation(dst=t[3], op=nl.exp, data=src)
    flipped = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.psum)
    for src in (x, y):
        nisa.nc_transpose(dst=flipped, data=src)
    for out, tile in zip(outs, t):
        nisa.dma_copy(dst=out, src=tile)
    _store(outs[4], flipped)
    return tuple(outs)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


class Accumulate(unittest.TestCase):

    def setUp(self):
        self.pairs = [(rand(128, 128, seed=2 * i), rand(128, 512, seed=2 * i + 1))
                      for i in range(3)]
        self.products = [a.T @ b for a, b in self.pairs]

    def run_flags(self, *flags):
        args = [x for pair in self.pairs for x in pair]
        return three_writes(*args, *flags)

    def test_default_overwrites_first_then_adds(self):
        p = self.products
        np.testing.assert_allclose(self.run_flags(None, None, None), p[0] + p[1] + p[2],
                                   rtol=1e-5, atol=1e-4)

    def test_false_overwrites(self):
        p = self.products
        np.testing.assert_allclose(self.run_flags(None, None, False), p[2], rtol=1e-5,
                                   atol=1e-4)
        np.testing.assert_allclose(self.run_flags(None, False, None), p[1] + p[2], rtol=1e-5,
                                   atol=1e-4)

    def test_true_adds(self):
        p = self.products
        np.testing.assert_allclose(self.run_flags(False, True, True), p[0] + p[1] + p[2],
                                   rtol=1e-5, atol=1e-4)

    def test_per_location(self):
        a, b = self.pairs[0]
        np.testing.assert_allclose(halves(a, b), 2 * (a.T @ b), rtol=1e-5, atol=1e-4)

    def test_partly_written_is_an_error(self):
        a, b = self.pairs[0]
        with self.assertRaisesRegex(KernelError, r'nki_accumulate_test.py:\d+: nisa.nc_matmul: '
                                    'accumulate=None into a PSUM tile part of which'):
            half_then_whole(a, b)

    def test_psum_reused_across_rows(self):
        a, b = rand(256, 256, seed=5), rand(256, 512, seed=6)
        rows = [a[:, m * 128:(m + 1) * 128].T @ b for m in range(2)]
        np.testing.assert_allclose(reused_psum(a, b, False),
                                   np.concatenate([rows[0], rows[0] + rows[1]]), rtol=1e-5,
                                   atol=1e-4)
        np.testing.assert_allclose(reused_psum(a, b, True), np.concatenate(rows), rtol=1e-5,
                                   atol=1e-4)

    def test_other_dst_writers_overwrite(self):
        a, b = rand(128, 128, seed=8), rand(128, 128, seed=9)
        copied, doubled, tripled, exped, flipped = overwrites(a, b)
        np.testing.assert_array_equal(copied, b)
        np.testing.assert_allclose(doubled, b + b, rtol=1e-6)
        np.testing.assert_allclose(tripled, 3 * b, rtol=1e-6)
        np.testing.assert_allclose(exped, np.exp(b), rtol=1e-6)
        np.testing.assert_array_equal(flipped, b.T)


class TutorialSteps(unittest.TestCase):
    """The matmul tutorial in the NKI 0.x spelling: numpy's values in every step."""

    def check(self, kernel, m, k, n):
        lhsT, rhs = rand(k, m, seed=3), rand(k, n, seed=4)
        np.testing.assert_allclose(kernel(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)

    def test_tiled(self):
        self.check(matmul_nki0.matmul_tiled, 256, 512, 1024)

    def test_hoist_load(self):
        self.check(matmul_nki0.matmul_hoist_load, 256, 512, 1024)

    def test_block_free_dimension(self):
        self.check(matmul_nki0.matmul_block_free_dimension, 512, 512, 2048)

    def test_fully_optimized(self):
        self.check(matmul_nki0.matmul_fully_optimized, 1024, 512, 2048)

    def test_tiled_is_the_drivers_program(self):
        """Step 1 records what the C++ driver builds: the same instructions and transfers, and
        the same latency."""
        lhsT, rhs = s.random_inputs((512, 256), (512, 1024), dtype='bfloat16', lo=-1.0)
        c = s.Comparison('matmul tiled (NKI 0.x)', s.frontend_stats(matmul_nki0.matmul_tiled,
                                                                    lhsT, rhs),
                         s.driver_stats('matmul', {'variant': 'tiled', 'm': 256, 'k': 512,
                                                   'n': 1024}))
        c.report()
        self.assertEqual(c.front, c.driver)
        self.assertEqual(c.front_us, c.driver_us)


@nki.jit
def mixed_matmul(a, b):
    out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y, acc = _operands(a, b)
    nisa.nc_matmul(dst=acc, stationary=x, moving=y)
    _store(out, acc)
    return out


class SameChecks(unittest.TestCase):
    """A kernel the model cannot run fails the same way, at the same line, whether called
    directly or benchmarked."""

    def test_mixed_dtypes(self):
        a = rand(128, 128)
        b = s.random_inputs((128, 512), dtype='bfloat16')[0]
        errors = []
        for run in (lambda: mixed_matmul(a, b), lambda: nki.benchmark(mixed_matmul)(a, b)):
            with self.assertRaises(KernelError) as e:
                run()
            errors.append(str(e.exception))
        self.assertEqual(errors[0], errors[1])
        # the model's rule (models/engines/tensor_engine.cpp), at the call's line
        self.assertRegex(errors[0], r'nki_accumulate_test.py:\d+: nisa.nc_matmul: matmul on pe: '
                         r'matmul operands have different dtypes \(stationary float32, moving '
                         r'bfloat16\)')


if __name__ == '__main__':
    unittest.main()

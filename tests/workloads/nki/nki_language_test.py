"""The language around the instructions, as real kernels use it: tile arithmetic operators,
masks that keep nothing, SPMD launches, casts, annotations; values against numpy, in each
edition."""

import unittest

import numpy as np

import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import nki_support as s
from trnsim.nki import KernelError


@nki1.jit
def operators_beta1(x):
    """-(2 - ((t / 2 + 1) * t - t)) and t / 4: the operators of tiles and results."""
    a = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    b = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    u = (t / 2 + 1) * t - t
    nl1.store(a, value=-(2 - u))
    nl1.store(b, value=t / 4)
    return a, b


@nki0.jit
def operators_nki0(x):
    a = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    b = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    u = (t / 2 + 1) * t - t
    nisa0.dma_copy(a, -(2 - u))
    nisa0.dma_copy(b, t / 4)
    return a, b


@nki1.jit
def divide_by_three(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    nl1.store(out, value=nl1.load(x) / 3)
    return out


@nki1.jit
def ragged_rows_beta1(x):
    """Rows in tiles of 128, the loop one tile longer than needed: its last iteration's mask
    keeps nothing."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    n = x.shape[0]
    ip = nl1.arange(128)[:, None]
    jf = nl1.arange(x.shape[1])[None, :]
    for i in nl1.affine_range((n + 127) // 128 + 1):
        t = nl1.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < n))
        nl1.store(out[i * 128 + ip, jf], value=nl1.multiply(t, 2.0, mask=(i * 128 + ip < n)),
                  mask=(i * 128 + ip < n))
    return out


@nki1.jit
def reads_nothing(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    ip = nl1.arange(128)[:, None]
    t = nl1.load(x, mask=(ip < 0))
    nl1.store(out, value=nl1.exp(t))
    return out


class Operators(unittest.TestCase):

    def test_tile_operators(self):
        (x,) = s.random_inputs((128, 64), lo=-2.0, hi=2.0)
        u = (x / np.float32(2) + np.float32(1)) * x - x
        for kernel in (operators_beta1, operators_nki0):
            a, b = kernel(x)
            np.testing.assert_array_equal(a, -(np.float32(2) - u))
            np.testing.assert_array_equal(b, x * np.float32(0.25))
            self.assertEqual(s.stat(s.frontend_stats(kernel, x), 'engines.dve.instructions'), 7)

    def test_a_division_that_is_not_a_multiply_says_so(self):
        with self.assertRaisesRegex(KernelError, r'a division by 3 \(a power of two is a '
                                    'multiply'):
            divide_by_three(np.ones((128, 4), np.float32))


class Masks(unittest.TestCase):

    def test_a_mask_that_keeps_nothing_records_nothing(self):
        (x,) = s.random_inputs((300, 8))
        np.testing.assert_array_equal(ragged_rows_beta1(x), 2 * x)
        stats = s.frontend_stats(ragged_rows_beta1, x)
        self.assertEqual(s.stat(stats, 'dma.transfers'), 6)  # 3 loads, 3 stores
        self.assertEqual(s.stat(stats, 'engines.dve.instructions'), 3)

    def test_reading_what_nothing_computed_is_an_error(self):
        with self.assertRaisesRegex(KernelError, 'nl.exp: operand is the result of an '
                                    'operation whose mask keeps nothing'):
            reads_nothing(np.ones((128, 4), np.float32))


if __name__ == '__main__':
    unittest.main()

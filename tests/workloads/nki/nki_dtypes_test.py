"""bfloat16, the 8-bit floats and the small integers as numpy dtypes (ml_dtypes' names and
formats; trnsim's own module when ml_dtypes is absent), and kernels of each edition that take,
cast, multiply and return them, against numpy on the same values."""

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import ml_dtypes
import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0

SOURCE = os.environ['TRNSIM_SOURCE_DIR']
ALIASES = os.path.join(SOURCE, 'workloads', 'nki', 'python', 'trnsim', '_alias_packages')
PYTHON = os.path.join(SOURCE, 'workloads', 'nki', 'python')

BF16 = np.dtype('bfloat16')
E4M3 = np.dtype('float8_e4m3')
E4M3FN = np.dtype('float8_e4m3fn')
E5M2 = np.dtype('float8_e5m2')
FP8 = (E4M3, E4M3FN, E5M2)


def f32(x):
    return np.asarray(x).astype(np.float32)


class NumpyDtypes(unittest.TestCase):

    def test_the_names_are_numpy_dtypes(self):
        self.assertEqual(nl1.bfloat16, BF16)
        self.assertEqual(np.dtype(nl0.float8_e4m3), E4M3)
        self.assertEqual(np.dtype(ml_dtypes.bfloat16), BF16)
        self.assertEqual(np.dtype(nl0.int8), np.int8)
        self.assertEqual(np.dtype(nl0.uint8), np.uint8)
        self.assertEqual([BF16.itemsize] + [t.itemsize for t in FP8], [2, 1, 1, 1])
        x = np.ones(3, np.float32).astype(nl1.bfloat16)
        self.assertEqual(x.dtype, BF16)
        self.assertEqual(x.dtype.name, 'bfloat16')
        self.assertEqual(np.zeros(2, dtype='float8_e5m2').dtype, E5M2)

    def test_casts_round_to_nearest_even(self):
        one, ulp = np.float32(1), np.float32(2.0 ** -7)
        got = f32(np.array([one + ulp / 2, one + 3 * ulp / 2, -2.5, np.nan], np.float32)
                  .astype(BF16))
        np.testing.assert_array_equal(got[:3], [1, one + 2 * ulp, -2.5])
        self.assertTrue(np.isnan(got[3]))
        x = np.array([1.0625, 1.1875, 240, 247, 248, 1000, 448, 464, 465, 57344, 61440],
                     np.float32)
        np.testing.assert_array_equal(f32(x[:6].astype(E4M3)),
                                      [1, 1.25, 240, 240, np.inf, np.inf])
        np.testing.assert_array_equal(f32(x[6:8].astype(E4M3FN)), [448, 448])
        self.assertTrue(np.isnan(f32(x[8:9].astype(E4M3FN))[0]))  # no infinity: NaN
        np.testing.assert_array_equal(f32(x[9:].astype(E5M2)), [57344, np.inf])
        # subnormals: multiples of 2^-9 (e4m3), 2^-16 (e5m2)
        np.testing.assert_array_equal(f32(np.float32([2.0 ** -9, 2.0 ** -10]).astype(E4M3)),
                                      [2.0 ** -9, 0])
        self.assertEqual(f32(np.float32(2.0 ** -16).astype(E5M2)), 2.0 ** -16)

    def test_every_bit_pattern_round_trips(self):
        for t, finite in ((E4M3, 240), (E4M3FN, 254), (E5M2, 248)):
            bits = np.arange(256, dtype=np.uint8)
            values = bits.view(t).astype(np.float32)
            keep = ~np.isnan(values)
            self.assertEqual(int(np.isfinite(values).sum()), finite, t)
            np.testing.assert_array_equal(values[keep].astype(t).view(np.uint8), bits[keep])
        bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
        values = bits.view(BF16).astype(np.float32)
        keep = ~np.isnan(values)
        np.testing.assert_array_equal(values[keep].astype(BF16).view(np.uint16), bits[keep])
        np.testing.assert_array_equal(values, (bits.astype(np.uint32) << 16).view(np.float32))

    def test_arithmetic_a_reference_computation_uses(self):
        rng = np.random.default_rng(3)
        a = rng.uniform(-2, 2, (64, 32)).astype(BF16)
        b = rng.uniform(-2, 2, (64, 32)).astype(BF16)
        s = a + b
        self.assertEqual(s.dtype, BF16)
        np.testing.assert_array_equal(f32(s), (f32(a) + f32(b)).astype(BF16).astype(np.float32))
        self.assertEqual((a * 2).dtype, BF16)
        self.assertEqual(np.result_type(BF16, np.float32), np.float32)
        self.assertEqual((a + np.float32(1)).dtype, np.float32)
        np.testing.assert_allclose(f32(a.T @ b), f32(a).T @ f32(b), rtol=2e-2, atol=0.1)
        self.assertTrue(np.allclose(a, f32(a)))
        np.testing.assert_allclose(a, f32(a))
        self.assertEqual(np.maximum(a, b).dtype, BF16)
        np.testing.assert_array_equal(np.sort(f32(a), axis=None), f32(np.sort(a, axis=None)))
        self.assertTrue(((a < b) == (f32(a) < f32(b))).all())
        self.assertAlmostEqual(float(f32(a).sum()), float(np.sum(f32(a))), places=3)
        self.assertEqual(float(BF16.type(3.0)), 3.0)
        self.assertEqual(repr(E4M3.type(1.0)), '1.0')
        np.testing.assert_array_equal(np.abs(np.float32([-1.5]).astype(E4M3)).astype(np.float32),
                                      [1.5])

    def test_finfo_and_iinfo(self):
        for t, top, eps in ((ml_dtypes.bfloat16, 3.3895313892515355e38, 2 ** -7),
                            (ml_dtypes.float8_e4m3, 240, 0.125),
                            (ml_dtypes.float8_e4m3fn, 448, 0.125),
                            (ml_dtypes.float8_e5m2, 57344, 0.25),
                            (ml_dtypes.float4_e2m1fn, 6, 0.5)):
            info = ml_dtypes.finfo(t)
            self.assertEqual(float(info.max), top, t)
            self.assertEqual(float(info.eps), eps, t)
            self.assertEqual(float(info.min), -top, t)
        self.assertEqual(float(ml_dtypes.finfo(ml_dtypes.float8_e4m3).smallest_subnormal),
                         2.0 ** -9)
        self.assertEqual(ml_dtypes.finfo(np.float32).max, np.finfo(np.float32).max)
        self.assertEqual(ml_dtypes.iinfo(np.int8).min, -128)

    def test_fp4_rounds_to_its_eight_magnitudes(self):
        x = np.array([0.2, 0.3, 0.75, 1.3, 2.4, 3.6, 5.1, -4.9, 7.0], np.float32)
        got = x.astype(ml_dtypes.float4_e2m1fn)
        self.assertEqual(got.dtype.itemsize, 1)
        np.testing.assert_array_equal(got.astype(np.float32),
                                      [0.0, 0.5, 1.0, 1.5, 2.0, 4.0, 6.0, -4.0, 6.0])

    def test_the_real_ml_dtypes_wins_when_installed(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, 'ml_dtypes'))
            with open(os.path.join(tmp, 'ml_dtypes', '__init__.py'), 'w') as f:
                f.write('REAL = True\n')
            env = dict(os.environ, PYTHONPATH=f'{ALIASES}:{tmp}:{PYTHON}')
            r = subprocess.run([sys.executable, '-c', 'import ml_dtypes; print(ml_dtypes.REAL)'],
                               env=env, capture_output=True, text=True)
            self.assertEqual(r.stdout.strip(), 'True', r.stderr)


@nki1.jit
def scaled_sum_beta1(a, b):
    """(a + b) * 3 in a's dtype: two Vector-engine instructions, each rounding to the tile's
    dtype."""
    out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    s = nl1.add(nl1.load(a), nl1.load(b))
    nl1.store(out, value=nl1.multiply(s, 3.0))
    return out


@nki0.jit
def scaled_sum_nki0(a, b):
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    x = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
    y = nl0.ndarray(b.shape, dtype=b.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(x, a)
    nisa0.dma_copy(y, b)
    nisa0.tensor_tensor(x, x, y, nl0.add)
    nisa0.tensor_scalar(x, x, nl0.multiply, 3.0)
    nisa0.dma_copy(out, x)
    return out


@nki1.jit
def product_beta1(lhsT, rhs):
    """lhsT.T @ rhs, accumulated in fp32 PSUM and returned in lhsT's dtype."""
    out = nl1.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl1.shared_hbm)
    p = nisa1.nc_matmul(nl1.load(lhsT), nl1.load(rhs))
    nl1.store(out, value=nl1.copy(p, dtype=lhsT.dtype))
    return out


@nki0.jit
def product_nki0(lhsT, rhs):
    out = nl0.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl0.shared_hbm)
    x = nl0.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl0.sbuf)
    y = nl0.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(x, lhsT)
    nisa0.dma_copy(y, rhs)
    acc = nl0.ndarray(out.shape, dtype=nl0.float32, buffer=nl0.psum)
    nisa0.nc_matmul(acc, x, y)
    res = nl0.ndarray(out.shape, dtype=lhsT.dtype, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, acc)
    nisa0.dma_copy(out, res)
    return out


@nki1.jit
def widen_beta1(a, b):
    """a (an integer tile) cast to float32 on the way through the Vector engine, plus b; and
    a * 100 stored back into a's integer type (saturating)."""
    total = nl1.ndarray(a.shape, dtype=nl1.float32, buffer=nl1.shared_hbm)
    big = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    x = nl1.load(a)
    wide = nisa1.tensor_copy(x, dtype=nl1.float32)
    nl1.store(total, value=nl1.add(wide, nl1.load(b)))
    nl1.store(big, value=nl1.multiply(x, 100, dtype=a.dtype))
    return total, big


@nki0.jit
def widen_nki0(a, b):
    total = nl0.ndarray(a.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    big = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    x = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(x, a)
    wide = nl0.ndarray(a.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(wide, x)
    y = nl0.ndarray(b.shape, dtype=b.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(y, b)
    nisa0.tensor_tensor(wide, wide, y, nl0.add)
    nisa0.dma_copy(total, wide)
    scaled = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.tensor_scalar(scaled, x, nl0.multiply, 100)
    nisa0.dma_copy(big, scaled)
    return total, big


@nki0.jit
def repeated_product(lhsT, rhs, mode):
    out = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.shared_hbm)
    a = nl0.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl0.sbuf)
    b = nl0.ndarray((128, 512), dtype=rhs.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(a, lhsT)
    nisa0.dma_copy(b, rhs)
    acc = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.psum)
    for _ in range(4):
        nisa0.nc_matmul(acc, a, b, perf_mode=mode)
    res = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, acc)
    nisa0.dma_copy(out, res)
    return out


class KernelDtypes(unittest.TestCase):

    def setUp(self):
        self.rng = np.random.default_rng(11)

    def test_bfloat16_inputs_made_with_astype(self):
        a = self.rng.uniform(-4, 4, (128, 256)).astype(np.float32)
        b = self.rng.uniform(-4, 4, (128, 256)).astype(np.float32)
        ab, bb = a.astype(nl1.bfloat16), b.astype(ml_dtypes.bfloat16)
        s = (f32(ab) + f32(bb)).astype(BF16).astype(np.float32)
        want = (s * np.float32(3)).astype(BF16)
        for kernel in (scaled_sum_beta1, scaled_sum_nki0):
            out = kernel(ab, bb)
            self.assertEqual(out.dtype, BF16, kernel)
            np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))

    def test_fp8_inputs_and_outputs(self):
        for t in FP8:
            a = self.rng.uniform(-8, 8, (128, 64)).astype(t)
            b = self.rng.uniform(-8, 8, (128, 64)).astype(t)
            s = (f32(a) + f32(b)).astype(t).astype(np.float32)
            want = (s * np.float32(3)).astype(t)
            for kernel in (scaled_sum_beta1, scaled_sum_nki0):
                out = kernel(a, b)
                self.assertEqual(out.dtype, t)
                np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8),
                                              err_msg=f'{t} {kernel}')

    def test_matmuls_of_each_float_type_accumulate_in_fp32(self):
        for t in (BF16, np.dtype(np.float16)) + FP8:
            lhsT = self.rng.uniform(-1, 1, (128, 96)).astype(t)
            rhs = self.rng.uniform(-1, 1, (128, 512)).astype(t)
            exact = f32(lhsT).astype(np.float64).T @ f32(rhs).astype(np.float64)
            for kernel in (product_beta1, product_nki0):
                out = kernel(lhsT, rhs)
                self.assertEqual(out.dtype, t)
                # the fp32 sum rounded once to t: within half a unit of t of the exact product
                # (the unit at the smallest normal's exponent below it: subnormals)
                man, low = {BF16: (7, -126), np.dtype(np.float16): (10, -14), E4M3: (3, -6),
                            E4M3FN: (3, -6), E5M2: (2, -14)}[t]
                exponent = np.maximum(np.floor(np.log2(np.abs(exact) + 1e-30)), low)
                spacing = 2.0 ** (exponent - man)
                err = np.abs(f32(out) - exact)
                self.assertTrue((err <= spacing / 2 + 1e-5).all(), f'{t} {kernel} {err.max()}')

    def test_fp8_double_row_matmuls_take_half_the_tensor_engine_time(self):
        lhsT = self.rng.uniform(-1, 1, (128, 128)).astype(E4M3)
        rhs = self.rng.uniform(-1, 1, (128, 512)).astype(E4M3)
        busy = {}
        for mode in (nisa0.matmul_perf_mode.none, nisa0.matmul_perf_mode.double_row):
            sim = nki0.simulate(repeated_product)
            np.testing.assert_allclose(sim(lhsT, rhs, mode), 4 * (f32(lhsT).T @ f32(rhs)),
                                       rtol=1e-5, atol=1e-5)
            busy[mode] = sim.stats['engines']['pe']['busy_ns']
        self.assertAlmostEqual(busy['double_row'], busy['none'] / 2, delta=busy['none'] * 0.01)
        with self.assertRaisesRegex(Exception, r'nki_dtypes_test.py:\d+: nisa.nc_matmul: matmul '
                                    r'on pe: double-row mode needs fp8 operands'):
            repeated_product(lhsT.astype(BF16), rhs.astype(BF16), 'double_row')

    def test_integer_inputs(self):
        for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32):
            lo = np.iinfo(t).min if np.iinfo(t).min < 0 else 0
            a = self.rng.integers(max(lo, -100), 100, (128, 32)).astype(t)
            b = self.rng.uniform(0, 1, (128, 32)).astype(np.float32)
            info = np.iinfo(t)
            for kernel in (widen_beta1, widen_nki0):
                total, big = kernel(a, b)
                np.testing.assert_array_equal(total, a.astype(np.float32) + b)
                self.assertEqual(big.dtype, t)
                np.testing.assert_array_equal(
                    big, np.clip(a.astype(np.int64) * 100, info.min, info.max).astype(t))

    def test_a_dtype_nki_does_not_have(self):
        with self.assertRaisesRegex(nki1.KernelError if hasattr(nki1, 'KernelError')
                                    else Exception, 'dtype float64 is not a dtype of NKI'):
            scaled_sum_beta1(np.zeros((128, 4)), np.zeros((128, 4)))


if __name__ == '__main__':
    unittest.main()

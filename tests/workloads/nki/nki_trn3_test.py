"""NeuronCore-v4 (run on trn3): nisa.exponential's values (the frontend's against numpy, and the
model's functional Vector engine against the frontend), its sums through the Vector engine's
reduce registers, its error before NeuronCore-v4, and the documented gain of the example that
compares it with the Scalar engine's exp; bf16 matmul results in PSUM and moving free sizes up
to the whole PSUM (4096 fp32, 8192 bf16); DMA read-add-writes into SBUF (nisa.dma_compute,
NKI 0.2's dma_copy dst_rmw_op): their values, their errors and the example's gain (the copy
rate on NeuronCore-v4 against half of it on trn2, and the Vector engine's adds)."""

import os
import re
import subprocess
import unittest

import numpy as np

import trnsim.nki as nki
from trnsim.nki import _runner
import nki as nki0
import nki.isa as nisa
import nki.language as nl

from nki_functional_test import model_and_frontend

nki.configure(functional=True)
SOURCE = os.environ['TRNSIM_SOURCE_DIR']


@nki0.jit
def exponentials(x):
    """exp(x - rowmax) with the row sums (reset_reduce), then exp(x - 0.5) summed twice onto the
    Vector engine's registers (reduce): the values and both sums, as float32."""
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=e, src=t, max_value=m, reduce_res=s,
                     reduce_cmd=nisa.reduce_cmd.reset_reduce)
    f = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s2 = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=f, src=t, max_value=0.5, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                     reduce_res=s2)
    nisa.exponential(dst=f, src=t, max_value=0.5, reduce_res=s2,
                     reduce_cmd=nisa.reduce_cmd.reduce)
    outs = []
    for r in (e, s, s2):
        o = nl.ndarray(r.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=r)
        outs.append(o)
    return outs


class Exponential(unittest.TestCase):

    def setUp(self):
        if _runner.limits()['isa_version'] < 4:
            self.skipTest('NeuronCore-v4: --config trn3')

    def test_values_and_sums(self):
        x = np.random.default_rng(3).random((128, 64), dtype=np.float32)
        e, s, s2 = exponentials(x)
        want = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(e, want, rtol=1e-6)
        np.testing.assert_allclose(s, want.sum(axis=1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(s2, 2 * np.exp(x - 0.5).sum(axis=1, keepdims=True),
                                   rtol=1e-5)

    def test_a_reset_without_a_result_is_refused(self):
        @nki0.jit
        def reset_only(x):
            t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.exponential(dst=e, src=t, reduce_cmd=nisa.reduce_cmd.reset_reduce)
            o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=e)
            return o
        with self.assertRaisesRegex(nki.KernelError, 'reset_reduce without reduce_res'):
            reset_only(np.ones((128, 8), np.float32))

    def test_the_model_computes_as_the_frontend(self):
        for i, (model, frontend) in enumerate(model_and_frontend(exponentials, (128, 64))):
            np.testing.assert_allclose(model, frontend, rtol=3e-7, err_msg=f'output {i}')

    def test_four_times_the_scalar_engines_rate(self):
        """The example's exponentials on the Vector engine against the Scalar engine's: the
        exponentials' engine time a quarter (MIN_II aside), the kernel faster."""
        times = {}
        for way in ('vector', 'scalar'):
            env = dict(os.environ)
            for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG'):
                env.pop(k, None)
            r = subprocess.run(
                [os.path.join(SOURCE, 'scripts', 'nki'), '--config', 'trn3',
                 os.path.join(SOURCE, 'workloads', 'nki', 'examples', 'score_exponentials.py'),
                 '--way', way], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            times[way] = float(re.search(r'engine\): ([0-9.]+) us', r.stdout).group(1))
        self.assertLess(times['vector'], 0.8 * times['scalar'])


def psum_matmuls(width, psum_dtype):
    """x [128, width] as bf16: x[:, :128].T @ x into a PSUM tile of `psum_dtype` (one matmul
    of the whole width), then the same added onto it, copied out as float32."""
    @nki0.jit
    def kernel(x):
        a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        b = nl.ndarray((128, width), dtype=nl.bfloat16, buffer=nl.sbuf)
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_copy(dst=a, src=t[:, 0:128])
        nisa.tensor_copy(dst=b, src=t)
        ps = nl.ndarray((128, width), dtype=psum_dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=a, moving=b)
        nisa.nc_matmul(dst=ps, stationary=a, moving=b, accumulate=True)
        o = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=ps)
        out = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out
    return kernel


def bf16(v):
    """v rounded to bfloat16 (nearest even), as float32."""
    import ml_dtypes
    return np.asarray(v, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


class Bf16Psum(unittest.TestCase):
    """nisa.nc_matmul into bf16 PSUM: fp32 in the array, rounded to nearest even on the write;
    an accumulation upcasts PSUM, adds in fp32 and rounds again (the Trainium3 guide)."""

    def setUp(self):
        if _runner.limits()['isa_version'] < 4:
            self.skipTest('NeuronCore-v4: --config trn3')

    def test_values_round_on_each_write(self):
        x = np.random.default_rng(5).standard_normal((128, 8192)).astype(np.float32)
        got = psum_matmuls(8192, nl.bfloat16)(x)
        prod = bf16(x[:, :128]).T.astype(np.float64) @ bf16(x).astype(np.float64)
        first = bf16(prod)
        want = bf16(first + prod.astype(np.float32))
        # one bf16 ulp, or the fp32 sums' error where the terms cancel (sums near 0)
        close = np.isclose(got, want, rtol=2 ** -7, atol=1e-4)
        self.assertTrue(close.all(), f'{np.count_nonzero(~close)} values differ')
        # (and not the fp32 sum, rounded once)
        self.assertGreater(np.count_nonzero(got != bf16(2 * prod)), 10)

    def test_fp32_up_to_4096_wide(self):
        x = np.random.default_rng(6).standard_normal((128, 4096)).astype(np.float32)
        got = psum_matmuls(4096, nl.float32)(x)
        want = 2 * (bf16(x[:, :128]).T.astype(np.float64) @ bf16(x).astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)

    def test_the_model_computes_as_the_frontend(self):
        for psum_dtype, width in ((nl.bfloat16, 8192), (nl.float32, 4096)):
            (model, frontend), = model_and_frontend(psum_matmuls(width, psum_dtype),
                                                    (128, width))
            # the same roundings; the fp32 sums may differ in order (one bf16 ulp at most)
            np.testing.assert_allclose(model, frontend, rtol=2 ** -7, atol=1e-6,
                                       err_msg=str(psum_dtype))

    def test_past_the_whole_psum_is_refused(self):
        with self.assertRaisesRegex(nki.KernelError, 'exceeds the 16384 bytes of 8 PSUM banks'):
            psum_matmuls(8192, nl.float32)(np.ones((128, 8192), np.float32))

    def test_one_matmul_per_row_of_8192(self):
        """The whole width is one Tensor-engine instruction (8192 moving columns), in the
        cycles of the matmul formula: max(min(64, M), N) at 2.4 GHz."""
        x = np.ones((128, 8192), np.float32)
        k = nki.benchmark(warmup=0, iters=1)(psum_matmuls(8192, nl.bfloat16))
        k(x)
        pe = k.stats['engines']['pe']
        self.assertEqual(pe['instructions'], 2)
        self.assertAlmostEqual(pe['busy_ns'], 2 * 8192 / 2.4, delta=1.0)


@nki0.jit
def summed_rows(x):
    """x [4 * 128, w] float32: the sum of its four row blocks, by three read-add-writes of x's
    blocks into an SBUF tile of the first, in fp32, and of x as bf16 (the second output) in
    bf16 (the third)."""
    w = x.shape[1]
    t = nl.ndarray((128, w), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, :])
    for k in range(1, 4):
        nisa.dma_compute(dst=t, srcs=[t, x[k * 128:(k + 1) * 128, :]], reduce_op=nl.add)
    out = nl.ndarray((128, w), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    xb = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for k in range(4):
        blk = nl.ndarray((128, w), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=blk, src=x[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=xb[k * 128:(k + 1) * 128, :], src=blk)
    b = nl.ndarray((128, w), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=xb[0:128, :])
    for k in range(1, 4):
        nisa.dma_compute(dst=b, srcs=[xb[k * 128:(k + 1) * 128, :], b], reduce_op=nl.add)
    out_b = nl.ndarray((128, w), dtype=nl.float32, buffer=nl.shared_hbm)
    bf = nl.ndarray((128, w), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=bf, src=b)
    nisa.dma_copy(dst=out_b, src=bf)
    return out, xb, out_b


class DmaReadAddWrite(unittest.TestCase):
    """dst += src by the DMA engines, in fp32 (rounded to dst's dtype on the write)."""

    def test_values_in_fp32_and_bf16(self):
        x = np.random.default_rng(7).standard_normal((512, 96)).astype(np.float32)
        got, _, got_b = summed_rows(x)
        blocks = x.reshape(4, 128, 96)
        want = blocks[0] + blocks[1] + blocks[2] + blocks[3]  # fp32, in this order
        np.testing.assert_array_equal(got, want)
        xb = bf16(blocks)
        acc = xb[0]
        for k in range(1, 4):
            acc = bf16(acc + xb[k])
        np.testing.assert_array_equal(got_b, acc)

    def test_the_model_computes_as_the_frontend(self):
        outs = model_and_frontend(summed_rows, (512, 96))
        for i in (0, 2):  # (the second, x as bf16, is read back as float32 by the helper)
            np.testing.assert_array_equal(*outs[i], err_msg=f'output {i}')

    def test_nki_0_2_spells_it_dma_copy_dst_rmw_op(self):
        from trnsim.nki import _namespaces
        top, subs = _namespaces.namespaces('0.2')
        nisa2, nl2 = subs['isa'], subs['language']

        @top.jit
        def twice(x):
            t = nl2.ndarray(x.shape, dtype=nl2.float32, buffer=nl2.sbuf)
            nisa2.dma_copy(t, x)
            nisa2.dma_copy(t, x, dst_rmw_op=np.add)  # (0.2 has no nl.add)
            out = nl2.ndarray(x.shape, dtype=nl2.float32, buffer=nl2.shared_hbm)
            nisa2.dma_copy(out, t)
            return out
        x = np.random.default_rng(8).standard_normal((128, 32)).astype(np.float32)
        np.testing.assert_array_equal(twice(x), x + x)

    def test_what_it_does_not_do_is_an_error_naming_it(self):
        def kernel_with(call):
            @nki0.jit
            def k(x):
                t = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x)
                call(t, x)
                out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
                nisa.dma_copy(dst=out, src=t)
                return out
            return k
        x = np.ones((128, 32), np.float32)
        cases = [
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, x], reduce_op=nl.multiply),
             'only nl.add is supported'),
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, x], reduce_op=nl.add,
                                           scales=[1.0, 2.0]), 'every value must be 1.0'),
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, x, x], reduce_op=nl.add),
             r'srcs other than \[src\] or \[dst, src\]'),
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, t], reduce_op=nl.add),
             'srcs other than'),
        ]
        for call, message in cases:
            with self.assertRaisesRegex(nki.KernelError, message):
                kernel_with(call)(x)

        @nki0.jit
        def ints(x):
            t = nl.ndarray((128, 32), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            nisa.dma_compute(dst=t, srcs=[t, x], reduce_op=nl.add)
            return x
        with self.assertRaisesRegex(nki.KernelError, 'takes bf16 or fp32, the same for dst and '
                                    r'src \(got int32 and int32\)'):
            ints(np.ones((128, 32), np.int32))

    def test_the_example_gains_the_documented_rate(self):
        """dma_accumulate.py: on trn3 the read-add-writes beat the Vector engine's adds, and run
        at twice trn2's read-add-write rate (its DMA engines' busy time half)."""
        def run(config, way):
            env = dict(os.environ)
            for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG'):
                env.pop(k, None)
            r = subprocess.run(
                [os.path.join(SOURCE, 'scripts', 'nki'), '--config', config,
                 os.path.join(SOURCE, 'workloads', 'nki', 'examples', 'dma_accumulate.py'),
                 '--way', way], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            return float(re.search(r': ([0-9.]+) us', r.stdout).group(1))
        trn3_dma, trn3_engine, trn2_dma = run('trn3', 'dma'), run('trn3', 'engine'), \
            run('trn2', 'dma')
        self.assertLess(trn3_dma, 0.8 * trn3_engine)
        self.assertLess(trn3_dma, 0.6 * trn2_dma)


if __name__ == '__main__':
    unittest.main()

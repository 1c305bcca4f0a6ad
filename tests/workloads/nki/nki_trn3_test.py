"""NeuronCore-v4 (run on trn3): nisa.exponential's values (the frontend's against numpy, and the
model's functional Vector engine against the frontend), its sums through the Vector engine's
reduce registers, its error before NeuronCore-v4, and the documented gain of the example that
compares it with the Scalar engine's exp; bf16 matmul results in PSUM and moving free sizes up
to the whole PSUM (4096 fp32, 8192 bf16); DMA read-add-writes into SBUF (nisa.dma_compute,
NKI 0.2's dma_copy dst_rmw_op): their values, their errors and the example's gain (the copy
rate on NeuronCore-v4 against half of it on trn2, and the Vector engine's adds); MX matmuls
and quantize_mx (values against references written here from the documented formulas, the
model against the frontend, errors, and the example's 4x on the Tensor engine); tensor
indirection (gathers and scatters of columns, the model against the frontend, errors, and the
example's one instruction a tile)."""

import json
import math
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np

import trnsim.nki as nki
from trnsim.nki import _runner
import nki as nki0
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt

from nki_functional_test import model_and_frontend

nki.configure(functional=True)
SOURCE = os.environ['TRNSIM_SOURCE_DIR']


def scripts_nki(args):
    """scripts/nki ARGS as a user runs it (the test's own Python settings dropped)."""
    env = dict(os.environ)
    for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG'):
        env.pop(k, None)
    return subprocess.run([os.path.join(SOURCE, 'scripts', 'nki')] + args, capture_output=True,
                          text=True, env=env)


def run_example(test, name, config, way, option='--way', settings=()):
    """workloads/nki/examples/NAME --way WAY (or OPTION WAY; no option with WAY None) run by
    scripts/nki --config CONFIG (and --set S for each of `settings`), as a user runs it: (its
    first figure in us, its statistics)."""
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, 'stats.json')
        sets = [w for setting in settings for w in ('--set', setting)]
        r = scripts_nki(['--config', config, '--stats-out', stats] + sets +
                        [os.path.join(SOURCE, 'workloads', 'nki', 'examples', name)] +
                        ([option, way] if way is not None else []))
        test.assertEqual(r.returncode, 0, r.stderr)
        with open(stats) as f:
            got = json.load(f)
    return float(re.search(r': ([0-9.]+) us', r.stdout).group(1)), got


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
        times = {way: run_example(self, 'score_exponentials.py', 'trn3', way)[0]
                 for way in ('vector', 'scalar')}
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
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, t], reduce_op=nl.add),
             'dst is among srcs more than once'),
            (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, t[0:64, 0:32]], reduce_op=nl.add),
             'a read-add-write from an on-chip tile'),
        ]
        # several sources: the first copied (unless dst is one), each other added by the DMA
        for call, want in ((lambda t, x: nisa.dma_compute(dst=t, srcs=[x, x, x],
                                                          reduce_op=nl.add), 3),
                           (lambda t, x: nisa.dma_compute(dst=t, srcs=[t, x, x],
                                                          reduce_op=nl.add), 3)):
            np.testing.assert_array_equal(kernel_with(call)(x), want * x)
        for call, message in cases:  # the model's rules (models/isa/matrix.cpp), at the call
            with self.assertRaisesRegex(nki.KernelError, r'nki_trn3_test.py:\d+: nisa\.\w+: .*' +
                                        message):
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
            return run_example(self, 'dma_accumulate.py', config, way)[0]
        trn3_dma, trn3_engine, trn2_dma = run('trn3', 'dma'), run('trn3', 'engine'), \
            run('trn2', 'dma')
        self.assertLess(trn3_dma, 0.8 * trn3_engine)
        self.assertLess(trn3_dma, 0.6 * trn2_dma)


class DmaTranspose(unittest.TestCase):
    """dma_transpose.py: a [4096, 128] weight into SBUF transposed, by one DMA transpose or by
    plain loads and Tensor-engine transposes (the example checks the values itself)."""

    def test_the_dma_transpose_costs_a_copy_over_the_transpose_rate(self):
        """Its DMA engines' time: the transpose's (its copy's over core.dma.transpose_rate) and
        the store's (a copy of the same tile): 2 copies at rate 1, 3 at rate 0.5."""
        def busy(rate):
            _, stats = run_example(self, 'dma_transpose.py', 'trn2', 'dma',
                                   settings=(f'core.dma.transpose_rate={rate}',))
            return stats['dma']['engine_busy_ns']
        self.assertAlmostEqual(busy(0.5) / busy(1), 1.5, places=3)

    def test_on_trn2_the_dma_transpose_beats_the_tensor_engines(self):
        self.assertLess(run_example(self, 'dma_transpose.py', 'trn2', 'dma')[0],
                        0.9 * run_example(self, 'dma_transpose.py', 'trn2', 'pe')[0])


def mx_reference_quantize(x, emax):
    """x [P, 4F] quantized as the SDK 2.32+ reference describes quantize_mx: per 8 partitions x
    4 elements X = 2^(floor(log2 max|x|) - (emax - 1)) (2^-127 for zeros), the values x / X in
    fp8 (nearest even); returns (values [P, F, 4] as float32, exponent [P / 8, F])."""
    import ml_dtypes
    fp8 = ml_dtypes.float8_e4m3fn if emax == 8 else ml_dtypes.float8_e5m2
    P, F4 = x.shape
    out = np.zeros((P, F4 // 4, 4), np.float32)
    exps = np.zeros((P // 8, F4 // 4), np.int64)
    for g in range(P // 8):
        for j in range(F4 // 4):
            block = x[8 * g:8 * g + 8, 4 * j:4 * j + 4].astype(np.float64)
            amax = np.abs(block).max()
            e = int(math.floor(math.log2(amax))) - (emax - 1) if amax > 0 else -127
            exps[g, j] = e
            out[8 * g:8 * g + 8, j, :] = (block / 2.0 ** e).astype(fp8).astype(np.float32)
    return out, exps


def mx_quantized(kernel_out, scale_out, name, P):
    """The packed values and scale exponents a kernel wrote (uint32 bits, uint8 scales)."""
    from trnsim.nki import _dtypes
    vals = _dtypes.unpack_mx(kernel_out.astype(np.int64), name)
    g = np.arange(P // 8)
    return vals, scale_out.astype(np.int64)[32 * (g // 4) + g % 4] - 127


@nki0.jit
def quantize_both(x):
    """x [128, 256] as bf16, quantized to e4m3fn and to e5m2 (bits and scales, as uint32 and
    uint8 outputs)."""
    xb = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=xb, src=t)
    outs = []
    for mx_type in (nl.float8_e4m3fn_x4, nl.float8_e5m2_x4):
        q = nl.ndarray((128, 64), dtype=mx_type, buffer=nl.sbuf)
        sc = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(sc, 0)
        nisa.quantize_mx(dst=q, src=xb, dst_scale=sc)
        bits = nl.ndarray((128, 64), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=bits, src=q)
        scales = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=scales, src=sc)
        outs += [bits, scales]
    return outs


@nki0.jit
def mx_product(x):
    """x [128, 2048] float32: its first 512 columns (as bf16) quantized to e4m3fn as the
    stationary, all of it to e5m2 as the moving; their MX product twice into one PSUM tile
    (the second accumulating), as float32 [128, 512]."""
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    at = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=at, src=t[:, 0:512])
    bt = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=bt, src=t)
    aq = nl.ndarray((128, 128), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    asc = nl.ndarray((128, 128), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=aq, src=at, dst_scale=asc)
    bq = nl.ndarray((128, 512), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    bsc = nl.ndarray((128, 512), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=bq, src=bt, dst_scale=bsc)
    ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=ps, stationary=aq, moving=bq, stationary_scale=asc, moving_scale=bsc)
    nisa.nc_matmul_mx(dst=ps, stationary=aq, moving=bq, stationary_scale=asc, moving_scale=bsc,
                      accumulate=True)
    o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=ps)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki0.jit
def mx_bits_round_trip(x):
    """x [128, 64] float32 as the bits of uint32 (through an int32 view of its values) moved
    into an MX tile and back, and its bytes into an MX scale tile and back: the bits unchanged."""
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1000.0)  # (x in [0, 1): 0-1000)
    ints = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=ints, src=t)
    words = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.hbm)
    nisa.dma_copy(dst=words, src=ints)
    packed = nl.ndarray(x.shape, dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=packed, src=words)
    back = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=back, src=packed)
    small = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.tensor_copy(dst=small, src=t)
    bytes_ = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.hbm)
    nisa.dma_copy(dst=bytes_, src=small)
    scale = nl.ndarray(x.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.dma_copy(dst=scale, src=bytes_)
    back8 = nl.ndarray(x.shape, dtype=nl.uint8, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=back8, src=scale)
    return back, back8


class Mx(unittest.TestCase):
    """nisa.quantize_mx and nisa.nc_matmul_mx (NeuronCore-v4)."""

    def test_dmas_move_mx_types_as_their_bits(self):
        x = np.random.default_rng(11).random((128, 64)).astype(np.float32)
        back, back8 = mx_bits_round_trip(x)
        ints = np.trunc(x * 1000)
        np.testing.assert_array_equal(back, ints.astype(np.uint32))
        np.testing.assert_array_equal(back8, np.minimum(ints, 255).astype(np.uint8))
        # the model's functional DMAs: the same bits (its outputs read as their own dtypes)
        traced = nki.trace_kernel(mx_bits_round_trip, (nt.tensor[[128, 64], nl.float32],), {},
                                  False)
        p = _runner.platform()
        p.run(traced.program, 'kernel')
        seeded = np.frombuffer(_runner.native.region_initial_bytes(traced.program, 'x'),
                               np.float32).reshape(128, 64)
        want, want8 = mx_bits_round_trip(seeded.copy())
        # the returned tensors: the last of each dtype (the uint32 and uint8 of the way are
        # declared before them)
        last = {t.dtype_name: t.name for t, kind, _ in traced.trace.tensors if kind == 'output'}
        got = np.frombuffer(p.read_region(traced.program, last['uint32']),
                            np.uint32).reshape(128, 64)
        got8 = np.frombuffer(p.read_region(traced.program, last['uint8']),
                             np.uint8).reshape(128, 64)
        self.assertTrue(want.any())
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got8, want8)

    def test_quantize_follows_the_documented_scale(self):
        x = np.random.default_rng(9).standard_normal((128, 256)).astype(np.float32) * 3
        x[8:16, 4:8] = 0  # a group of zeros: scale 2^-127
        xb = bf16(x)
        outs = quantize_both(x)
        for (bits, scales), name, emax in zip((outs[0:2], outs[2:4]),
                                              ('float8_e4m3fn_x4', 'float8_e5m2_x4'), (8, 15)):
            vals, exps = mx_quantized(bits, scales, name, 128)
            want_vals, want_exps = mx_reference_quantize(xb, emax)
            np.testing.assert_array_equal(exps, want_exps, err_msg=name)
            np.testing.assert_array_equal(vals, want_vals, err_msg=name)
            self.assertEqual(exps[1, 1], -127)
            # the scale's other partitions keep what they held (0 here)
            rows = np.setdiff1d(np.arange(128), [32 * (g // 4) + g % 4 for g in range(16)])
            self.assertFalse(scales[rows].any())

    def test_the_product_is_the_dequantized_product(self):
        x = np.random.default_rng(10).standard_normal((128, 2048)).astype(np.float32)
        got = mx_product(x)
        xb = bf16(x)
        a, ae = mx_reference_quantize(xb[:, :512], 8)
        b, be = mx_reference_quantize(xb, 15)
        p = np.arange(128)
        a = a * np.ldexp(1.0, ae[p // 8])[..., None]
        b = b * np.ldexp(1.0, be[p // 8])[..., None]
        want = 2 * np.einsum('pmq,pnq->mn', a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
        # and the quantized product is near the exact one
        exact = 2 * np.einsum('pmq,pnq->mn', xb[:, :512].reshape(128, 128, 4),
                              xb.reshape(128, 512, 4))
        self.assertLess(np.linalg.norm(got - exact) / np.linalg.norm(exact), 0.1)

    def test_the_model_computes_as_the_frontend(self):
        (model, frontend), = model_and_frontend(mx_product, (128, 2048))
        np.testing.assert_allclose(model, frontend, rtol=1e-5, atol=1e-4)

    def test_what_it_does_not_take_is_an_error_naming_it(self):
        def kernel_with(call):
            @nki0.jit
            def k(x):
                t = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x)
                call(t)
                return x
            return k
        q = lambda dt=nl.float8_e4m3fn_x4, p=128: nl.ndarray((p, 128), dtype=dt, buffer=nl.sbuf)
        s = lambda dt=nl.uint8, p=128: nl.ndarray((p, 128), dtype=dt, buffer=nl.sbuf)
        cases = [
            (lambda t: nisa.quantize_mx(dst=q(nl.float4_e2m1fn_x4), src=t, dst_scale=s()),
             'quantize_mx writes float8_e4m3fn_x4 or float8_e5m2_x4, not float4_e2m1fn_x4'),
            (lambda t: nisa.quantize_mx(dst=q(), src=t, dst_scale=s(nl.float32)),
             'an MX scale is uint8 or float8_e8m0fnu, not float32'),
            (lambda t: nisa.quantize_mx(dst=q(), src=t, dst_scale=s(p=64)),
             r'the MX scale of data \[128, 128\] spans at least \[100, 128\]'),
            (lambda t: nisa.nc_matmul_mx(dst=nl.ndarray((128, 128), dtype=nl.float32,
                                                        buffer=nl.psum),
                                         stationary=t[:, 0:128], moving=q(),
                                         stationary_scale=s(), moving_scale=s()),
             'matmul_mx multiplies x4-packed MX data .*not bfloat16'),
        ]
        for call, message in cases:  # the model's rules (models/isa/matrix.cpp), at the call
            with self.assertRaisesRegex(nki.KernelError, r'nki_trn3_test.py:\d+: nisa\.\w+: .*' +
                                        message):
                kernel_with(call)(np.ones((128, 512), np.float32).astype(nl.bfloat16))

    def test_the_example_runs_its_matmuls_at_four_times_the_bf16_rate(self):
        """mx_matmul.py: the Tensor engine busy a quarter of the bf16 way's time for the same
        product (a quarter of the instructions, each as long), and the kernel faster."""
        def run(way):
            us, stats = run_example(self, 'mx_matmul.py', 'trn3', way)
            return us, stats['engines']['pe']
        (mx_us, mx_pe), (bf16_us, bf16_pe) = run('mx'), run('bf16')
        self.assertEqual(4 * mx_pe['instructions'], bf16_pe['instructions'])
        self.assertAlmostEqual(bf16_pe['busy_ns'] / mx_pe['busy_ns'], 4.0, places=6)
        self.assertLess(mx_us, bf16_us)



@nki0.jit
def gathered(x):
    """exp of 32 columns of x [128, 64] gathered through offsets 63 - (2 (i % 16) + i // 16)
    (an iota [p, q] = 2p + q, reversed), a matmul of gathered bf16 columns (offsets in groups
    of 32 partitions on the Tensor engine), and the exps scattered back into zeros."""
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    idx = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=idx, pattern=[[1, 2]], offset=0, channel_multiplier=2)
    nisa.tensor_scalar(dst=idx, data=idx, op0=nl.multiply, operand0=-1, op1=nl.add, operand1=63)
    g = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=g, op=nl.exp, data=t.indirect(idx, 32))
    s = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=s, value=0.0)
    nisa.tensor_copy(dst=s.indirect(idx, 32), src=g)
    b = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=b, src=t)
    ps = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=b.indirect(idx, 32), moving=b)
    m = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=m, src=ps)
    # 32 results scattered into columns 0 and 1, 16 times each (offset i // 16), with the sum
    # of the 32 computed
    dup = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=dup, pattern=[[1, 2]], offset=0, channel_multiplier=0)
    d = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=d, value=0.0)
    r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=d.indirect(dup, 32), op=nl.exp, data=t[:, 0:32],
                           reduce_op=nl.add, reduce_res=r)
    outs = []
    for r in (g, s, m, d, r):
        o = nl.ndarray(r.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=r)
        outs.append(o)
    return outs


def snake(count, group, index):
    """Offset i of an indirect view: index[(i // (G K)) G + i % G, (i // G) % K]."""
    i = np.arange(count)
    k = index.shape[1]
    return index[(i // (group * k)) * group + i % group, (i // group) % k]


class Indirection(unittest.TestCase):
    """Tensor indirection (NeuronCore-v4's tile.indirect(index, num_elem)): gathers and
    scatters of columns at offsets in SBUF, in the documented snake over groups of 16
    partitions (32 on the Tensor engine); the model's engines against the frontend; errors."""

    def test_gathers_and_scatters_the_documented_columns(self):
        x = np.random.default_rng(12).random((128, 64), dtype=np.float32)
        g, s, m, d, r = gathered(x)
        index = 63 - (2 * np.arange(128)[:, None] + np.arange(2)[None, :])
        cols = snake(32, 16, index)
        self.assertEqual(sorted(cols), list(range(32, 64)))  # (a permutation of 32..63)
        np.testing.assert_allclose(g, np.exp(x[:, cols]), rtol=1e-6)
        want = np.zeros_like(x)
        want[:, cols] = np.exp(x[:, cols])
        np.testing.assert_allclose(s, want, rtol=1e-6)
        xb = bf16(x)
        np.testing.assert_allclose(m, xb[:, snake(32, 32, index)].T @ xb, rtol=1e-5)
        # a scatter keeps the last of equal offsets; the reduction is of the values computed
        e = np.exp(x[:, 0:32])
        np.testing.assert_allclose(d[:, 0:2], e[:, [15, 31]], rtol=1e-6)
        np.testing.assert_array_equal(d[:, 2:], 0)
        np.testing.assert_allclose(r[:, 0], e.sum(axis=1), rtol=1e-5)

    def test_the_model_computes_as_the_frontend(self):
        for i, (model, frontend) in enumerate(model_and_frontend(gathered, (128, 64))):
            np.testing.assert_allclose(model, frontend, rtol=3e-7, err_msg=f'output {i}')

    def test_an_offset_out_of_the_tile_is_an_error(self):
        @nki0.jit
        def past_the_end(x):
            t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.iota(dst=idx, pattern=[[1, 1]], offset=60, channel_multiplier=1)
            g = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=g, src=t.indirect(idx, 16))  # offsets 60 .. 75 of 64
            o = nl.ndarray(g.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=g)
            return o
        with self.assertRaisesRegex(nki.KernelError, r'nki_trn3_test.py:\d+: nisa.tensor_copy: '
                                    'offset 64 of an indirect view \(element 4\) is outside '
                                    'its 64 columns'):
            past_the_end(np.ones((128, 64), np.float32))
        # the model's engines find it at run time (the frontend's values not computed)
        traced = nki.trace_kernel(past_the_end, (nt.tensor[[128, 64], nl.float32],), {}, False)
        with self.assertRaisesRegex(_runner.native.UserError, 'offset 64 of its indirect src0 '
                                    r'\(element 4\) is outside its 64 columns'):
            _runner.platform().run(traced.program, 'kernel')

    def test_what_it_does_not_take_is_an_error_naming_it(self):
        def kernel_with(call):
            @nki0.jit
            def k(x):
                t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x)
                idx = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
                nisa.iota(dst=idx, pattern=[[1, 2]], offset=0, channel_multiplier=0)
                call(t, idx)
                return x
            return k
        out = lambda: nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        cases = [
            (lambda t, idx: nisa.tensor_tensor(dst=out(), data1=t[:, 0:32],
                                               data2=t.indirect(idx, 32), op=nl.add),
             'nisa.tensor_tensor: an indirect view as its input 2: NKI allows tensor '
             'indirection on its destination and first input here'),
            (lambda t, idx: nisa.tensor_copy(dst=out(), src=t.indirect(idx, 32),
                                             engine=nisa.gpsimd_engine),
             'tensor indirection runs on the dve or act engine here, not pool'),
            (lambda t, idx: t.indirect(idx, 32).indirect(idx, 8),
             'an indirect view cannot be indirected again'),
            (lambda t, idx: t.indirect(idx, 257), r'num_elem=257: from 1 to index.size \(256\)'),
            (lambda t, idx: t.indirect(t, 8), 'index is a tile of integer offsets in SBUF, not '
             'float32'),
            (lambda t, idx: t.indirect(idx[0:64, :], 8), 'index has 64 partitions, the tile 128'),
            (lambda t, idx: t.indirect(idx, 32)[:, 0:4], 'indexing an indirect view'),
            (lambda t, idx: nisa.dma_copy(dst=nl.ndarray((128, 32), dtype=nl.float32,
                                                         buffer=nl.shared_hbm),
                                          src=t.indirect(idx, 32)),
             'nisa.dma_copy: an indirect view as an operand here: NKI takes tensor '
             'indirection in engine instructions'),
            (lambda t, idx: nisa.tensor_copy(dst=nl.ndarray((16, 32), dtype=nl.float32,
                                                            buffer=nl.sbuf),
                                             src=t[16:32, :].indirect(idx[16:32, :], 32)),
             'the index of an indirect view starts at partition 16, not on a quadrant '
             'boundary'),
            (lambda t, idx: nisa.tensor_copy(dst=nl.ndarray((8, 16), dtype=nl.float32,
                                                            buffer=nl.sbuf),
                                             src=t[0:8, :].indirect(idx[0:8, :])),
             r'16 offsets in groups of 16 partitions \(Vector, Scalar or GpSimd engine\) need '
             '16 partitions of an index of 2 columns; it has 8'),
            (lambda t, idx: nisa.nc_matmul(dst=nl.ndarray((32, 64), dtype=nl.float32,
                                                          buffer=nl.psum),
                                           stationary=t.indirect(idx, 32), moving=t),
             'an indirect matmul src0 is fp16, bf16 or fp8, not float32'),
        ]
        for call, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(nki.KernelError, message):
                    kernel_with(call)(np.ones((128, 64), np.float32))

    def test_the_example_gathers_in_one_instruction_a_tile(self):
        """gather_columns.py: one activation per tile instead of one per column (the documented
        gain: one instruction for columns without a uniform stride), the kernel faster."""
        def run(way):
            us, stats = run_example(self, 'gather_columns.py', 'trn3', way)
            return us, stats['engines']['act']['opcodes']['activation']
        (one_us, one), (cols_us, cols) = run('indirect'), run('columns')
        self.assertEqual(64 * one['count'], cols['count'])
        self.assertLess(one['busy_ns'] * 10, cols['busy_ns'])
        self.assertLess(one_us, 0.8 * cols_us)


@nki0.jit
def prioritised_copy(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, priority=0)
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t, priority=3)
    return out


class DmaPriority(unittest.TestCase):
    """priority= of nisa.dma_copy (NeuronCore-v4's strict-priority DMA quality of service, 0 the
    highest): the values unchanged, the level recorded with the transfer (0, as none given,
    leaves no word), and the example's gain: the prefetch of the lowest level no longer holds
    back the chain's loads rung after it."""

    def test_values_and_recording(self):
        x = np.random.default_rng(13).random((128, 64), dtype=np.float32)
        np.testing.assert_array_equal(prioritised_copy(x), x)
        traced = nki.trace_kernel(prioritised_copy, (nt.tensor[[128, 64], nl.float32],), {},
                                  False)
        self.assertEqual(traced.trace.notes, {})
        dmas = [op.line for op in traced.trace.ops if op.kind in ('load', 'store')]
        self.assertEqual(len(dmas), 2)
        self.assertNotIn('priority=', dmas[0])  # level 0
        self.assertTrue(dmas[1].endswith(' priority=3'), dmas[1])

    def test_the_example_prefetch_of_the_lowest_level_lets_the_chain_start(self):
        def us(level):
            return run_example(self, 'dma_priority.py', 'trn3', level, '--priority')[0]
        plain, lowest = us(None), us('3')
        self.assertEqual(us('0'), plain)  # level 0 is every transfer's without priority=
        # the chain's first load no longer waits for the 4 MiB prefetch: most of its time back
        # (4 MiB over 16 engines of core.dma.engine_bandwidth 32.2 B/ns: 8.1 us)
        prefetch_us = 4 * 2**20 / (16 * 32.2) / 1e3
        self.assertGreater(plain - lowest, 0.8 * prefetch_us)
        self.assertLess(plain - lowest, 1.05 * prefetch_us)

    def test_not_with_descriptor_generation_turned_off(self):
        @nki0.jit
        def no_dge(x):
            t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x, priority=1, dge_mode=nisa.dge_mode.none)
            return x
        with self.assertRaisesRegex(nki.KernelError, r'nisa.dma_copy: priority= with '
                                    r'dge_mode=nisa.dge_mode.none'):
            no_dge(np.ones((128, 8), np.float32))

    def test_a_level_the_core_has_not_is_an_error_at_its_line(self):
        kernel = ('import numpy as np\nimport nki\nimport nki.isa as nisa\n'
                  'import nki.language as nl\n\n\n@nki.jit\ndef k(x):\n'
                  '    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)\n'
                  '    nisa.dma_copy(dst=t, src=x, priority=2)\n'
                  '    return x\n\n\nnki.simulate(k)(np.ones((128, 8), np.float32))\n')
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'levels.py')
            with open(path, 'w') as f:
                f.write(kernel)
            r = scripts_nki(['--config', 'trn3', '--set', 'core.dma.priority_levels=2', path])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('levels.py:10: nisa.dma_copy: a DMA transfer: priority 2 is not a DMA '
                      'quality-of-service level of this core: 0 to 1 (core.dma.priority_levels 2)',
                      r.stderr)

    def test_a_level_out_of_0_to_3_is_an_error(self):
        @nki0.jit
        def bad(x):
            t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x, priority=4)
            return x
        with self.assertRaisesRegex(nki.KernelError, r'nki_trn3_test.py:\d+: nisa.dma_copy: a '
                                    r'DMA transfer: priority 4 is not a DMA quality-of-service '
                                    r'level of this core: 0 to 3'):
            bad(np.ones((128, 8), np.float32))


if __name__ == '__main__':
    unittest.main()

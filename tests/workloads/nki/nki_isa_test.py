"""Instructions of the ISA as real kernels use them (the ISA issue): their values against numpy
in each edition, their recorded instructions, and their errors."""

import functools
import unittest

import numpy as np

import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import nki_support as s
import trnsim.nki
from trnsim.nki import KernelError, trace_kernel


def kinds(kernel, *args):
    """The kinds of the operations the kernel's recording runs, each as many times as it runs
    (a folded loop's body once per iteration)."""
    out, trips = [], [1]
    for op in trace_kernel(kernel, args, {}, False).trace.ops:
        if op.kind == 'loop':
            trips.append(trips[-1] * op.args[0].trips)
        elif op.kind == 'end':
            trips.pop()
        else:
            n = trips[-1]
            for c in op.when:  # (only in the first iteration of a loop, or in a span of it)
                n = n // c.loop.trips * (c.hi - c.lo) if hasattr(c, 'hi') else n // c.trips
            out += [op.kind] * n
    return out


@nki1.jit
def transpose_beta1(x):
    """x.T through the Tensor engine's transpose mode: a matmul by the identity, in x's
    dtype."""
    out = nl1.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl1.shared_hbm)
    ident = nl1.load(nl1.shared_identity_matrix(x.shape[0], dtype=x.dtype))
    ps = nl1.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl1.psum)
    ps[...] = nisa1.nc_matmul(nl1.load(x), ident, is_transpose=True)
    nl1.store(out, value=nl1.copy(ps))
    return out


@nki0.jit
def transpose_nki0(x, ident, identity_declared=False):
    out = nl0.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    i = nl0.ndarray(ident.shape, dtype=ident.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    nisa0.dma_copy(i, ident)
    ps = nl0.ndarray((x.shape[1], x.shape[0]), dtype=nl0.float32, buffer=nl0.psum)
    nisa0.nc_matmul(ps, t, i, is_transpose=True, is_moving_onezero=identity_declared)
    res = nl0.ndarray(ps.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, ps)
    nisa0.dma_copy(out, res)
    return out


@nki0.jit
def declared_matmul(a, b, stationary_declared, moving_declared):
    """a.T @ b, its operands declared ones and zeros or not (nc_matmul's hints)."""
    out = nl0.ndarray((a.shape[1], b.shape[1]), dtype=nl0.float32, buffer=nl0.shared_hbm)
    sa = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
    sb = nl0.ndarray(b.shape, dtype=b.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(sa, a)
    nisa0.dma_copy(sb, b)
    ps = nl0.ndarray((a.shape[1], b.shape[1]), dtype=nl0.float32, buffer=nl0.psum)
    nisa0.nc_matmul(ps, sa, sb, is_stationary_onezero=stationary_declared,
                    is_moving_onezero=moving_declared)
    res = nl0.ndarray(ps.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, ps)
    nisa0.dma_copy(out, res)
    return out


class OnesAndZeros(unittest.TestCase):

    def test_an_fp32_operand_declared_ones_and_zeros_takes_half_the_passes(self):
        """is_stationary_onezero / is_moving_onezero: "could lead to 2x better performance if
        [the] tile is in float32" (the NKI reference); the values are the matmul's."""
        rng = np.random.default_rng(3)
        a = (rng.uniform(size=(128, 128)) < 0.5).astype(np.float32)
        b = rng.uniform(-1, 1, (128, 512)).astype(np.float32)
        np.testing.assert_allclose(declared_matmul(a, b, True, False),
                                   a.T.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
        busy = {hints: s.stat(s.frontend_stats(declared_matmul, a, b, *hints),
                              'engines.pe.busy_ns')
                for hints in ((False, False), (True, False), (False, True), (True, True))}
        self.assertAlmostEqual(busy[True, False], busy[False, False] / 2, places=3)
        self.assertAlmostEqual(busy[False, True], busy[False, False] / 2, places=3)
        self.assertLess(busy[True, True], busy[True, False])
        # bf16 has no low half to leave out
        a16, b16 = a.astype(nl1.bfloat16), b.astype(nl1.bfloat16)
        self.assertEqual(
            s.stat(s.frontend_stats(declared_matmul, a16, b16, True, True), 'engines.pe.busy_ns'),
            s.stat(s.frontend_stats(declared_matmul, a16, b16, False, False),
                   'engines.pe.busy_ns'))

    def test_a_transpose_whose_identity_is_declared(self):
        (y,) = s.random_inputs((128, 128))
        eye = np.eye(128, dtype=np.float32)
        np.testing.assert_array_equal(transpose_nki0(y, eye, True), y.T)
        plain = s.stat(s.frontend_stats(transpose_nki0, y, eye), 'engines.pe.busy_ns')
        declared = s.stat(s.frontend_stats(transpose_nki0, y, eye, True), 'engines.pe.busy_ns')
        if s.config_name() == 'trn1':  # half the passes
            self.assertAlmostEqual(declared, plain / 2, places=3)
        else:  # transpose mode (NeuronCore-v3 on) moves bits: the identity takes no part
            self.assertEqual(declared, plain)


@nki1.jit
def masked_matmul(a, b, cols):
    """A matmul whose mask keeps the first `cols` columns of moving (NKIBench's
    transpose_matmul: `-512 * i + -1 * j + (N - 1) >= 0` on its last, partial tile), summed
    over two K tiles into PSUM, its kept part copied out and stored."""
    out = nl1.ndarray((a.shape[1], b.shape[1]), dtype=nl1.float32, buffer=nl1.shared_hbm)
    j = nl1.arange(b.shape[1])[None, :]
    p = nl1.arange(a.shape[1])[:, None]
    keep = -1 * j + (cols - 1) >= 0
    acc = nl1.zeros((a.shape[1], b.shape[1]), dtype=nl1.float32, buffer=nl1.psum)
    for k in nl1.affine_range(a.shape[0] // 128):
        acc[p, j] += nisa1.nc_matmul(nl1.load(a[k * 128:(k + 1) * 128, :]),
                                     nl1.load(b[k * 128:(k + 1) * 128, :]), mask=keep)
    nl1.store(out[p, j], value=nl1.copy(acc[p, j], mask=keep), mask=keep)
    return out


class MaskedMatmul(unittest.TestCase):

    def test_a_mask_keeps_columns_of_the_result(self):
        a = np.random.default_rng(1).uniform(-1, 1, (256, 128)).astype(np.float32)
        b = np.random.default_rng(2).uniform(-1, 1, (256, 512)).astype(np.float32)
        got = masked_matmul(a, b, 300)
        np.testing.assert_allclose(got[:, :300], a.T.astype(np.float64) @ b[:, :300],
                                   rtol=1e-4, atol=1e-4)
        stats = s.frontend_stats(masked_matmul, a, b, 300)
        whole = s.frontend_stats(masked_matmul, a, b, 512)
        self.assertLess(s.stat(stats, 'engines.pe.busy_ns'), s.stat(whole, 'engines.pe.busy_ns'))


class TransposeMode(unittest.TestCase):

    def test_a_matmul_by_the_identity_in_transpose_mode(self):
        (x,) = s.random_inputs((128, 96), lo=-3.0, hi=3.0)
        xb = x.astype(nl1.bfloat16)
        got = transpose_beta1(xb)
        self.assertEqual(got.dtype, nl1.bfloat16)
        np.testing.assert_array_equal(got.astype(np.float32), xb.astype(np.float32).T)
        self.assertEqual(kinds(transpose_beta1, xb).count('transpose'), 1)
        (y,) = s.random_inputs((64, 128))
        np.testing.assert_array_equal(transpose_nki0(y, np.eye(64, dtype=np.float32)), y.T)

    def test_the_moving_operand_must_be_the_identity(self):
        (y,) = s.random_inputs((64, 128))
        with self.assertRaisesRegex(KernelError, 'is_transpose=True with a moving operand that '
                                    'is not the identity'):
            transpose_nki0(y, 2 * np.eye(64, dtype=np.float32))
        with self.assertRaisesRegex(KernelError, r'the moving operand must be the \[64, 64\] '
                                    'identity'):
            transpose_nki0(y, np.eye(32, dtype=np.float32))


# Kernels of the ISA issue's instructions, written from the ISA reference in the style of
# attention and normalisation kernels.

@nki0.jit
def row_softmax_nki0(x):
    """softmax over each row: the negated max (tensor_reduce negate), exp shifted by it with its
    row sums in the same instruction (activation_reduce), their reciprocal (Vector engine) and
    the scaling by a per-partition tile."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    neg_max = nl0.ndarray((x.shape[0], 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_reduce(neg_max, nl0.maximum, t, axis=1, negate=True, keepdims=True)
    e = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    total = nl0.ndarray((x.shape[0], 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.activation_reduce(e, nl0.exp, t, reduce_op=nl0.add, reduce_res=total, bias=neg_max)
    inv = nl0.ndarray((x.shape[0], 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.reciprocal(inv, total)
    y = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_scalar(y, e, nl0.multiply, inv)
    nisa0.dma_copy(out, y)
    return out


@nki1.jit
def rms_norm_beta1(x):
    """x / sqrt(mean(x^2) + eps) per row: the squares and their sum in one activation, rsqrt of
    the mean, and the scaling as an activation's per-partition scale."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    ss = nl1.ndarray((x.shape[0], 1), dtype=nl1.float32, buffer=nl1.sbuf)
    nisa1.activation_reduce(op=nl1.square, data=t, reduce_op=np.add, reduce_res=ss)
    mean = nisa1.tensor_scalar(ss, np.multiply, 1.0 / x.shape[1], op1=np.add, operand1=1e-6)
    rinv = nisa1.activation(op=nl1.rsqrt, data=mean)
    nl1.store(out, value=nisa1.activation(op=nl1.copy, data=t, scale=rinv))
    return out


@nki1.jit
def reversed_and_tile_operands_beta1(x):
    """(m - x) / d with m and d per-partition tiles, and 1 / x and 3 - x from reversed
    operations, in one instruction each."""
    outs = [nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm) for _ in range(3)]
    t = nl1.load(x)
    m = nisa1.tensor_reduce(nl1.max, t, axis=(1,), keepdims=True)
    d = nisa1.tensor_reduce(np.add, t, axis=[1], keepdims=True)
    nl1.store(outs[0], value=nisa1.tensor_scalar(t, nl1.subtract, m, reverse0=True,
                                                 op1=nl1.divide, operand1=d))
    nl1.store(outs[1], value=nisa1.tensor_scalar(t, np.divide, 1.0, reverse0=True))
    nl1.store(outs[2], value=nisa1.scalar_tensor_tensor(data=t, op0=nl1.subtract, operand0=3.0,
                                                        reverse0=True, op1=nl1.add,
                                                        operand1=t))
    return outs


@nki1.jit
def partial_reductions_beta1(x):
    """A [128, 4, 8] tile reduced over its last axis (negated), over its last two, and (nl)
    over its middle one, then nl.sum over axes 2 and 4 of a [128, 2, 2, 2, 4] view (an
    average pool's window)."""
    t = nl1.load(x)  # [128, 32] seen as [128, 4, 8]
    v = t.reshape((x.shape[0], 4, 8))
    a = nisa1.tensor_reduce(np.add, v, axis=(2,), negate=True)
    b = nisa1.tensor_reduce(nl1.max, v, axis=(1, 2))
    c = nl1.sum(v, axis=1)
    w = t.reshape((x.shape[0], 2, 2, 2, 4))
    d = nl1.max(w, axis=[2, 4])
    outs = []
    for r in (a, b, c, d):
        o = nl1.ndarray(r.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
        nl1.store(o, value=r)
        outs.append(o)
    return outs


@nki0.jit
def vector_transpose_and_reduce_nki0(x):
    """A 32 x 32 block transposed by the Vector engine into SBUF, and x - 0.5 with its row max in
    the same Vector-engine instruction (tensor_scalar_reduce)."""
    out = nl0.ndarray((32, 32), dtype=x.dtype, buffer=nl0.shared_hbm)
    red = nl0.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    tt = nl0.ndarray((32, 32), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.nc_transpose(tt, t[0:32, 0:32], engine=nisa0.vector_engine)
    nisa0.dma_copy(out, tt)
    shifted = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    mx = nl0.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_scalar_reduce(shifted, t, nl0.subtract, 0.5, reduce_op=nl0.maximum,
                               reduce_res=mx)
    nisa0.dma_copy(red, mx)
    # nl.abs as the ALU operator (its operand unused): the largest |x| of each row, as the NKI
    # Library's quantizers take it
    mags = nl0.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl0.shared_hbm)
    nisa0.tensor_scalar_reduce(shifted, t, nl0.abs, 0.0, reduce_op=nl0.maximum, reduce_res=mx)
    nisa0.dma_copy(mags, mx)
    return out, red, mags


@nki1.jit
def language_functions_beta1(x):
    """nl.divide, comparisons, nl.softmax, nl.erf, the / operators and a DMA that casts."""
    outs = [nl1.ndarray(x.shape, dtype=nl1.float32, buffer=nl1.shared_hbm) for _ in range(6)]
    t = nl1.load(x, dtype=nl1.bfloat16)  # the DMA casts float32 to bfloat16
    u = nl1.load(x)
    nl1.store(outs[0], value=nl1.divide(u, nl1.add(u, 1.0)))
    nl1.store(outs[1], value=nl1.greater(u, 0.5))
    nl1.store(outs[2], value=nl1.softmax(u, axis=-1))
    nl1.store(outs[3], value=nl1.erf(u))
    nl1.store(outs[4], value=2.0 / (u + 1.0))
    nl1.store(outs[5], value=nl1.copy(t, dtype=nl1.float32))
    return outs


@nki1.jit
def causal_mask_beta1(scores):
    """Attention scores with the future masked: a query row keeps the keys up to its own."""
    out = nl1.ndarray(scores.shape, dtype=scores.dtype, buffer=nl1.shared_hbm)
    i_q = nl1.arange(scores.shape[0])[:, None]
    i_k = nl1.arange(scores.shape[1])[None, :]
    t = nl1.load(scores)
    nl1.store(out, value=nisa1.affine_select(pred=(i_q - i_k >= 0), on_true_tile=t,
                                             on_false_value=-9984.0))
    return out


@nki0.jit
def causal_mask_nki0(scores):
    out = nl0.ndarray(scores.shape, dtype=scores.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(scores.shape, dtype=scores.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, scores)
    m = nl0.ndarray(scores.shape, dtype=scores.dtype, buffer=nl0.sbuf)
    nisa0.affine_select(m, pattern=[[-1, scores.shape[1]]], offset=0, channel_multiplier=1,
                        on_true_tile=t, on_false_value=-9984.0, cmp_op=nl0.greater_equal)
    nisa0.dma_copy(out, m)
    return out


@nki1.jit
def load_transposed_beta1(w):
    """w [K, M] loaded transposed, [M, K], by nl.load_transpose2d and by nisa.dma_transpose."""
    outs = [nl1.ndarray((w.shape[1], w.shape[0]), dtype=w.dtype, buffer=nl1.shared_hbm)
            for _ in range(2)]
    nl1.store(outs[0], value=nl1.load_transpose2d(w))
    nl1.store(outs[1], value=nisa1.dma_transpose(w[:, :]))
    return outs


@nki0.jit
def dma_transpose_nki0(w):
    out = nl0.ndarray((w.shape[1], w.shape[0]), dtype=w.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray((w.shape[1], w.shape[0]), dtype=w.dtype, buffer=nl0.sbuf)
    nisa0.dma_transpose(t, w)
    nisa0.dma_copy(out, t)
    return out


@nki0.jit
def layer_norm_nki0(x):
    """(x - mean) * rsqrt(var + eps) per row, the statistics by bn_stats on each 512-element
    half and one bn_aggr, the normalisation one tensor_scalar with two per-partition operands."""
    p, f = x.shape
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    size = min(f, 512)
    chunks = f // size
    stats = nl0.ndarray((p, 6 * chunks), dtype=nl0.float32, buffer=nl0.sbuf)
    for c in range(chunks):
        nisa0.bn_stats(stats[:, 6 * c:6 * (c + 1)], t[:, size * c:size * (c + 1)])
    mv = nl0.ndarray((p, 2), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.bn_aggr(mv, stats)
    var_eps = nl0.ndarray((p, 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_scalar(var_eps, mv[:, 1:2], nl0.add, 1e-5)
    rstd = nl0.ndarray((p, 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.activation(rstd, nl0.rsqrt, var_eps)
    y = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_scalar(y, t, nl0.subtract, mv[:, 0:1], op1=nl0.multiply, operand1=rstd)
    nisa0.dma_copy(out, y)
    return out


@nki0.jit
def chunked_row_sums_nki0(x):
    """exp(x) in four chunks of columns, their row sums accumulated across the chunks in the
    Scalar engine's reduce registers (reset_reduce, then reduce), read out with the last."""
    p, f = x.shape
    out = nl0.ndarray((p, 1), dtype=nl0.float32, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    e = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    total = nl0.ndarray((p, 1), dtype=nl0.float32, buffer=nl0.sbuf)
    chunks, size = 4, f // 4
    for c in range(chunks):
        cmd = nisa0.reduce_cmd.reset_reduce if c == 0 else nisa0.reduce_cmd.reduce
        nisa0.activation(e[:, c * size:(c + 1) * size], nl0.exp, t[:, c * size:(c + 1) * size],
                         reduce_op=nl0.add, reduce_res=total if c == chunks - 1 else None,
                         reduce_cmd=cmd)
    nisa0.dma_copy(out, total)
    return out


@nki1.jit
def selections_beta1(x):
    """nl.where with a tile and a number, tensor_copy_predicated into a tile, and select_reduce
    with its row max: the predicate a comparison computed on the Vector engine."""
    outs = [nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm) for _ in range(3)]
    row_max = nl1.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    big = nl1.greater(t, 0.5, dtype=nl1.uint8)
    nl1.store(outs[0], value=nl1.where(big, t, 0.0))
    base = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.sbuf)
    base[...] = nl1.multiply(t, -1.0)
    nisa1.tensor_copy_predicated(src=t, dst=base, predicate=big, reverse_pred=True)
    nl1.store(outs[1], value=base)
    sel = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.sbuf)
    mx = nl1.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl1.sbuf)
    nisa1.select_reduce(dst=sel, predicate=big, on_true=t, on_false=-1.0, reduce_res=mx)
    nl1.store(outs[2], value=sel)
    nl1.store(row_max, value=mx)
    return outs + [row_max]


@nki1.jit
@nki1.compiler.skip_middle_end_transformations
def matmul_psum_banks_beta1(lhsT, rhs):
    """lhsT.T @ rhs in 128 x 512 blocks, the accumulators placed by the kernel in PSUM banks
    (two banks, rotated: nki.compiler.psum.mod_alloc) and the operands in SBUF."""
    k, m = lhsT.shape
    _, n = rhs.shape
    out = nl1.ndarray((m, n), dtype=nl1.float32, buffer=nl1.shared_hbm)
    blocks = (m // 128) * (n // 512)
    acc = nl1.zeros((blocks, nl1.par_dim(128), 512), dtype=nl1.float32,
                    buffer=nki1.compiler.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    for i in nl1.affine_range(m // 128):
        for j in nl1.affine_range(n // 512):
            b = i * (n // 512) + j
            for kk in nl1.affine_range(k // 128):
                a_t = nl1.load(lhsT[kk * 128:(kk + 1) * 128, i * 128:(i + 1) * 128])
                r_t = nl1.load(rhs[kk * 128:(kk + 1) * 128, j * 512:(j + 1) * 512])
                acc[b] += nisa1.nc_matmul(a_t, r_t)
            nl1.store(out[i * 128:(i + 1) * 128, j * 512:(j + 1) * 512], value=nl1.copy(acc[b]))
    return out


@nki1.jit
def loop_max_beta1(x):
    """The elementwise max and sum of x's 128-row tiles, by nl.loop_reduce over an
    affine_range loop (recorded once) and over a Python loop (unrolled)."""
    outs = [nl1.ndarray((128, x.shape[1]), dtype=nl1.float32, buffer=nl1.shared_hbm)
            for _ in range(2)]
    for k in nl1.affine_range(x.shape[0] // 128):
        a = nl1.load(x[k * 128:(k + 1) * 128, :])
        m = nl1.loop_reduce(a, op=np.max, loop_indices=[k], dtype=nl1.float32)
    for k in range(x.shape[0] // 128):
        a = nl1.load(x[k * 128:(k + 1) * 128, :])
        t = nl1.loop_reduce(a, op=nl1.add, loop_indices=[k], dtype=nl1.float32)
    nl1.store(outs[0], value=m)
    nl1.store(outs[1], value=t)
    return outs


@nki1.jit
def language_more_beta1(x):
    """nl.zeros_like, nl.expand_dims, nl.prod, nl.var, nl.logical_not, nl.invert and
    nisa.get_nc_version."""
    outs = [nl1.ndarray((x.shape[0], 1), dtype=nl1.float32, buffer=nl1.shared_hbm)
            for _ in range(3)]
    flags = nl1.ndarray(x.shape, dtype=nl1.float32, buffer=nl1.shared_hbm)
    bits = nl1.ndarray(x.shape, dtype=nl1.int32, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    z = nl1.zeros_like(t)
    nl1.store(outs[0], value=nl1.prod(nl1.add(t, z), axis=1, keepdims=True))
    nl1.store(outs[1], value=nl1.var(t, axis=1))
    col = nl1.expand_dims(nl1.sum(t, axis=1), 1)
    nl1.store(outs[2], value=col)
    nl1.store(flags, value=nl1.logical_not(nl1.greater(t, 1.0)))
    ints = nl1.copy(nl1.multiply(t, 4.0), dtype=nl1.int32)
    nl1.store(bits, value=nl1.invert(ints, dtype=nl1.int32))
    assert nisa1.get_nc_version() in (nisa1.nc_version.gen2, nisa1.nc_version.gen3)
    return outs + [flags, bits]


@nki0.jit
def window_max_nki0(x, lo, hi):
    """Each row kept on the columns lo[p] <= i < hi[p] (a sliding attention window), the rest
    the lowest float, and the row max: nisa.range_select (NeuronCore-v3)."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    mx_out = nl0.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    b0 = nl0.ndarray((x.shape[0], 1), dtype=nl0.float32, buffer=nl0.sbuf)
    b1 = nl0.ndarray((x.shape[0], 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    nisa0.dma_copy(b0, lo)
    nisa0.dma_copy(b1, hi)
    sel = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    mx = nl0.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.range_select(sel, t, nl0.greater_equal, nl0.less, b0, b1, reduce_res=mx)
    nisa0.dma_copy(out, sel)
    nisa0.dma_copy(mx_out, mx)
    return out, mx_out


@nki0.jit
def dma_permutes_nki0(x3, x4):
    """The DMA engines' transposes of 3-D and 4-D parts: axes (2, 1, 0) and (3, 1, 2, 0)."""
    o3 = nl0.ndarray((x3.shape[2], x3.shape[1], x3.shape[0]), dtype=x3.dtype,
                     buffer=nl0.shared_hbm)
    o4 = nl0.ndarray((x4.shape[3], x4.shape[1], x4.shape[2], x4.shape[0]), dtype=x4.dtype,
                     buffer=nl0.shared_hbm)
    t3 = nl0.ndarray(o3.shape, dtype=x3.dtype, buffer=nl0.sbuf)
    t4 = nl0.ndarray(o4.shape, dtype=x4.dtype, buffer=nl0.sbuf)
    nisa0.dma_transpose(t3, x3, axes=(2, 1, 0))
    nisa0.dma_transpose(t4, x4, axes=(3, 1, 2, 0))
    nisa0.dma_copy(o3, t3)
    nisa0.dma_copy(o4, t4)
    return o3, o4


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class AttentionAndNormalisation(unittest.TestCase):

    def test_row_softmax(self):
        (x,) = s.random_inputs((128, 64), lo=-4.0, hi=4.0)
        np.testing.assert_allclose(row_softmax_nki0(x), _softmax(x), rtol=1e-5, atol=1e-7)
        k = kinds(row_softmax_nki0, x)
        for prim in ('isa.tensor_reduce', 'isa.activation_reduce', 'isa.reciprocal'):
            self.assertEqual(k.count(prim), 1, prim)

    def test_layer_norm_by_bn_stats(self):
        (x,) = s.random_inputs((128, 1024), lo=-3.0, hi=5.0)
        mean = x.mean(axis=1, keepdims=True, dtype=np.float64)
        var = x.var(axis=1, keepdims=True, dtype=np.float64)
        np.testing.assert_allclose(layer_norm_nki0(x), (x - mean) / np.sqrt(var + 1e-5),
                                   rtol=2e-5, atol=2e-5)
        k = kinds(layer_norm_nki0, x)
        self.assertEqual((k.count('isa.bn_stats'), k.count('isa.bn_aggr')), (2, 1))
        # var + eps, and (x - mean) * rstd: two tile operands in one instruction
        self.assertEqual(k.count('isa.tensor_scalar'), 2)

    def test_row_sums_accumulated_in_the_reduce_registers(self):
        (x,) = s.random_inputs((128, 512), lo=-2.0, hi=2.0)
        np.testing.assert_allclose(chunked_row_sums_nki0(x),
                                   np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True),
                                   rtol=1e-5)
        self.assertEqual(kinds(chunked_row_sums_nki0, x).count('isa.activation_reduce'), 4)

    def test_rms_norm(self):
        (x,) = s.random_inputs((128, 256), lo=-2.0, hi=2.0)
        want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
        np.testing.assert_allclose(rms_norm_beta1(x), want, rtol=1e-5)
        k = kinds(rms_norm_beta1, x)
        self.assertEqual(k.count('isa.activation_reduce'), 1)
        self.assertEqual(k.count('isa.activation'), 2)  # the rsqrt, and the tile scale

    def test_reversed_operations_and_tile_operands(self):
        (x,) = s.random_inputs((128, 16), lo=0.5, hi=2.0)
        a, b, c = reversed_and_tile_operands_beta1(x)
        m = x.max(axis=1, keepdims=True)
        d = x.sum(axis=1, keepdims=True, dtype=np.float32)
        np.testing.assert_allclose(a, (m - x) / d, rtol=1e-6)
        np.testing.assert_array_equal(b, np.float32(1) / x)
        np.testing.assert_array_equal(c, (np.float32(3) - x) + x)
        self.assertEqual(kinds(reversed_and_tile_operands_beta1, x).count('isa.tensor_scalar'), 2)

    def test_reductions_over_some_axes(self):
        (x,) = s.random_inputs((128, 32), lo=-1.0, hi=1.0)
        a, b, c, d = partial_reductions_beta1(x)
        v = x.reshape(128, 4, 8)
        np.testing.assert_allclose(a, -v.sum(axis=2), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(b, v.max(axis=(1, 2)).reshape(b.shape))
        np.testing.assert_allclose(c, v.sum(axis=1), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(d, x.reshape(128, 2, 2, 2, 4).max(axis=(2, 4)))

    def test_vector_transpose_and_tensor_scalar_reduce(self):
        (x,) = s.random_inputs((128, 48))
        x = x - np.float32(0.5)
        out, red, mags = vector_transpose_and_reduce_nki0(x)
        np.testing.assert_array_equal(out, x[:32, :32].T)
        np.testing.assert_array_equal(red, (x - np.float32(0.5)).max(axis=1, keepdims=True))
        np.testing.assert_array_equal(mags, np.abs(x).max(axis=1, keepdims=True))

    def test_language_functions(self):
        (x,) = s.random_inputs((128, 40), lo=-1.0, hi=1.0)
        outs = language_functions_beta1(x)
        np.testing.assert_array_equal(outs[0], x / (x + np.float32(1)))
        np.testing.assert_array_equal(outs[1], (x > 0.5).astype(np.float32))
        np.testing.assert_allclose(outs[2], _softmax(x), rtol=1e-5, atol=1e-7)
        from scipy.special import erf
        np.testing.assert_allclose(outs[3], erf(x), rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(outs[4], np.float32(2) / (x + np.float32(1)))
        np.testing.assert_array_equal(outs[5], x.astype(nl1.bfloat16).astype(np.float32))


class AffineSelect(unittest.TestCase):

    def test_a_causal_mask_in_both_editions(self):
        (x,) = s.random_inputs((128, 96), lo=-1.0, hi=1.0)
        want = np.where(np.tril(np.ones((128, 96), bool)), x, np.float32(-9984.0))
        np.testing.assert_array_equal(causal_mask_beta1(x), want)
        np.testing.assert_array_equal(causal_mask_nki0(x), want)
        self.assertEqual(kinds(causal_mask_beta1, x).count('isa.affine_select'), 1)
        # one GpSimd instruction, 150 + N cycles (hardware-facts 2)
        self.assertEqual(s.counts(s.frontend_stats(causal_mask_beta1, x))['pool'], 1)


class DmaTranspose(unittest.TestCase):

    def test_permutations_of_three_and_four_dimensions(self):
        x3, x4 = s.random_inputs((4, 3, 64), (2, 3, 4, 32))
        o3, o4 = dma_permutes_nki0(x3, x4)
        np.testing.assert_array_equal(o3, x3.transpose(2, 1, 0))
        np.testing.assert_array_equal(o4, x4.transpose(3, 1, 2, 0))

    def test_transposed_loads(self):
        (w,) = s.random_inputs((48, 128))
        a, b = load_transposed_beta1(w)
        np.testing.assert_array_equal(a, w.T)
        np.testing.assert_array_equal(b, w.T)
        np.testing.assert_array_equal(dma_transpose_nki0(w), w.T)
        # one DMA transpose (its rows the tile's 128 partitions), and the store
        stats = s.frontend_stats(dma_transpose_nki0, w)
        self.assertEqual(s.counts(stats)['dma'], 1 + 1)
        # a 2-D transpose is the DMA transpose, said nowhere to be an over-estimate; a 3-D and a
        # 4-D permutation are a transfer per run, said so at each of their lines
        x3, x4 = s.random_inputs((4, 3, 64), (2, 3, 4, 32))
        for kernel, args, lines in ((load_transposed_beta1, (w,), 0),
                                    (dma_transpose_nki0, (w,), 0),
                                    (dma_permutes_nki0, (x3, x4), 2)):
            notes = trnsim.nki.trace_kernel(kernel, args, {}, False).trace.notes
            said = [api for (_, api), text in notes.items() if 'over-estimated' in text]
            self.assertEqual(len(said), lines, notes)


HOISTING_RUNS = [0]  # how many times hoisting_past_sbuf's Python ran


@nki1.jit
def hoisting_past_sbuf(x, w, big):
    """nl.matmul of x's tiles (transposed for it, hoisted by the compiler) beside a resident
    table that leaves too little SBUF for every hoisted transpose."""
    HOISTING_RUNS[0] += 1
    m_size, k_size = x.shape
    out = nl1.ndarray((m_size, 512), dtype=nl1.float32, buffer=nl1.shared_hbm)
    keep = nl1.load(big)
    ws = nl1.ndarray((k_size // 128, nl1.par_dim(128), 512), dtype=w.dtype, buffer=nl1.sbuf)
    for k in nl1.affine_range(k_size // 128):
        ws[k] = nl1.load(w[k * 128:(k + 1) * 128, :])
    xs = nl1.ndarray((m_size // 128, k_size // 128, nl1.par_dim(128), 128), dtype=x.dtype,
                     buffer=nl1.sbuf)
    for m in nl1.affine_range(m_size // 128):
        for k in nl1.affine_range(k_size // 128):
            xs[m, k] = nl1.load(x[m * 128:(m + 1) * 128, k * 128:(k + 1) * 128])
    for r in nl1.affine_range(2):
        for m in nl1.affine_range(m_size // 128):
            ps = nl1.zeros((nl1.par_dim(128), 512), dtype=nl1.float32, buffer=nl1.psum)
            for k in nl1.affine_range(k_size // 128):
                ps += nl1.matmul(xs[m, k], ws[k])
            nl1.store(out[m * 128:(m + 1) * 128, :], value=nl1.add(ps, keep[:, 0:512]))
    return out


class SbufFit(unittest.TestCase):
    """A kernel that fits on the hardware fits in the model: the builder reduces what the
    compiler would (rotation, hoisting) before it reports that a kernel cannot fit, and says
    so in the build's notes."""

    def test_hoisting_gives_way_to_the_kernels_tiles(self):
        x = np.ones((1024, 2048), nl1.bfloat16)
        w = np.ones((2048, 512), nl1.bfloat16)
        big = np.ones((128, 40 * 1024), np.float32)  # 160 KiB of each partition (trn2: 224)
        HOISTING_RUNS[0] = 0
        t = trace_kernel(hoisting_past_sbuf, (x, w, big), {}, False)
        # the hoisted transposes, each alive from its copy to its matmul, share memory with
        # the kernel's other short-lived tiles: the compiler's first choice fits
        self.assertFalse(any('not hoisted' in n for n in t.notes), t.notes)
        self.assertTrue(any('lifetimes do not overlap' in n for n in t.notes), t.notes)
        self.assertEqual(HOISTING_RUNS[0], 1)
        # with 16 KiB more kept alive neither choice fits: the error is the compiler's other
        # choice's, recorded beside the first (the kernel does not run again)
        big = np.ones((128, 44 * 1024), np.float32)
        HOISTING_RUNS[0] = 0
        with self.assertRaisesRegex(KernelError, 'sbuf allocation does not fit'):
            trace_kernel(hoisting_past_sbuf, (x, w, big), {}, False)
        self.assertEqual(HOISTING_RUNS[0], 1)

    def test_reduced_rotation_is_said(self):
        @nki1.jit
        @nki1.compiler.skip_middle_end_transformations
        def rotating(a):
            out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
            for i in nl1.affine_range(a.shape[0] // 128):
                t = nl1.ndarray((nl1.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=nl1.sbuf)
                t[...] = nl1.load(a[i * 128:(i + 1) * 128, :])
                nl1.store(out[i * 128:(i + 1) * 128, :], value=t)
            return out

        # 4 rotating buffers of 80 KiB do not fit in 224 KiB; 2 do
        a = np.ones((512, 20 * 1024), np.float32)
        t = trace_kernel(rotating, (a,), {}, False)
        self.assertEqual(len(t.notes), 1)
        self.assertRegex(t.notes[0], r"sbuf tile '.*' rotates over 2 buffers, not 4")


class LanguageMore(unittest.TestCase):

    def test_like_expand_prod_var_not_invert(self):
        (x,) = s.random_inputs((128, 12), lo=0.5, hi=1.5)
        p, v, col, flags, bits = language_more_beta1(x)
        np.testing.assert_allclose(p, x.prod(axis=1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(v, x.var(axis=1, keepdims=True, dtype=np.float64),
                                   rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(col, x.sum(axis=1, keepdims=True), rtol=1e-5)
        np.testing.assert_array_equal(flags, (x <= 1.0).astype(np.float32))
        np.testing.assert_array_equal(bits, ~(x * np.float32(4)).astype(np.int32))


@nki0.jit
def topk_nki0(x, n, k):
    """nisa.topk (GpSimd, NeuronCore-v3): the k largest of each 16-partition snake of x's first
    n elements, sorted, and their indices, from the first ceil(k / 16) columns."""
    cols = -(-k // 16)
    out_v = nl0.ndarray((x.shape[0], cols), dtype=nl0.bfloat16, buffer=nl0.shared_hbm)
    out_i = nl0.ndarray((x.shape[0], cols), dtype=nl0.uint32, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=nl0.bfloat16, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=x)
    v = nl0.ndarray((x.shape[0], k), dtype=nl0.bfloat16, buffer=nl0.sbuf)
    i = nl0.ndarray((x.shape[0], k), dtype=nl0.uint32, buffer=nl0.sbuf)
    nisa0.topk(v, i, t, n, sorted=True)
    nisa0.dma_copy(dst=out_v, src=v[:, 0:cols])
    nisa0.dma_copy(dst=out_i, src=i[:, 0:cols])
    return out_v, out_i


@nki0.jit
def topk_fp32_nki0(x):
    """topk of x [128, 32] (float32, cast to bf16 by a copy) with n = 500, k = 40; the values
    and indices returned as float32 (for the functional comparison)."""
    t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=x)
    b = nl0.ndarray(x.shape, dtype=nl0.bfloat16, buffer=nl0.sbuf)
    nisa0.tensor_copy(dst=b, src=t)
    v = nl0.ndarray((128, 40), dtype=nl0.bfloat16, buffer=nl0.sbuf)
    i = nl0.ndarray((128, 40), dtype=nl0.uint32, buffer=nl0.sbuf)
    nisa0.topk(v, i, b, 500)
    outs = []
    for r in (v, i):
        f = nl0.ndarray((128, 3), dtype=nl0.float32, buffer=nl0.sbuf)
        nisa0.tensor_copy(dst=f, src=r[:, 0:3])
        o = nl0.ndarray((128, 3), dtype=nl0.float32, buffer=nl0.shared_hbm)
        nisa0.dma_copy(dst=o, src=f)
        outs.append(o)
    return outs


@nki0.jit
def exponential_nki0(x):
    t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=x)
    e = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.exponential(dst=e, src=t)
    o = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    nisa0.dma_copy(dst=o, src=e)
    return o


class ExponentialBeforeNcV4(unittest.TestCase):

    def test_is_an_error_naming_the_way_before(self):
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: nisa.exponential: '
                                    r'exponential on dve: exponential runs on NeuronCore-v4 and '
                                    r'newer .*before it: .*nisa.activation\(op=nl.exp\)'):
            exponential_nki0(np.ones((128, 8), np.float32))


class IndirectionBeforeNcV4(unittest.TestCase):
    """tile.indirect on trn2: an error naming NeuronCore-v4 and its key."""

    def test_an_indirect_view_needs_nc_v4(self):
        @nki0.jit
        def gather(x):
            t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)
            idx = nl0.ndarray((128, 1), dtype=nl0.int32, buffer=nl0.sbuf)
            nisa0.memset(dst=idx, value=0)
            g = nl0.ndarray((128, 4), dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.tensor_copy(dst=g, src=t.indirect(idx, 4))
            return x
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: tile.indirect: tensor '
                                    r'indirection is a NeuronCore-v4 feature '
                                    r'\(core.sbuf.indirect=false on this platform\)'):
            gather(np.ones((128, 32), np.float32))


class DmaPriorityBeforeNcV4(unittest.TestCase):
    """priority= of nisa.dma_copy on trn2: an error naming NeuronCore-v4."""

    def test_priority_needs_nc_v4(self):
        @nki0.jit
        def copy(x):
            t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x, priority=1)
            return x
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: nisa.dma_copy: a DMA '
                                    r'transfer: priority 1 needs DMA quality-of-service levels, '
                                    r'which this core has not .*--config trn3'):
            copy(np.ones((128, 8), np.float32))


class MxBeforeNcV4(unittest.TestCase):
    """nc_matmul_mx and quantize_mx on trn2: errors naming NeuronCore-v4 (--config trn3), and
    an MX tile moved anywhere but by a DMA, quantize_mx or nc_matmul_mx refused by name."""

    def test_mx_calls_need_nc_v4(self):
        @nki0.jit
        def quantize(x):
            t = nl0.ndarray(x.shape, dtype=nl0.bfloat16, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)
            q = nl0.ndarray((128, 8), dtype=nl0.float8_e4m3fn_x4, buffer=nl0.sbuf)
            s = nl0.ndarray((128, 8), dtype=nl0.uint8, buffer=nl0.sbuf)
            nisa0.quantize_mx(dst=q, src=t, dst_scale=s)
            return x
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: nisa.quantize_mx: '
                                    r'quantize_mx on dve: quantize_mx runs on NeuronCore-v4 and '
                                    r'newer'):
            quantize(np.ones((128, 32), np.float32).astype(nl0.bfloat16))

    def test_an_mx_tile_in_another_instruction_is_refused(self):
        @nki0.jit
        def add_bits(x):
            t = nl0.ndarray(x.shape, dtype=nl0.float8_e4m3fn_x4, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)  # (its bits: allowed)
            nisa0.tensor_copy(dst=t, src=t)
            return x
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: nisa.tensor_copy: .* '
                                    r'float8_e4m3fn_x4 is an MX type: matmul_mx and quantize_mx '
                                    r'take it, and DMAs move it'):
            add_bits(np.ones((128, 8), np.uint32))

        @nki0.jit
        def from_floats(x):
            t = nl0.ndarray(x.shape, dtype=nl0.float8_e4m3fn_x4, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)
            return x
        with self.assertRaisesRegex(KernelError, r'nki_isa_test.py:\d+: nisa.dma_copy: a DMA '
                                    r'transfer: a DMA moves float8_e4m3fn_x4 as its bits: to and '
                                    r'from itself or an integer type of its size, not float32'):
            from_floats(np.ones((128, 8), np.float32))


class Topk(unittest.TestCase):

    def check(self, x, n, k):
        vals, idx = topk_nki0(x, n, k)
        cols = -(-k // 16)
        for g in range(x.shape[0] // 16):
            snake = x[16 * g:16 * g + 16].astype(np.float32).T.reshape(-1)[:n]
            want = sorted(range(n), key=lambda e: (-snake[e], e))[:16 * cols]
            got_i = idx[16 * g:16 * g + 16].T.reshape(-1)
            got_v = vals[16 * g:16 * g + 16].astype(np.float32).T.reshape(-1)
            np.testing.assert_array_equal(got_i[:len(want)], want)
            np.testing.assert_array_equal(got_v[:len(want)], snake[want])

    def test_eight_snakes_of_a_tile(self):
        (x,) = s.random_inputs((128, 40), lo=-1.0, hi=1.0)
        self.check(x.astype(nl0.bfloat16), 600, 40)

    def test_ties_keep_the_index_order(self):
        x = (np.arange(32 * 4) % 5).astype(np.float32).reshape(32, 4).astype(nl0.bfloat16)
        self.check(x, 64, 16)

    def test_recorded_and_its_limits(self):
        (x,) = s.random_inputs((128, 64), lo=-1.0, hi=1.0)
        xb = x.astype(nl0.bfloat16)
        rec = trace_kernel(topk_nki0, (xb, 1000, 64), {}, False)
        self.assertIn('isa.topk', [op.kind for op in rec.trace.ops])
        # the model's rules (models/isa/reductions.cpp) at the call's line, and the API's
        for n, k, why in ((7, 4, r'nki_isa_test.py:\d+: nisa.topk: topk on pool: topk takes 8 '
                                 r'<= imm \(n\) < 65536'),
                          (100, 101, r'nki_isa_test.py:\d+: nisa.topk: .*imm1 \(k\) <= n'),
                          (2000, 8, 'fewer than ceil')):
            with self.assertRaisesRegex(KernelError, why):
                topk_nki0(xb, n, k)


@nki0.jit
def match_replace8_nki0(x, v):
    """nisa.nc_match_replace8 (Vector engine, NeuronCore-v3): x with the first free occurrence
    of each of v's 8 values per partition replaced by -1, and their indices."""
    t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=x)
    vt = nl0.ndarray(v.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=vt, src=v)
    r = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    i = nl0.ndarray(v.shape, dtype=nl0.int32, buffer=nl0.sbuf)
    nisa0.nc_match_replace8(dst=r, data=t, vals=vt, imm=-1.0, dst_idx=i)
    out_r = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    out_i = nl0.ndarray(v.shape, dtype=nl0.int32, buffer=nl0.shared_hbm)
    nisa0.dma_copy(dst=out_r, src=r)
    nisa0.dma_copy(dst=out_i, src=i)
    return out_r, out_i


class MatchReplace8(unittest.TestCase):

    def test_values_and_indices_as_the_reference_says(self):
        rng = np.random.default_rng(7)
        x = rng.integers(0, 6, (128, 40)).astype(np.float32)  # many duplicates
        v = rng.integers(0, 8, (128, 8)).astype(np.float32)  # some values absent
        got_r, got_i = match_replace8_nki0(x, v)
        want_r, want_i = x.copy(), np.full((128, 8), -1, np.int32)
        for p in range(128):  # the reference: the last value first, each its first free match
            free = list(range(40))
            for j in range(7, -1, -1):
                hit = next((e for e in free if x[p, e] == v[p, j]), None)
                if hit is not None:
                    free.remove(hit)
                    want_r[p, hit], want_i[p, j] = -1.0, hit
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_array_equal(got_r, want_r)

    def test_one_vector_instruction_timed_by_its_row(self):
        """max(MIN_II, N) cycles on the Vector engine: twice N, twice the time, past MIN_II."""
        def busy(n):
            stats = s.frontend_stats(match_replace8_nki0, np.zeros((128, n), np.float32),
                                     np.zeros((128, 8), np.float32))
            op = stats['engines']['dve']['opcodes']['match_replace8']
            self.assertEqual(op['count'], 1)
            return op['busy_ns']
        self.assertAlmostEqual(busy(400) / busy(200), 2.0, places=4)  # (ps ticks)
        self.assertAlmostEqual(busy(8) / busy(32), 1.0, places=9)  # both MIN_II cycles


class RangeSelect(unittest.TestCase):

    def test_a_window_per_row(self):
        (x,) = s.random_inputs((128, 64), lo=-1.0, hi=1.0)
        lo = (np.arange(128, dtype=np.float32) % 40)[:, None]
        hi = lo + 16
        out, mx = window_max_nki0(x, lo, hi)
        i = np.arange(64)[None, :]
        want = np.where((i >= lo) & (i < hi), x, np.float32(-3.4028234663852886e38))
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(mx, want.max(axis=1, keepdims=True))


class LoopReduce(unittest.TestCase):

    def test_reductions_across_iterations(self):
        (x,) = s.random_inputs((512, 16), lo=-2.0, hi=-1.0)  # negative: the max starts lowest
        m, t = loop_max_beta1(x)
        tiles = x.reshape(4, 128, 16)
        np.testing.assert_array_equal(m, tiles.max(axis=0))
        np.testing.assert_allclose(t, tiles.sum(axis=0), rtol=1e-6)
        k = kinds(loop_max_beta1, x)
        self.assertEqual(k.count('isa.memset'), 2)  # each accumulator set once


class Selections(unittest.TestCase):

    def test_where_predicated_copy_and_select_reduce(self):
        (x,) = s.random_inputs((128, 40))
        a, b, c, m = selections_beta1(x)
        big = x > 0.5
        np.testing.assert_array_equal(a, np.where(big, x, 0))
        np.testing.assert_array_equal(b, np.where(~big, x, -x))
        np.testing.assert_array_equal(c, np.where(big, x, -1))
        np.testing.assert_array_equal(m, np.where(big, x, -1).max(axis=1, keepdims=True))
        self.assertEqual(kinds(selections_beta1, x).count('isa.select'), 3)


@nki0.jit
def copy_with_dtype_nki0(a):
    """nisa.tensor_copy(dst=, src=, dtype=) as the current matmul tutorial writes it (its
    dtype, bf16, not dst's)."""
    out = nl0.ndarray(a.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    t = nl0.ndarray(a.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=a)
    c = nl0.ndarray(a.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(dst=c, src=t, dtype=nl0.bfloat16)
    nisa0.dma_copy(dst=out, src=c)
    return out


class TensorCopyDtype(unittest.TestCase):

    def test_a_dtype_other_than_dsts_is_said_not_applied(self):
        (a,) = s.random_inputs((128, 64))
        np.testing.assert_array_equal(copy_with_dtype_nki0(a), a)  # dst's dtype, fp32
        t = trace_kernel(copy_with_dtype_nki0, (a,), {}, False)
        (note,) = t.trace.notes.values()
        self.assertIn('dtype=bfloat16 is not applied', note)


class PsumDirectAllocation(unittest.TestCase):

    def test_accumulators_in_the_banks_the_kernel_chose(self):
        a, b = s.random_inputs((256, 256), (256, 1024))
        np.testing.assert_allclose(matmul_psum_banks_beta1(a, b), a.T @ b, rtol=1e-5)
        t = trace_kernel(matmul_psum_banks_beta1, (a, b), {}, False)
        decl = next(d for d in t.trace.decl_list if d.space == 'psum')
        self.assertEqual(sorted(set(decl.offsets)), [(0, 0), (0, 2048)])  # banks 0 and 1

    def test_the_allocation_function_is_called_by_the_documented_names(self):
        a, b = s.random_inputs((256, 128), (256, 1024))
        func = functools.partial(bank_of, bank_map=(3, 5))
        kernel = nki1.jit(matmul_psum_alloc_beta1)
        np.testing.assert_allclose(kernel(a, b, func), a.T @ b, rtol=1e-5)
        t = trace_kernel(kernel, (a, b, func), {}, False)
        decl = next(d for d in t.trace.decl_list if d.space == 'psum')
        self.assertEqual(sorted(set(decl.offsets)), [(0, 3 * 2048), (0, 5 * 2048)])
        with self.assertRaises(KernelError) as e:
            kernel(a, b, lambda i, p, f: (0, 0, 0))
        self.assertIn('func(idx=, pdim_size=, fdim_size=)', str(e.exception))
        self.assertIn("missing a required argument: 'i'", str(e.exception))


def bank_of(bank_map, idx, pdim_size, fdim_size):
    """A PSUM allocation function whose first parameter a functools.partial binds by keyword
    (as AWS's SD-attention kernel writes it): (bank, partition, address in the bank)."""
    return bank_map[idx[0]], 0, 0


def matmul_psum_alloc_beta1(lhsT, rhs, func):
    """lhsT.T @ rhs in 128 x 512 blocks accumulated in PSUM tiles that `func` places."""
    k, m = lhsT.shape
    _, n = rhs.shape
    out = nl1.ndarray((m, n), dtype=nl1.float32, buffer=nl1.shared_hbm)
    acc = nl1.zeros((2, nl1.par_dim(128), 512), dtype=nl1.float32,
                    buffer=nki1.compiler.psum.alloc(func))
    for j in nl1.affine_range(n // 512):
        for kk in nl1.affine_range(k // 128):
            a_t = nl1.load(lhsT[kk * 128:(kk + 1) * 128, 0:128])
            r_t = nl1.load(rhs[kk * 128:(kk + 1) * 128, j * 512:(j + 1) * 512])
            acc[j] += nisa1.nc_matmul(a_t, r_t)
        nl1.store(out[0:128, j * 512:(j + 1) * 512], value=nl1.copy(acc[j]))
    return out


@nki1.jit
def halves_at_partition_offsets_beta1(a):
    """a [64, F] added to itself through tiles the kernel placed at partitions 0 and 64 of the
    same bytes (nki.compiler.sbuf.mod_alloc(base_partition=, num_par_tiles=))."""
    out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    t = nl1.ndarray((2, nl1.par_dim(64), a.shape[1]), dtype=a.dtype,
                    buffer=nki1.compiler.sbuf.mod_alloc(base_addr=0, base_partition=0,
                                                         num_par_tiles=(2,)))
    t[0] = nl1.load(a)
    t[1] = nl1.multiply(t[0], 2.0)
    nl1.store(out, value=t[1])
    return out


class SbufPartitionOffsets(unittest.TestCase):

    def test_tiles_at_partition_offsets(self):
        (a,) = s.random_inputs((64, 32))
        np.testing.assert_array_equal(halves_at_partition_offsets_beta1(a), 2 * a)
        t = trace_kernel(halves_at_partition_offsets_beta1, (a,), {}, False)
        decl = next(d for d in t.trace.decl_list if d.offsets)
        self.assertEqual(sorted(decl.offsets), [(0, 0), (64, 0)])
        self.assertEqual(decl.line().split()[9], '0,64@0')  # the recording's PARTITION@BYTE


@nki1.jit
def running_address_beta1(x):
    """2 * x + 1 by 128-row tiles, each iteration's two tiles placed by the kernel at a running
    address (`at += ...` in the loop's body, as AWS's allocated attention kernel does): NKI
    traces the body once, so every iteration keeps the addresses its one trace gave."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    at = 0
    for i in nl1.affine_range(x.shape[0] // 128):
        a = nl1.ndarray((nl1.par_dim(128), x.shape[1]), dtype=x.dtype,
                        buffer=nki1.compiler.sbuf.mod_alloc(base_addr=at))
        at += x.shape[1] * 4
        b = nl1.ndarray((nl1.par_dim(128), x.shape[1]), dtype=x.dtype,
                        buffer=nki1.compiler.sbuf.mod_alloc(base_addr=at))
        at += x.shape[1] * 4
        a[...] = nl1.load(x[i * 128:(i + 1) * 128, :])
        b[...] = nl1.add(nl1.multiply(a, 2.0), 1.0)
        nl1.store(out[i * 128:(i + 1) * 128, :], value=b)
    return out


class TracedBodyAllocation(unittest.TestCase):

    def test_a_running_address_holds_its_first_trace(self):
        # 64 iterations of 2 x 16 KiB would run 2 MiB past a partition if each iteration took
        # the address its own run of the body computed
        (x,) = s.random_inputs((64 * 128, 4096))
        np.testing.assert_allclose(running_address_beta1(x), 2 * x + 1, rtol=1e-6)
        t = trace_kernel(running_address_beta1, (x,), {}, False)
        placed = sorted(off for d in t.trace.decl_list if d.offsets for _, off in d.offsets)
        self.assertEqual(placed, [0, 4096 * 4])
        self.assertEqual(kinds(running_address_beta1, x).count('store'), 64)


@nki1.jit
def sums_over_k_beta1(x):
    """x [K, R, F] summed over K by R/128 row tiles, each tile's sum assigned from nl.loop_reduce
    to its part of an accumulator the kernel zeroed (the destination is op's other input), and
    x[0] @ w through a Tensor-engine transpose used as a matmul operand as it is (in PSUM)."""
    k, r, f = x.shape
    out = nl1.ndarray((r, f), dtype=x.dtype, buffer=nl1.shared_hbm)
    acc = nl1.zeros((r // 128, nl1.par_dim(128), f), dtype=nl1.float32, buffer=nl1.sbuf)
    for i in nl1.affine_range(k):
        for q in nl1.affine_range(r // 128):
            t = nl1.load(x[i, q * 128:(q + 1) * 128, :])
            acc[q, :, :] = nl1.loop_reduce(t, op=np.add, loop_indices=(i,), dtype=nl1.float32)
    for q in nl1.affine_range(r // 128):
        nl1.store(out[q * 128:(q + 1) * 128, :], value=acc[q])
    return out


@nki1.jit
def transposed_operand_beta1(a, w):
    """a @ w for a [128, 128]: a's transpose (Tensor engine, into PSUM) is the stationary
    operand of the matmul."""
    out = nl1.ndarray((128, w.shape[1]), dtype=nl1.float32, buffer=nl1.shared_hbm)
    a_t = nisa1.nc_transpose(nl1.load(a))
    nl1.store(out, value=nl1.copy(nisa1.nc_matmul(a_t, nl1.load(w))))
    return out


class OperandsAsTheCompilerLowersThem(unittest.TestCase):

    def test_loop_reduce_into_an_assigned_part_accumulates_there(self):
        x = np.random.default_rng(5).random((3, 512, 64), dtype=np.float32)
        np.testing.assert_allclose(sums_over_k_beta1(x), x.sum(axis=0), rtol=1e-5)
        ks = kinds(sums_over_k_beta1, x)  # one add per call, onto the kernel's zeroed parts
        self.assertEqual((ks.count('isa.tensor_tensor'), ks.count('isa.memset')), (3 * 4, 4))

    def test_a_scan_from_a_tile_of_initial_values(self):
        x = np.random.default_rng(12).random((128, 64), dtype=np.float32)
        np.testing.assert_allclose(running_sums_beta1(x), np.cumsum(x, axis=1), rtol=1e-5)

    def test_a_transpose_in_psum_is_copied_for_the_matmul(self):
        a, w = (np.random.default_rng(6).random(s, dtype=np.float32) for s in ((128, 128),
                                                                               (128, 256)))
        np.testing.assert_allclose(transposed_operand_beta1(a, w), a @ w, rtol=1e-4)
        ks = kinds(transposed_operand_beta1, a, w)
        self.assertEqual(ks.count('copy'), 2)  # PSUM to SBUF: the transpose's, the result's
        # bf16 operands: the transpose copied back in bf16 (exact), as the matmul needs one dtype
        ab, wb = (x.astype(nl1.bfloat16) for x in (a, w))
        want = ab.astype(np.float32) @ wb.astype(np.float32)
        np.testing.assert_allclose(transposed_operand_beta1(ab, wb), want, rtol=1e-2)


@nki1.jit
def running_sums_beta1(x):
    """The running sum of each row of x [128, 2F], by two scans of F columns: the second starts
    from the first's last column (a [P, 1] tile as the initial value), as AWS's mamba tutorial
    carries its scan from tile to tile."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    f = x.shape[1] // 2
    ones = nl1.full((128, f), 1.0, dtype=nl1.float32)
    carry = nl1.zeros((128, 1), dtype=nl1.float32)
    for h in nl1.sequential_range(2):
        t = nl1.load(x[:, h * f:(h + 1) * f])
        s = nisa1.tensor_tensor_scan(ones, t, initial=carry, op0=np.multiply, op1=np.add)
        carry[...] = s[:, f - 1]
        nl1.store(out[:, h * f:(h + 1) * f], value=s)
    return out


class IsaErrors(unittest.TestCase):

    def test_reduced_axes_must_be_the_last(self):
        @nki1.jit
        def middle_axis(x):
            out = nl1.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl1.shared_hbm)
            v = nl1.load(x).reshape((x.shape[0], 4, 8))
            nl1.store(out, value=nisa1.tensor_reduce(np.add, v, axis=(1,)))
            return out

        with self.assertRaisesRegex(KernelError, r'axis \(1,\): the reduced axes must be the '
                                    'last free axes'):
            middle_axis(np.ones((128, 32), np.float32))

    def test_a_vector_transpose_is_at_most_32_by_32(self):
        @nki1.jit
        def too_big(x):
            out = nl1.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl1.shared_hbm)
            nl1.store(out, value=nisa1.nc_transpose(nl1.load(x), engine=nisa1.vector_engine))
            return out

        with self.assertRaisesRegex(KernelError, r'at most 32 x 32, got \(64, 16\)'):
            too_big(np.ones((64, 16), np.float32))


if __name__ == '__main__':
    unittest.main()

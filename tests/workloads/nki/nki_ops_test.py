"""Each supported nl / nisa operation in one small kernel: its values against numpy, and the
instructions it records (which engine, how many) through the builder."""

import unittest

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import nki_support as s
from trnsim.nki import KernelError, trace_kernel


@nki.jit
def every_op(x, w):
    p, f = x.shape
    outs = [nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm) for _ in range(4)]
    sums = nl.ndarray((p, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    flipped = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.shared_hbm)
    prod = nl.ndarray((f, w.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:p, 0:f]
    t = nl.load(x[i_p, i_f])
    m = nl.max(t, axis=1, keepdims=True)
    shifted = nisa.tensor_scalar(t, op0=nl.subtract, operand0=m)
    e = nl.exp(shifted)
    half = nisa.activation(op=nl.exp, data=t, scale=0.5)
    total = nl.sum(e, axis=1, keepdims=True)
    top = nisa.tensor_reduce(op=nl.max, data=half, axis=(1,), keepdims=True)
    twice = nl.multiply(e, 2.0)
    filled = nisa.memset((p, f), 3.0, nl.float32)
    plus = nisa.tensor_tensor(filled, nisa.tensor_copy(t), op=nl.add)
    tr = nl.copy(nl.transpose(t), dtype=x.dtype)
    wt = nl.load(w)
    acc = nl.zeros((f, w.shape[1]), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(t, wt)
    acc += nl.matmul(t, wt, transpose_x=True)
    for out, value in zip(outs, (e, half, twice, plus)):
        nl.store(out, value=value)
    nl.store(sums, value=nl.add(total, top))
    nl.store(flipped, value=tr)
    nl.store(prod, value=nl.copy(acc))
    return (*outs, sums, flipped, prod)


@nki.jit
def top8(x):
    p = x.shape[0]
    best = nl.ndarray((p, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    where = nl.ndarray((p, 8), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nisa.max8(t)
    nl.store(best, value=m)
    nl.store(where, value=nisa.nc_find_index8(t, m))
    return best, where


@nki.jit
def masked_add(a, b, cols=64):
    """a + b over tiles of 128 rows x `cols` columns; the last row and column tiles are
    partial, cut by masks on both axes."""
    rows, width = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for r in nl.affine_range((rows + 127) // 128):
        for c in nl.affine_range((width + cols - 1) // cols):
            p, f = r * 128 + i_p, c * cols + i_f
            keep = (p < rows) & (f < width)
            x = nl.load(a[p, f], mask=keep)
            y = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=y, src=b[p, f], mask=keep)
            s = nisa.tensor_tensor(x, y, op=nl.add, mask=keep)
            nl.store(out[p, f], value=nl.exp(s, mask=keep), mask=keep)
    return out


@nki.jit
def row_scale(x, scale):
    """Each row of x times its scale (a [P, 1] tile broadcast), seen as [P, 4, F / 4]."""
    p, f = x.shape
    out = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x).reshape((p, 4, f // 4))
    s = nl.load(scale)
    one = nl.full((p, 4, f // 4), 1.0, nl.float32)
    scaled = nl.multiply(t, s.broadcast_to((p, 4, f // 4)))
    nl.store(out, value=nl.add(scaled, one).reshape((p, f)))
    return out


@nki.jit
def index_values(x):
    """nisa.iota (the beta 1 spelling: an expression of indices; nki_editions_test has NKI
    0.x's), a two-operation tensor_scalar, a scalar_tensor_tensor and an activation with a
    per-partition bias."""
    p, f = x.shape
    outs = [nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(4)]
    i_p, i_f = nl.arange(p)[:, None], nl.arange(f)[None, :]
    numbered = nisa.iota(i_p * f + i_f + 3, dtype=nl.float32)
    rows = nisa.iota(nl.arange(p)[:, None], dtype=nl.float32)
    t = nl.load(x)
    affine = nisa.tensor_scalar(t, op0=np.subtract, operand0=0.5, op1=np.multiply, operand1=4.0)
    biased = nisa.activation(op=nl.relu, data=t, bias=rows, scale=-2.0)
    per_row = nisa.tensor_scalar(t, np.multiply, rows, op1=np.add, operand1=1.0)
    per_row = nisa.scalar_tensor_tensor(data=t, op0=np.subtract, operand0=0.25,
                                        op1=np.multiply, operand1=per_row)
    for out, v in zip(outs, (numbered, affine, biased, per_row)):
        nl.store(out, value=v)
    return outs


@nki.jit
def strided_and_broadcast(x, v):
    """Every other column of a tile (a strided view), and a row vector in HBM broadcast to every
    partition (one DMA with partition stride 0)."""
    p, f = x.shape
    out = nl.ndarray((p, f // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    row = nl.broadcast_to(v.reshape((1, f // 2)), shape=(p, f // 2))
    nl.store(out, value=nl.add(t[:, 0:f:2], row))
    return out


@nki.jit
def masked_reduce_and_transpose(a):
    """A [rows < 128, cols < 128] tensor in a full tile: its row maxima and its transpose, each
    instruction cut to the kept part by a mask."""
    rows, cols = a.shape
    maxima = nl.ndarray((rows, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    flipped = nl.ndarray((cols, rows), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(128)[None, :]
    keep = (i_p < rows) & (i_f < cols)
    t = nl.load(a[i_p, i_f], mask=keep)
    m = nl.max(t, axis=1, keepdims=True, mask=keep)
    nl.store(maxima[i_p, nl.arange(1)[None, :]], value=m, mask=(i_p < rows))
    tr = nisa.nc_transpose(t, mask=keep)
    back = nl.copy(tr, mask=(i_p < cols) & (i_f < rows))
    nl.store(flipped[i_p, i_f], value=back, mask=(i_p < cols) & (i_f < rows))
    return maxima, flipped


@nki.jit
def transpose_by_identity(x):
    """x.T as a matmul against an identity matrix from nl.shared_constant."""
    p, f = x.shape
    out = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.shared_hbm)
    eye = nl.load(nl.shared_constant(np.identity(p, dtype=np.float32), dtype=nl.float32))
    t = nl.load(x)
    acc = nl.zeros((f, p), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(t, eye)
    nl.store(out, value=nl.copy(acc))
    return out


UNARY = ('rsqrt', 'sqrt', 'square', 'sigmoid', 'tanh', 'silu', 'gelu', 'log', 'negative',
         'gelu_apprx_tanh', 'softplus', 'mish', 'sin', 'cos', 'arctan', 'abs', 'sign', 'erf',
         'gelu_dx', 'silu_dx', 'tan', 'erf_dx', 'gelu_apprx_sigmoid')


@nki.jit
def unary_functions(x):
    """Each nl activation function of UNARY applied to x (positive), one Scalar-engine
    instruction each."""
    t = nl.load(x)
    outs = []
    for name in UNARY:
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=getattr(nl, name)(t))
        outs.append(out)
    return outs


def unary_reference(x):
    from scipy.special import erf
    x = x.astype(np.float64)
    sig = 1 / (1 + np.exp(-x))
    phi = 0.5 * (1 + erf(x / np.sqrt(2)))
    return [1 / np.sqrt(x), np.sqrt(x), x * x, sig, np.tanh(x), x * sig, x * phi, np.log(x), -x,
            0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
            np.log1p(np.exp(x)), x * np.tanh(np.log1p(np.exp(x))), np.sin(x), np.cos(x),
            np.arctan(x), np.abs(x), np.sign(x), erf(x),
            phi + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi), sig * (1 + x * (1 - sig)),
            np.tan(x), 2 / np.sqrt(np.pi) * np.exp(-x * x), x / (1 + np.exp(-1.702 * x))]


@nki.jit
def row_means(x):
    """The mean of each row, whole and of its first 10 columns (a mask)."""
    p, f = x.shape
    outs = [nl.ndarray((p, 1), dtype=x.dtype, buffer=nl.shared_hbm) for _ in range(2)]
    t = nl.load(x)
    nl.store(outs[0], value=nl.mean(t, axis=1, keepdims=True))
    i_f = nl.arange(f)[None, :]
    nl.store(outs[1], value=nl.mean(t, axis=1, keepdims=True, mask=(i_f < 10)))
    return outs


@nki.jit
def scans(x):
    """Prefix sums of each row (a scan adding zeros) and a running max shifted by x, both with
    nisa.tensor_tensor_scan."""
    p, f = x.shape
    outs = [nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(2)]
    t = nl.load(x)
    zeros = nisa.memset((p, f), 0.0, nl.float32)
    sums = nisa.tensor_tensor_scan(t, zeros, 0.0, np.add, np.add)
    peaks = nisa.tensor_tensor_scan(t, t, -1.0, np.maximum, np.subtract)
    nl.store(outs[0], value=sums)
    nl.store(outs[1], value=peaks)
    return outs


def scans_reference(x):
    x = x.astype(np.float32)
    sums = np.cumsum(x, axis=1, dtype=np.float32)
    peaks = np.empty_like(x)
    prev = np.full(x.shape[0], -1.0, np.float32)
    for i in range(x.shape[1]):
        prev = np.maximum(x[:, i], prev) - x[:, i]
        peaks[:, i] = prev
    return sums, peaks


@nki.jit
def part_of_a_part(x):
    """Rows 8..39 of batch 1 of x [B, R, F], through a view of the batch (X_b = x[1];
    X_b[8:40, :]), indexed by a named nl.mgrid (.p, .x)."""
    b, r, f = x.shape
    out = nl.ndarray((32, f), dtype=x.dtype, buffer=nl.shared_hbm)
    x_b = x[1, :, :]
    ix = nl.mgrid[0:32, 0:f]
    t = nl.load(x_b[8:40, :])
    nl.store(out[ix.p, ix.x], value=t)
    return out


@nki.jit
def plain_matmul(x, y):
    """x @ y with nl.matmul's default transpose_x=False (x: [M, K], y: [K, N])."""
    out = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros(out.shape, nl.float32, buffer=nl.psum)
    acc += nl.matmul(nl.load(x), nl.load(y))
    nl.store(out, value=nl.copy(acc))
    return out


def repeated_matmuls(x, y, rewrite):
    """Four x @ y (x: [M, K]) in an NKI loop: x is transposed once in an nl kernel, unless it
    is rewritten in between (then again after each write); an isa kernel transposes at every
    call."""
    out = nl.ndarray((4, x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    xt, yt = nl.load(x), nl.load(y)
    for i in nl.affine_range(4):
        acc = nl.zeros((x.shape[0], y.shape[1]), nl.float32, buffer=nl.psum)
        acc += nl.matmul(xt, yt)
        if rewrite:
            xt[...] = nl.multiply(xt, 1.0)
        nl.store(out[i], value=nl.copy(acc))
    return out


@nki.jit
def interleaved_blocks(w):
    """w [P, C, T] loaded twice into t [P, C, 2, T] as t[:, :, k, :] (each part C runs of T
    elements) and stored back from those parts."""
    p, c, t = w.shape
    out = nl.ndarray((p, 2, c, t), dtype=w.dtype, buffer=nl.shared_hbm)
    both = nl.ndarray((p, c, 2, t), dtype=w.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        both[:, :, k, :] = nl.load(w)
    for k in nl.affine_range(2):
        nl.store(out[:, k, :, :], value=both[:, :, k, :])
    return out


@nki.jit
def matmuls_kept_for_later(x):
    """p1 = t0 @ x and p2 = t1 @ x with t0 = x and t1 = 3 t0 (blocks of one declaration), both
    matmuls kept unemitted while the second transposes its x: the hoisted transpose of t0 must
    survive. out = p1 + p2 = 4 x @ x; x: [128, 128]."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
    t[0] = nl.load(x)
    t[1] = nl.multiply(t[0], 3.0)
    y = nl.load(x)
    p1 = nl.matmul(t[0], y)
    p2 = nl.matmul(t[1], y)
    nl.store(out, value=nl.add(nl.copy(p1), nl.copy(p2)))
    return out


def recorded(kernel, *args):
    """The kinds of the operations the frontend records for kernel(*args)."""
    return [op.kind for op in trace_kernel(kernel, args, {}, False).trace.ops]


@nki.jit
def first_max_of_windows(x):
    """x [128, 8, 3, 3]: a one-hot of the first maximum of each 3x3 window, by numpy
    broadcasting along free axes ([128, 8, 1, 1] against [128, 8, 3, 3] and [128, 1, 3, 3]),
    the window positions an iota of a dense nl.mgrid's axes; each window's maximum kept in a
    private HBM tensor whose shape names its partition dimension."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    kept = nl.ndarray((nl.par_dim(128), 8), dtype=x.dtype, buffer=nl.private_hbm)
    t = nl.load(x)
    m = nl.max(t, axis=[2, 3], keepdims=True)
    nl.store(kept, value=m.reshape((128, 8)))
    at_max = nl.equal(m, t, dtype=nl.float32)
    g = nl.mgrid[0:128, 0:8, 0:3, 0:3]
    position = nisa.iota(3 * g.y + g.z, dtype=nl.float32)
    candidates = nl.where(at_max, position, 9.0)
    first = nl.min(candidates, axis=[2, 3], keepdims=True)
    nl.store(out, value=nl.equal(first, position, dtype=x.dtype))
    return out


@nki.jit
def corner_sums(x):
    """x [2, 128, 4, 8]: per partition, the sum of the [3, 5] corner of each [4, 8] block, the
    blocks in one tensor of tiles (a corner: 3 runs of 5 elements, 8 apart)."""
    out = nl.ndarray((128, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 4, 8), dtype=x.dtype, buffer=nl.sbuf)
    sums = nl.ndarray((128, 2), dtype=x.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(2):
        t[b] = nl.load(x[b])
        sums[:, b:b + 1] = nl.sum(t[b, :, 0:3, 0:5], axis=[-2, -1], keepdims=True)
    nl.store(out, value=sums)
    return out


@nki.jit
def rows_by_index(table, idx):
    """out[r] = table[idx[r] + 1] for 200 rows: the indices loaded, computed on (+1), then the
    rows of table they name loaded by an indirect DMA, 128 rows a tile, the last tile's rows
    past 200 masked off."""
    n = idx.shape[0]
    out = nl.ndarray((n, table.shape[1]), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(table.shape[1])[None, :]
    for t in nl.affine_range((n + 127) // 128):
        rows = t * 128 + i_p
        at = nl.load(idx[rows, nl.arange(1)[None, :]], mask=rows < n)
        at_next = nl.add(at, 1, dtype=nl.int32, mask=rows < n)
        got = nl.load(table[at_next, i_f], mask=rows < n)
        nl.store(out[rows, i_f], value=got, mask=rows < n)
    return out


class EveryOperation(unittest.TestCase):

    def test_a_reduction_of_several_runs(self):
        x = np.random.default_rng(10).random((2, 128, 4, 8), dtype=np.float32)
        np.testing.assert_allclose(corner_sums(x), x[:, :, :3, :5].sum(axis=(2, 3)).T,
                                   rtol=1e-5)

    def test_rows_gathered_by_an_indirect_dma(self):
        rng = np.random.default_rng(11)
        table = rng.random((300, 96), dtype=np.float32)
        idx = rng.integers(0, 299, (200, 1)).astype(np.int32)
        np.testing.assert_array_equal(rows_by_index(table, idx), table[idx[:, 0] + 1])
        t = trace_kernel(rows_by_index, (table, idx), {}, False)
        gathers = [op for op in t.trace.ops if op.kind == 'gather']
        self.assertEqual(len(gathers), 2)  # (the loop unrolled: its last tile is masked)
        stats = s.frontend_stats(rows_by_index, table, idx)
        self.assertEqual(s.stat(stats, 'engines.pool.instructions'), 2)  # software DGE
        idx[5, 0] = 299
        with self.assertRaisesRegex(KernelError, 'index 300 of an indirect access'):
            rows_by_index(table, idx)

    def test_free_axis_broadcasting(self):
        x = np.random.default_rng(9).integers(0, 3, (128, 8, 3, 3)).astype(np.float32)
        flat = x.reshape(128, 8, 9)
        want = np.zeros_like(flat)
        np.put_along_axis(want, flat.argmax(axis=2)[..., None], 1.0, axis=2)
        np.testing.assert_array_equal(first_max_of_windows(x), want.reshape(x.shape))
        t = trace_kernel(first_max_of_windows, (x,), {}, False)
        ins = [op for op in t.trace.ops if op.kind == 'isa.tensor_tensor']
        # each comparison of a [128, 8, 1, 1] tile with a [128, 8, 3, 3] one: one instruction
        # per element of the step-0 axes (9), each over the 8 windows (elements 9 apart)
        self.assertEqual([(op.args[0][6], op.args[0][7]) for op in ins], [(8, 9)] * 18)
        self.assertEqual(len([op for op in t.trace.ops if op.kind == 'isa.iota']), 1)

    def test_tensor_attributes(self):
        # the documented nki.tensor attributes: dtype, shape, ndim and itemsize (bytes)
        @nki.jit
        def sized(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            assert (a.ndim, a.itemsize, t.ndim, t.itemsize) == (2, 2, 2, 2)
            nl.store(out, value=nl.multiply(t, float(a.itemsize * a.ndim)))
            return out

        a = np.ones((128, 4), np.float16)
        np.testing.assert_array_equal(sized(a), 4 * a)

        @nki.jit
        def parts(a):
            # parts of tensors and tiles answer them too
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            assert (a[0:64, :].ndim, a[0:64, :].itemsize, t[0:64, 0:2].ndim) == (2, 4, 2)
            nl.store(out, value=t)
            return out

        a = np.ones((128, 4), np.float32)
        np.testing.assert_array_equal(parts(a), a)

    def test_documented_keywords_that_change_nothing_are_accepted(self):
        @ncc.enable_stack_allocator(log_level=20)
        @nki.jit
        def named(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            u = nl.add(t, 0.0, name='u')
            nl.store(out, value=nisa.tensor_copy(u, name='copy0'), name='store0')
            return out

        a = np.ones((128, 4), np.float32)
        np.testing.assert_array_equal(named(a), a)

    def test_wrong_operand_types_are_kernel_errors(self):
        @nki.jit
        def into_index(a):
            nisa.dma_copy(dst=nl.arange(4)[None, :], src=a)
            return a

        with self.assertRaisesRegex(KernelError, r'nisa.dma_copy: loads into a tile, got '
                                    'IndexRange'):
            into_index(np.ones((128, 4), np.float32))

    def test_nc_v2_reduces_with_add_only(self):
        @nki.jit
        def row_max(a):
            out = nl.ndarray((a.shape[0], 1), dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            m = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation_reduce(op=nl.exp, data=t, reduce_op=np.maximum, reduce_res=m)
            nl.store(out, m)
            return out

        # trn1: the model's rule (models/isa/activation.cpp), named at the call's line
        with self.assertRaisesRegex(Exception, r'nki_ops_test.py:\d+: nisa.activation_reduce: '
                                    r'activation_reduce on act: reduce alu max: NeuronCore-v2 '
                                    r'reduces with add only'):
            row_max(np.zeros((128, 4), np.float32))

    def test_match_replace8_needs_nc_v3(self):
        import nki as nki0
        import nki.isa as nisa0
        import nki.language as nl0

        @nki0.jit
        def replace(x, v):
            t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)
            vt = nl0.ndarray(v.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=vt, src=v)
            nisa0.nc_match_replace8(dst=t, data=t, vals=vt, imm=0.0)
            nisa0.dma_copy(dst=x, src=t)
            return x

        # trn1: the row's version (models/isa/reductions.cpp), named at the call's line
        with self.assertRaisesRegex(Exception, r'nki_ops_test.py:\d+: nisa.nc_match_replace8: '
                                    r'match_replace8 on dve: match_replace8 runs on '
                                    r'NeuronCore-v3 and newer'):
            replace(np.zeros((128, 16), np.float32), np.zeros((128, 8), np.float32))

    def test_sendrecv_needs_nc_v3(self):
        import nki as nki0
        import nki.isa as nisa0
        import nki.language as nl0

        @nki0.jit
        def swap(x):
            t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=x)
            u = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.sendrecv(src=t, dst=u, send_to_rank=1, recv_from_rank=1, pipe_id=0)
            nisa0.dma_copy(dst=x, src=u)
            return x

        # trn1: the meeting's core_barrier row (NeuronCore-v3), named at the call's line
        with self.assertRaisesRegex(Exception, r'nki_ops_test.py:\d+: nisa.sendrecv: '
                                    r'core_barrier on \w+: core_barrier runs on NeuronCore-v3'):
            swap(np.zeros((128, 16), np.float32))

    def test_no_tensor_copy_on_the_scalar_engine_of_nc_v2(self):
        @nki.jit
        def scalar_copy(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nisa.tensor_copy(nl.load(a), engine=nisa.scalar_engine))
            return out

        # this test runs on trn1 (NeuronCore-v2); nisa.activation(op=nl.copy) is the way there:
        # the model's rule (the rows' costs), named at the call's line
        with self.assertRaisesRegex(Exception, r'nki_ops_test.py:\d+: nisa.tensor_copy: '
                                    r'tensor_copy on act: tensor_copy runs on NeuronCore-v3 and '
                                    r'newer .*before it: .*nisa.activation\(op=nl.copy\)'):
            scalar_copy(np.zeros((128, 4), np.float32))

    def test_operations_on_tile_parts_of_several_runs(self):
        """A masked region, an accumulation and a broadcast load into parts of several runs:
        one instruction (or transfer) per run."""
        (w,) = s.random_inputs((128, 4, 8))

        @nki.jit
        def masked_copy(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            i_p, i_a, i_c = nl.mgrid[0:128, 0:4, 0:8]
            t = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.sbuf)
            t[...] = nl.copy(nl.load(a), mask=(i_a < 2) & (i_c < 4))
            nl.store(out, value=t)
            return out

        @nki.jit
        def add_into_runs(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 4, 2, 8), dtype=a.dtype, buffer=nl.sbuf)
            t[:, :, 0, :] = nl.load(a)
            t[:, :, 0, :] += 1.0
            nl.store(out, value=t[:, :, 0, :])
            return out

        @nki.jit
        def broadcast_into_runs(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 4, 2, 8), dtype=a.dtype, buffer=nl.sbuf)
            t[:, :, 0, :] = nl.broadcast_to(a[0:1, :, :], (128, 4, 8))
            nl.store(out, value=t[:, :, 0, :])
            return out

        want = np.zeros_like(w)
        want[:, :2, :4] = w[:, :2, :4]
        np.testing.assert_array_equal(masked_copy(w), want)
        # the masked copy: one instruction per kept run of 4 elements (2 of them)
        self.assertEqual(recorded(masked_copy, w).count('copy'), 2)
        np.testing.assert_array_equal(add_into_runs(w), w + np.float32(1))
        self.assertEqual(recorded(add_into_runs, w).count('isa.tensor_scalar'), 4)
        np.testing.assert_array_equal(broadcast_into_runs(w), np.broadcast_to(w[0:1], w.shape))

    def test_dma_of_a_tile_part_in_several_runs(self):
        (w,) = s.random_inputs((128, 6, 9))
        out = interleaved_blocks(w)
        np.testing.assert_array_equal(out[:, 0], w)
        np.testing.assert_array_equal(out[:, 1], w)
        stats = s.frontend_stats(interleaved_blocks, w)
        # one transfer per run: 2 loads and 2 stores of 6 runs each, the bytes unchanged
        self.assertEqual(s.stat(stats, 'dma.transfers'), 4 * 6)
        self.assertEqual(s.stat(stats, 'dma.bytes'), 4 * w.nbytes)

        @nki.jit
        def engine_on_runs(w):
            out = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 6, 2, 9), dtype=w.dtype, buffer=nl.sbuf)
            t[:, :, 0, :] = nl.load(w)
            nl.store(out, value=nl.exp(t[:, :, 0, :]))
            return out

        np.testing.assert_allclose(engine_on_runs(w), np.exp(w), rtol=2e-6)
        # one activation per run (6), into a tile of its own
        self.assertEqual(recorded(engine_on_runs, w).count('isa.activation'), 6)

    def test_matmul_transposes_are_hoisted_in_nl_kernels(self):
        x, y = s.random_inputs((64, 96), (96, 40))
        want = np.broadcast_to(x @ y, (4, 64, 40))
        for style, rewrite, transposes in (('nl', False, 1), ('nl', True, 4), ('isa', False, 4)):
            kernel = nki.jit(repeated_matmuls)
            if style == 'isa':
                kernel = nki.compiler.skip_middle_end_transformations(kernel)
            np.testing.assert_allclose(kernel(x, y, rewrite), want, rtol=1e-5)
            stats = s.frontend_stats(kernel, x, y, rewrite)
            self.assertEqual(s.stat(stats, 'engines.pe.opcodes.transpose.count'), transposes,
                             (style, rewrite))
            self.assertEqual(s.stat(stats, 'engines.pe.opcodes.matmul.count'), 4)

    def test_matmul_without_transpose_x(self):
        x, y = s.random_inputs((64, 96), (96, 40))
        np.testing.assert_allclose(plain_matmul(x, y), x @ y, rtol=1e-5)
        # pe: the inserted transpose of x and the matmul; x's copy back to SBUF and the
        # eviction are copies the compiler places, both on the Scalar engine (the faster of
        # the two on trn1 at the same cycles, 1.4 against 1.12 GHz); act: also the store's
        # trigger
        self.assertEqual(s.counts(s.frontend_stats(plain_matmul, x, y)),
                         {'sp': 2, 'act': 3, 'pe': 2, 'dve': 0, 'pool': 0, 'dma': 3})

    def test_part_of_a_part_and_named_grid(self):
        (x,) = s.random_inputs((3, 48, 20))
        np.testing.assert_array_equal(part_of_a_part(x), x[1, 8:40, :])
        stats = s.frontend_stats(part_of_a_part, x)
        self.assertEqual(s.stat(stats, 'dma.bytes'), 2 * 32 * 20 * 4)

    def test_tensor_tensor_scan(self):
        (x,) = s.random_inputs((128, 24), lo=-1.0)
        sums, peaks = scans(x)
        want_sums, want_peaks = scans_reference(x)
        np.testing.assert_allclose(sums, want_sums, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(peaks, want_peaks)
        # dve: the memset and two scans
        self.assertEqual(s.counts(s.frontend_stats(scans, x)),
                         {'sp': 1, 'act': 2, 'pe': 0, 'dve': 3, 'pool': 0, 'dma': 3})

    def test_mean(self):
        (x,) = s.random_inputs((128, 40))
        whole, first10 = row_means(x)
        np.testing.assert_allclose(whole[:, 0], x.mean(axis=1), rtol=1e-5)
        np.testing.assert_allclose(first10[:, 0], x[:, :10].mean(axis=1), rtol=1e-5)
        # each mean: a reduction and a multiply on the Vector engine
        self.assertEqual(s.counts(s.frontend_stats(row_means, x)),
                         {'sp': 1, 'act': 2, 'pe': 0, 'dve': 4, 'pool': 0, 'dma': 3})

    def test_unary_functions(self):
        (x,) = s.random_inputs((128, 32), lo=0.1, hi=3.0)
        for name, got, want in zip(UNARY, unary_functions(x), unary_reference(x)):
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, err_msg=name)
        # one activation and one store trigger per function on the Scalar engine
        self.assertEqual(s.counts(s.frontend_stats(unary_functions, x)),
                         {'sp': 1, 'act': 2 * len(UNARY), 'pe': 0, 'dve': 0, 'pool': 0,
                          'dma': 1 + len(UNARY)})

    def test_shared_constant(self):
        (x,) = s.random_inputs((128, 64))
        np.testing.assert_array_equal(transpose_by_identity(x), x.T)
        stats = s.frontend_stats(transpose_by_identity, x)
        # the copy out of PSUM is left to the compiler: the idle Scalar engine takes it
        self.assertEqual(s.counts(stats),
                         {'sp': 2, 'act': 2, 'pe': 1, 'dve': 0, 'pool': 0, 'dma': 3})

    def test_masked_reduction_and_transpose(self):
        (a,) = s.random_inputs((100, 40), lo=-1.0)
        maxima, flipped = masked_reduce_and_transpose(a)
        np.testing.assert_array_equal(maxima[:, 0], a.max(axis=1))
        np.testing.assert_array_equal(flipped, a.T)
        stats = s.frontend_stats(masked_reduce_and_transpose, a)
        # the transpose's copy out of PSUM goes to the Scalar engine (the compiler's choice)
        self.assertEqual(s.counts(stats),
                         {'sp': 1, 'act': 3, 'pe': 1, 'dve': 1, 'pool': 0, 'dma': 3})
        self.assertEqual(s.stat(stats, 'dma.bytes'), 2 * a.nbytes + 100 * 4)

    def test_iota_tensor_scalar_two_ops_activation_bias(self):
        (x,) = s.random_inputs((128, 16), lo=-1.0)
        numbered, affine, biased, per_row = index_values(x)
        p = np.arange(128, dtype=np.float32)[:, None]
        np.testing.assert_array_equal(numbered, p * 16 + np.arange(16) + 3)
        np.testing.assert_allclose(affine, (x - 0.5) * 4, rtol=1e-6)
        np.testing.assert_allclose(biased, np.maximum(x * -2 + p, 0), rtol=1e-6)
        np.testing.assert_allclose(per_row, (x - 0.25) * (x * p + 1), rtol=1e-6, atol=1e-6)
        # pool: 2 iotas; dve: a scalar_tensor_tensor and the (subtract, multiply)
        # tensor_scalar (the Scalar engine's scale and bias cannot subtract); act: the
        # (multiply, add) one (left to the compiler, which puts it where it costs less: the
        # Scalar engine on trn1), the activation and 4 store triggers
        self.assertEqual(s.counts(s.frontend_stats(index_values, x)),
                         {'sp': 1, 'act': 6, 'pe': 0, 'dve': 2, 'pool': 2, 'dma': 5})

    def test_iota_patterns_it_cannot_number_in_order_are_errors(self):
        @nki.jit
        def skipping(x):
            return nisa.iota(nl.arange(8)[None, :] * 2, dtype=nl.int32)

        with self.assertRaisesRegex(Exception, 'nisa.iota: .*number the free elements in order'):
            skipping(np.zeros((1, 1), np.float32))

    def test_strided_view_and_broadcast_load(self):
        x, v = s.random_inputs((128, 32), (16,))
        np.testing.assert_array_equal(strided_and_broadcast(x, v), x[:, 0::2] + v[None, :])
        stats = s.frontend_stats(strided_and_broadcast, x, v)
        self.assertEqual(s.counts(stats),
                         {'sp': 2, 'act': 1, 'pe': 0, 'dve': 1, 'pool': 0, 'dma': 3})
        # the broadcast load reads the 16 values once per partition
        self.assertEqual(s.stat(stats, 'dma.bytes'), x.nbytes + 128 * v.nbytes + x.nbytes // 2)

    def test_reshape_broadcast_and_full(self):
        x, scale = s.random_inputs((128, 64), (128, 1))
        np.testing.assert_allclose(row_scale(x, scale), x * scale + 1, rtol=1e-6)
        # the broadcast multiply is one tensor_scalar (on the Scalar engine, where it costs less
        # on trn1); reshape costs nothing; full is a memset
        self.assertEqual(s.counts(s.frontend_stats(row_scale, x, scale)),
                         {'sp': 2, 'act': 2, 'pe': 0, 'dve': 2, 'pool': 0, 'dma': 3})

    def test_masks(self):
        a, b = s.random_inputs((300, 100), (300, 100))
        np.testing.assert_allclose(masked_add(a, b), np.exp(a + b), rtol=1e-6)
        # 3 x 2 tiles: 2 loads, an add, an exp and a store each
        stats = s.frontend_stats(masked_add, a, b)
        self.assertEqual(s.counts(stats),
                         {'sp': 12, 'act': 12, 'pe': 0, 'dve': 6, 'pool': 0, 'dma': 18})
        self.assertEqual(s.stat(stats, 'dma.bytes'), a.nbytes * 3)  # only the kept parts

    def test_max8_and_find_index8(self):
        (x,) = s.random_inputs((128, 50))
        best, where = top8(x)
        order = np.argsort(-x, axis=1, kind='stable')[:, :8]
        np.testing.assert_array_equal(best, np.take_along_axis(x, order, axis=1))
        np.testing.assert_array_equal(where, order)
        self.assertEqual(s.counts(s.frontend_stats(top8, x)),
                         {'sp': 1, 'act': 2, 'pe': 0, 'dve': 2, 'pool': 0, 'dma': 3})

    def test_values(self):
        x, w = s.random_inputs((128, 64), (128, 32), lo=-1.0)
        e, half, twice, plus, sums, flipped, prod = every_op(x, w)
        ref_e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(e, ref_e, rtol=1e-6)
        np.testing.assert_allclose(half, np.exp(0.5 * x), rtol=1e-6)
        np.testing.assert_allclose(twice, 2 * ref_e, rtol=1e-6)
        np.testing.assert_array_equal(plus, x + 3)
        np.testing.assert_allclose(sums[:, 0], ref_e.sum(axis=1) + np.exp(0.5 * x).max(axis=1),
                                   rtol=1e-5)
        np.testing.assert_array_equal(flipped, x.T)
        np.testing.assert_allclose(prod, 2 * x.T @ w, rtol=1e-5, atol=1e-5)

    def test_the_engine_of_a_tensor_scalar_left_to_the_compiler(self):
        # on trn1 an arithmetic tensor_scalar costs less on the Scalar engine (1.4 GHz against
        # 1.12, N cycles on both), so the compiler's choice is that engine; a bitvec operation
        # and int32 data stay on the Vector engine, as does an engine the kernel names
        @nki.jit
        def scalars(x, k):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            bits = nl.ndarray(k.shape, dtype=k.dtype, buffer=nl.shared_hbm)
            t = nl.load(x)
            a = nisa.tensor_scalar(t, op0=nl.multiply, operand0=2.0)
            b = nisa.tensor_scalar(a, op0=nl.add, operand0=1.0, engine=nisa.vector_engine)
            nl.store(out, value=b)
            i = nl.load(k)
            nl.store(bits, value=nisa.tensor_scalar(i, op0=nl.bitwise_and, operand0=3))
            return out, bits

        x, = s.random_inputs((128, 256))
        k = np.arange(128 * 8, dtype=np.int32).reshape(128, 8)
        out, bits = scalars(x, k)
        np.testing.assert_allclose(out, 2 * x + 1, rtol=1e-6)
        np.testing.assert_array_equal(bits, k & 3)
        stats = s.frontend_stats(scalars, x, k)
        self.assertEqual(s.stat(stats, 'engines.act.opcodes.tensor_scalar.count'), 1)
        self.assertEqual(s.stat(stats, 'engines.dve.opcodes.tensor_scalar.count'), 2)

    def test_instructions(self):
        x, w = s.random_inputs((128, 64), (128, 32))
        c = s.counts(s.frontend_stats(every_op, x, w))
        # sp: 2 loads; act: 2 activations + 7 store triggers; pe: transpose + 2 matmuls (the
        # zeros folded into the first); dve: 2 max/sum reductions, tensor_reduce,
        # memset, tensor_tensor, add, the subtracting scalar op; the 3 copies (tensor_copy and
        # 2 out of PSUM) and the multiplying scalar op are left to the compiler, which puts
        # them where they cost less: the Scalar engine on trn1
        self.assertEqual(c, {'sp': 2, 'act': 13, 'pe': 3, 'dve': 7, 'pool': 0, 'dma': 9})


if __name__ == '__main__':
    unittest.main()

"""Values of the frontend against the C++ drivers' functional runs on the same inputs (the
drivers' seeded inputs, read back through the bridge): alloc_bad is wrong exactly as the model
computes it, and bfloat16 results round exactly as the model's engines round them."""

import json
import unittest

import numpy as np

import trnsim.nki as nki
from trnsim.nki import _runner
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import nki_isa_test
import nki_ops_test
import matmul
import transpose
import vector_add as va

nki.configure(functional=True)


def as_float(raw, dtype):
    if dtype == 'bfloat16':
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    if dtype == 'fp8':  # the model's fp8 is float8_e4m3
        return np.frombuffer(raw, np.uint8).view(np.dtype('float8_e4m3')).astype(np.float32)
    return np.frombuffer(raw, np.float32)


def driver(workload, params, inputs, output, dtype='float32'):
    """The driver's inputs and its functional output."""
    p = _runner.platform()
    prog = p.build_workload(workload, {k: str(v) for k, v in params.items()})
    p.run(prog, workload)
    ins = [as_float(_runner.native.region_initial_bytes(prog, r), dtype) for r in inputs]
    return ins, as_float(p.read_region(prog, output), dtype)


def model_run(kernel, shape, outputs):
    """The frontend's program for kernel(x: float32 `shape`) run functionally on the model: the
    model's seeded x, and the kernel's first `outputs` HBM tensors (float32, `shape`)."""
    traced = nki.trace_kernel(kernel, (nt.tensor[list(shape), nl.float32],), {}, False)
    p = _runner.platform()
    p.run(traced.program, kernel.__name__ if hasattr(kernel, '__name__') else 'kernel')
    x = as_float(_runner.native.region_initial_bytes(traced.program, 'x'), 'float32')
    names = ['hbm'] + [f'hbm_{i}' for i in range(2, outputs + 1)]
    return x.reshape(shape), [as_float(p.read_region(traced.program, n), 'float32').reshape(shape)
                              for n in names]


def model_and_frontend(kernel, shape):
    """kernel(x: float32 `shape`) run functionally on the model (the model's seeded x) and by
    the frontend on the same x: [(model's output, frontend's output)] for each output."""
    traced = nki.trace_kernel(kernel, (nt.tensor[list(shape), nl.float32],), {}, False)
    p = _runner.platform()
    p.run(traced.program, 'kernel')
    first = next(t.name for t, kind, _ in traced.trace.tensors if kind == 'input')
    x = as_float(_runner.native.region_initial_bytes(traced.program, first), 'float32')
    x = x.reshape(shape)
    outs = kernel(x.copy())
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    names = [t.name for t, kind, _ in traced.trace.tensors if kind == 'output']
    return [(as_float(p.read_region(traced.program, n), 'float32'),
             np.asarray(o, np.float32).reshape(-1)) for n, o in zip(names, outs)]


import nki as nki0
import nki.isa as nisa0
import nki.language as nl0


@nki0.jit
def double_rows_nki0(x):
    """Each core (LNC=2) doubles its half of the rows; one core all of them."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    rows = x.shape[0] // nl0.num_programs()
    r0 = nl0.program_id() * rows
    t = nl0.ndarray((rows, x.shape[1]), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x[r0:r0 + rows, :])
    nisa0.tensor_scalar(t, t, nl0.multiply, 2.0)
    nisa0.dma_copy(out[r0:r0 + rows, :], t)
    return out


class FunctionalEqualityV3(unittest.TestCase):
    """The NeuronCore-v3 instructions and the two cores of a stack (run on trn2:
    tests/workloads/nki/CMakeLists.txt)."""

    def test_two_cores_compute_from_each_programs_inputs(self):
        """Programs of two cores run in turn in one process, each from its own inputs, with
        values as the frontend's (the model's functional engines on both cores)."""
        if _runner.platform().cores() < 2:
            self.skipTest('two cores of an HBM stack: --config trn2')
        for cols in (64, 32, 64):
            traced = nki.trace_kernel(double_rows_nki0[2],
                                      (nt.tensor[[256, cols], nl.float32],), {}, False)
            self.assertEqual(len(traced.programs), 2)
            p = _runner.platform()
            p.run_cores(traced.programs, 'double_rows')
            x = as_float(_runner.native.region_initial_bytes(traced.program, 'x'), 'float32')
            out = as_float(p.read_region(traced.program, 'hbm'), 'float32')
            np.testing.assert_array_equal(out, 2 * x, err_msg=f'{cols} columns')

    def test_topk_as_the_gpsimd_engine_computes_it(self):
        if _runner.limits()['isa_version'] < 3:
            self.skipTest('NeuronCore-v3 instructions: --config trn2')
        for i, (model, frontend) in enumerate(model_and_frontend(nki_isa_test.topk_fp32_nki0,
                                                                 (128, 32))):
            np.testing.assert_array_equal(model, frontend, err_msg=f'output {i}')


@nki0.jit
def transpose_bf16_nki0(x):
    """x [128, 96] as bf16, transposed by the Tensor engine into a bf16 PSUM tile (NeuronCore-v3's
    transpose mode keeps the input's dtype), as float32 [96, 128]."""
    t = nl0.ndarray(x.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    b = nl0.ndarray(x.shape, dtype=nl0.bfloat16, buffer=nl0.sbuf)
    nisa0.tensor_copy(b, t)
    p = nl0.ndarray((x.shape[1], x.shape[0]), dtype=nl0.bfloat16, buffer=nl0.psum)
    nisa0.nc_transpose(p, b)
    o = nl0.ndarray(p.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(o, p)
    out = nl0.ndarray(p.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    nisa0.dma_copy(out, o)
    return out


class TransposeIntoBf16Psum(unittest.TestCase):
    """A bf16 Tensor-engine transpose into bf16 PSUM (NeuronCore-v3): the model's values as the
    frontend's (the model wrote 4-byte elements into the 2-byte destination before 2026-11-27)."""

    def test_the_model_computes_as_the_frontend(self):
        if _runner.limits()['isa_version'] < 3:
            self.skipTest('NeuronCore-v3 transpose mode: --config trn2')
        (model, frontend), = model_and_frontend(transpose_bf16_nki0, (128, 96))
        np.testing.assert_array_equal(model, frontend)


class FunctionalEquality(unittest.TestCase):

    def test_the_isa_issues_instructions_as_the_engines_compute(self):
        """Reversed and per-partition operands, grouped and negated reductions, the reduce
        variants, the Vector engine's reciprocal and transpose, the new ALU operations and a
        casting DMA: the model's functional run equals the frontend's values bit for bit, except
        the transcendental functions (within 2 fp32 ulp)."""
        exact = [nki_isa_test.reversed_and_tile_operands_beta1, nki_isa_test.causal_mask_beta1,
                 nki_isa_test.selections_beta1,
                 nki_isa_test.partial_reductions_beta1,
                 nki_isa_test.vector_transpose_and_reduce_nki0]
        for kernel in exact:
            for i, (model, frontend) in enumerate(model_and_frontend(kernel, (128, 32))):
                np.testing.assert_array_equal(model, frontend, err_msg=f'{kernel} output {i}')
        # one transcendental function per value: within 2 ulp (libm's and numpy's exp, erf,
        # rsqrt differ by one at most); a softmax chains exp, a sum of those, its reciprocal
        # and a multiply, and the one-ulp differences of exp add up in the sum: within 8
        for kernel, ulps in ((nki_isa_test.rms_norm_beta1, [2]),
                             (nki_isa_test.language_functions_beta1, [2, 2, 8, 2, 2, 2]),
                             (nki_isa_test.row_softmax_nki0, [8]),
                             (nki_isa_test.layer_norm_nki0, [2]),
                             (nki_isa_test.chunked_row_sums_nki0, [8])):
            for i, (model, frontend) in enumerate(model_and_frontend(kernel, (128, 64))):
                np.testing.assert_array_max_ulp(model, frontend, ulps[i])


    def test_alloc_bad_is_wrong_as_the_model_computes_it(self):
        (a, b), expected = driver('vector_add', {'variant': 'alloc_bad', 'n': 256000},
                                  ['a', 'b'], 'out')
        out = va.vector_add_alloc_bad(a.copy(), b.copy())
        self.assertFalse(np.allclose(expected, a + b))
        np.testing.assert_array_equal(out, expected)

    def test_direct_alloc_is_right(self):
        (a, b), expected = driver('vector_add', {'variant': 'direct_alloc', 'n': 256000},
                                  ['a', 'b'], 'out')
        np.testing.assert_array_equal(va.vector_add_direct_alloc(a.copy(), b.copy()),
                                      expected)
        np.testing.assert_array_equal(expected, a + b)

    def test_bfloat16_rounds_as_the_engines(self):
        (a, b), expected = driver('vector_add', {'variant': 'stream', 'n': 25600,
                                                 'free_dim': 200, 'dtype': 'bfloat16'},
                                  ['a', 'b'], 'out', 'bfloat16')
        out = va.vector_add_stream(nki.as_bfloat16(a), nki.as_bfloat16(b), free_dim=200)
        np.testing.assert_array_equal(np.asarray(out, dtype=np.float32), expected)
        self.assertFalse(np.array_equal(expected, a + b))  # rounding did happen

    def test_fp8_rounds_as_the_engines(self):
        """The driver's fp8 matmul (fp32 sums rounded to float8_e4m3 by the model's engines)
        and the tutorial kernel's, on the driver's inputs: the same fp8 values, except where
        the two fp32 sums (in different orders) straddle a rounding boundary."""
        (lhsT, rhs), expected = driver('matmul', {'m': 128, 'k': 256, 'n': 512, 'dtype': 'fp8'},
                                       ['lhsT', 'rhs'], 'result', 'fp8')
        fp8 = np.dtype('float8_e4m3')
        out = matmul.matmul_tiled(lhsT.reshape(256, 128).astype(fp8),
                                  rhs.reshape(256, 512).astype(fp8))
        self.assertEqual(out.dtype, fp8)
        got = out.astype(np.float32).reshape(-1)
        self.assertGreater(np.mean(got == expected), 0.99)
        np.testing.assert_allclose(got, expected, rtol=0.125, atol=2.0 ** -9)
        self.assertGreater(len(np.unique(expected)), 50)

    def test_transpose_values(self):
        (x,), expected = driver('transpose', {'m': 256, 'n': 384}, ['in'], 'out')
        out = transpose.transpose_2d(x.reshape(256, 384).copy())
        np.testing.assert_array_equal(out.reshape(-1), expected)

    def test_iota_two_op_tensor_scalar_and_activation_bias_as_the_engines_compute(self):
        """The frontend's program for nki_ops_test.index_values run functionally on the model
        (inputs seeded by the model), against numpy on the same inputs."""
        x, outs = model_run(nki_ops_test.index_values, (128, 16), 4)
        rows = np.arange(128, dtype=np.float32)[:, None]
        np.testing.assert_array_equal(outs[0], rows * 16 + np.arange(16) + 3)
        np.testing.assert_array_equal(outs[1], (x - np.float32(0.5)) * np.float32(4))
        np.testing.assert_array_equal(outs[2], np.maximum(x * np.float32(-2) + rows, 0))
        np.testing.assert_array_equal(outs[3], (x - np.float32(0.25)) * (x * rows + np.float32(1)))

    def test_activation_functions_as_the_engines_compute(self):
        x, outs = model_run(nki_ops_test.unary_functions, (128, 32), len(nki_ops_test.UNARY))
        ok = x > 1e-3  # the model's inputs are uniform in [0, 1): log and rsqrt away from 0
        for name, got, want in zip(nki_ops_test.UNARY, outs, nki_ops_test.unary_reference(x)):
            np.testing.assert_allclose(got[ok], want[ok], rtol=2e-6, atol=1e-7, err_msg=name)
    def test_a_hoisted_transpose_survives_until_its_matmul_is_emitted(self):
        x, outs = model_run(nki_ops_test.matmuls_kept_for_later, (128, 128), 1)
        np.testing.assert_allclose(outs[0], 4 * x @ x, rtol=1e-5)

    def test_scans_as_the_engines_compute(self):
        x, outs = model_run(nki_ops_test.scans, (128, 24), 2)
        want = nki_ops_test.scans_reference(x)
        np.testing.assert_allclose(outs[0], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(outs[1], want[1])


class Bfloat16Rounding(unittest.TestCase):

    def test_ties_go_to_even_and_nan_stays_nan(self):
        one = np.float32(1.0)
        ulp = np.float32(2.0 ** -7)  # bfloat16 spacing at 1.0
        x = np.array([one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2 ** -20, -2.5,
                      np.nan], np.float32)
        r = nki.as_bfloat16(x)
        self.assertEqual(r[0], one)              # tie: down to even
        self.assertEqual(r[1], one + 2 * ulp)    # tie: up to even
        self.assertEqual(r[2], one + ulp)        # above the tie
        self.assertEqual(r[3], -2.5)
        self.assertTrue(np.isnan(r[4]))




@nki.jit
def times_first_rows(x):
    """x [512, 256] times its first 128 rows, tile by tile: the first rows' loads do not use
    the row loop's index (the compiler hoists them, _ops.hoisted_load)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        a = nl.load(x[i * 128:(i + 1) * 128, :])
        for j in nl.affine_range(2):
            w = nl.load(x[0:128, j * 128:(j + 1) * 128])
            nl.store(out[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128],
                     value=nl.multiply(a[:, j * 128:(j + 1) * 128], w))
    return out


@nki.jit
def times_doubled_first_rows(x):
    """As times_first_rows, the first rows' tile doubled in place after each load: written by
    something else, so loaded where written."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        a = nl.load(x[i * 128:(i + 1) * 128, :])
        for j in nl.affine_range(2):
            w = nl.load(x[0:128, j * 128:(j + 1) * 128])
            w[...] = nl.multiply(w, 2.0)
            nl.store(out[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128],
                     value=nl.multiply(a[:, j * 128:(j + 1) * 128], w))
    return out


@nki.jit
def doubled_in_one_iteration(x):
    """x's first 128 rows, two column tiles, four times; the second time doubled in place: a
    write to the hoisted tile in a later iteration of the outer loop."""
    out = nl.ndarray((512, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        for j in nl.affine_range(2):
            w = nl.load(x[0:128, j * 128:(j + 1) * 128])
            if i == 1:
                w[...] = nl.multiply(w, 2.0)
            nl.store(out[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128], value=w)
    return out


@nki.jit
def doubled_by_a_dma(x):
    """x's first 128 rows doubled into their own tile by an SBUF-to-SBUF DMA, four times."""
    out = nl.ndarray((512, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        w = nl.load(x[0:128, :])
        nisa.dma_copy(dst=w, src=nl.multiply(w, 2.0))
        nl.store(out[i * 128:(i + 1) * 128, :], value=w)
    return out


def _row_tile(x, r):
    return nl.load(x[r * 128:(r + 1) * 128, :])


@nki.jit
def row_tiles_by_two_loops(x):
    """Row tiles 0, 1 and then 0, 2 of x loaded at one line (a helper) from two loops of
    two iterations whose indices move the address by other steps, twice."""
    out = nl.ndarray((1024, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        for j in nl.affine_range(2):
            nl.store(out[(i * 4 + j) * 128:(i * 4 + j + 1) * 128, :], value=_row_tile(x, j))
        for m in nl.affine_range(2):
            nl.store(out[(i * 4 + 2 + m) * 128:(i * 4 + 3 + m) * 128, :],
                     value=nl.add(_row_tile(x, 2 * m), 0.0))
    return out


@nki.jit
def incremented_in_place(x):
    """x's first 128 rows plus 1, three times, stored back into x each time: a tensor the
    kernel writes, so its loads stay where written; the last sum returned."""
    out = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(3):
        w = nl.load(x[0:128, :])
        nl.store(x[0:128, :], value=nl.add(w, 1.0))
    nl.store(out, value=nl.load(x[0:128, :]))
    return out


@nki.jit
def sums_of_wide_tiles(x):
    """x [128, 65536] float32 (32 MiB, more than SBUF holds) summed tile by tile, twice: its
    loads do not use the outer loop's index, but the whole tensor does not fit in SBUF."""
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(2):
        for j in nl.affine_range(128):
            acc[...] = nl.add(acc, nl.load(x[:, j * 512:(j + 1) * 512]))
    nl.store(out, value=acc)
    return out


def sums_through_temporaries(width):
    """A kernel: x [128, 32768] float32 (16 MiB: fits in SBUF) summed tile by tile, twice,
    each tile doubled plus one, then copied across a temporary `width` elements wide. The
    hoisted tiles take 128 KiB a partition: with a 32 KiB temporary the kernel fits only with
    tiles sharing memory (the hoisted ones alive across the outer loop); with an 80 KiB one not
    at all, which the builder finds (the frontend's estimate, at the first load, counts only
    the tiles declared before it)."""
    @nki.jit
    def sums(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        for i in nl.sequential_range(2):
            for j in nl.affine_range(64):
                a = nl.load(x[:, j * 512:(j + 1) * 512])
                d = nl.multiply(a, 2.0)
                d[...] = nl.add(d, 1.0)
                wide = nl.ndarray((128, width), dtype=x.dtype, buffer=nl.sbuf)
                for c in nl.affine_range(width // 512):
                    wide[:, c * 512:(c + 1) * 512] = d
                acc[...] = nl.add(acc, wide[:, 512:1024])
        nl.store(out, value=acc)
        return out
    return sums


class HoistedLoads(unittest.TestCase):
    """Loads of an input tensor that fits in SBUF, hoisted out of the loops their address does
    not use (compiler.hoist_loads): the values as written, the HBM bytes read once."""

    def run_model(self, kernel, shape):
        """(the model's seeded x, the model's output, the frontend's on that x, stats)."""
        traced = nki.trace_kernel(kernel, (nt.tensor[list(shape), nl.float32],), {}, False)
        p = _runner.platform()
        stats = json.loads(p.run(traced.program, 'kernel'))
        x = as_float(_runner.native.region_initial_bytes(traced.program, 'x'), 'float32')
        x = x.reshape(shape)
        out = as_float(p.read_region(traced.program, 'hbm'), 'float32')
        return x, out, np.asarray(kernel(x.copy()), np.float32).reshape(-1), stats

    def test_invariant_loads_are_read_once(self):
        x, model, frontend, stats = self.run_model(times_first_rows, (512, 256))
        expected = (x * np.tile(x[:128], (4, 1))).reshape(-1)
        np.testing.assert_array_equal(model, expected)
        np.testing.assert_array_equal(frontend, expected)
        # x once, its first rows once more (not once per row tile)
        self.assertEqual(stats['hbm']['read_bytes'], 4 * (512 * 256 + 128 * 256))

    def test_a_tile_written_in_place_is_loaded_where_written(self):
        x, model, frontend, stats = self.run_model(times_doubled_first_rows, (512, 256))
        expected = (x * 2 * np.tile(x[:128], (4, 1))).reshape(-1)
        np.testing.assert_array_equal(model, expected)
        np.testing.assert_array_equal(frontend, expected)
        self.assertEqual(stats['hbm']['read_bytes'], 4 * (512 * 256 + 4 * 128 * 256))

    def test_a_tile_written_in_a_later_iteration_is_loaded_where_written(self):
        x, model, frontend, _ = self.run_model(doubled_in_one_iteration, (512, 256))
        expected = np.tile(x[:128], (4, 1))
        expected[128:256] *= 2
        np.testing.assert_array_equal(model, expected.reshape(-1))
        np.testing.assert_array_equal(frontend, expected.reshape(-1))

    def test_a_tile_a_dma_writes_is_loaded_where_written(self):
        x, model, frontend, _ = self.run_model(doubled_by_a_dma, (128, 128))
        expected = np.tile(2 * x, (4, 1)).reshape(-1)
        np.testing.assert_array_equal(model, expected)
        np.testing.assert_array_equal(frontend, expected)

    def test_loads_of_one_line_from_loops_of_other_steps_keep_their_tiles(self):
        x, model, frontend, stats = self.run_model(row_tiles_by_two_loops, (512, 128))
        tile = lambda r: x[r * 128:(r + 1) * 128]  # noqa: E731
        expected = np.concatenate([tile(0), tile(1), tile(0), tile(2)] * 2).reshape(-1)
        np.testing.assert_array_equal(model, expected)
        np.testing.assert_array_equal(frontend, expected)
        self.assertEqual(stats['hbm']['read_bytes'], 4 * 4 * 128 * 128)  # (hoisted: once)

    def test_a_tensor_the_kernel_writes_is_loaded_where_written(self):
        x, model, frontend, stats = self.run_model(incremented_in_place, (256, 64))
        expected = (x[:128] + 3).reshape(-1)
        np.testing.assert_array_equal(model, expected)
        np.testing.assert_array_equal(frontend, expected)
        self.assertEqual(stats['hbm']['read_bytes'], 4 * 4 * 128 * 64)

    def test_a_tensor_larger_than_sbuf_is_loaded_where_written(self):
        traced = nki.trace_kernel(sums_of_wide_tiles, (nt.tensor[[128, 65536], nl.float32],),
                                  {}, False)
        stats = json.loads(_runner.platform().run(traced.program, 'kernel'))
        self.assertEqual(stats['hbm']['read_bytes'], 2 * 4 * 128 * 65536)

    def test_hoisted_tiles_share_memory_with_none_alive_across_the_loop(self):
        x, model, _, stats = self.run_model(sums_through_temporaries(8192), (128, 32768))
        expected = 2 * (2 * x + 1).reshape(128, 64, 512).sum(axis=1, dtype=np.float32)
        np.testing.assert_allclose(model, expected.reshape(-1), rtol=1e-5)
        self.assertEqual(stats['hbm']['read_bytes'], 4 * 128 * 32768)

    def test_hoisted_loads_that_do_not_fit_are_loaded_where_written(self):
        kernel = sums_through_temporaries(20480)
        traced = nki.trace_kernel(kernel, (nt.tensor[[128, 32768], nl.float32],), {}, False)
        self.assertTrue(any('nki_functional_test.py:' in n and 'are not hoisted out of the loops'
                            in n for n in traced.notes), traced.notes)
        x, model, _, stats = self.run_model(kernel, (128, 32768))
        expected = 2 * (2 * x + 1).reshape(128, 64, 512).sum(axis=1, dtype=np.float32)
        np.testing.assert_allclose(model, expected.reshape(-1), rtol=1e-5)
        self.assertEqual(stats['hbm']['read_bytes'], 2 * 4 * 128 * 32768)



@nki.jit
def transposed_parts(x):
    """x [256, 96] read transposed by the DMA: into the two halves of one [96, 256] tile (out),
    its first 128 rows as bf16 (out2), the same rows in a loop that does not move them (hoisted:
    read once; out3, doubled twice over) and its last 128 rows into every other column of a
    tile (a tile part of several runs a partition: a transfer per run; out4)."""
    out = nl.ndarray((96, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((96, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    out3 = nl.ndarray((192, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    out4 = nl.ndarray((96, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((96, 256), dtype=x.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        t[:, k * 128:(k + 1) * 128] = nl.load_transpose2d(x[k * 128:(k + 1) * 128, :])
    nl.store(out, value=t)
    nl.store(out2, value=nl.load_transpose2d(x[0:128, :], dtype=nl.bfloat16))
    for i in nl.affine_range(2):
        w = nl.load_transpose2d(x[0:128, :])
        nl.store(out3[i * 96:(i + 1) * 96, :], value=nl.multiply(w, 2.0))
    every_other = nl.ndarray((96, 256), dtype=x.dtype, buffer=nl.sbuf)
    every_other[:, 0:256:2] = nl.load_transpose2d(x[128:256, :])
    nl.store(out4, value=nl.add(every_other[:, 0:256:2], 0.0))
    return out, out2, out3, out4


def bf16_rounded(v):
    bits = np.asarray(v, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)


class DmaTransposes(unittest.TestCase):
    """nl.load_transpose2d as one DMA transpose (core.dma.transpose_rate): the model's values
    and the frontend's as numpy's, into tile parts, cast, hoisted, and as a transfer per run
    where the tile part has several runs a partition."""

    def test_the_model_transposes_as_numpy(self):
        shape = (256, 96)
        traced = nki.trace_kernel(transposed_parts, (nt.tensor[list(shape), nl.float32],), {},
                                  False)
        p = _runner.platform()
        stats = json.loads(p.run(traced.program, 'kernel'))
        x = as_float(_runner.native.region_initial_bytes(traced.program, 'x'),
                     'float32').reshape(shape)
        names = [t.name for t, kind, _ in traced.trace.tensors if kind == 'output']
        model = [as_float(p.read_region(traced.program, n), 'float32') for n in names]
        frontend = [np.asarray(o, np.float32).reshape(-1) for o in transposed_parts(x.copy())]
        expected = [x.T, bf16_rounded(x[:128].T), np.tile(2 * x[:128].T, (2, 1)), x[128:].T]
        for i, want in enumerate(expected):
            np.testing.assert_array_equal(model[i], want.reshape(-1), f'output {i}')
            np.testing.assert_array_equal(frontend[i], want.reshape(-1), f'output {i}')
        # x once for out, its first rows for out2 and once (hoisted) for out3, its last for out4
        self.assertEqual(stats['hbm']['read_bytes'], 4 * 96 * (256 + 128 + 128 + 128))
        # one transfer a DMA transpose (2 + 1 + 1) but 128 for the tile part of several runs,
        # and the 5 stores; said in a note at that line only
        self.assertEqual(stats['dma']['transfers'], 4 + 128 + 5)
        said = [line for (line, _), text in traced.trace.notes.items()
                if 'over-estimated' in text]
        self.assertEqual(said, [(__file__, _line_of('every_other[:, 0:256:2] ='))],
                         traced.trace.notes)


@nki.jit
def filled_in_parts(x):
    """x [128, 512] + 1, its tile filled by four loads of 128 columns (an unrolled loop), then
    rows 104..127 loaded again and read, then rows 40..103, then all of it read."""
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((24, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    out3 = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    for k in nl.static_range(4):
        t[:, k * 128:(k + 1) * 128] = nl.load(x[:, k * 128:(k + 1) * 128])
    nl.store(out, value=nl.add(t, 1.0))
    t[104:128, :] = nl.load(x[0:24, :])
    nl.store(out2, value=nl.add(t[104:128, :], 2.0))
    t[40:104, :] = nl.load(x[64:128, :])
    nl.store(out3, value=t)
    return out, out2, out3


class RewrittenTiles(unittest.TestCase):
    """A DMA into part of a tile that held a value writes the tile's next copy (`new`) only
    when every later read finds its part in what was written into that copy: reads of a tile
    filled in parts, and of parts written before, find the values written."""

    def test_a_tile_written_in_parts_is_read_whole(self):
        traced = nki.trace_kernel(filled_in_parts, (nt.tensor[[128, 512], nl.float32],), {},
                                  False)
        p = _runner.platform()
        p.run(traced.program, 'kernel')
        x = as_float(_runner.native.region_initial_bytes(traced.program, 'x'),
                     'float32').reshape(128, 512)
        names = [t.name for t, kind, _ in traced.trace.tensors if kind == 'output']
        model = [as_float(p.read_region(traced.program, n), 'float32') for n in names]
        frontend = filled_in_parts(x.copy())
        last = x.copy()
        last[104:128], last[40:104] = x[0:24], x[64:128]
        for i, want in enumerate((x + 1, x[0:24] + 2, last)):
            np.testing.assert_array_equal(model[i], want.reshape(-1), f'output {i}')
            np.testing.assert_array_equal(np.asarray(frontend[i]).reshape(-1),
                                          want.reshape(-1), f'output {i}')
        # (each later load finds the tile read outside its part: none writes a new copy)
        loads = [op.line for op in traced.trace.ops if op.kind == 'load']
        self.assertEqual(len(loads), 6)
        self.assertFalse([line for line in loads if line.endswith(' new')], loads)


def _line_of(text):
    """The line of this file that holds `text`."""
    with open(__file__, encoding='utf-8') as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


if __name__ == '__main__':
    unittest.main()

"""The project's NKI kernels through the frontend: values equal numpy's, and instruction
counts equal and latency within 2% of the C++ driver's for the same kernel and shape, on the
platform named by TRNSIM_NKI_CONFIG (ctest runs this file once per config)."""

import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import conv2d
import ffnn
import matmul
import nki_support as s
import transpose
import vector_add as va

TOLERANCE_PCT = 2.0


class FrontendVersusDriver(unittest.TestCase):

    def compare(self, name, kernel, args, kwargs, workload, params):
        c = s.Comparison(name, s.frontend_stats(kernel, *args, **kwargs),
                         s.driver_stats(workload, params))
        c.report()
        self.assertEqual(c.front, c.driver, f'{name}: instruction / transfer counts')
        self.assertLessEqual(abs(c.diff_pct), TOLERANCE_PCT, f'{name}: latency')
        self.assertGreater(c.front['dma'], 0)

    # vector_add: every variant, at the course's n=25600 (naive: n=128)
    def test_vector_add_naive(self):
        a, b = s.random_inputs(128, 128)
        np.testing.assert_array_equal(va.vector_add_naive(a, b), a + b)
        self.compare('vector_add naive n=128', va.vector_add_naive, (a, b), {}, 'vector_add',
                     {'variant': 'naive', 'n': 128})

    def test_vector_add_tiled(self):
        for chunk, n in ((1, 2560), (128, 25600)):  # row_chunk=1: 10x shorter, for speed
            a, b = s.random_inputs(n, n)
            np.testing.assert_array_equal(va.vector_add_tiled(a, b, row_chunk=chunk), a + b)
            self.compare(f'vector_add tiled row_chunk={chunk} n={n}', va.vector_add_tiled,
                         (a, b), {'row_chunk': chunk}, 'vector_add',
                         {'variant': 'tiled', 'n': n, 'row_chunk': chunk})

    def test_same_stats_as_sim_command(self):
        """The in-process driver statistics are those of `sim --workload ... --stats-out`."""
        a, b = s.random_inputs(25600, 25600)
        front = s.frontend_stats(va.vector_add_stream, a, b, free_dim=200)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'stats.json')
            subprocess.run([os.environ['TRNSIM_SIM'], '--config', s.config_path(), '--workload',
                            'vector_add', '--param', 'variant=stream', '--param', 'n=25600',
                            '--param', 'free_dim=200', '--stats-out', out, '--quiet'],
                           check=True)
            with open(out) as f:
                cli = json.load(f)
        self.assertEqual(s.counts(front), s.counts(cli))
        self.assertEqual(s.stat(front, 'total_time_ns'), s.stat(cli, 'total_time_ns'))

    def test_vector_add_stream_contiguous(self):
        a, b = s.random_inputs(25600, 25600)
        for fd in (2, 200):
            np.testing.assert_array_equal(va.vector_add_stream(a, b, free_dim=fd), a + b)
            self.compare(f'vector_add stream fd={fd}', va.vector_add_stream, (a, b),
                         {'free_dim': fd}, 'vector_add',
                         {'variant': 'stream', 'n': 25600, 'free_dim': fd})

    def test_vector_add_stream_strided(self):
        a, b = s.random_inputs(25600, 25600)
        for fd in (2, 100):
            np.testing.assert_array_equal(va.vector_add_stream_strided(a, b, free_dim=fd),
                                          a + b)
            self.compare(f'vector_add strided fd={fd}', va.vector_add_stream_strided, (a, b),
                         {'free_dim': fd}, 'vector_add',
                         {'variant': 'stream', 'layout': 'strided', 'n': 25600,
                          'free_dim': fd})

    def test_vector_add_stream_isa(self):
        a, b = s.random_inputs(25600, 25600)
        np.testing.assert_array_equal(va.vector_add_stream_isa(a, b, free_dim=50), a + b)
        self.compare('vector_add strided isa fd=50', va.vector_add_stream_isa, (a, b),
                     {'free_dim': 50}, 'vector_add',
                     {'variant': 'stream', 'layout': 'strided', 'n': 25600, 'free_dim': 50,
                      'style': 'isa'})

    def test_vector_add_direct_alloc(self):
        a, b = s.random_inputs(256000, 256000)
        np.testing.assert_array_equal(va.vector_add_direct_alloc(a, b), a + b)
        self.compare('vector_add direct_alloc', va.vector_add_direct_alloc, (a, b), {},
                     'vector_add', {'variant': 'direct_alloc', 'n': 256000})

    def test_vector_add_alloc_bad(self):
        a, b = s.random_inputs(256000, 256000)
        out = va.vector_add_alloc_bad(a, b)
        self.assertFalse(np.allclose(out, a + b))  # wrong, as on hardware
        np.testing.assert_array_equal(out, b + b)  # b's load overwrote a's tile
        self.compare('vector_add alloc_bad', va.vector_add_alloc_bad, (a, b), {},
                     'vector_add', {'variant': 'alloc_bad', 'n': 256000})

    def test_transpose(self):
        (x,) = s.random_inputs((1024, 1024), lo=-1.0)
        np.testing.assert_array_equal(transpose.transpose_2d(x), x.T)
        self.compare('transpose 1024x1024 (isa)', transpose.transpose_2d, (x,), {},
                     'transpose', {'m': 1024, 'n': 1024, 'style': 'isa'})

    def check_matmul(self, kernel, variant, m, k, n):
        lhsT, rhs = s.random_inputs((k, m), (k, n), dtype='bfloat16', lo=-1.0)
        out = kernel(lhsT, rhs)
        ref = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
        np.testing.assert_allclose(np.asarray(out, dtype=np.float64), ref, rtol=1e-2,
                                   atol=1e-2 * np.sqrt(k))
        self.compare(f'matmul {variant} {m}x{k}x{n} bf16', kernel, (lhsT, rhs), {}, 'matmul',
                     {'variant': variant, 'm': m, 'k': k, 'n': n})

    def test_matmul_tiled(self):
        self.check_matmul(matmul.matmul_tiled, 'tiled', 256, 512, 1024)

    def test_matmul_hoist_load(self):
        self.check_matmul(matmul.matmul_hoist_load, 'hoist_load', 256, 512, 1024)

    def test_matmul_block_free_dimension(self):
        self.check_matmul(matmul.matmul_block_free_dimension, 'block_free_dimension', 512,
                          512, 2048)

    def test_matmul_fully_optimized(self):
        self.check_matmul(matmul.matmul_fully_optimized, 'fully_optimized', 2048, 1024, 1024)

    def check_conv2d(self, batch, cin, cout, k, h, w, pool, dtype):
        x, wt, bias = s.random_inputs((batch, cin, h, w), (cout, cin, k, k), (cout,))
        bias = bias * 50.0  # the handout's bias range, [0, 50)
        if dtype == 'float16':
            x, wt, bias = (v.astype(np.float16) for v in (x, wt, bias))
        out = conv2d.conv2d_row(x, wt, bias, pool_size=pool)
        ref = s.conv2d_reference(x, wt, bias, pool)
        rtol, atol = (1e-4, 1e-5) if dtype == 'float32' else (1e-2, 1e-2)
        np.testing.assert_allclose(np.asarray(out, dtype=np.float64), ref, rtol=rtol, atol=atol)
        self.compare(f'conv2d row {cin}->{cout} {h}x{w} pool{pool} {dtype}', conv2d.conv2d_row,
                     (x, wt, bias), {'pool_size': pool}, 'conv2d',
                     {'variant': 'row', 'batch': batch, 'in': cin, 'out': cout, 'filter': k,
                      'h': h, 'w': w, 'pool': pool, 'dtype': dtype})

    def test_conv2d_row(self):
        self.check_conv2d(1, 256, 256, 3, 12, 40, 1, 'float32')

    def test_conv2d_row_pool_and_partial_tiles(self):
        self.check_conv2d(2, 130, 140, 3, 9, 10, 2, 'float32')

    def test_conv2d_row_fp16_5x5(self):
        self.check_conv2d(1, 128, 128, 5, 10, 24, 1, 'float16')

    def check_ffnn(self, variant, n, d, h, c):
        x, w1, b1, w2, b2 = s.random_inputs((n, d), (d, h), (h,), (h, c), (c,), seed=11)
        w1, w2 = (w1 - 0.5) / np.sqrt(d), (w2 - 0.5) / np.sqrt(h)
        b1, b2 = (b1 - 0.5) * 0.2, (b2 - 0.5) * 0.2
        probs, pred = ffnn.ffnn_predict(x, w1, b1, w2, b2, matmul_variant=variant)
        hidden = np.maximum(x.astype(np.float64) @ w1 + b1, 0.0)
        z = hidden @ w2 + b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(probs, ref, rtol=1e-3, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(pred).ravel(), ref.argmax(axis=1))
        self.compare(f'ffnn predict {variant}', ffnn.ffnn_predict, (x, w1, b1, w2, b2),
                     {'matmul_variant': variant}, 'ffnn',
                     {'matmul': variant, 'n': n, 'd': d, 'h': h, 'c': c})

    def test_ffnn_tiled(self):
        self.check_ffnn('tiled', 256, 512, 1024, 512)

    def test_ffnn_hoist_load(self):
        self.check_ffnn('hoist_load', 256, 512, 1024, 512)

    def test_ffnn_block_free_dimension(self):
        self.check_ffnn('block_free_dimension', 256, 512, 1024, 1024)

    def test_ffnn_fully_optimized(self):
        self.check_ffnn('fully_optimized', 2048, 1024, 1024, 1024)

    def test_matmul_shape_not_whole_blocks(self):
        lhsT, rhs = s.random_inputs((512, 256), (512, 512))
        with self.assertRaisesRegex(ValueError, 'N=512 is not a multiple of its block of 1024'):
            matmul.matmul_block_free_dimension(lhsT, rhs)


def load_example(name):
    """A module of workloads/nki/examples, imported by path."""
    import importlib.util
    path = os.path.join(os.environ['TRNSIM_SOURCE_DIR'], 'workloads', 'nki', 'examples',
                        name + '.py')
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class KnownStructureExample(unittest.TestCase):
    """workloads/nki/examples/conv2d_shared_rows.py (the structure of a measured public kernel,
    docs/results.md): its values, and where its transposes go."""

    def test_values_and_transposes(self):
        ex = load_example('conv2d_shared_rows')
        x, wt, bias = s.random_inputs((1, 256, 8, 258), (256, 256, 3, 3), (256,))
        ref = s.conv2d_reference(x, wt, bias, 1)
        pooled = ex.conv2d_shared_rows(x, wt, bias, pool_size=2)
        np.testing.assert_allclose(np.asarray(pooled, np.float64),
                                   s.conv2d_reference(x, wt, bias, 2), rtol=1e-4, atol=1e-5)
        pe = {}
        for pre in (False, True):
            out = ex.conv2d_shared_rows(x, wt, bias, pretransposed=pre)
            np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=1e-4, atol=1e-5)
            stats = s.frontend_stats(ex.conv2d_shared_rows, x, wt, bias, pretransposed=pre)
            pe[pre] = s.stat(stats, 'engines.pe.opcodes.transpose.count')
            # 6 output rows in 3 tiles of 2 (moving 2 x 256, the limit), 2 in-channel tiles, 9 taps,
            # 2 out-channel tiles: one matmul each
            self.assertEqual(s.stat(stats, 'engines.pe.opcodes.matmul.count'), 3 * 2 * 9 * 2)
        # nl.matmul without transpose_x transposes each tap once (the compiler hoists it), as
        # the kernel that transposes the taps itself
        self.assertEqual(pe[False], 2 * 2 * 9)
        self.assertEqual(pe[True], 2 * 2 * 9)


class ElementwiseStepsExample(unittest.TestCase):
    """workloads/nki/examples/elementwise_steps.py (NS1 and NS2's structure): their values, and
    the reciprocal's Vector-engine time at core.dve.reciprocal_cycles an element."""

    def test_values_and_the_reciprocals_cost(self):
        ex = load_example('elementwise_steps')
        ex.main([])  # (its own check against numpy on small shapes)
        x = np.random.default_rng(4).uniform(-2, 2, (128, 1, 1024)).astype(np.float32)
        stats = s.frontend_stats(ex.silu, x)
        ghz = {'trn1': 1.12, 'trn2': 0.96, 'trn3': 1.2}[s.config_name()]
        cycles = {'trn1': 2.989, 'trn2': 8, 'trn3': 8}[s.config_name()]
        self.assertEqual(s.stat(stats, 'engines.dve.opcodes.reciprocal.count'), 2)
        self.assertAlmostEqual(s.stat(stats, 'engines.dve.opcodes.reciprocal.busy_ns'),
                               2 * cycles * 512 / ghz, places=2)


if __name__ == '__main__':
    unittest.main()

"""Kernels of many small DMAs (docs/results.md, "many small transfers"), in NKI beta 1:
- a DMA that rewrites a tile (all of it, or all the kernel reads of it before its next write)
  writes the tile's next copy, so that it does not wait for the readers of the value before
  (the compiler allocates the tiles of a compiler-scheduled kernel); its recording line says
  `new`, and its declaration `r`;
- a DMA whose access pattern has several runs a partition, recorded as one transfer a run,
  spreads its runs over every DMA engine (`part=N` on the transfers after the first).
The adaptive pooling of workloads/nki/examples/adaptive_pool.py, the calibration points
AP1-AP9, is the kernel of both."""

import os
import sys
import unittest

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import nki_support as s
import trnsim.nki

sys.path.insert(0, os.path.join(os.environ['TRNSIM_SOURCE_DIR'], 'workloads', 'nki', 'examples'))
import adaptive_pool  # noqa: E402


def windows(x, outside):
    """Sums of 8 windows of [128, 4, 8] of x [128, 32, 8], each DMA'd into one tile declared
    once; `outside`: each sum also reads the tile's last row, which the DMAs of the first
    windows (of 3 rows) do not write, so their values are the tile's earlier ones."""
    out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.zeros((128, 4, 8), dtype=x.dtype, buffer=nl.sbuf)
    sums = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.static_range(8):
        rows = 3 if k < 4 else 4
        nisa.dma_copy(dst=tile[:, 0:rows, :], src=x[:, 4 * k:4 * k + rows, :])
        read = 4 if outside else rows
        sums[:, k:k + 1] = nl.sum(tile[:, 0:read, :], axis=[1, 2])
    nl.store(out, value=sums)
    return out


@nki.jit
def windows_inside(x):
    return windows(x, False)


@nki.jit
def windows_outside(x):
    return windows(x, True)


@ncc.skip_middle_end_transformations
@nki.jit
def windows_isa(x):
    return windows(x, False)


def looped(x, loop):
    """Sums of the 4 slices [128, 8, 8] of x [128, 32, 8], each DMA'd into one tile made
    before the loop `loop` (nl.affine_range or nl.sequential_range)."""
    out = nl.ndarray((128, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 8, 8), dtype=x.dtype, buffer=nl.sbuf)
    sums = nl.ndarray((4, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    for k in loop(4):
        nisa.dma_copy(dst=tile, src=x[:, 8 * k:8 * k + 8, :])
        sums[k] = nl.sum(tile, axis=[1, 2])
        nl.store(out[:, k:k + 1], value=sums[k])
    return out


@nki.jit
def looped_affine(x):
    return looped(x, nl.affine_range)


@nki.jit
def looped_sequential(x):
    return looped(x, nl.sequential_range)


def expected(x, outside):
    got = np.zeros((128, 8), dtype=np.float64)
    tile = np.zeros((128, 4, 8), dtype=np.float64)
    for k in range(8):
        rows = 3 if k < 4 else 4
        tile[:, 0:rows, :] = x[:, 4 * k:4 * k + rows, :]
        got[:, k] = tile[:, 0:(4 if outside else rows), :].sum(axis=(1, 2))
    return got


class Rewrites(unittest.TestCase):

    def setUp(self):
        (self.x,) = s.random_inputs((128, 32, 8))

    def recording(self, kernel):
        return trnsim.nki.trace_kernel(kernel, (self.x,), {}, False).trace.text()

    def test_a_dma_whose_region_holds_every_later_read_writes_a_new_copy(self):
        np.testing.assert_allclose(windows_inside(self.x), expected(self.x, False), rtol=1e-5)
        text = self.recording(windows_inside)
        loads = [line for line in text.splitlines() if line.startswith('load ')]
        self.assertEqual(len(loads), 8)
        self.assertTrue(all(' new' in line for line in loads), loads)
        self.assertIn(' 1r ', next(line for line in text.splitlines()
                                   if line.startswith('decl sbuf 128 32 ')))

    def test_a_read_outside_the_region_keeps_the_value_before(self):
        # (its values: the last row of the first windows is still the memset's zeros)
        np.testing.assert_allclose(windows_outside(self.x), expected(self.x, True), rtol=1e-5)
        loads = [line for line in self.recording(windows_outside).splitlines()
                 if line.startswith('load ')]
        self.assertEqual([" new" in line for line in loads], [False] * 4 + [True] * 4)

    def test_new_copies_let_the_windows_overlap(self):
        def kernel_ns(kernel):  # (without the launch's fixed cost)
            stats = s.frontend_stats(kernel, self.x)
            return s.stat(stats, 'total_time_ns') - s.stat(stats, 'launch_overhead_ns')
        inside, outside = kernel_ns(windows_inside), kernel_ns(windows_outside)
        # the last 4 windows overlap in both; the first 4 only with new copies
        self.assertLess(inside * 1.25, outside, (inside, outside))

    def test_not_across_the_iterations_of_a_sequential_range(self):
        # ("much more conservative loop-level optimizations": the tile keeps one buffer)
        want = self.x.astype(np.float64).reshape(128, 4, 64).sum(axis=2)
        for kernel, new in ((looped_affine, True), (looped_sequential, False)):
            np.testing.assert_allclose(kernel(self.x), want, rtol=1e-5)
            loads = [line for line in self.recording(kernel).splitlines()
                     if line.startswith('load ')]
            self.assertEqual(len(loads), 1)
            self.assertEqual(' new' in loads[0], new, kernel)

    def test_not_in_an_isa_kernel(self):
        # (program order: each declaration has its buffer)
        self.assertNotIn(' new', self.recording(windows_isa))


@nki.jit
def copied_columns(x):
    """The first 64 columns of each of x's 4 planes: one load of 4 runs a partition, used in a
    loop."""
    out = nl.ndarray((x.shape[0], x.shape[1], 64), dtype=x.dtype, buffer=nl.shared_hbm)
    c = nl.load(x[:, :, 0:64])
    for i in nl.affine_range(x.shape[1]):
        nl.store(out[:, i, :], value=nl.copy(c[:, i, :]))
    return out


class SpreadRuns(unittest.TestCase):
    """A DMA of 64 partitions with 8 runs a partition uses all 16 engines, not 8."""

    def test_the_runs_of_one_dma_spread_over_every_engine(self):
        (x,) = s.random_inputs((1, 64, 56, 56))
        text = trnsim.nki.trace_kernel(adaptive_pool.adaptive_pool, (x, 7, 7), {},
                                       False).trace.text()
        first = [line for line in text.splitlines() if line.startswith('load ')][:8]
        self.assertNotIn('part=', first[0])
        self.assertEqual([line.split('part=')[1].split()[0] for line in first[1:]],
                         [str(k) for k in range(1, 8)])
        stats = s.frontend_stats(adaptive_pool.adaptive_pool, x, 7, 7)
        busy = [s.stat(stats, f'dma.engines.e{e}.busy_ns') for e in range(16)]
        self.assertGreater(min(busy), 0.9 * max(busy), busy)

    def test_the_parts_of_a_dma_the_first_iteration_makes(self):
        """A split load made at its first use, inside a loop (its line made again, `if=L0`),
        keeps its parts."""
        x = np.random.default_rng(1).uniform(size=(128, 4, 128)).astype(np.float32)
        np.testing.assert_array_equal(copied_columns(x), x[:, :, 0:64])
        text = trnsim.nki.trace_kernel(copied_columns, (x,), {}, False).trace.text()
        loads = [line for line in text.splitlines() if line.startswith('load ')]
        self.assertEqual(len(loads), 4, loads)
        self.assertTrue(all(' if=L' in line for line in loads), loads)
        self.assertEqual([line.split('part=')[1].split()[0] for line in loads[1:]],
                         ['1', '2', '3'])

    def test_pooled_values(self):
        for shape, out, dtype in (((1, 64, 56, 56), (7, 7), np.float32),
                                  ((2, 128, 28, 28), (3, 5), np.float32),
                                  ((1, 256, 13, 13), (6, 6), np.float32),
                                  ((2, 64, 13, 13), (6, 4), np.float32)):
            (x,) = s.random_inputs(shape)
            got = adaptive_pool.adaptive_pool(x.astype(dtype), *out)
            np.testing.assert_allclose(got, adaptive_pool.reference(x, *out), rtol=1e-5,
                                       atol=1e-6)


if __name__ == '__main__':
    unittest.main()

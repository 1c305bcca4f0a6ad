"""Loops folded into one body: the program and the values are those of the kernel with every
loop unrolled (as it ran), for the project's kernels and for kernels whose Python depends on the
loop index or carries state between iterations (whose loops stay unrolled); the kernel's Python
runs once per launch; the recording is small; its text form."""

import os
import sys
import unittest

import numpy as np

import conv2d
import ffnn
import matmul
import matmul_nki0
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import nki_support as s
import transpose
import vector_add as va
import trnsim.nki



def both_ways(kernel, *args, **kwargs):
    """(stats, outputs, traced) with loops recorded once, and with every loop unrolled."""
    out = []
    for once in (True, False):
        trnsim.nki.configure(loops_once=once)
        try:
            values = trnsim.nki.trace_kernel(kernel, args, kwargs, True)
            stats = s.frontend_stats(kernel, *args, **kwargs)
        finally:
            trnsim.nki.configure(loops_once=True)
        out.append((stats, values.outputs, values))
    return out


class SameAsUnrolled(unittest.TestCase):

    def same(self, kernel, *args, **kwargs):
        (once, v1, t1), (unrolled, v2, t2) = both_ways(kernel, *args, **kwargs)
        self.assertEqual(s.counts(once), s.counts(unrolled))
        self.assertEqual(s.stat(once, 'total_time_ns'), s.stat(unrolled, 'total_time_ns'))
        for a, b in zip(v1 if isinstance(v1, (tuple, list)) else [v1],
                        v2 if isinstance(v2, (tuple, list)) else [v2]):
            np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
        return t1, t2

    def test_project_kernels(self):
        a, b = s.random_inputs(25600, 25600)
        self.same(va.vector_add_tiled, a, b, row_chunk=128)
        self.same(va.vector_add_stream, a, b, free_dim=200)
        self.same(va.vector_add_stream_strided, a, b, free_dim=100)
        self.same(va.vector_add_stream_isa, a, b, free_dim=50)
        (x,) = s.random_inputs((512, 384), lo=-1.0)
        self.same(transpose.transpose_2d, x)
        lhsT, rhs = s.random_inputs((512, 256), (512, 1024), dtype='bfloat16', lo=-1.0)
        for kernel in (matmul.matmul_tiled, matmul.matmul_hoist_load, matmul_nki0.matmul_tiled,
                       matmul_nki0.matmul_hoist_load):
            self.same(kernel, lhsT, rhs)
        lhsT, rhs = s.random_inputs((512, 512), (512, 2048), dtype='bfloat16', lo=-1.0)
        self.same(matmul.matmul_block_free_dimension, lhsT, rhs)
        self.same(matmul_nki0.matmul_block_free_dimension, lhsT, rhs)
        lhsT, rhs = s.random_inputs((1024, 2048), (1024, 1024), dtype='bfloat16', lo=-1.0)
        self.same(matmul.matmul_fully_optimized, lhsT, rhs)
        self.same(matmul_nki0.matmul_fully_optimized, lhsT, rhs)
        x, w, bias = s.random_inputs((1, 130, 9, 10), (140, 130, 3, 3), (140,))
        self.same(conv2d.conv2d_row, x, w, bias, pool_size=2)
        xs = s.random_inputs((256, 512), (512, 1024), (1024,), (1024, 512), (512,), seed=11)
        self.same(ffnn.ffnn_predict, *xs, matmul_variant='hoist_load')

    def test_tiled_matmul_records_its_loops_once(self):
        lhsT, rhs = s.random_inputs((512, 256), (512, 1024), dtype='bfloat16', lo=-1.0)
        once, unrolled = self.same(matmul.matmul_tiled, lhsT, rhs)
        # 3 loops: 2 x 2 output tiles, 4 K tiles; 2 loads and a matmul per K tile, a copy and a
        # store per output tile
        self.assertEqual(once.trace.executed, 2 * 2 * (4 * 3 + 2))
        self.assertEqual(unrolled.trace.executed, once.trace.executed)
        self.assertLess(len(once.trace.ops), 25)
        self.assertGreater(len(unrolled.trace.ops), 2 * 2 * 4 * 3)
        kinds = [op.kind for op in once.trace.ops]
        self.assertEqual(kinds.count('loop'), 3)
        self.assertEqual(kinds.count('matmul'), 1)

    def test_fully_optimized_matmul_records_its_loops_once(self):
        # its SBUF accumulator is a tensor of tiles indexed by two loop indices
        lhsT, rhs = s.random_inputs((1024, 2048), (1024, 1024), dtype='bfloat16', lo=-1.0)
        once, _ = self.same(matmul.matmul_fully_optimized, lhsT, rhs)
        kinds = [op.kind for op in once.trace.ops]
        # every loop of more than one trip at this shape, none unrolled: the 3 bk loops (8),
        # bn (2) and the 2 bm loops (16); n2, k2 and the 2 m2 loops have 1 trip
        self.assertEqual(kinds.count('loop'), 6)
        self.assertEqual(kinds.count('matmul'), 1)


@nki.jit
def first_row_doubled(a):
    """An `if` on the loop index: the loop is unrolled."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        if i == 0:
            t = nl.multiply(t, 2.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def shifted_by_one_tile(a):
    """A tile carried by a Python variable into the next iteration (software pipelining):
    out tile i is a's tile i - 1 (tile 0: a's tile 0)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    cur = nl.load(a[0:128, :])
    for i in nl.affine_range(a.shape[0] // 128):
        nxt = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.copy(cur))
        cur = nxt
    return out


@nki.jit
def kept_in_a_list(a):
    """Tiles appended to a Python list in the loop, the first one used after it."""
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = []
    for i in nl.affine_range(a.shape[0] // 128):
        tiles.append(nl.load(a[i * 128:(i + 1) * 128, :]))
    nl.store(out, value=nl.add(tiles[0], tiles[-1]))
    return out


@nki.jit
def stops_early(a):
    """A `break` after the second tile."""
    out = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))
        if i == 1:
            break
    return out


@nki.jit
def stops_after_two(a):
    """A `break` after the second tile, decided by a Python counter (not the index)."""
    out = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    stored = 0
    for i in nl.affine_range(a.shape[0] // 128):
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))
        stored += 1
        if stored == 2:
            break
    return out


@nki.jit
def alternating(a):
    """Two tiles used in turn through a Python counter (tile i goes through tile turn % 2)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    bufs = [nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf) for _ in range(2)]
    turn = 0
    for i in nl.affine_range(a.shape[0] // 128):
        b = bufs[turn % 2]
        turn += 1
        nisa.dma_copy(dst=b, src=a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(b, float(turn)))
    return out


@nki.jit
def running_sums(a, b):
    """A PSUM accumulator zeroed before the K loop and read inside it before each matmul:
    out[k] = the sum of the first k products (the zeroing is a memset in the first iteration
    only)."""
    kt = a.shape[0] // 128
    out = nl.ndarray((kt, a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((a.shape[1], b.shape[1]), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(kt):
        nl.store(out[k], value=nl.copy(acc))
        acc += nl.matmul(nl.load(a[k * 128:(k + 1) * 128, :]),
                         nl.load(b[k * 128:(k + 1) * 128, :]), transpose_x=True)
    return out


@nki.jit
def loaded_before_stored_inside(a):
    """A load written before the loop, placed into a tile of each iteration: the first
    iteration runs the load, the later ones copy its tile."""
    out = nl.ndarray((a.shape[0] // 128 * 128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    first = nl.load(a[0:128, :])
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        t[...] = first
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def triangle(a):
    """An inner loop whose trip count is the outer index: out row tile i = sum of a's tiles
    0..i."""
    n = a.shape[0] // 128
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n):
        acc = nl.zeros((128, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(i + 1):
            acc[...] = nl.add(acc, nl.load(a[j * 128:(j + 1) * 128, :]))
        nl.store(out[i * 128:(i + 1) * 128, :], value=acc)
    return out


@nki.jit
def last_index_after_the_loop(a):
    """The loop index kept after the loop indexes a store."""
    out = nl.zeros(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, :])
    for i in nl.affine_range(a.shape[0] // 128):
        last = i
    nl.store(out[last * 128:(last + 1) * 128, :], value=t)
    return out


@nki.jit
def blocks_rewritten_in_a_loop(a, c, w):
    """Block 0 of a tensor of tiles transposed for a matmul (hoisted), every block rewritten in
    a loop through its index, block 0 used again: the second product is of c's first tile."""
    out = nl.ndarray((256, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((4, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
    for b in range(4):
        x[b] = nl.load(a[b * 128:(b + 1) * 128, :])
    wt = nl.load(w)
    nl.store(out[0:128, :], value=nl.copy(nl.matmul(x[0], wt)))
    for i in nl.affine_range(4):
        x[i] = nl.load(c[i * 128:(i + 1) * 128, :])
    nl.store(out[128:256, :], value=nl.copy(nl.matmul(x[0], wt)))
    return out


@nki.jit
def blocks_accumulated(a):
    """acc[i] += tile, for blocks indexed by the loop index: one add per block, no copy."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        acc[i] += nl.load(a[:, i * 64:(i + 1) * 64])
    for i in nl.affine_range(4):
        nl.store(out[:, i * 64:(i + 1) * 64], value=acc[i])
    return out


@nki.jit
def products_in_two_loops(x, w):
    """nl.matmul (its transpose of x hoisted out of both loops) and the copy of its product on
    one line, inside two loops."""
    out = nl.ndarray((2, 2, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    for i in nl.affine_range(2):
        for j in nl.affine_range(2):
            wt = nl.load(w[:, (2 * i + j) * 128:(2 * i + j + 1) * 128])
            nl.store(out[i, j], value=nl.copy(nl.matmul(xt, wt)))
    return out


@nki.jit
def product_used_after_the_loop(x, w):
    """The last iteration's product, placed after the loop."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    for i in nl.affine_range(4):
        r = nl.matmul(xt, nl.load(w[:, i * 128:(i + 1) * 128]))
    nl.store(out, value=nl.copy(r))
    return out


@nki.jit
def unused_result_in_a_loop(a):
    """A result never used, of a tile loaded before the loop."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, :])
    for i in nl.affine_range(2):
        unused = nl.multiply(t, 2.0)  # noqa: F841
        nl.store(out, value=nl.load(a[128:256, :]))
    return out


@nki.jit
def scaled_by_the_index(a):
    """Tile i times i, and plus i + 0.5, the index as a number."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.multiply(nl.load(a[i * 128:(i + 1) * 128, :]), i)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(t, i + 0.5))
    return out


def kept_five_iterations(isa=False):
    """Tile i - 5 used in iteration i (a Python list): more instances alive than the compiler's
    buffers, each kept in a buffer of its own (an nl kernel), or overwritten (isa)."""
    def kernel(a):
        out = nl.ndarray((a.shape[0] - 5 * 128, a.shape[1]), dtype=a.dtype,
                         buffer=nl.shared_hbm)
        seen = []
        for i in nl.affine_range(a.shape[0] // 128):
            t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
            t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            seen.append(t)
            if len(seen) > 5:
                old = seen.pop(0)
                nl.store(out[(i - 5) * 128:(i - 4) * 128, :], value=nl.copy(old))
        return out
    kernel = nki.jit(kernel)
    return nki.compiler.skip_middle_end_transformations(kernel) if isa else kernel


def alloc_in_a_loop(a):
    """A directly allocated tile, its allocation function a lambda written in the loop."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.ndarray((128, a.shape[1]), dtype=a.dtype,
                       buffer=nki.compiler.sbuf.alloc(lambda idx, pdim_size, fdim_size: (0, 1024)))
        t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


class WhatTheFrontendKeeps(unittest.TestCase):
    """Kernels whose recording once depends on what the frontend keeps between operations
    (hoisted transposes, tensors of tiles indexed by the loop, declarations made in a loop's
    first iteration only, phases): the same program and values as unrolled."""

    def check(self, kernel, want, *args):
        t_once, _ = SameAsUnrolled.same(self, kernel, *args)
        np.testing.assert_allclose(np.asarray(kernel(*args), np.float64), want, rtol=1e-5,
                                   atol=1e-4)
        return t_once

    def test_blocks_rewritten_through_the_index(self):
        a, c, w = s.random_inputs((512, 128), (512, 128), (128, 128), lo=-1.0)
        want = np.concatenate([a[:128] @ w, c[:128] @ w])
        self.check(blocks_rewritten_in_a_loop, want, a, c, w)

    def test_blocks_accumulated_through_the_index(self):
        (a,) = s.random_inputs((128, 256))
        t = self.check(blocks_accumulated, a, a)
        self.assertEqual([op.kind for op in t.trace.ops].count('copy'), 0)

    def test_declarations_of_the_first_iteration_only(self):
        x, w = s.random_inputs((128, 128), (128, 512), lo=-1.0)
        want = np.stack([x @ w[:, k * 128:(k + 1) * 128] for k in range(4)]).reshape(2, 2, 128,
                                                                                   128)
        self.check(products_in_two_loops, want, x, w)
        self.check(product_used_after_the_loop, x @ w[:, 384:], x, w)

    def test_phases_with_a_result_never_used(self):
        (a,) = s.random_inputs((256, 128))
        self.check(unused_result_in_a_loop, a[128:], a)

    def test_the_index_as_a_number(self):
        (a,) = s.random_inputs((512, 64))
        scale = np.repeat(np.arange(4, dtype=np.float32), 128)[:, None]
        self.check(scaled_by_the_index, a * scale + scale + 0.5, a)

    def test_tiles_kept_beyond_the_buffers(self):
        (a,) = s.random_inputs((128 * 8, 64))
        self.check(kept_five_iterations(), a[:3 * 128], a)

    def test_isa_tiles_kept_beyond_their_buffer_are_an_error(self):
        with self.assertRaisesRegex(trnsim.nki.KernelError, 'later instances overwrote it'):
            kept_five_iterations(isa=True)(np.zeros((128 * 8, 64), np.float32))

    def test_an_allocation_function_written_in_the_loop(self):
        (a,) = s.random_inputs((512, 64))
        t = self.check(nki.jit(alloc_in_a_loop), a, a)
        kinds = [op.kind for op in t.trace.ops]
        self.assertEqual(kinds.count('loop'), 1)  # one declaration, recorded once
        self.assertEqual(len(t.trace.decl_list), 1)


class PythonThatNeedsUnrolling(unittest.TestCase):
    """Kernels whose Python a loop recorded once cannot express: the frontend unrolls those
    loops, so values and program are the eager ones."""

    def check(self, kernel, want, *args):
        t_once, t_unrolled = SameAsUnrolled.same(self, kernel, *args)
        got = kernel(*args)
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5, atol=1e-5)
        return t_once

    def setUp(self):
        (self.a,) = s.random_inputs((512, 64), lo=-1.0)

    def test_if_on_the_index(self):
        want = self.a.copy()
        want[:128] *= 2
        self.check(first_row_doubled, want, self.a)

    def test_tile_carried_to_the_next_iteration(self):
        want = np.concatenate([self.a[:128], self.a[:-128]])
        self.check(shifted_by_one_tile, want, self.a)

    def test_tiles_kept_in_a_list(self):
        self.check(kept_in_a_list, self.a[:128] + self.a[384:], self.a)

    def test_break(self):
        want = np.zeros_like(self.a)
        want[:256] = self.a[:256]
        self.check(stops_early, want, self.a)

    def test_break_on_a_counter(self):
        want = np.zeros_like(self.a)
        want[:256] = self.a[:256]
        self.check(stops_after_two, want, self.a)

    def test_python_counter(self):
        want = self.a * np.repeat(np.arange(1, 5, dtype=np.float32), 128)[:, None]
        self.check(alternating, want, self.a)

    def test_pending_zeroing_read_inside_the_loop(self):
        a, b = s.random_inputs((512, 128), (512, 256), lo=-1.0)
        prods = [a[k * 128:(k + 1) * 128].T @ b[k * 128:(k + 1) * 128] for k in range(4)]
        want = np.stack([sum(prods[:k], np.zeros_like(prods[0])) for k in range(4)])
        t = self.check(running_sums, want, a, b)
        self.assertEqual([op.kind for op in t.trace.ops].count('loop'), 1)  # recorded once
        memsets = [op for op in t.trace.ops if op.kind == 'isa.memset']
        self.assertEqual(len(memsets), 1)
        self.assertEqual(len(memsets[0].when), 1)  # in the first iteration only

    def test_operation_written_before_the_loop(self):
        want = np.tile(self.a[:128], (4, 1))
        self.check(loaded_before_stored_inside, want, self.a)

    def test_trip_count_from_the_outer_index(self):
        tiles = self.a.reshape(4, 128, 64)
        want = np.cumsum(tiles, axis=0).reshape(512, 64)
        self.check(triangle, want, self.a)

    def test_index_used_after_the_loop(self):
        want = np.zeros_like(self.a)
        want[384:] = self.a[:128]
        self.check(last_index_after_the_loop, want, self.a)


RUNS = {}  # how many times each counted kernel's loop body ran (its Python)


def counted(name):
    RUNS[name] = RUNS.get(name, 0) + 1


@nki.jit
def counted_list(a):
    """Tiles kept in a Python list across nl.affine_range iterations."""
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = []
    for i in nl.affine_range(a.shape[0] // 128):
        counted('list')
        t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        t[...] = nl.load(a[i * 128:(i + 1) * 128, :])
        tiles.append(t)
    nl.store(out, value=nl.add(tiles[0], tiles[-1]))
    return out


@nki.jit
def counted_branch(a):
    """A branch on the loop index."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        counted('branch')
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        if i == 1:
            t = nl.multiply(t, 2.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def counted_phases(a):
    """A loop the builder asks to have unrolled (one of its phases begins inside the loop's
    first iteration), and an SBUF offset counter kept by the kernel across iterations (AWS's
    attention tutorial v9 keeps one)."""
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, :])
    offset = 0
    for i in nl.affine_range(2):
        counted('phases')
        offset += 512
        unused = nl.multiply(t, 2.0)  # noqa: F841
        nl.store(out, value=nl.load(a[128:256, :]))
    assert offset == 1024
    return out


class PythonRunsOnce(unittest.TestCase):
    """The kernel's Python runs once per launch: each loop body once per iteration, whether the
    loop folds, stays unrolled, or the builder asks for it unrolled."""

    def runs(self, name, kernel, want, *args):
        for values in (True, False):
            RUNS.clear()
            t = trnsim.nki.trace_kernel(kernel, args, {}, values)
            self.assertEqual(RUNS, {name: args[0].shape[0] // 128})
            if values:
                np.testing.assert_allclose(np.asarray(t.outputs, np.float64), want, rtol=1e-6)
        return t

    def test_tiles_kept_in_a_list(self):
        (a,) = s.random_inputs((512, 64))
        t = self.runs('list', counted_list, a[:128] + a[384:], a)
        self.assertEqual([op.kind for op in t.trace.ops].count('loop'), 1)  # folded

    def test_a_branch_on_the_index(self):
        (a,) = s.random_inputs((512, 64))
        want = a.copy()
        want[128:256] *= 2
        t = self.runs('branch', counted_branch, want, a)
        # (every iteration's Python runs; the iterations the comparison sets apart are parts
        # of one body: 0, 1 and 2..3, the same program as unrolled)
        text = t.trace.text()
        self.assertEqual(text.count('loop L0 4'), 1, text)
        for part in ('L0@0:1', 'L0@1:2', 'L0@2:4'):
            self.assertIn(part, text)
        SameAsUnrolled.same(self, counted_branch, a)

    def test_a_loop_the_builder_unrolls(self):
        (a,) = s.random_inputs((256, 128))
        t = self.runs('phases', counted_phases, a[128:], a)
        self.assertEqual([op.kind for op in t.trace.ops].count('loop'), 0)


def streaming_in(spelling):
    """NKI 0.7's streaming kernel (per 128 rows: dma_copy in, exp, dma_copy out) with its loop
    written `spelling` (range, nl.affine_range, ...): the source is the same but that word."""
    source = f'''
def streaming(a):
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    for i in {spelling}(a.shape[0] // 128):
        t = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
        e = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.activation(dst=e, op=nl0.exp, data=t)
        nisa0.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=e)
    return out
'''
    scope = {'nl0': nl0, 'nisa0': nisa0}
    exec(compile(source, f'<streaming with {spelling}>', 'exec'), scope)
    return nki0.jit(scope['streaming'])


class OneLoopHoweverSpelled(unittest.TestCase):
    """From NKI 0.7 the NKI iterators are Python's range: the same instructions take the same
    time whichever way the loop is written."""

    def test_the_streaming_kernel_in_each_spelling(self):
        (a,) = s.random_inputs((4096, 512), lo=-1.0)
        got = {}
        for spelling in ('range', 'nl0.affine_range', 'nl0.sequential_range',
                         'nl0.static_range'):
            kernel = streaming_in(spelling)
            np.testing.assert_allclose(kernel(a), np.exp(a), rtol=1e-6)
            t = trnsim.nki.trace_kernel(kernel, (a,), {}, False)
            text = t.trace.text().replace(f'<streaming with {spelling}>', 'k.py')  # its file
            got[spelling] = (text, s.stat(s.frontend_stats(kernel, a), 'total_time_ns'))
        texts = {text for text, _ in got.values()}
        self.assertEqual(len(texts), 1, 'one recording')
        self.assertIn('loop L0 32 range', texts.pop())
        self.assertEqual(len({ns for _, ns in got.values()}), 1, got)


BODY_RUNS = [0]  # iterations of probed loop bodies the kernel's Python ran


def _probe():
    BODY_RUNS[0] += 1


def _scaled_tile(a, out, i, scale):
    """out's 128-row tile i = scale * a's."""
    t = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
    d = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.tensor_scalar(dst=d, data=t, op0=nl0.multiply, operand0=scale)
    nisa0.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=d)


@nki0.jit
def doubled_rows(a):
    """2a, one 128-row tile an iteration of a Python range loop (NKI 0.7)."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    for i in range(a.shape[0] // 128):
        _probe()
        _scaled_tile(a, out, i, 2.0)
    return out


@nki0.jit
def counted_rows(a):
    """n a, n the loop's trip count as the kernel's Python counts it (a variable the loop
    carries), applied after the loop."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    n = 0
    for i in range(a.shape[0] // 128):
        _probe()
        n += 1
    for i in range(a.shape[0] // 128):
        _scaled_tile(a, out, i, float(n))
    return out


@nki0.jit
def listed_rows(a):
    """2a, each iteration's row offset kept in a Python list (the loop grows it)."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    seen = []
    for i in range(a.shape[0] // 128):
        _probe()
        seen.append(128)
        _scaled_tile(a, out, i, 2.0)
    assert len(seen) == a.shape[0] // 128
    return out


@nki0.jit
def element_counted_rows(a):
    """n a, n counted in a list's element (the list itself never changes), and a
    comprehension over an NKI loop (every element)."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    n = [0]
    for i in range(a.shape[0] // 128):
        _probe()
        n[0] += 1
    scales = [1.0 for _ in nl0.affine_range(a.shape[0] // 128)]
    assert len(scales) == a.shape[0] // 128
    for i in range(a.shape[0] // 128):
        _scaled_tile(a, out, i, float(n[0]))
    return out


class PythonLoopsRunTwiceWhenTheyCan(unittest.TestCase):
    """A loop whose every iteration the kernel's Python runs (NKI 0.7's loops, Python range)
    stops after iterations 0 and 1 when they record one body, need nothing of the index's
    value and change none of the Python variables of the function running the loop; else every
    iteration runs. The program is the same either way (the goldens; --unroll-loops)."""

    def runs(self, kernel, a):
        BODY_RUNS[0] = 0
        got = kernel(a)
        return got, BODY_RUNS[0]

    def test_iterations_that_carry_nothing_run_twice(self):
        (a,) = s.random_inputs((1024, 64))
        got, runs = self.runs(doubled_rows, a)
        np.testing.assert_array_equal(got, 2 * a)
        self.assertEqual(runs, 2)
        folded = s.stat(s.frontend_stats(doubled_rows, a), 'total_time_ns')
        trnsim.nki.configure(loops_once=False)
        try:
            unrolled = s.stat(s.frontend_stats(doubled_rows, a), 'total_time_ns')
        finally:
            trnsim.nki.configure(loops_once=True)
        self.assertEqual(folded, unrolled)

    def test_a_variable_the_loop_carries_runs_every_iteration(self):
        (a,) = s.random_inputs((1024, 64))
        got, runs = self.runs(counted_rows, a)
        np.testing.assert_array_equal(got, 8 * a)  # (2a, were the counter's loop cut short)
        self.assertEqual(runs, 8)
        notes = trnsim.nki.trace_kernel(counted_rows, (a,), {}, False).trace.loop_notes
        self.assertTrue(any('its Python ran 8 of them (iteration 1 changed its Python '
                            'variables n)' in text for _, text in notes), notes)

    def test_an_element_the_loop_changes_and_a_comprehension_run_every_iteration(self):
        (a,) = s.random_inputs((1024, 64))
        got, runs = self.runs(element_counted_rows, a)
        np.testing.assert_array_equal(got, 8 * a)
        self.assertEqual(runs, 8)

    def test_a_list_the_loop_grows_runs_every_iteration(self):
        (a,) = s.random_inputs((1024, 64))
        got, runs = self.runs(listed_rows, a)
        np.testing.assert_array_equal(got, 2 * a)
        self.assertEqual(runs, 8)


def exp_rows(compiled):
    """exp(x * 0.5) + 0.25 per 128-row tile, its loop nl.fori_loop (`compiled`: a loop the
    device runs over one copy of its body) or Python's range (unrolled)."""
    @nki0.jit
    def kernel(a):
        out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)

        def body(i):
            t = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
            e = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
            nisa0.activation(dst=e, op=nl0.exp, data=t, scale=0.5)
            f = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
            nisa0.tensor_scalar(dst=f, data=e, op0=nl0.add, operand0=0.25)
            nisa0.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=f)

        if compiled:
            nl0.fori_loop(0, a.shape[0] // 128, body)
        else:
            for i in range(a.shape[0] // 128):
                body(i)
        return out
    return kernel


class CompiledLoops(unittest.TestCase):
    """A loop the device runs repeats one copy of its body: one address per declaration, so
    iteration i + 1 waits for iteration i's readers; it is not faster than the loop unrolled."""

    def test_fori_loop_is_not_faster_than_unrolled(self):
        (a,) = s.random_inputs((1024, 256), lo=-1.0)
        us = {}
        for compiled in (True, False):
            kernel = exp_rows(compiled)
            np.testing.assert_allclose(kernel(a), np.exp(a * 0.5) + 0.25, rtol=1e-5)
            us[compiled] = s.stat(s.frontend_stats(kernel, a), 'total_time_ns')
            t = trnsim.nki.trace_kernel(kernel, (a,), {}, False)
            if compiled:  # one buffer for each declaration of the body
                self.assertTrue(all(d.carried for d in t.trace.decl_list))
        self.assertGreaterEqual(us[True], us[False])


named_add_line = sys._getframe().f_lineno + 4  # the line of `def named_add`


@nki.jit
def named_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm, name='out')
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf, name='x')
        y = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf, name='y')
        x[...] = nl.load(a[i * 128:(i + 1) * 128, :])
        y[...] = nl.load(b[i * 128:(i + 1) * 128, :])
        x[...] = nl.add(x, y)
        nl.store(out[i * 128:(i + 1) * 128, :], value=x)
    return out


class TextForm(unittest.TestCase):

    def test_a_small_kernel(self):
        a = np.zeros((512, 64), np.float32)
        t = trnsim.nki.trace_kernel(named_add, (a, a), {}, False)
        here = os.path.abspath(__file__)
        text = t.trace.text()
        # each instruction names its kernel line: `place N FILE:LINE` and ` at=N`
        places = [line.split(' ', 2)[2] for line in text.splitlines()
                  if line.startswith('place ')]
        self.assertEqual([p.rsplit(':', 1)[0] for p in places], [here] * 4)
        self.assertEqual([int(p.rsplit(':', 1)[1]) for p in places],
                         [named_add_line + n for n in (5, 6, 7, 8)])
        text = '\n'.join(line.rsplit(' at=', 1)[0] for line in text.splitlines()
                         if not line.startswith('place ')) + '\n'
        self.assertEqual(text, '''trnsim-nki-recording 1
style nl
tensor input float32 32768 a
tensor input float32 32768 b
tensor output float32 32768 out
decl sbuf 128 64 float32 1 0 0 4 - - x
decl sbuf 128 64 float32 1 0 0 4 - - y
loop L0 4 affine
declare 0
declare 1
load T0.0.0:0:128:0:64:1 H0:8192*L0:128:64:64
load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64
ins dve tensor_tensor dst=T0.0.0:0:128:0:64:1 src0=T0.0.0:0:128:0:64:1 src1=T1.0.0:0:128:0:64:1 alu=add
store H2:8192*L0:128:64:64 T0.0.0:0:128:0:64:1
end L0
''')

    def test_recording_out(self):
        import tempfile
        a = np.zeros((512, 64), np.float32)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'rec.txt')
            trnsim.nki.configure(recording_out=path)
            try:
                t = trnsim.nki.trace_kernel(named_add, (a, a), {}, False)
            finally:
                trnsim.nki.configure(recording_out='')
            with open(path) as f:
                self.assertEqual(f.read(), t.trace.text())



def stream_rows(spelling):
    """exp of 128-row tiles, the loop spelled `spelling`: Python's range (straight-line code
    for the compiler: each run of the line a declaration of its own), nl.static_range or
    nl.affine_range; the same instructions each way."""
    loop = {'range': range, 'static': nl.static_range, 'affine': nl.affine_range}[spelling]

    @nki.jit
    def stream(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in loop(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nisa.activation(op=nl.exp, data=t))
        return out
    return stream


@nki.jit
def psum_blocks(a, b):
    """A PSUM tensor of 16 blocks of 2 KiB (twice PSUM), each block used within one iteration:
    block dimensions are logical, so its blocks take a loop tile's buffers in turn; the
    accumulation begins in PSUM nothing wrote."""
    out = nl.ndarray((16 * 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((16, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    a_sb, b_sb = nl.load(a), nl.load(b)
    for m in nl.affine_range(16):
        for k in nl.affine_range(2):
            acc[m] += nisa.nc_matmul(a_sb[:, k, nl.ds(m * 128, 128)], b_sb[:, k, :])
        nl.store(out[m * 128:(m + 1) * 128, :], value=nl.copy(acc[m]))
    return out


def grouped_blocks(declared_in_loop):
    """A tensor of 12 groups of 8 blocks of 8 KiB declared once (768 KiB a partition, more
    than SBUF), each group loaded by one loop in an iteration of the outer loop and read by
    another loop inside it (NKIBench's generated kernels); `declared_in_loop`: the group
    declared in the outer loop instead, the same program."""
    @nki.jit
    def scaled(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if not declared_in_loop:
            t = nl.ndarray((12, 8, nl.par_dim(128), 2048), dtype=x.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(12):
            if declared_in_loop:
                g = nl.ndarray((8, nl.par_dim(128), 2048), dtype=x.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(8):
                if declared_in_loop:
                    g[k] = nl.load(x[i, k])
                else:
                    t[i, k] = nl.load(x[i, k])
            for k in nl.affine_range(8):
                nl.store(out[i, k], value=nl.multiply(g[k] if declared_in_loop else t[i, k], 2.0))
        return out
    return scaled


@nki.jit
def unrolled_blocks(x):
    """A tensor of 24 blocks of 16 KiB declared once (384 KiB a partition, more than SBUF), its
    loop unrolled (static_range): each block loaded, scaled and stored in its own iteration, so
    blocks apart in time share memory (NKIBench's adamw, whose masked last iteration unrolls
    its loop)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((24, nl.par_dim(128), 4096), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.static_range(24):
        t[i] = nl.load(x[i])
        nl.store(out[i], value=nl.multiply(t[i], 3.0))
    return out


@nki.jit
def unrolled_groups(x):
    """A tensor of 4 x 3 x 8 blocks of 8 KiB declared once (768 KiB a partition): in each
    iteration of the outer loop, an unrolled loop (static_range, as a mask on its last
    iteration makes NKIBench's transpose_matmul's) loads 8 blocks and stores them scaled, so
    the blocks rotate in groups of 24 over the outer loop, and the three eights of a group,
    apart in time, share memory."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 3, 8, nl.par_dim(128), 2048), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        for k in nl.static_range(3):
            for j in nl.affine_range(8):
                t[i, k, j] = nl.load(x[i, k, j])
            for j in nl.affine_range(8):
                nl.store(out[i, k, j], value=nl.multiply(t[i, k, j], 0.5))
    return out


@nki.jit
def psum_grid(x, y):
    """A PSUM tensor of 2 x 3 x 4 x 4 blocks of 2 KiB (96 KiB a group, PSUM has 16): in each
    iteration of the outer loop, an unrolled loop's copies each take 16 blocks, one in each
    iteration of the two loops inside (NKIBench's transpose_matmul's PSUM): only one block is
    alive at a time."""
    out = nl.ndarray(y.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, 3, 4, 4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    x_sb = nl.load(x)
    for i in nl.affine_range(2):
        for k in nl.static_range(3):
            for a in nl.affine_range(4):
                for c in nl.affine_range(4):
                    acc[i, k, a, c] = nisa.nc_matmul(x_sb, nl.load(y[i, k, a, c]))
                    nl.store(out[i, k, a, c], value=nl.copy(acc[i, k, a, c]))
    return out


def wide_rows(width, kept):
    """Six full-width fp32 tiles per row tile, two of them alive at a time (`kept`: all six
    alive at the end): at 10240 columns, 240 KiB of each partition declared (SBUF has 192 or 224), 80 KiB needed."""
    @nki.jit
    def rows(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            chain = [t]
            for _ in nl.static_range(5):
                chain.append(nl.multiply(chain[-1], 1.5))
            value = chain[-1]
            if kept:
                for c in chain[:-1]:
                    value = nl.add(value, c)
            nl.store(out[i * 128:(i + 1) * 128, :], value=value)
        return out
    return rows


@nki0.jit
def six_tiles_nki0(x):
    """Six 128-row tiles of x loaded, then stored: all six alive together."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    tiles = []
    for k in range(x.shape[0] // 128):
        t = nl0.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=t, src=x[k * 128:(k + 1) * 128, :])
        tiles.append(t)
    for k, t in enumerate(tiles):
        nisa0.dma_copy(dst=out[k * 128:(k + 1) * 128, :], src=t)
    return out


@nki.jit
def wide_then_narrow(x, y):
    """Per 128-row tile: three wide fp32 tiles of x (60 KiB of each partition apiece) alive
    together, then y's 40 narrow tiles (4 KiB apiece) loaded together and summed: 344 KiB
    declared, 180 KiB alive at a time, the narrow tiles in the wide ones' memory."""
    f = x.shape[1] // 2
    rows = x.shape[0] // 128
    wide = nl.ndarray((rows * 128, f), dtype=x.dtype, buffer=nl.shared_hbm)
    narrow = nl.ndarray((rows * 128, 1024), dtype=y.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows):
        r = slice(i * 128, (i + 1) * 128)
        a = nl.load(x[r, 0:f])
        b = nl.load(x[r, f:2 * f])
        nl.store(wide[r, :], value=nl.add(a, b))
        tiles = nl.ndarray((40, nl.par_dim(128), 1024), dtype=y.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(40):
            tiles[k] = nl.load(y[r, k * 1024:(k + 1) * 1024])
        total = nl.zeros((128, 1024), dtype=y.dtype, buffer=nl.sbuf)
        for k in nl.sequential_range(40):
            total[...] = nl.add(total, tiles[k])
        nl.store(narrow[r, :], value=total)
    return wide, narrow


@nki.jit
def transposes_then_eight_sums(x, w):
    """Per 128-row tile of x (its loop left unrolled: the Python asks the index's value), x's
    transpose by the Tensor engine multiplied by each of w's eight [128, 512] parts into eight
    PSUM accumulators: nine PSUM tiles for eight banks, the transpose's dead before the
    accumulators' begin, and the next iteration's after they end."""
    rows = x.shape[0] // 128
    out = nl.ndarray((rows * 128, 8 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ws = nl.ndarray((8, nl.par_dim(128), 512), dtype=w.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(8):
        ws[j] = nl.load(w[:, j * 512:(j + 1) * 512])
    for i in nl.affine_range(rows):
        scale = 1.0 if i == 0 else 2.0
        t = nl.multiply(nl.load(x[i * 128:(i + 1) * 128, :]), scale)
        t_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        t_t[...] = nisa.nc_transpose(t)
        acc = nl.zeros((8, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(8):
            acc[j] += nisa.nc_matmul(t_t, ws[j])
        for j in nl.affine_range(8):
            nl.store(out[i * 128:(i + 1) * 128, j * 512:(j + 1) * 512], value=nl.copy(acc[j]))
    return out


def plane_sums(pieces):
    """Per 128 planes of x (an affine loop), a [128, 1] sum over `pieces` pieces of their
    columns, added up in a sequential loop: the accumulator is declared outside it."""
    @nki.jit
    def kernel(x):
        tiles, width = x.shape[0] // 128, x.shape[1] // pieces
        out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        for t in nl.affine_range(tiles):
            total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            for k in nl.sequential_range(pieces):
                part = nl.load(x[t * 128:(t + 1) * 128, k * width:(k + 1) * width])
                total[...] = nl.add(total, nl.sum(part, axis=1, keepdims=True))
            nl.store(out[t * 128:(t + 1) * 128, :], value=total)
        return out
    return kernel


class Placement(unittest.TestCase):
    """Placement comes from the instruction stream, not from how a loop is spelled: what a
    line declares again and again rotates over buffers as a loop's tiles do; tiles whose
    lifetimes do not overlap share memory when the kernel fits no other way."""

    def test_an_accumulator_rotates_unless_a_sequential_loop_carries_it(self):
        (x,) = s.random_inputs((512, 64))
        for pieces in (1, 2):
            kernel = plane_sums(pieces)
            np.testing.assert_allclose(kernel(x), x.sum(axis=1, keepdims=True), rtol=1e-5)
            t = trnsim.nki.trace_kernel(kernel, (x,), {}, False)
            (total,) = [d for d in t.trace.decl_list if d.loops == [4] and d.elems == 1]
            # (one piece: the sequential loop carries nothing, and the four sums, one per
            # tile of planes, rotate over buffers as the affine loop's tiles do)
            self.assertEqual(total.carried, pieces > 1)

    def test_straight_line_code_rotates_as_a_loop(self):
        (x,) = s.random_inputs((4096, 512), lo=-1.0)
        us = {}
        for spelling in ('range', 'static', 'affine'):
            kernel = stream_rows(spelling)
            np.testing.assert_allclose(kernel(x), np.exp(x), rtol=1e-5)
            us[spelling] = s.stat(s.frontend_stats(kernel, x), 'total_time_ns')
        self.assertAlmostEqual(us['range'] / us['affine'], 1.0, delta=0.02)
        self.assertAlmostEqual(us['static'] / us['affine'], 1.0, delta=0.02)

    def test_blocks_used_one_per_iteration_rotate(self):
        a = np.random.default_rng(1).random((128, 2, 16 * 128), dtype=np.float32)
        b = np.random.default_rng(2).random((128, 2, 512), dtype=np.float32)
        want = np.concatenate([sum(a[:, k, m * 128:(m + 1) * 128].T @ b[:, k, :]
                                   for k in range(2)) for m in range(16)])
        np.testing.assert_allclose(psum_blocks(a, b), want, rtol=1e-4)

    def test_groups_of_blocks_used_in_one_iteration_rotate(self):
        x = np.random.default_rng(5).random((12, 8, 128, 2048), dtype=np.float32)
        ns = {}
        for declared_in_loop in (False, True):
            kernel = grouped_blocks(declared_in_loop)
            np.testing.assert_allclose(kernel(x), 2 * x, rtol=1e-6)
            ns[declared_in_loop] = s.stat(s.frontend_stats(kernel, x), 'total_time_ns')
        self.assertAlmostEqual(ns[False] / ns[True], 1.0, delta=0.01)

    def test_blocks_of_an_unrolled_loop_apart_in_time_share_memory(self):
        x = np.random.default_rng(6).random((24, 128, 4096), dtype=np.float32)
        np.testing.assert_allclose(unrolled_blocks(x), 3 * x, rtol=1e-6)
        t = trnsim.nki.trace_kernel(unrolled_blocks, (x,), {}, False)
        self.assertTrue(any('lifetimes do not overlap' in n for n in t.notes), t.notes)

    def test_groups_whose_parts_are_apart_in_time_share_memory(self):
        x = np.random.default_rng(8).random((4, 3, 8, 128, 2048), dtype=np.float32)
        np.testing.assert_allclose(unrolled_groups(x), 0.5 * x, rtol=1e-6)
        t = trnsim.nki.trace_kernel(unrolled_groups, (x,), {}, False)
        self.assertTrue(any('lifetimes do not overlap' in n for n in t.notes), t.notes)

    def test_blocks_used_in_different_iterations_of_two_loops_share_psum(self):
        x = np.random.default_rng(9).uniform(-1, 1, (128, 128)).astype(np.float32)
        y = np.random.default_rng(10).uniform(-1, 1, (2, 3, 4, 4, 128, 512)).astype(np.float32)
        np.testing.assert_allclose(psum_grid(x, y), np.einsum('pm,ikacpn->ikacmn', x, y),
                                   rtol=1e-4, atol=1e-4)

    def test_tiles_apart_in_time_share_memory(self):
        (x,) = s.random_inputs((512, 10240), lo=-1.0)
        np.testing.assert_allclose(wide_rows(10240, False)(x), x * 1.5 ** 5, rtol=1e-5)
        t = trnsim.nki.trace_kernel(wide_rows(10240, False), (x,), {}, False)
        self.assertTrue(any('lifetimes do not overlap' in n for n in t.notes), t.notes)

    def test_small_tiles_take_the_memory_of_large_ones_apart_in_time(self):
        (x,) = s.random_inputs((256, 2 * 15360), lo=-1.0)
        (y,) = s.random_inputs((256, 40 * 1024), lo=-1.0, seed=2)
        wide, narrow = wide_then_narrow(x, y)
        np.testing.assert_allclose(wide, x[:, :15360] + x[:, 15360:], rtol=1e-6)
        np.testing.assert_allclose(narrow, y.reshape(256, 40, 1024).sum(axis=1), rtol=1e-4)

    def test_each_instance_of_an_unrolled_loop_has_its_own_lifetime(self):
        x = np.random.default_rng(3).random((256, 128), dtype=np.float32)
        w = np.random.default_rng(4).random((128, 8 * 512), dtype=np.float32)
        scaled = np.concatenate([x[:128], 2 * x[128:]])
        np.testing.assert_allclose(transposes_then_eight_sums(x, w), scaled @ w, rtol=1e-4)
        t = trnsim.nki.trace_kernel(transposes_then_eight_sums, (x, w), {}, False)
        self.assertTrue(any('lifetimes do not overlap' in n for n in t.notes), t.notes)

    def test_tiles_alive_together_that_do_not_fit_are_named(self):
        (x,) = s.random_inputs((512, 10240), lo=-1.0)
        with self.assertRaisesRegex(trnsim.nki.KernelError,
                                    r'sbuf allocation does not fit.*alive together: .*loops_test'):
            wide_rows(10240, True)(x)
        (y,) = s.random_inputs((768, 10240), lo=-1.0)  # (six tiles kept in a list)
        with self.assertRaisesRegex(trnsim.nki.KernelError, r'sbuf allocation does not fit'):
            six_tiles_nki0(y)


@nki.jit
def beta_python_range(x):
    """A Python range `for` loop in a beta kernel (sequential_range there), beside a list
    comprehension over range (Python's iteration: three tiles)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    scales = [nl.full((128, 1), float(k + 1), dtype=x.dtype) for k in range(3)]
    for i in range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :],
                 value=nl.multiply(nl.multiply(t, scales[0]), scales[2]))
    return out


class BetaPythonRange(unittest.TestCase):
    """Before NKI 0.7, "any use of Python range(...) will be replaced with sequential_range(...)
    by Neuron compiler" (the sequential_range reference): a `for` statement, not Python's other
    iteration."""

    def test_a_for_loop_is_sequential_range_a_comprehension_python(self):
        (x,) = s.random_inputs((512, 256), lo=-1.0)
        np.testing.assert_allclose(beta_python_range(x), x * 3.0, rtol=1e-6)
        t = trnsim.nki.trace_kernel(beta_python_range, (x,), {}, False)
        text = t.trace.text()
        self.assertIn('loop L0 4 sequential', text)
        self.assertEqual(text.count('loop '), 1, text)  # (the comprehension is no NKI loop)


@nki.jit
def first_iteration_inner_loop(x):
    """An outer loop whose second iteration a mask of loop indices drops entirely: the inner
    loop only iteration 0 runs stays a loop when the outer one folds."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(64)[None, :]
    for g in nl.affine_range(2):
        keep = g * 128 < x.shape[0]
        for j in nl.affine_range(x.shape[1] // 64):
            t = nl.load(x[g * 128 + ip, j * 64 + jf], mask=keep)
            nl.store(out[g * 128 + ip, j * 64 + jf], value=nl.multiply(t, 2.0, mask=keep),
                     mask=keep)
    return out


def _chains(x, out, loop):
    """Per block of 1024 columns, per half: the Vector engine, the Scalar engine, the Vector
    engine again; each half independent of the other (its loop of 2 iterations unrolled)."""
    zero = nl.zeros((128, 1), dtype=nl.float32)
    for i in nl.affine_range(x.shape[1] // 1024):
        t = nl.load(x[:, i * 1024:(i + 1) * 1024])
        r = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.sbuf)
        for h in loop(2):
            part = t[:, h * 512:(h + 1) * 512]
            a = nisa.tensor_tensor(part, part, op=nl.multiply)
            b = nisa.activation(op=nl.exp, data=a, bias=zero, scale=0.5)
            r[:, h * 512:(h + 1) * 512] = nisa.tensor_tensor(b, b, op=nl.add)
        nl.store(out[:, i * 1024:(i + 1) * 1024], value=r)


@nki.jit
def chains_scheduled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    _chains(x, out, nl.affine_range)
    return out


@nki.jit
def chains_in_order(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    _chains(x, out, lambda n: nl.affine_range(n, directives=nki.compiler.no_reorder()))
    return out


@nki0.jit
def chains_in_order_block(x):
    """chains_in_order in NKI 0.7: the halves in a no_reorder block."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    zero = nl0.ndarray((128, 1), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(dst=zero, value=0.0)
    for i in range(x.shape[1] // 1024):
        t = nl0.ndarray((128, 1024), dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=t, src=x[:, i * 1024:(i + 1) * 1024])
        r = nl0.ndarray((128, 1024), dtype=x.dtype, buffer=nl0.sbuf)
        with nl0.no_reorder():
            for h in range(2):
                part = t[:, h * 512:(h + 1) * 512]
                a = nl0.ndarray((128, 512), dtype=x.dtype, buffer=nl0.sbuf)
                nisa0.tensor_tensor(dst=a, data1=part, data2=part, op=nl0.multiply)
                b = nl0.ndarray((128, 512), dtype=x.dtype, buffer=nl0.sbuf)
                nisa0.activation(dst=b, op=nl0.exp, data=a, bias=zero, scale=0.5)
                nisa0.tensor_tensor(dst=r[:, h * 512:(h + 1) * 512], data1=b, data2=b,
                                    op=nl0.add)
        nisa0.dma_copy(dst=out[:, i * 1024:(i + 1) * 1024], src=r)
    return out


class CompilerScheduling(unittest.TestCase):
    """The compiler's scheduler places the second half's first Vector-engine step before the
    first half's last (which waits for the Scalar engine); no_reorder keeps program order."""

    def test_no_reorder_keeps_program_order(self):
        x = np.random.default_rng(3).random((128, 4096), dtype=np.float32)
        want = np.exp(0.5 * x * x) * 2
        times = {}
        for kernel in (chains_scheduled, chains_in_order):
            np.testing.assert_allclose(kernel(x), want, rtol=1e-5)
            times[kernel.__name__] = s.stat(s.frontend_stats(kernel, x), 'total_time_ns')
            text = trnsim.nki.trace_kernel(kernel, (x,), {}, False).trace.text()
            kept = kernel is chains_in_order
            self.assertEqual(text.count('order kept'), 1 if kept else 0)
            self.assertEqual(text.count('order free'), 1 if kept else 0)
        self.assertLess(times['chains_scheduled'], 0.95 * times['chains_in_order'])
        # NKI 0.7's with-block, around a Python loop the recording unrolls or folds
        np.testing.assert_allclose(chains_in_order_block(x), want, rtol=1e-5)
        text = trnsim.nki.trace_kernel(chains_in_order_block, (x,), {}, False).trace.text()
        self.assertGreaterEqual(text.count('order kept'), 1)
        self.assertEqual(text.count('order kept'), text.count('order free'))
        # (no faster than the scheduled beta 1 kernel: its halves keep program order)
        self.assertGreater(s.stat(s.frontend_stats(chains_in_order_block, x), 'total_time_ns'),
                           times['chains_scheduled'] / 0.95)


class MaskedIterations(unittest.TestCase):

    def test_an_inner_loop_of_the_first_iteration_only(self):
        x = np.random.default_rng(8).random((128, 256), dtype=np.float32)
        np.testing.assert_allclose(first_iteration_inner_loop(x), 2 * x, rtol=1e-6)
        t = trnsim.nki.trace_kernel(first_iteration_inner_loop, (x,), {}, False)
        self.assertEqual(t.trace.text().count('loop '), 2)


@nki.jit
def tail_tiles(x):
    """Rows in tiles of 128, the last one partial: a mask of the row index cuts it."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(cols)[None, :]
    for i in nl.affine_range((rows + 127) // 128):
        inside = i * 128 + ip < rows
        t = nl.load(x[i * 128 + ip, jf], mask=inside)
        nl.store(out[i * 128 + ip, jf], value=nl.multiply(t, 2.0, mask=inside), mask=inside)
    return out


@nki.jit
def tail_blocks(x):
    """tail_tiles as NKIBench's kernels spell it: block tensors declared before the loop, and
    the mask as the compiler prints it."""
    rows, cols = x.shape
    n = (rows + 127) // 128
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((n, nl.par_dim(128), cols), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((n, nl.par_dim(128), cols), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.arange(128)[:, None], nl.arange(cols)[None, :]
    for i in nl.affine_range(n):
        t[i, ip, jf] = nl.load(x[128 * i + ip, jf], mask=-128 * i + -1 * ip + (rows - 1) >= 0)
        u[i, ip, jf] = nl.multiply(t[i, ip, jf], 2.0, mask=-128 * i + -1 * ip + (rows - 1) >= 0)
        nl.store(out[128 * i + ip, jf], value=u[i, ip, jf],
                 mask=-128 * i + -1 * ip + (rows - 1) >= 0)
    return out


@nki.jit
def head_cut(x):
    """Rows in tiles of 128 from row 64 on: the mask cuts the first tile (a lower bound)."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(cols)[None, :]
    for i in nl.affine_range(rows // 128):
        keep = i * 128 + ip >= 64
        t = nl.load(x[i * 128 + ip, jf], mask=keep)
        nl.store(out[i * 128 + ip, jf], value=nl.multiply(t, 2.0, mask=keep), mask=keep)
    return out


@nki.jit
def tail_psum_blocks(x):
    """Columns in chunks of 1024, the last one partial, each chunk's halves scaled into a block
    of a PSUM tensor of 24 KiB a partition (PSUM has 16) and stored: the last chunk's second
    half is empty, so each part of the loop holds the inner loop, and the blocks rotate over
    both copies (as NKIBench's transpose_matmul's)."""
    rows, cols = x.shape
    n = (cols + 1023) // 1024
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((n, 2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    ip, jf, jw = nl.arange(128)[:, None], nl.arange(512)[None, :], nl.arange(1024)[None, :]
    for i in nl.affine_range(n):
        t = nl.load(x[ip, 1024 * i + jw], mask=-1024 * i + -1 * jw + (cols - 1) >= 0)
        for h in nl.affine_range(2):
            keep = -512 * h + -1024 * i + -1 * jf + (cols - 1) >= 0
            acc[i, h, ip, jf] = nl.multiply(t[ip, 512 * h + jf], 2.0, mask=keep)
            nl.store(out[ip, 1024 * i + 512 * h + jf], value=acc[i, h, ip, jf], mask=keep)
    return out


@nki.jit
def accumulated_over_tail_tiles(lhs_t, rhs):
    """out = lhs_t.T @ rhs over K in steps of 128 (the outer loop, accumulating in PSUM
    blocks), each step over N in tiles of 128, the last one partial (a mask of the inner
    index): the inner loop's parts, recorded in each outer iteration, are one body."""
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    tiles = (n_size + 127) // 128
    out = nl.ndarray((m_size, n_size), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((tiles, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
    ip, jf = nl.arange(128)[:, None], nl.arange(128)[None, :]
    for k in nl.affine_range(k_size // 128):
        a = nl.load(lhs_t[k * 128 + ip, jf])
        for j in nl.affine_range(tiles):
            b = nl.load(rhs[k * 128 + ip, j * 128 + jf], mask=j * 128 + jf < n_size)
            acc[j, ip, jf] += nisa.nc_matmul(a, b, mask=j * 128 + jf < n_size)
    for j in nl.affine_range(tiles):
        nl.store(out[ip, j * 128 + jf], value=nl.copy(acc[j, ip, jf], mask=j * 128 + jf < n_size),
                 mask=j * 128 + jf < n_size)
    return out


@nki0.jit
def tail_rows_by_min(x):
    """tail_tiles in NKI 0.7, which has no masks: the last tile's rows are min(128, rows - r0),
    a comparison of the loop index in the kernel's Python."""
    rows, cols = x.shape
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    for i in range((rows + 127) // 128):
        r0 = i * 128
        n = min(128, rows - r0)
        t = nl0.ndarray((128, cols), dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=t[0:n, :], src=x[r0:r0 + n, :])
        u = nl0.ndarray((128, cols), dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.tensor_scalar(dst=u[0:n, :], data=t[0:n, :], op0=nl0.multiply, operand0=2.0)
        nisa0.dma_copy(dst=out[r0:r0 + n, :], src=u[0:n, :])
    return out


class MaskedEnds(unittest.TestCase):
    """A mask of the loop index that cuts the last tile (or the first) leaves the loop folded:
    the iterations it cuts alike are a part of the body of their own (`if=L0@A:B`), so block
    tensors rotate as in a loop without a mask (NKIBench's adamw spells its loop so)."""

    def test_a_partial_last_tile_folds_into_one_body(self):
        x = np.random.default_rng(11).random((1000, 512), dtype=np.float32)
        once, _ = SameAsUnrolled.same(self, tail_tiles, x)
        text = once.trace.text()
        self.assertEqual(text.count('loop L0 8'), 1, text)
        # two declarations, the load, the multiply and the store in each part
        self.assertEqual(text.count('if=L0@0:7'), 5, text)
        self.assertEqual(text.count('if=L0@7:8'), 5, text)
        self.assertIn('H0:458752:104:512:512', text)  # (the last tile: 1000 - 896 rows)

    def test_block_tensors_of_a_partial_last_tile_rotate(self):
        x = np.random.default_rng(12).random((10000, 512), dtype=np.float32)
        ns = {}
        for kernel in (tail_tiles, tail_blocks):
            np.testing.assert_allclose(kernel(x), 2 * x, rtol=1e-6)
            ns[kernel.__name__] = s.stat(s.frontend_stats(kernel, x), 'total_time_ns')
            text = trnsim.nki.trace_kernel(kernel, (x,), {}, False).trace.text()
            self.assertEqual(text.count('loop L0 79'), 1)
        self.assertAlmostEqual(ns['tail_blocks'] / ns['tail_tiles'], 1.0, delta=0.01)

    def test_blocks_rotate_over_the_parts_of_a_loop(self):
        x = np.random.default_rng(14).random((128, 5420), dtype=np.float32)
        np.testing.assert_allclose(tail_psum_blocks(x), 2 * x, rtol=1e-6)
        text = trnsim.nki.trace_kernel(tail_psum_blocks, (x,), {}, False).trace.text()
        self.assertEqual(text.count('loop L0 6'), 1, text)
        self.assertIn('if=L1,L0@5:6', text)  # (the last part: its first half only)
        self.assertEqual(text.count('loop L1 2'), 2, text)  # (the inner loop, once a part)

    def test_an_outer_loop_around_the_parts_folds(self):
        rng = np.random.default_rng(15)
        lhs_t = rng.random((512, 128), dtype=np.float32)
        rhs = rng.random((512, 1000), dtype=np.float32)
        np.testing.assert_allclose(accumulated_over_tail_tiles(lhs_t, rhs), lhs_t.T @ rhs,
                                   rtol=1e-4)
        once, _ = SameAsUnrolled.same(self, accumulated_over_tail_tiles, lhs_t, rhs)
        text = once.trace.text()
        self.assertEqual(text.count('loop L0 4'), 1, text)  # (the outer loop, folded)
        self.assertIn('if=L1@7:8', text)

    def test_a_partial_last_tile_by_min_folds(self):
        x = np.random.default_rng(16).random((1000, 256), dtype=np.float32)
        once, _ = SameAsUnrolled.same(self, tail_rows_by_min, x)
        np.testing.assert_allclose(once.outputs, 2 * x)
        text = once.trace.text()
        self.assertEqual(text.count('loop L0 8'), 1, text)
        self.assertIn('if=L0@7:8', text)

    def test_a_cut_first_tile(self):
        x = np.random.default_rng(13).random((512, 256), dtype=np.float32)
        want = 2 * x
        want[:64] = 0
        self.assertEqual(head_cut(x)[64:].tolist(), want[64:].tolist())
        once, _ = SameAsUnrolled.same(self, head_cut, x)
        text = once.trace.text()
        self.assertEqual(text.count('if=L0@0:1'), 5, text)
        self.assertEqual(text.count('if=L0@1:4'), 5, text)


@nki0.jit
def chunks_to_the_end(x, chunk):
    """Columns in chunks, the last one shorter (its end Python's min()), a column each chunk
    summed into a tile whose width is the number of chunks; a loop longer than that skips the
    rest with `if c < n` (NKI 0.7: plain range)."""
    rows, width = x.shape
    n = -(-width // chunk)
    out = nl0.ndarray((rows, n), dtype=nl0.float32, buffer=nl0.shared_hbm)
    sums = nl0.ndarray((rows, n), dtype=nl0.float32, buffer=nl0.sbuf)
    t = nl0.ndarray((rows, chunk), dtype=nl0.float32, buffer=nl0.sbuf)
    for c in range(n + 2):
        start = c * chunk
        end = min(start + chunk, width)
        if c < n:
            nisa0.dma_copy(dst=t[0:rows, 0:end - start], src=x[0:rows, start:end])
            nisa0.tensor_reduce(dst=sums[0:rows, c], data=t[0:rows, 0:end - start],
                                op=nl0.add, axis=1)
    nisa0.dma_copy(dst=out, src=sums)
    return out


class BoundsThePythonKeeps(unittest.TestCase):
    """An access at a loop index that would run past its tensor's or tile's end in iterations
    the kernel's Python keeps it out of (min(), `if`) is taken at this iteration's values."""

    def test_a_shorter_last_chunk_and_iterations_skipped(self):
        x = np.random.default_rng(3).random((4, 40), dtype=np.float32)
        want = np.stack([x[:, k:k + 16].sum(1) for k in range(0, 40, 16)], axis=1)
        np.testing.assert_allclose(chunks_to_the_end(x, 16), want, rtol=1e-5)

    def test_past_the_end_in_this_iteration_is_still_an_error(self):
        @nki0.jit
        def beyond(x):
            out = nl0.ndarray((4, 8), dtype=nl0.float32, buffer=nl0.shared_hbm)
            t = nl0.ndarray((4, 8), dtype=nl0.float32, buffer=nl0.sbuf)
            for c in range(3):
                nisa0.dma_copy(dst=t, src=x[0:4, c * 8:c * 8 + 8])
            nisa0.dma_copy(dst=out, src=t)
            return out
        x = np.zeros((4, 20), dtype=np.float32)
        with self.assertRaisesRegex(trnsim.nki.KernelError,
                                    r'index range 16\.\.23 is out of bounds for dimension 1'):
            beyond(x)


@nki0.jit
def eight_banks_after_a_transpose(x, unrolled=False):
    """Each iteration of a loop: a transpose through a PSUM tile, then eight PSUM tiles of a
    bank each, made in a loop and kept in a list, filled by matmuls and summed: the eight are
    alive together (all of PSUM), the transpose's tile before them. `unrolled`: the loop's
    last iteration does more (the loop is then recorded iteration by iteration)."""
    out = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.shared_hbm)
    ident = nl0.ndarray((128, 128), dtype=nl0.float32, buffer=nl0.sbuf)
    t = nl0.ndarray((128, 128), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=t, src=x[:, 0:128])
    acc = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(dst=acc, value=0.0)
    for k in range(3):
        tp = nl0.ndarray((128, 128), dtype=nl0.float32, buffer=nl0.psum)
        nisa0.nc_transpose(dst=tp, data=t)
        nisa0.tensor_copy(dst=ident, src=tp)
        banks = []
        for _ in range(8):
            banks.append(nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.psum))
        for i in range(8):
            w = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
            nisa0.dma_copy(dst=w, src=x)
            nisa0.nc_matmul(dst=banks[i], stationary=ident, moving=w)
        for i in range(8):
            nisa0.tensor_tensor(dst=acc, data1=acc, data2=banks[i], op=nl0.add)
        if unrolled and k == 2:
            nisa0.tensor_scalar(dst=acc, data=acc, op0=nl0.multiply, operand0=1.0)
    nisa0.dma_copy(dst=out, src=acc)
    return out


@nki0.jit
def small_tiles_of_many_buffers(x):
    """A 40 KiB tile and 28 tiles of 1 KiB kept in a list, then a 150 KiB tile: 219 KiB of SBUF's
    192 (trn1) unless the large tiles share memory (they are apart in time); the small ones,
    28 buffers' worth, take memory of their own rather than giving the large tiles' memory 28
    buffers."""
    rows = x.shape[0]
    out = nl0.ndarray((rows, 256), dtype=nl0.float32, buffer=nl0.shared_hbm)
    acc = nl0.ndarray((rows, 256), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(dst=acc, value=0.0)
    z = nl0.ndarray((rows, 10240), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(dst=z, value=1.0)
    smalls = []
    for _ in range(28):
        t = nl0.ndarray((rows, 256), dtype=nl0.float32, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=t, src=x)
        smalls.append(t)
    for i in range(28):
        nisa0.tensor_tensor(dst=acc, data1=acc, data2=smalls[i], op=nl0.add)
    nisa0.tensor_tensor(dst=acc, data1=acc, data2=z[:, 0:256], op=nl0.add)
    big = nl0.ndarray((rows, 38400), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(dst=big, value=2.0)
    nisa0.tensor_tensor(dst=acc, data1=acc, data2=big[:, 0:256], op=nl0.add)
    nisa0.dma_copy(dst=out, src=acc)
    return out


class KeptInstances(unittest.TestCase):

    def test_small_tiles_of_many_buffers_take_memory_of_their_own(self):
        x = np.random.default_rng(3).random((128, 256), dtype=np.float32)
        np.testing.assert_allclose(small_tiles_of_many_buffers(x), 28 * x + 3, rtol=1e-5)

    def test_instances_kept_within_an_iteration_live_in_it(self):
        x = np.random.default_rng(2).random((128, 512), dtype=np.float32)
        want = 24 * (x[:, :128] @ x)  # (3 iterations of 8 products through the transpose)
        np.testing.assert_allclose(eight_banks_after_a_transpose(x), want, rtol=1e-4)
        np.testing.assert_allclose(eight_banks_after_a_transpose(x, True), want, rtol=1e-4)


if __name__ == '__main__':
    unittest.main()

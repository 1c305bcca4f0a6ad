"""The language around the instructions, as real kernels use it: tile arithmetic operators,
masks that keep nothing, SPMD launches, casts, annotations; values against numpy, in each
edition."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import neuronxcc.nki.typing as nt1
import nki_support as s
from trnsim.nki import KernelError, _namespaces, trace_kernel


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
def ragged_slices_beta1(x):
    """Rows in tiles of 128 indexed by slices, the last one past the end of the tensor, the
    mask keeping the rows it has (as AWS's resize_nearest and fused_linear samples do)."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    n = x.shape[0]
    for i in nl1.affine_range((n + 127) // 128):
        keep = i * 128 + nl1.arange(128)[:, None] < n
        t = nl1.load(x[i * 128:(i + 1) * 128, :], mask=keep)
        nl1.store(out[i * 128:(i + 1) * 128, :], value=nl1.multiply(t, 2.0, mask=keep),
                  mask=keep)
    return out


@nki1.jit
def ragged_rows_negated(x, keep_first):
    """ragged_rows_beta1 with each mask written as NKIBench's generated kernels write it
    (`-128 * i + -1 * p + (n - 1) >= 0`), the index negated; `keep_first`: the mask of a
    multiply keeps the first `keep_first` rows of a tile in bounds (`-p + k > 0`)."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    n = x.shape[0]
    ip = nl1.arange(128)[:, None]
    jf = nl1.arange(x.shape[1])[None, :]
    for i in nl1.affine_range((n + 127) // 128):
        keep = -128 * i + -1 * ip + (n - 1) >= 0
        t = nl1.load(x[128 * i + ip, jf], mask=keep)
        u = nl1.multiply(t, 2.0, mask=keep)
        v = nl1.multiply(u, 3.0, mask=(-1 * ip + keep_first > 0))
        nl1.store(out[128 * i + ip, jf], value=v, mask=keep & (-1 * ip + keep_first > 0))
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
            self.assertEqual(s.compute_instructions(s.frontend_stats(kernel, x)), 7)

    def test_a_division_is_the_vector_engines_divide(self):
        x = np.linspace(-4, 4, 128 * 4, dtype=np.float32).reshape(128, 4)
        np.testing.assert_array_equal(divide_by_three(x), x / np.float32(3))


class Masks(unittest.TestCase):

    def test_a_slice_past_the_end_that_the_mask_keeps_in(self):
        (x,) = s.random_inputs((300, 8))
        np.testing.assert_array_equal(ragged_slices_beta1(x), 2 * x)
        with self.assertRaisesRegex(KernelError, 'index range 256..383 is out of bounds for '
                                    'dimension 0 of size 300'):  # unmasked, it is an error
            nki1.jit(lambda x: nl1.load(x[256:384, :]))(x)

    def test_a_mask_of_a_negated_index(self):
        (x,) = s.random_inputs((300, 8))
        got = ragged_rows_negated(x, 100)
        want = np.zeros_like(x)
        for i in range(0, 300, 128):
            want[i:i + 100] = 6 * x[i:i + 100]
        np.testing.assert_array_equal(got[[r for r in range(300) if r % 128 < 100]],
                                      want[[r for r in range(300) if r % 128 < 100]])

    def test_a_mask_that_keeps_nothing_records_nothing(self):
        (x,) = s.random_inputs((300, 8))
        np.testing.assert_array_equal(ragged_rows_beta1(x), 2 * x)
        stats = s.frontend_stats(ragged_rows_beta1, x)
        self.assertEqual(s.stat(stats, 'dma.transfers'), 6)  # 3 loads, 3 stores
        self.assertEqual(s.compute_instructions(stats), 3)

    def test_storing_what_nothing_computed_is_an_error(self):
        with self.assertRaisesRegex(KernelError, 'nl.store: stores the result of an operation '
                                    'whose mask keeps nothing'):
            reads_nothing(np.ones((128, 4), np.float32))


@nki0.jit
def swap_halves_nki0(a):
    """Each core doubles its half of the rows into a shared HBM tensor; after a core_barrier
    each copies the other core's half out (LNC=2): out = 2a with the halves swapped (one core:
    2a)."""
    mid = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    n, pid = nl0.num_programs(), nl0.program_id()
    rows = a.shape[0] // n
    other = (pid + 1) % n
    for i in range(rows // 128):
        t = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(t, a[pid * rows + i * 128:pid * rows + (i + 1) * 128, :])
        nisa0.tensor_scalar(t, t, nl0.multiply, 2.0)
        nisa0.dma_copy(mid[pid * rows + i * 128:pid * rows + (i + 1) * 128, :], t)
    nisa0.core_barrier(mid, (0, 1))
    for i in range(rows // 128):
        u = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(u, mid[other * rows + i * 128:other * rows + (i + 1) * 128, :])
        nisa0.dma_copy(out[pid * rows + i * 128:pid * rows + (i + 1) * 128, :], u)
    return out


@nki0.jit
def counted_meetings_nki0(a, count):
    """Each core (LNC=2) adds its row of `a` into a tile in a loop the device runs (nl.fori_loop
    over a register read from `count`), and the cores meet over that tile in every iteration
    (nisa.core_barrier of an SBUF tile, as AWS's MoE kernels write it): row pid of out is
    count * a[pid]."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    pid = nl0.program_id()
    row = nl0.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(row, a[pid:pid + 1, :])
    acc = nl0.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.memset(acc, 0.0)
    n = nl0.ndarray((1, 1), dtype=nl0.int32, buffer=nl0.sbuf)
    nisa0.dma_copy(n, count)
    reg = nisa0.register_alloc()
    nisa0.register_load(reg, n)

    def body(_):
        nisa0.tensor_tensor(acc, acc, row, nl0.add)
        nisa0.core_barrier(acc, (0, 1))
    nl0.fori_loop(0, reg, body)
    nisa0.dma_copy(out[pid:pid + 1, :], acc)
    return out


@nki0.jit
def passed_rows_nki0(a, counts):
    """Each core (LNC=2) passes its row of `a` to the other with nisa.sendrecv in every
    iteration of a loop the device runs, `counts[pid]` iterations: after n of them a core holds
    its own row when n is even, the other's when odd."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    pid = nl0.program_id()
    other = 1 - pid
    row = nl0.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(row, a[pid:pid + 1, :])
    got = nl0.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
    n = nl0.ndarray((1, 1), dtype=nl0.int32, buffer=nl0.sbuf)
    nisa0.dma_copy(n, counts[pid:pid + 1, :])
    reg = nisa0.register_alloc()
    nisa0.register_load(reg, n)

    def body(_):
        nisa0.sendrecv(row, got, other, other, 0)
        nisa0.tensor_copy(row, got)
    nl0.fori_loop(0, reg, body)
    nisa0.dma_copy(out[pid:pid + 1, :], row)
    return out


@nki0.jit
def exchange_nki0(a):
    """Each core (LNC=2) loads its 128 rows and sends them to the other with nisa.sendrecv;
    each stores what it received in its own rows: the halves swapped (one core: a)."""
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    n, pid = nl0.num_programs(), nl0.program_id()
    rows = a.shape[0] // n
    other = (pid + 1) % n
    for i in range(rows // 128):
        r = pid * rows + i * 128
        mine = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        theirs = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(mine, a[r:r + 128, :])
        nisa0.sendrecv(mine, theirs, other, other, 0)
        nisa0.dma_copy(out[r:r + 128, :], theirs)
    return out


@nki1.jit
def add_tiles_beta1(a, b):
    """The SPMD tutorial's shape of kernel: each instance adds one [128, 512] tile, found by
    its program ids."""
    c = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    ix = nl1.program_id(0) * 128 + nl1.arange(128)[:, None]
    iy = nl1.program_id(1) * 512 + nl1.arange(512)[None, :]
    nl1.store(c[ix, iy], value=nl1.load(a[ix, iy]) + nl1.load(b[ix, iy]))
    return c


@nki0.jit
def add_rows_nki0(a, b):
    """The LNC guide's shape of kernel: the cores split the rows (one core: all of them)."""
    c = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    n, pid = nl0.num_programs(), nl0.program_id()
    rows = a.shape[0] // n
    for i in range(rows // 128):
        r = pid * rows + i * 128
        x = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        y = nl0.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(x, a[r:r + 128, :])
        nisa0.dma_copy(y, b[r:r + 128, :])
        nisa0.tensor_tensor(x, x, y, nl0.add)
        nisa0.dma_copy(c[r:r + 128, :], x)
    return c


@nki1.jit
def grid_facts(a):
    """Each instance writes its ids and the grid's sizes into its row of a shared tensor."""
    out = nl1.ndarray((nl1.num_programs(), 8), dtype=nl1.float32, buffer=nl1.shared_hbm)
    row = nl1.program_id(0) * nl1.num_programs(1) + nl1.program_id(1)
    facts = (nl1.program_id(0), nl1.program_id(1), nl1.num_programs(0), nl1.num_programs(1),
             nl1.num_programs((0, 1)), nl1.program_ndim(), 0, 0)
    t = nl1.ndarray((1, 8), dtype=nl1.float32, buffer=nl1.sbuf)
    for k, v in enumerate(facts):
        t[0, k] = v
    nl1.store(out[row:row + 1, :], value=t)
    return out


@nki1.jit
def no_grid_facts(a):
    out = nl1.ndarray((1, 3), dtype=nl1.float32, buffer=nl1.shared_hbm)
    t = nl1.ndarray((1, 3), dtype=nl1.float32, buffer=nl1.sbuf)
    t[0, 0] = nl1.program_id(0)
    t[0, 1] = nl1.num_programs()
    t[0, 2] = nl1.program_ndim()
    nl1.store(out, value=t)
    return out


class Spmd(unittest.TestCase):

    def test_a_grid_runs_each_instance_serially(self):
        a, b = s.random_inputs((256, 1024), (256, 1024))
        np.testing.assert_array_equal(add_tiles_beta1[2, 2](a, b), a + b)
        np.testing.assert_array_equal(nki1.baremetal(add_tiles_beta1[2, 2])(a, b), a + b)
        one = s.counts(s.frontend_stats(add_tiles_beta1[1, 1], a, b))
        four = s.counts(s.frontend_stats(add_tiles_beta1[2, 2], a, b))
        self.assertEqual(four, {k: 4 * v for k, v in one.items()})

    def test_program_ids_and_counts(self):
        out = grid_facts[3, 2](np.zeros((1, 1), np.float32))
        for i in range(3):
            for j in range(2):
                np.testing.assert_array_equal(out[i * 2 + j], [i, j, 3, 2, 6, 2, 0, 0])
        np.testing.assert_array_equal(no_grid_facts(np.zeros((1, 1), np.float32)),
                                      [[0, 1, 0]])
        # every instance writes the one row: the last one's values stay
        np.testing.assert_array_equal(no_grid_facts[5](np.zeros((1, 1), np.float32)),
                                      [[4, 5, 1]])

    def test_lnc_2_runs_an_instance_on_each_core_of_a_stack(self):
        """LNC=2 (kernel[2], or NEURON_LOGICAL_NC_CONFIG=2 without brackets): program_id 0 on
        one core of the trn2 HBM stack, 1 on the other, at once; values as on one core."""
        a, b = s.random_inputs((1024, 512), (1024, 512))
        np.testing.assert_array_equal(add_rows_nki0(a, b), a + b)
        np.testing.assert_array_equal(add_rows_nki0[1](a, b), a + b)
        one = nki0.simulate(add_rows_nki0[1])
        np.testing.assert_array_equal(one(a, b), a + b)
        two = nki0.simulate(add_rows_nki0[2])
        np.testing.assert_array_equal(two(a, b), a + b)
        self.assertEqual(s.stat(two.stats, 'chip.active_cores'), 2)
        for c in ('c0', 'c1'):  # each core moves half the rows
            self.assertEqual(s.stat(two.stats, f'cores.{c}.dma.transfers'),
                             s.stat(one.stats, 'dma.transfers') / 2)
        # the two halves run at once: faster than one core, slower than half its time
        self.assertLess(two.latency_us, 0.8 * one.latency_us)
        self.assertGreater(two.latency_us, 0.5 * one.latency_us)
        with self.assertRaisesRegex(KernelError, 'LNC=3: a logical NeuronCore has 1 or 2'):
            add_rows_nki0[3](a, b)
        with self.assertRaisesRegex(KernelError, 'the brackets of NKI 0.x hold one number'):
            add_rows_nki0[2, 2](a, b)
        os.environ['NEURON_LOGICAL_NC_CONFIG'] = '2'
        try:
            env = nki0.simulate(add_rows_nki0)
            np.testing.assert_array_equal(env(a, b), a + b)
            self.assertEqual(env.latency_us, two.latency_us)
        finally:
            del os.environ['NEURON_LOGICAL_NC_CONFIG']

    def test_core_barrier_orders_the_cores_accesses_of_shared_hbm(self):
        (a,) = s.random_inputs((512, 256))
        half = a.shape[0] // 2
        np.testing.assert_array_equal(swap_halves_nki0(a), 2 * a)  # one core
        two = nki0.simulate(swap_halves_nki0[2])
        np.testing.assert_array_equal(two(a), 2 * np.concatenate([a[half:], a[:half]]))
        # each core's loads of the other's half wait for the barrier, which waits for the other
        # core's stores: core 0 ends after core 1's stores plus the barrier's latency
        self.assertEqual(s.stat(two.stats, 'chip.active_cores'), 2)
        one = nki0.simulate(swap_halves_nki0[1])
        one(a)
        self.assertLess(two.latency_us, one.latency_us)
        with self.assertRaisesRegex(KernelError, r'cores=\(0, 2\)'):
            @nki0.jit
            def bad(x):
                nisa0.core_barrier(x, (0, 2))
                return x
            bad(a)

    def test_the_cores_meet_over_a_tile_in_a_loop_the_device_runs(self):
        a = np.arange(2 * 64, dtype=np.float32).reshape(2, 64)
        for n in (1, 3):
            count = np.array([[n]], np.int32)
            two = nki0.simulate(counted_meetings_nki0[2])
            np.testing.assert_array_equal(two(a, count), n * a)
            for c in ('c0', 'c1'):  # a meeting per iteration on each core
                self.assertEqual(s.stat(two.stats,
                                        f'cores.{c}.engines.pool.opcodes.core_barrier.count'), n)
        one = nki0.simulate(counted_meetings_nki0)
        np.testing.assert_array_equal(one(a, np.array([[3]], np.int32))[:1], 3 * a[:1])
        for n in (2, 3):  # each iteration's exchange reads what the other core sent in it
            passed = nki0.simulate(passed_rows_nki0[2])(a, np.array([[n], [n]], np.int32))
            np.testing.assert_array_equal(passed, a if n % 2 == 0 else a[::-1])
        with self.assertRaisesRegex(KernelError, 'nisa.sendrecv: core 1 sends nothing at this '
                                    'sendrecv'):
            nki0.simulate(passed_rows_nki0[2])(a, np.array([[3], [2]], np.int32))
        with self.assertRaisesRegex(KernelError, 'nisa.core_barrier: data must be a tensor in '
                                    'shared HBM or a tile, got int'):
            @nki0.jit
            def bad(x):
                nisa0.core_barrier(3, (0, 1))
                return x
            bad(a)
        @nki0.jit
        def one_core(x):  # ((0) is 0: AWS's single-shard MoE paths write it so)
            out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
            t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
            nisa0.dma_copy(t, x)
            nisa0.core_barrier(t, (0))
            nisa0.dma_copy(out, t)
            return out
        alone = nki0.simulate(one_core)  # (a launch on one core: it passes at once)
        np.testing.assert_array_equal(alone(a), a)
        self.assertEqual(s.stat(alone.stats, 'engines.pool.opcodes.core_barrier.count'), 1)
        with self.assertRaisesRegex(KernelError, r'nisa.core_barrier: .*cores=\(0,\) \(only '):
            one_core[2](a)

    def test_cores_that_miss_a_barrier_deadlock_and_stop_the_platform(self):
        """A barrier only one core reaches: a deadlock naming who waits for whom; the platform,
        its engines stopped mid-program, takes no more kernels (in a process of its own)."""
        script = textwrap.dedent('''
            import numpy as np
            import nki, nki.isa as nisa, nki.language as nl

            @nki.jit
            def k(a, lopsided):
                out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
                pid = nl.program_id()
                t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(t, a)
                if not lopsided or pid == 0:
                    nisa.core_barrier(out, (0, 1))
                nisa.dma_copy(out, t)
                return out

            a = np.ones((128, 64), np.float32)
            for lopsided in (True, False):
                try:
                    nki.simulate(k[2])(a, lopsided)
                    print('ran')
                except Exception as e:
                    print(str(e).splitlines()[-1].strip())
            ''')
        out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                             env=dict(os.environ, TRNSIM_NKI_QUIET='1'))
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 2, out.stdout + out.stderr)
        self.assertIn('core 0 waits at its core_barrier 1 for core 1, which never reaches it',
                      lines[0])
        self.assertIn('run the next kernel in a new process', lines[1])

    def test_the_config_says_lnc_2_for_kernels_without_brackets(self):
        """--set chip.lnc=2 (a process of its own: the platform is made once)."""
        script = textwrap.dedent('''
            import numpy as np
            import nki, nki.isa as nisa, nki.language as nl

            @nki.jit
            def k(a):
                out = nl.ndarray((2, 1), dtype=nl.float32, buffer=nl.shared_hbm)
                t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.memset(t, float(nl.num_programs()))
                nisa.dma_copy(out[nl.program_id():nl.program_id() + 1, :], t)
                return out

            s = nki.simulate(k)
            print(s(np.zeros((1, 1), np.float32)).ravel().tolist(),
                  s.stats['chip']['active_cores'])
            ''')
        out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                             env=dict(os.environ, TRNSIM_NKI_QUIET='1',
                                      TRNSIM_NKI_SETS='chip.lnc=2'))
        self.assertEqual(out.stdout.strip(), '[2.0, 2.0] 2', out.stderr)

    def test_sendrecv_exchanges_tiles_between_the_cores(self):
        """nisa.sendrecv: each core sends its tile to the other (LNC=2); alone, a core gets its
        own tile back."""
        (a,) = s.random_inputs((256, 64))
        np.testing.assert_array_equal(exchange_nki0(a), a)  # one core: itself
        two = nki0.simulate(exchange_nki0[2])
        np.testing.assert_array_equal(two(a), np.concatenate([a[128:], a[:128]]))
        self.assertEqual(s.stat(two.stats, 'chip.active_cores'), 2)
        # each core: a load and a store of its own, and the exchange's transfer
        self.assertEqual(s.stat(two.stats, 'cores.c0.dma.transfers'), 3)
        with self.assertRaisesRegex(KernelError, 'send_to_rank must be 0 or 1'):
            @nki0.jit
            def bad(x):
                t = nl0.ndarray((128, 64), dtype=x.dtype, buffer=nl0.sbuf)
                nisa0.sendrecv(t, t, 2, 0, 0)
                return x
            bad(a)

    def test_physical_cores_in_a_beta1_grid(self):
        """nl.nc(2): the instances of that axis spread over the two cores of the stack."""
        a, b = s.random_inputs((256, 1024), (256, 1024))
        np.testing.assert_array_equal(add_tiles_beta1[nl1.nc(2), 2](a, b), a + b)
        np.testing.assert_array_equal(add_tiles_beta1[nl1.spmd_dim(nl1.nc(2), 1), 2](a, b),
                                      a + b)
        np.testing.assert_array_equal(add_tiles_beta1[nl1.spmd_dim(2, 1), 2](a, b), a + b)
        with self.assertRaisesRegex(KernelError, r'LNC=4 runs the kernel on 4 physical '
                                    r'NeuronCores; this platform \(trn2\) runs it on 2'):
            add_tiles_beta1[nl1.nc(4), 1](np.zeros((512, 512), np.float32),
                                          np.zeros((512, 512), np.float32))


class Simulate(unittest.TestCase):
    """nki.simulate (NKI 0.3+) as AWS's CPU simulator is called: numpy arrays or torch CPU
    tensors in, the same kind out; the model's latency on the returned object."""

    def test_numpy_and_the_latency(self):
        a, b = s.random_inputs((512, 64), (512, 64))
        sim = nki0.simulate(add_rows_nki0)
        np.testing.assert_array_equal(sim(a, b), a + b)
        self.assertGreater(sim.latency_us, 1.0)
        self.assertEqual(sim.latency_us, s.stat(sim.stats, 'total_time_ns') / 1e3)
        self.assertEqual(s.stat(sim.stats, 'dma.transfers'), 12)

    def test_torch_tensors_in_and_out(self):
        import torch
        a, b = s.random_inputs((512, 64), (512, 64))
        got = nki0.simulate(add_rows_nki0)(torch.from_numpy(a), torch.from_numpy(b))
        self.assertIsInstance(got, torch.Tensor)
        np.testing.assert_array_equal(got.numpy(), a + b)
        ta = torch.from_numpy(a).to(torch.bfloat16)
        tb = torch.from_numpy(b).to(torch.bfloat16)
        got = nki0.simulate(add_rows_nki0)(ta, tb)
        self.assertEqual(got.dtype, torch.bfloat16)
        want = (ta.float() + tb.float()).to(torch.bfloat16)  # torch rounds to nearest even too
        self.assertTrue(torch.equal(got, want))

    def test_outputs_passed_as_torch_arguments_are_written(self):
        import torch

        @nki1.jit
        def double_into(x, out):
            nl1.store(out, value=nl1.multiply(nl1.load(x), 2.0))

        (x,) = s.random_inputs((128, 32))
        out = torch.zeros(128, 32)
        nki1.baremetal(double_into)(torch.from_numpy(x), out)
        np.testing.assert_array_equal(out.numpy(), 2 * x)


@nki1.jit
def stores_an_unwritten_tile(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.sbuf)
    t[:, 0:2] = nl1.load(x[:, 0:2])
    nl1.store(out, value=t)  # ERROR: unwritten
    return out


@nki1.jit
def masked_tail(x):
    """A masked load, an unmasked exp of the whole tile, a masked store: the rows past the end
    are computed on but never stored."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    ip = nl1.arange(128)[:, None]
    jf = nl1.arange(x.shape[1])[None, :]
    for i in nl1.affine_range((x.shape[0] + 127) // 128):
        t = nl1.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < x.shape[0]))
        nl1.store(out[i * 128 + ip, jf], value=nl1.exp(t), mask=(i * 128 + ip < x.shape[0]))
    return out


@nki1.jit
def exp_of_unwritten(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.sbuf)
    t[:, 0:2] = nl1.load(x[:, 0:2])
    nl1.store(out, value=nl1.exp(t))
    return out


def _last_block(x, loop):
    out = nl1.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl1.shared_hbm)
    for i in loop(x.shape[0] // 128):
        nl1.store(out, value=nl1.load(x[i * 128:(i + 1) * 128, :]))  # ERROR: race
    return out


@nki1.jit
def last_block_affine(x):
    return _last_block(x, nl1.affine_range)


@nki1.jit
def last_block_sequential(x):
    return _last_block(x, nl1.sequential_range)


@nki0.jit
def last_block_nki07(x):
    """NKI 0.7: affine_range is a plain Python range, whose iterations run in order."""
    out = nl0.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl0.shared_hbm)
    for i in nl0.affine_range(x.shape[0] // 128):
        t = nl0.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(t, x[i * 128:(i + 1) * 128, :])
        nisa0.dma_copy(out, t)
    return out


@nki1.jit
def halves_affine(x):
    """Each iteration writes its own half: no race."""
    out = nl1.ndarray((128, 2 * x.shape[1]), dtype=x.dtype, buffer=nl1.shared_hbm)
    for i in nl1.affine_range(2):
        nl1.store(out[:, i * x.shape[1]:(i + 1) * x.shape[1]], value=nl1.load(x))
    return out


def _line(marker):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f'# ERROR: {marker}'):
                return n
    raise LookupError(marker)


@nki0.jit
def psum_reused_for_blocks(a, b):
    """One PSUM tile for two output blocks, nc_matmul's accumulate left None: the second block
    adds onto the first, read and stored in between (the classic bug)."""
    out = nl0.ndarray((128, 1024), dtype=nl0.float32, buffer=nl0.shared_hbm)
    at = nl0.ndarray((128, 128), dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=at, src=a)
    acc = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.psum)
    for j in range(2):
        bt = nl0.ndarray((128, 512), dtype=b.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(dst=bt, src=b[:, j * 512:(j + 1) * 512])
        nisa0.nc_matmul(dst=acc, stationary=at, moving=bt)  # ERROR: psum_reused
        r = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
        nisa0.tensor_copy(dst=r, src=acc)
        nisa0.dma_copy(dst=out[:, j * 512:(j + 1) * 512], src=r)
    return out


class KernelBugs(unittest.TestCase):
    """What the hardware would punish is named: warnings, errors with --strict."""

    def setUp(self):
        from trnsim.nki import _runner
        self.settings = _runner._settings
        self.settings['strict'] = True

    def tearDown(self):
        self.settings['strict'] = False

    def test_unwritten_elements_read_as_nan(self):
        (x,) = s.random_inputs((128, 8))
        self.settings['strict'] = False
        out = stores_an_unwritten_tile(x)
        np.testing.assert_array_equal(out[:, :2], x[:, :2])
        self.assertTrue(np.isnan(out[:, 2:]).all())
        self.settings['strict'] = True
        with self.assertRaisesRegex(KernelError, rf'{__file__}:{_line("unwritten")}: nl.store: '
                                    r'stores 768 elements of the tile of .* computed from tile '
                                    r"elements nothing wrote \(NaN, as AWS's simulator fills "
                                    r'them\)'):
            stores_an_unwritten_tile(x)
        # what a masked load leaves unwritten may be computed on, if it is not stored
        (y,) = s.random_inputs((300, 8))
        np.testing.assert_array_equal(masked_tail(y), np.exp(y))
        with self.assertRaisesRegex(KernelError, 'stores 768 elements of the tile of .* '
                                    'computed from tile elements nothing wrote'):
            exp_of_unwritten(x)

    def test_a_psum_tile_reused_without_accumulate_false(self):
        a, b = s.random_inputs((128, 128), (128, 1024))
        want = a.T @ b
        self.settings['strict'] = False
        out = psum_reused_for_blocks(a, b)  # the hardware's values: the second block adds
        np.testing.assert_allclose(out[:, 512:], want[:, 512:] + want[:, :512], rtol=1e-4)
        self.settings['strict'] = True
        with self.assertRaisesRegex(KernelError, rf'{__file__}:{_line("psum_reused")}: '
                                    r'nisa.nc_matmul: accumulate=None adds to a PSUM tile whose '
                                    r'sum was read since its last write'):
            psum_reused_for_blocks(a, b)

    def test_independent_iterations_writing_the_same_bytes(self):
        (x,) = s.random_inputs((512, 16))
        with self.assertRaisesRegex(KernelError, rf'{__file__}:{_line("race")}: nl.store: '
                                    r'iterations 0 and 1 of the nl.affine_range loop at .* '
                                    'write the same bytes of HBM tensor'):
            last_block_affine(x)
        np.testing.assert_array_equal(last_block_sequential(x), x[384:])
        np.testing.assert_array_equal(last_block_nki07(x), x[384:])
        np.testing.assert_array_equal(halves_affine(x[:128]), np.hstack([x[:128], x[:128]]))


_top6, _subs6 = _namespaces.namespaces('0.6')
nl6, nisa6 = _subs6['language'], _subs6['isa']
nt6 = _subs6['typing']


@_top6.jit
def row_blocks_fori(x: nt6.tensor[512, 64]):
    """Copies x block by block in an nl.fori_loop (NKI 0.6), its body a Python function."""
    out = nl6.ndarray(x.shape, dtype=x.dtype, buffer=nl6.shared_hbm)

    def body(i):
        FORI_BODIES[0] += 1
        t = nl6.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl6.sbuf)
        nisa6.dma_copy(t, x[i * 128:(i + 1) * 128, :])
        nisa6.dma_copy(out[i * 128:(i + 1) * 128, :], t)

    nl6.fori_loop(0, x.shape[0] // 128, body)
    return out


FORI_BODIES = [0]  # how many times row_blocks_fori's body ran


@_top6.jit
def fori_index_as_number(x):
    """An nl.fori_loop body that asks for its index's value: a register has none when traced."""
    out = nl6.ndarray(x.shape, dtype=x.dtype, buffer=nl6.shared_hbm)

    def body(i):
        if i == 0:
            nisa6.dma_copy(out, x)

    nl6.fori_loop(0, 4, body)
    return out


@_top6.jit
def row_blocks_dynamic(x):
    out = nl6.ndarray(x.shape, dtype=x.dtype, buffer=nl6.shared_hbm)
    for i in nl6.dynamic_range(x.shape[0] // 128):
        t = nl6.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl6.sbuf)
        nisa6.dma_copy(t, x[i * 128:(i + 1) * 128, :])
        nisa6.dma_copy(out[i * 128:(i + 1) * 128, :], t)
    return out


@nki1.jit
def zeros_lazily(x: nki1.tensor, y: nt1.tensor):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    acc = nl1.zeros(x.shape, dtype=nl1.float32, buffer=nl1.sbuf, lazy_initialization=True)
    acc[...] = nl1.add(acc, nl1.load(x))
    nl1.store(out, value=nl1.static_cast(acc, x.dtype))
    return out


class LaterEditions(unittest.TestCase):

    def test_compiled_loops_with_integer_bounds(self):
        (x,) = s.random_inputs((512, 64))
        FORI_BODIES[0] = 0
        np.testing.assert_array_equal(row_blocks_fori(x), x)
        self.assertEqual(FORI_BODIES[0], 1)  # one copy of the body, the device repeats it
        np.testing.assert_array_equal(row_blocks_dynamic(x), x)
        with self.assertRaisesRegex(KernelError, 'nl.fori_loop: the index of a compiled loop '
                                    'is a register'):
            fori_index_as_number(x)
        self.assertEqual(s.stat(s.frontend_stats(row_blocks_fori, x), 'dma.transfers'), 8)
        with self.assertRaisesRegex(KernelError, 'nl.fori_loop: a bound must be an integer or '
                                    'a register, got object'):
            nl6.fori_loop(0, object(), lambda i: None)
        nl7 = _namespaces.namespaces('0.7')[1]['language']
        self.assertFalse(hasattr(nl7, 'dynamic_range'))  # removed in NKI 0.7

    def test_static_cast_lazy_zeros_and_annotations(self):
        (x,) = s.random_inputs((128, 16))
        xb = x.astype(nl1.bfloat16)
        out = zeros_lazily(xb, xb)
        self.assertEqual(out.dtype, nl1.bfloat16)
        np.testing.assert_array_equal(out, xb)
        cast = nl1.static_cast(x, nl1.bfloat16)  # on the host, as the SDK's tests use it
        self.assertEqual(cast.dtype, nl1.bfloat16)
        with self.assertRaisesRegex(KernelError, r'tensor\[\(128, 16\)\] is a type '
                                    'annotation, not an input'):
            zeros_lazily(nt1.tensor[128, 16], x)


@nki1.jit
def transpose_blocks(x, f1, f2):
    """Each row's f1 x f2 block transposed, by index expressions (transpose2d's way)."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    ip = nl1.arange(x.shape[0])[:, None, None]
    ia = nl1.arange(f1)[None, :, None]
    ib = nl1.arange(f2)[None, None, :]
    t = nl1.load(x)
    o = nl1.ndarray((x.shape[0], f2, f1), dtype=x.dtype, buffer=nl1.sbuf)
    o[ip, ib, ia] = nl1.copy(t[ip, ia * f2 + ib])
    nl1.store(out, value=o.reshape((x.shape[0], f1 * f2)))
    return out


@nki1.jit
def load_transposed(a):
    """a[F, P] read as a [P, F] tile: the partition axis is a's second dimension."""
    out = nl1.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl1.shared_hbm)
    i_p = nl1.arange(a.shape[1])[:, None]
    i_f = nl1.arange(a.shape[0])[None, :]
    nl1.store(out, value=nl1.load(a[i_f, i_p]))
    return out


@nki1.jit
def windows_beta1(x, h0, k):
    """out[b] = x[b, :, h0:h0 + k, 0:8]: rows of k runs of 8 elements."""
    out = nl1.ndarray((x.shape[0], x.shape[1], k, 8), dtype=x.dtype, buffer=nl1.shared_hbm)
    for b in nl1.affine_range(x.shape[0]):
        t = nl1.ndarray((x.shape[1], k, 8), dtype=x.dtype, buffer=nl1.sbuf)
        t[...] = nl1.load(x[b, :, h0:h0 + k, 0:8])
        nl1.store(out[b], value=t)
    return out


@nki0.jit
def halo_nki0(x):
    """A halo window x[0, :, 1:5, 2:6] into SBUF, its inner part copied (an engine operand of
    several runs), then stored into the window of a zeroed output."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    halo = nl0.ndarray((x.shape[1], 4, 4), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(halo, x[0, :, 1:5, 2:6])
    inner = nl0.ndarray((x.shape[1], 2, 2), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_copy(inner, halo[:, 1:3, 1:3])
    zero = nl0.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.memset(zero, 0.0)
    nisa0.dma_copy(out[0], zero)
    nisa0.dma_copy(out[0, :, 2:4, 3:5], inner)
    return out


class Indexing(unittest.TestCase):

    def test_index_expressions_and_axes_in_another_order(self):
        (x,) = s.random_inputs((128, 12))
        want = x.reshape(128, 3, 4).transpose(0, 2, 1).reshape(128, 12)
        np.testing.assert_array_equal(transpose_blocks(x, 3, 4), want)
        # the copy writes 3 runs of 4 elements each 3 apart: 3 instructions
        kinds = [op.kind for op in trace_kernel(transpose_blocks, (x, 3, 4), {}, False)
                 .trace.ops]
        self.assertEqual(kinds.count('copy'), 3)

    def test_a_transposed_hbm_read_is_a_descriptor_per_element(self):
        (a,) = s.random_inputs((16, 128))
        np.testing.assert_array_equal(load_transposed(a), a.T)
        stats = s.frontend_stats(load_transposed, a)
        self.assertEqual(s.stat(stats, 'dma.transfers'), 16 + 1)  # a column each, one store

    def test_dma_of_several_strided_free_dimensions(self):
        (x,) = s.random_inputs((2, 64, 10, 12))
        np.testing.assert_array_equal(windows_beta1(x, 3, 4), x[:, :, 3:7, 0:8])
        # per batch: a load of 4 runs, a store of one (out[b] is contiguous)
        self.assertEqual(s.stat(s.frontend_stats(windows_beta1, x, 3, 4), 'dma.transfers'),
                         2 * (4 + 1))
        (y,) = s.random_inputs((1, 32, 6, 8))
        want = np.zeros_like(y)
        want[0, :, 2:4, 3:5] = y[0, :, 2:4, 3:5]
        np.testing.assert_array_equal(halo_nki0(y), want)


@nki1.jit
def scale_rows_beta1(x, g):
    """x[P, N] * g[1, N]: g broadcast across partitions, explicitly and by numpy's rules."""
    a = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    b = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t, gt = nl1.load(x), nl1.load(g)
    nl1.store(a, value=nl1.multiply(t, gt.broadcast_to((x.shape[0], x.shape[1]))))
    nl1.store(b, value=nl1.add(t, gt))
    return a, b


@nki0.jit
def scale_rows_nki0(x, g):
    a = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    gt = nl0.ndarray(g.shape, dtype=g.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    nisa0.dma_copy(gt, g)
    wide = nl0.broadcast_to(gt, shape=x.shape, dtype=x.dtype)
    nisa0.tensor_tensor(t, t, wide, nl0.multiply)
    nisa0.dma_copy(a, t)
    return a


@nki1.jit
def product_of_a_transpose_stored_from_psum(a, b):
    """(a.T @ b.T).T's pieces as AWS's attention tutorial v1 writes them: nl.matmul of an
    nl.transpose result (in PSUM), and nl.store of the PSUM product."""
    out = nl1.ndarray((a.shape[1], b.shape[0]), dtype=nl1.float32, buffer=nl1.shared_hbm)
    bt = nl1.transpose(nl1.load(b))  # [K, N] in PSUM
    nl1.store(out, value=nl1.matmul(nl1.load(a), bt, transpose_x=True))
    return out


class HighLevelLowerings(unittest.TestCase):
    """nl.* calls lowered as the compiler does, never inventing a failure: a PSUM operand of
    nl.matmul and a PSUM value of nl.store are copied to SBUF first."""

    def test_matmul_of_a_transpose_and_a_store_from_psum(self):
        a, b = s.random_inputs((128, 64), (96, 128))
        np.testing.assert_allclose(product_of_a_transpose_stored_from_psum(a, b), a.T @ b.T,
                                   rtol=1e-5, atol=1e-5)


@nki0.jit
def scaled_sums_nki0(x, g):
    """sum over s of x * g[s] (g[s] a row broadcast across partitions), the structure of
    AWS's fused Mamba tutorial: a broadcast and Vector-engine work in each iteration."""
    out = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    acc = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.memset(acc, 0.0)
    for i in range(g.shape[0]):
        gi = nl0.ndarray((1, x.shape[1]), dtype=g.dtype, buffer=nl0.sbuf)
        nisa0.dma_copy(gi, g[i:i + 1, :])
        wide = nl0.broadcast_to(gi, shape=x.shape, dtype=x.dtype)
        p = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
        nisa0.tensor_tensor(p, t, wide, nl0.multiply)
        nisa0.tensor_tensor(acc, acc, p, nl0.add)
    nisa0.dma_copy(out, acc)
    return out


class Broadcasts(unittest.TestCase):

    def test_broadcasts_do_not_hold_the_vector_engines_queue(self):
        """Each broadcast's row of ones is set on the GpSimd engine: on the Vector engine its
        memset would queue behind the earlier iterations' work there, and the Tensor engine's
        matmul, then the copy, then the next Vector-engine operation, would wait for it, an
        iteration at a time (the Mamba tutorial's v1 ran 1.6x its measured time so)."""
        x, g = s.random_inputs((128, 512), (16, 512))
        np.testing.assert_allclose(scaled_sums_nki0(x, g), x * g.sum(0), rtol=1e-5)
        stats = s.frontend_stats(scaled_sums_nki0, x, g)
        self.assertEqual(s.stat(stats, 'engines.pool.opcodes.memset.count'), 16)
        self.assertEqual(stats['engines']['pe'].get('stall_on', {}).get('dve_ns', 0), 0)

    def test_a_row_across_partitions(self):
        x, g = s.random_inputs((128, 700), (1, 700))
        a, b = scale_rows_beta1(x, g)
        np.testing.assert_array_equal(a, x * g)
        np.testing.assert_array_equal(b, x + g)
        np.testing.assert_array_equal(scale_rows_nki0(x, g), x * g)
        # per broadcast: a ones row, then a matmul and a copy per 512 columns, its ones
        # declared so (the architecture guide's broadcast: is_stationary_onezero=True)
        ops = trace_kernel(scale_rows_beta1, (x, g), {}, False).trace.ops
        matmuls = [op for op in ops if op.kind == 'matmul']
        self.assertEqual(len(matmuls), 2 * 2)
        self.assertTrue(all('stationary_onezero' in op.line.split() for op in matmuls),
                        [op.line for op in matmuls])

    def test_a_wide_row_takes_one_psum_tile(self):
        """The 2024 layernorm tutorial's width, 8192 fp32 columns: 16 chunks of 512 through
        one PSUM tile (each chunk another instance of it), not 32 KiB of PSUM."""
        x, g = s.random_inputs((128, 8192), (1, 8192))
        a, b = scale_rows_beta1(x, g)
        np.testing.assert_array_equal(a, x * g)
        t = trace_kernel(scale_rows_beta1, (x, g), {}, False).trace
        psum = [d for d in t.decl_list if d.space == 'psum']
        self.assertEqual(len(psum), 2)  # one per broadcast (the explicit and numpy's)
        self.assertTrue(all(d.instances == 16 and d.carried for d in psum))


@nki1.jit
def upsample_nearest(x):
    """Each element twice along the free axis: x[:, j // 2] read by one DMA."""
    out = nl1.ndarray((x.shape[0], 2 * x.shape[1]), dtype=x.dtype, buffer=nl1.shared_hbm)
    ip = nl1.arange(x.shape[0])[:, None]
    jf = nl1.arange(2 * x.shape[1])[None, :]
    nl1.store(out, value=nl1.load(x[ip, jf // 2]))
    return out


@nki1.jit
def deinterleave(x):
    """out[:, k * h + j] = x[:, 2 * j + k]: the even elements, then the odd ones."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    ip = nl1.arange(x.shape[0])[:, None]
    jf = nl1.arange(x.shape[1])[None, :]
    half = x.shape[1] // 2
    t = nl1.load(x)
    o = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.sbuf)
    o[ip, (jf % 2) * half + jf // 2] = nl1.copy(t[ip, jf])
    nl1.store(out, value=o)
    return out


@nki1.jit
def reversed_index(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    jf = nl1.arange(x.shape[1])[None, :]
    nl1.store(out, value=nl1.load(x[nl1.arange(128)[:, None], x.shape[1] - 1 - jf]))
    return out


class DivisionsOfIndices(unittest.TestCase):

    def test_floor_division_and_remainder_of_an_index(self):
        (x,) = s.random_inputs((128, 8))
        np.testing.assert_array_equal(upsample_nearest(x), np.repeat(x, 2, axis=1))
        np.testing.assert_array_equal(deinterleave(x), np.hstack([x[:, 0::2], x[:, 1::2]]))

    def test_a_negative_coefficient_says_so(self):
        with self.assertRaisesRegex(KernelError, 'only \\+, -, \\* by integers, and // or % by '
                                    'a positive integer'):
            reversed_index(np.zeros((128, 8), np.float32))


@nki1.jit
def pool_pairs(x):
    """2 x 2 sums of a [P, H, W] tile from its strided parts (tile parts of several runs as
    both operands of additions) and the operators on them."""
    p, h, w = x.shape
    out = nl1.ndarray((p, h // 2, w // 2), dtype=x.dtype, buffer=nl1.shared_hbm)
    neg = nl1.ndarray((p, h // 2, w // 2), dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    s = nl1.add(t[:, 0::2, 0::2], t[:, 0::2, 1::2]) + t[:, 1::2, 0::2]
    s += t[:, 1::2, 1::2]
    nl1.store(out, value=s)
    nl1.store(neg, value=3 - t[:, 0::2, 0::2] * 2)
    return out, neg


@nki1.jit
def centred(x, scale, dt):
    """m - t of a [P, 1] mean m, 1.0 - t, and numpy numbers and dtypes as arguments."""
    a = nl1.ndarray(x.shape, dtype=dt, buffer=nl1.shared_hbm)
    b = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    m = nl1.mean(t, axis=1, keepdims=True)
    nl1.store(a, value=nl1.multiply(m - t, scale, dtype=dt))
    nl1.store(b, value=nl1.subtract(1.0, t))
    return a, b


@nki1.jit
def squares_and_sums(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    nl1.store(out, value=t ** 2 + t)
    return out


@nki1.jit
def compares(x):
    outs = [nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm) for _ in range(3)]
    t = nl1.load(x)
    nl1.store(outs[0], value=t > 0.5)
    nl1.store(outs[1], value=abs(t - 0.5))
    nl1.store(outs[2], value=(t * 8.0) % 3.0)
    return outs


@nki1.jit
def floor_divides(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    nl1.store(out, value=nl1.load(x) // 2)
    return out


class MoreOperands(unittest.TestCase):

    def test_tile_parts_of_several_runs_in_two_tile_operations(self):
        (x,) = s.random_inputs((128, 6, 8))
        got, neg = pool_pairs(x)
        want = x[:, 0::2, 0::2] + x[:, 0::2, 1::2] + x[:, 1::2, 0::2] + x[:, 1::2, 1::2]
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(neg, np.float32(3) - x[:, 0::2, 0::2] * np.float32(2))

    def test_reversed_subtractions_numbers_and_dtypes_as_arguments(self):
        (x,) = s.random_inputs((128, 64))
        scale = 1 / np.sqrt(np.float64(64))
        a, b = centred(x, scale, nl1.bfloat16)
        m = (x.sum(axis=1, keepdims=True, dtype=np.float32) * np.float32(1 / 64))
        np.testing.assert_allclose(a.astype(np.float32), ((m - x) * np.float32(scale))
                                   .astype(nl1.bfloat16).astype(np.float32), rtol=1e-2,
                                   atol=1e-3)
        self.assertEqual(a.dtype, nl1.bfloat16)
        np.testing.assert_array_equal(b, np.float32(1) - x)
        a32, _ = centred(x, np.float32(0.5), np.dtype(np.float32))
        self.assertEqual(a32.dtype, np.float32)

    def test_comparison_abs_and_mod_operators(self):
        (x,) = s.random_inputs((128, 16))
        np.testing.assert_array_equal(squares_and_sums(x), x * x + x)
        gt, dist, mod = compares(x)
        np.testing.assert_array_equal(gt, (x > 0.5).astype(np.float32))
        np.testing.assert_array_equal(dist, np.abs(x - np.float32(0.5)))
        np.testing.assert_array_equal(mod, np.mod(x * np.float32(8), np.float32(3)))

    def test_operators_a_tile_lacks_say_so(self):
        (x,) = s.random_inputs((128, 16))
        with self.assertRaisesRegex(KernelError, r'~, // and number \*\* tile'):
            floor_divides(x)

    def test_integers_compute_through_float32_and_saturate(self):
        big = np.full((128, 4), 2 ** 31 - 1, np.int32)

        @nki1.jit
        def doubled(a):
            out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
            t = nl1.load(a)
            nl1.store(out, value=nl1.add(t, t))
            return out

        np.testing.assert_array_equal(doubled(big), big)  # saturated, as the model's engines


@nki1.jit
def loop_masks_beta1(x, w):
    """Rows in pairs of 128-row tiles, the loop one pair longer than needed: masks of loop
    indices alone (True or False each iteration) on a load, an activation_reduce, a matmul
    accumulated with += (each tile's square, transposed, times w), and a store whose mask also
    cuts columns; rows past the end are read in no iteration the mask keeps."""
    n, d = x.shape
    out = nl1.ndarray((n, 128), dtype=nl1.float32, buffer=nl1.shared_hbm)
    sums = nl1.ndarray((n, 1), dtype=nl1.float32, buffer=nl1.shared_hbm)
    ix, iy = nl1.mgrid[0:128, 0:d]
    io, jo = nl1.mgrid[0:128, 0:128]
    ip, i0 = nl1.arange(128)[:, None], nl1.arange(1)[None, :]
    w_sb = nl1.load(w)
    for i in nl1.affine_range(n // 256 + 1):
        for g in nl1.affine_range(2):
            keep = (2 * i + g) * 128 < n
            t = nl1.load(x[(2 * i + g) * 128 + ix, iy], mask=keep)
            sq = nl1.ndarray((128, 1), dtype=nl1.float32, buffer=nl1.sbuf)
            u = nisa1.activation_reduce(op=nl1.square, data=t, reduce_op=np.add,
                                        reduce_res=sq, mask=keep)
            acc = nl1.zeros((128, 128), dtype=nl1.float32, buffer=nl1.psum)
            acc += nisa1.nc_matmul(u, w_sb, mask=keep)  # (u.T @ w)
            nl1.store(out[(2 * i + g) * 128 + io, jo], value=nl1.copy(acc, mask=keep),
                      mask=(jo < 100) & keep)
            nl1.store(sums[(2 * i + g) * 128 + ip, i0], value=sq, mask=keep)
    return out, sums


@nki1.jit
def region_activation_reduce_beta1(x):
    """exp of the first 64 rows and 300 columns, their row sums beside (a mask of tile indices
    on activation_reduce)."""
    ix, iy = nl1.mgrid[0:128, 0:x.shape[1]]
    t = nl1.load(x)
    e = nl1.zeros((128, x.shape[1]), dtype=nl1.float32, buffer=nl1.sbuf)
    r = nl1.zeros((128, 1), dtype=nl1.float32, buffer=nl1.sbuf)
    e[...] = nisa1.activation_reduce(op=nl1.exp, data=t, reduce_op=np.add, reduce_res=r,
                                     mask=(ix < 64) & (iy < 300))
    a = nl1.ndarray(x.shape, dtype=nl1.float32, buffer=nl1.shared_hbm)
    b = nl1.ndarray((128, 1), dtype=nl1.float32, buffer=nl1.shared_hbm)
    nl1.store(a, value=e)
    nl1.store(b, value=r)
    return a, b


@nki1.jit(mode='trace')
def scaled_rows_sub(t, factor):
    """A sub-kernel: traced into the kernel that calls it."""
    return nl1.multiply(t, factor)


@nki1.jit
def calls_a_sub_kernel_beta1(x):
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    nl1.store(out, value=scaled_rows_sub(nl1.load(x), 3.0))
    return out


@nki1.jit
def constants_and_floor_beta1(x):
    """nl.fp32.min and nl.finfo(bfloat16).max filled into blocks of nl.full, nl.floor of x."""
    lo = nl1.full((2, nl1.par_dim(128), 4), fill_value=nl1.fp32.min, dtype=nl1.float32,
                  buffer=nl1.sbuf, lazy_initialization=False)
    hi = nl1.full((128, 4), fill_value=nl1.finfo(nl1.bfloat16).max, dtype=nl1.float32,
                  buffer=nl1.sbuf)
    a = nl1.ndarray((2, 128, 4), dtype=nl1.float32, buffer=nl1.shared_hbm)
    b = nl1.ndarray((128, 4), dtype=nl1.float32, buffer=nl1.shared_hbm)
    f = nl1.ndarray(x.shape, dtype=nl1.int32, buffer=nl1.shared_hbm)
    for k in nl1.affine_range(2):
        nl1.store(a[k], value=lo[k])
    nl1.store(b, value=hi)
    nl1.store(f, value=nl1.floor(nl1.load(x), dtype=nl1.int32))
    return a, b, f


@nki1.jit
def select_psum_and_columns_beta1(x, y):
    """affine_select of a matmul's PSUM result (lower triangle kept); a column t[:, i] of a tile,
    indexed again as [:, 0]; scalar_tensor_tensor with that column as operand0."""
    out = nl1.ndarray((128, 128), dtype=nl1.float32, buffer=nl1.shared_hbm)
    stt = nl1.ndarray((128, 128), dtype=nl1.float32, buffer=nl1.shared_hbm)
    ix, iy = nl1.mgrid[0:128, 0:128]
    a, b = nl1.load(x), nl1.load(y)
    ps = nisa1.nc_matmul(a, b)
    sel = nisa1.affine_select(pred=(iy <= ix), on_true_tile=ps, on_false_value=-1.0,
                              dtype=nl1.float32)
    nl1.store(out, value=sel)
    column = b[:, 5]
    nl1.store(stt, value=nisa1.scalar_tensor_tensor(data=a, op0=np.multiply,
                                                    operand0=column[:, 0], op1=np.add,
                                                    operand1=b))
    return out, stt


@nki1.jit
def broadcast_and_transposes_beta1(x):
    """A [P, 1] column broadcast along the free axis copied into a tile, and assigned; a
    Tensor-engine transpose assigned to an SBUF tile; a 3-D grid's .y."""
    a = nl1.ndarray((128, 64), dtype=nl1.float32, buffer=nl1.shared_hbm)
    b = nl1.ndarray((128, 64), dtype=nl1.float32, buffer=nl1.shared_hbm)
    c = nl1.ndarray((128, 128), dtype=nl1.float32, buffer=nl1.shared_hbm)
    t = nl1.load(x)
    column = nl1.sum(t, axis=1, keepdims=True)
    nl1.store(a, value=nl1.copy(column.broadcast_to((128, 64))))
    into = nl1.ndarray((128, 64), dtype=nl1.float32, buffer=nl1.sbuf)
    into[...] = column.broadcast_to((128, 64))
    nl1.store(b, value=into)
    g = nl1.mgrid[0:128, 0:2, 0:64]
    tt = nl1.ndarray((128, 128), dtype=nl1.float32, buffer=nl1.sbuf)
    tt[g.p, g.x * 64 + g.y] = nisa1.nc_transpose(t)
    nl1.store(c, value=tt)
    return a, b, c


@nki1.jit
def causal_loop_reduce_beta1(x):
    """The sum over k <= q of the row tiles (a causal mask of loop indices alone on
    nl.loop_reduce, as AWS's flash attention backward writes it)."""
    n = x.shape[0] // 128
    out = nl1.ndarray((n, 128, x.shape[1]), dtype=nl1.float32, buffer=nl1.shared_hbm)
    for q in nl1.affine_range(n):
        acc = nl1.zeros((128, x.shape[1]), dtype=nl1.float32, buffer=nl1.sbuf)
        for k in nl1.sequential_range(n):
            causal = q >= k
            t = nl1.load(x[k * 128:(k + 1) * 128, :])
            acc[...] = nl1.loop_reduce(t, op=np.add, loop_indices=(k,), dtype=nl1.float32,
                                       mask=causal)
        nl1.store(out[q], value=acc)
    return out


@nki1.jit
def halves_beta1(x):
    """Each SPMD instance doubles its half of x's rows."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    i = nl1.program_id(0)
    nl1.store(out[i * 128:(i + 1) * 128, :], value=nl1.multiply(nl1.load(x[i * 128:(i + 1) * 128,
                                                                            :]), 2.0))
    return out


@nki1.jit
def double_row_gen3_beta1(a, b):
    """Beta 1's double-row matmul: [K, 2, M] by [K, 2, N], both rows of every partition
    contracted (NeuronCore-v3, fp8)."""
    out = nl1.ndarray((a.shape[2], b.shape[2]), dtype=nl1.float32, buffer=nl1.shared_hbm)
    res = nl1.zeros((a.shape[2], b.shape[2]), dtype=nl1.float32, buffer=nl1.psum)
    res[...] += nisa1.nc_matmul(nl1.load(a), nl1.load(b), perf_mode='double_row_gen3')
    nl1.store(out, value=nl1.copy(res))
    return out


@nki1.jit
def bn_stats_masked_beta1(x):
    """bn_stats of the first 300 of 512 columns (a mask), and of those 300 columns loaded
    alone: the same statistics."""
    a = nl1.ndarray((128, 6), dtype=nl1.float32, buffer=nl1.shared_hbm)
    b = nl1.ndarray((128, 6), dtype=nl1.float32, buffer=nl1.shared_hbm)
    ix, iy = nl1.mgrid[0:128, 0:512]
    t = nl1.load(x)
    nl1.store(a, value=nisa1.bn_stats(t[ix, iy], mask=(iy < 300), dtype=nl1.float32))
    nl1.store(b, value=nisa1.bn_stats(nl1.load(x[:, 0:300]), dtype=nl1.float32))
    return a, b


@nki1.jit
def no_reorder_beta1(x):
    """A sequential loop with the no_reorder directive (AWS's attention tutorial, v10)."""
    out = nl1.ndarray(x.shape, dtype=x.dtype, buffer=nl1.shared_hbm)
    for i in nl1.sequential_range(x.shape[0] // 128, directives=nki1.compiler.no_reorder()):
        nl1.store(out[i * 128:(i + 1) * 128, :],
                  value=nl1.multiply(nl1.load(x[i * 128:(i + 1) * 128, :]), 2.0))
    return out


class SamplesIdioms(unittest.TestCase):
    """What AWS's nki-samples kernels write, in kernels written here from the reference."""

    def test_masks_of_loop_indices_alone(self):
        rng = np.random.default_rng(3)
        x = rng.random((384, 128), dtype=np.float32)  # a pair and a half: the last tile dropped
        w = rng.random((128, 128), dtype=np.float32)
        out, sums = loop_masks_beta1(x, w)
        want = np.concatenate([(x[k:k + 128] ** 2).T @ w for k in range(0, 384, 128)])
        np.testing.assert_allclose(out[:, :100], want[:, :100], rtol=1e-4)
        np.testing.assert_allclose(sums[:, 0], (x ** 2).sum(1), rtol=1e-4)

    def test_a_mask_on_activation_reduce(self):
        x = np.random.default_rng(4).random((128, 512), dtype=np.float32)
        a, b = region_activation_reduce_beta1(x)
        want = np.zeros_like(x)
        want[:64, :300] = np.exp(x[:64, :300])
        np.testing.assert_allclose(a, want, rtol=1e-5)
        np.testing.assert_allclose(b[:, 0], want.sum(1), rtol=1e-5)

    def test_a_kernel_calling_a_kernel(self):
        x = np.random.default_rng(5).random((128, 64), dtype=np.float32)
        np.testing.assert_allclose(calls_a_sub_kernel_beta1(x), 3 * x, rtol=1e-6)

    def test_constants_and_floor(self):
        x = (np.random.default_rng(6).random((128, 64), dtype=np.float32) - 0.5) * 20
        a, b, f = constants_and_floor_beta1(x)
        self.assertTrue((a == np.finfo(np.float32).min).all())
        self.assertTrue((b == np.float32(3.3895313892515355e38)).all())
        np.testing.assert_array_equal(f, np.floor(x).astype(np.int32))

    def test_select_from_psum_and_a_column_operand(self):
        rng = np.random.default_rng(7)
        x, y = rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)
        out, stt = select_psum_and_columns_beta1(x, y)
        prod = x.T @ y
        np.testing.assert_allclose(out, np.where(np.tril(np.ones((128, 128))) > 0, prod, -1.0),
                                   rtol=1e-4)
        np.testing.assert_allclose(stt, x * y[:, 5:6] + y, rtol=1e-5)


    def test_broadcast_copies_and_a_transpose_assigned_to_sbuf(self):
        x = np.random.default_rng(9).random((128, 128), dtype=np.float32)
        a, b, c = broadcast_and_transposes_beta1(x)
        want = np.broadcast_to(x.sum(1, keepdims=True), (128, 64))
        np.testing.assert_allclose(a, want, rtol=1e-5)
        np.testing.assert_allclose(b, want, rtol=1e-5)
        np.testing.assert_allclose(c, x.T, rtol=0)


    def test_a_causal_mask_of_loop_indices_on_loop_reduce(self):
        x = np.random.default_rng(10).random((384, 32), dtype=np.float32)
        tiles = x.reshape(3, 128, 32)
        want = np.stack([tiles[:q + 1].sum(0) for q in range(3)])
        np.testing.assert_allclose(causal_loop_reduce_beta1(x), want, rtol=1e-5)


    def test_profile_writes_trnsims_own_artefacts(self):
        x = np.random.default_rng(11).random((128, 64), dtype=np.float32)
        with tempfile.TemporaryDirectory() as wd:
            prof = nki1.profile(working_directory=wd, save_neff_name='k.neff',
                                save_trace_name='t.ntff', num_execs=4,
                                profile_nth=2)(calls_a_sub_kernel_beta1)
            np.testing.assert_allclose(prof(x), 3 * x, rtol=1e-6)
            with open(os.path.join(wd, 'k.neff')) as f:
                self.assertEqual(f.readline(), 'trnsim-nki-recording 1\n')  # not a NEFF
            for name in ('t_exec_2.ntff', 't_exec_4.ntff'):
                with open(os.path.join(wd, name)) as f:
                    json.load(f)  # trnsim's timeline, JSON: not an NTFF
            reports = sorted(os.listdir(os.path.join(wd, 'json_reports')))
            self.assertEqual(len(reports), 2)
            with open(os.path.join(wd, 'json_reports', reports[0])) as f:
                summary = json.load(f)['summary'][0]
            self.assertIn('trnsim', summary['source'])
            self.assertAlmostEqual(summary['total_time'] * 1e9,
                                   s.stat(prof.stats, 'total_time_ns'))
            with self.assertRaisesRegex(KernelError, r'k.neff exists \(pass overwrite=True'):
                prof(x)
            with self.assertRaisesRegex(KernelError, 'working_directory must be an absolute'):
                nki1.profile(working_directory='rel')(calls_a_sub_kernel_beta1)(x)

    def test_a_benchmark_launched_on_a_grid_keeps_its_result(self):
        x = np.random.default_rng(12).random((256, 64), dtype=np.float32)
        bench = nki1.benchmark(warmup=1, iters=1)(halves_beta1)
        bench[2](x)
        self.assertGreater(bench.benchmark_result.nc_latency.get_latency_percentile(50), 0)


    def test_double_row_gen3(self):
        if s.config_name() != 'trn2':
            self.skipTest('the double-row mode is NeuronCore-v3 (trn2)')
        rng = np.random.default_rng(13)
        fp8 = np.dtype('float8_e4m3')
        a = rng.random((128, 2, 128), dtype=np.float32).astype(fp8)
        b = rng.random((128, 2, 256), dtype=np.float32).astype(fp8)
        af, bf = a.astype(np.float32), b.astype(np.float32)
        want = af[:, 0].T @ bf[:, 0] + af[:, 1].T @ bf[:, 1]
        np.testing.assert_allclose(double_row_gen3_beta1(a, b), want, rtol=1e-4)
        with self.assertRaisesRegex(KernelError, r"takes \[K, 2, M\] and \[K, 2, N\]"):
            double_row_gen3_beta1(a[:, :1], b[:, :1])


    def test_a_column_mask_on_bn_stats(self):
        x = np.random.default_rng(14).random((128, 512), dtype=np.float32)
        a, b = bn_stats_masked_beta1(x)
        np.testing.assert_allclose(a, b, rtol=1e-6)
        np.testing.assert_allclose(b[:, 1], x[:, 0:300:2].mean(1), rtol=1e-5)


    def test_no_reorder_changes_nothing_in_the_model(self):
        x = np.random.default_rng(15).random((256, 64), dtype=np.float32)
        np.testing.assert_allclose(no_reorder_beta1(x), 2 * x, rtol=1e-6)
        with nl0.no_reorder() as scope:  # (NKI 0.7's spelling, a `with` block)
            self.assertEqual(repr(scope), 'no_reorder()')


if __name__ == '__main__':
    unittest.main()

"""NKI 0.x's forms the NKI Library's kernels use, in kernels written here: an access whose
start moves at run time (.ap(scalar_offset=)), a gather by a vector of offsets
(.ap(vector_offset=)) with oob_mode=skip, a DMA between two SBUF tiles, tiles the kernel
places itself (nl.ndarray(address=)), the identity in SBUF, the attributes the library reads
(.buffer, str(dtype), nl.NKIObject, an empty slice of a tensor); iota of any pattern, a DMA
transpose of an access pattern, affine_select without offset, and instructions given tile
parts of several runs (copied first)."""

import unittest

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
from trnsim.nki import KernelError


def at_offset(a, where):
    """Rows where[0, 0] .. + 128 of a, into the same rows of a zeroed result: the start read
    from a tensor at run time, for the load and the store."""
    idx = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=where)
    pattern = [[a.shape[1], 128], [1, a.shape[1]]]
    t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap(pattern=pattern, offset=0, scalar_offset=idx, indirect_dim=0))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    zero = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    for k in range(a.shape[0] // 128):
        # (a Python number as scalar_offset: a static offset, k rows of 128)
        nisa.dma_copy(dst=out.ap(pattern=pattern, offset=0, scalar_offset=k * 128,
                                 indirect_dim=0), src=zero)
    nisa.dma_copy(dst=out.ap(pattern=pattern, offset=0, scalar_offset=idx, indirect_dim=0),
                  src=t)
    return out


def runs_at_offset(a, where):
    """Columns 0..8 and 16..24 of rows where[0, 0] .. + 128 of a (two runs a row), loaded and
    stored back at the same run-time rows of a zeroed result."""
    idx = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=where)
    pattern = [[a.shape[1], 128], [16, 2], [1, 8]]
    t = nl.ndarray((128, 2, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap(pattern=pattern, offset=0, scalar_offset=idx, indirect_dim=0))
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    zero = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    for k in range(a.shape[0] // 128):
        nisa.dma_copy(dst=out[k * 128:(k + 1) * 128, :], src=zero)
    nisa.dma_copy(dst=out.ap(pattern=pattern, offset=0, scalar_offset=idx, indirect_dim=0),
                  src=t)
    return out


def gathered(a, rows, skip):
    """Row p of the result is a's row rows[p] (rows out of range skipped under oob_mode=skip:
    those rows keep the zeros written first)."""
    idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
    nisa.dma_copy(dst=t, src=a.ap(pattern=[[a.shape[1], 128], [1, a.shape[1]]], offset=0,
                                  vector_offset=idx, indirect_dim=0),
                  oob_mode=nisa.oob_mode.skip if skip else nisa.oob_mode.error)
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


class Config(nl.NKIObject):
    """A kernel's configuration object, as the NKI Library writes them."""

    def __init__(self, scale):
        self.scale = scale


FACTS = {}


def on_chip(a):
    """a copied SBUF to SBUF by DMA into a tile placed at a given address, then multiplied by
    the identity (in SBUF from NKI 0.4) on the Tensor engine into a placed PSUM tile."""
    cfg = Config(scale=2.0)
    FACTS.update(arg=a.buffer, dtype=str(nl.float32), same=str(a.dtype) == str(nl.float32),
                 empty=a[128:128, :].shape, sbuf=None)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    placed = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf, address=(0, 8192))
    FACTS['sbuf'] = placed.buffer
    nisa.dma_copy(dst=placed, src=t)
    ident = nl.shared_identity_matrix(128, dtype=nl.float32)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
    nisa.nc_matmul(dst=acc, stationary=ident, moving=placed)
    r = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=acc, op0=nl.multiply, operand0=cfg.scale)
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


class Dma(unittest.TestCase):

    def test_a_run_time_offset(self):
        a = np.random.default_rng(1).random((512, 64), dtype=np.float32)
        for start in (0, 100, 384):
            want = np.zeros_like(a)
            want[start:start + 128] = a[start:start + 128]
            np.testing.assert_array_equal(
                nki.simulate(at_offset)(a, np.array([[start]], np.int32)), want)
        with self.assertRaisesRegex(KernelError, r'nki_dma_test.py:\d+: nisa.dma_copy: a '
                                    'run-time offset of 28672 elements takes the access to '
                                    r'elements 28672..36863 of a tensor of 32768'):
            nki.simulate(at_offset)(a, np.array([[448]], np.int32))

    def test_several_runs_a_row_at_a_run_time_offset(self):
        a = np.random.default_rng(8).random((256, 32), dtype=np.float32)
        sim = nki.simulate(runs_at_offset)
        out = sim(a, np.array([[64]], np.int32))
        want = np.zeros_like(a)
        want[64:192, 0:8], want[64:192, 16:24] = a[64:192, 0:8], a[64:192, 16:24]
        np.testing.assert_array_equal(out, want)

    def test_a_gather_by_a_vector_of_offsets(self):
        a = np.random.default_rng(2).random((300, 32), dtype=np.float32)
        rows = np.random.default_rng(3).integers(0, 300, (128, 1)).astype(np.int32)
        np.testing.assert_array_equal(nki.simulate(gathered)(a, rows, False), a[rows[:, 0]])
        rows[5, 0] = 1000  # out of range: skipped under oob_mode=skip, else an error
        want = a[np.minimum(rows[:, 0], 299)]
        want[5] = 0
        np.testing.assert_array_equal(nki.simulate(gathered)(a, rows, True), want)
        with self.assertRaisesRegex(KernelError, 'index 1000 of an indirect access'):
            nki.simulate(gathered)(a, rows, False)

    def test_on_chip_dma_placed_tiles_and_the_identity(self):
        a = np.random.default_rng(4).random((128, 128), dtype=np.float32)
        sim = nki.simulate(on_chip)
        np.testing.assert_allclose(sim(a), 2 * a, rtol=1e-6)
        self.assertEqual(FACTS, {'arg': nl.hbm, 'dtype': 'float32', 'same': True,
                                 'empty': (0,), 'sbuf': nl.sbuf})
        # the SBUF-to-SBUF copy is a DMA transfer of its own: four transfers (the argument, the
        # identity's load, the copy, the result)
        self.assertEqual(sim.stats['dma']['transfers'], 4)


def forms(a):
    """a [128, 8] -> (iota of the pattern [[16, 4], [1, 2]] (offset 3, 100 a partition); a's
    columns 0, 2, 4, 6 (a part of 4 runs a partition) transposed on the Tensor engine; a
    transposed by DMA through a 3-D access pattern; the lower triangle of ones (affine_select
    with no offset))."""
    t = nl.ndarray((128, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    io = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(io, [[16, 4], [1, 2]], offset=3, channel_multiplier=100)
    tp = nl.ndarray((4, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=tp, data=t.ap(pattern=[[8, 128], [2, 4]]))
    tps = nl.ndarray((4, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=tps, src=tp)
    dt = nl.ndarray((8, 1, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=dt, src=a.ap(pattern=[[8, 128], [1, 1], [1, 8]]))
    ones = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    tri = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(dst=tri, pattern=[[-1, 128]], channel_multiplier=1,
                       cmp_op=nl.greater_equal, on_true_tile=ones, on_false_value=0.0)
    outs = []
    for tile in (io, tps, dt, tri):
        o = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=tile)
        outs.append(o)
    return tuple(outs)


def shuffled(a):
    """a [64, 8]: its partition 0 broadcast to 32 partitions (the NKI Library's broadcast), and
    a rotated by 5 within each quadrant of 32."""
    t = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    b = nl.ndarray((32, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=b, src=t[0:1, :], shuffle_mask=[0] * 32)
    r = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=[(i + 5) % 32 for i in range(32)])
    # partitions 0..5 of t into partitions 10..15 of k, the others of k kept (255)
    k = nl.ndarray((32, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=k, value=7.0)
    mask = [255] * 32
    for i in range(6):
        mask[10 + i] = i
    nisa.nc_stream_shuffle(dst=k, src=t[0:32, :], shuffle_mask=mask)
    outs = []
    for tile in (b, r, k):
        o = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=tile)
        outs.append(o)
    return tuple(outs)


def tiled_matmul(a, b, position, size):
    """a.T @ b on a tile of the Tensor engine's array."""
    ta = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    acc = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=ta, moving=tb, tile_position=position, tile_size=size)
    r = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=acc)
    out = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


def two_row_matmul(s, m):
    """NKI 0.x's double_row matmul of [K, 2, M] and [K, 2, N] fp8 operands: the sum over the
    partitions and both rows."""
    ts = nl.ndarray(s.shape, dtype=s.dtype, buffer=nl.sbuf)
    tm = nl.ndarray(m.shape, dtype=m.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=s)
    nisa.dma_copy(dst=tm, src=m)
    acc = nl.ndarray((s.shape[2], m.shape[2]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=ts, moving=tm,
                   perf_mode=nisa.matmul_perf_mode.double_row)
    r = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=acc)
    out = nl.ndarray(acc.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


def row_copy(a):
    """Row 2 of a through a tile of one partition, into row 0 of the result."""
    t = nl.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[2, :])
    out = nl.ndarray((1, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0, :], src=t)
    return out


class Forms(unittest.TestCase):

    def test_a_row_through_a_tile_of_one_partition(self):
        a = np.random.default_rng(10).random((4, 20), dtype=np.float32)
        np.testing.assert_array_equal(nki.simulate(row_copy)(a), a[2:3])

    def test_nki_objects_as_the_library_writes_them(self):
        import dataclasses

        @dataclasses.dataclass
        class Section(nl.NKIObject):  # unannotated fields, set by keyword
            index = None
            offset = None

        @dataclasses.dataclass(frozen=True)
        class Sizes(nl.NKIObject):
            rows: int
            cols: int = 8
            tags: list = dataclasses.field(default_factory=list)

            def __post_init__(self):
                object.__setattr__(self, 'elems', self.rows * self.cols)

        s = Section(index=2, offset=64)
        self.assertEqual((s.index, s.offset), (2, 64))
        z = Sizes(4)
        self.assertEqual((z.rows, z.cols, z.tags, z.elems), (4, 8, [], 32))
        self.assertEqual(Sizes(rows=2, cols=3).elems, 6)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            z.rows = 5
        with self.assertRaisesRegex(TypeError,
                                    r"nki_dma_test.py:\d+: Sizes\(\) missing the argument 'rows'"):
            Sizes()

    def test_double_row_of_two_rows_a_partition(self):
        rng = np.random.default_rng(9)
        s = rng.integers(-3, 4, (64, 2, 32)).astype(np.float32)
        m = rng.integers(-3, 4, (64, 2, 48)).astype(np.float32)
        got = nki.simulate(two_row_matmul)(s.astype(nl.float8_e4m3), m.astype(nl.float8_e4m3))
        np.testing.assert_array_equal(got, np.einsum('krm,krn->mn', s, m))

    def test_a_matmul_on_a_tile_of_the_array(self):
        rng = np.random.default_rng(7)
        a, b = rng.random((32, 64), dtype=np.float32), rng.random((32, 96), dtype=np.float32)
        np.testing.assert_allclose(nki.simulate(tiled_matmul)(a, b, (32, 64), (32, 64)),
                                   a.T @ b, rtol=1e-5)
        for position, size, message in (((16, 0), (32, 64), 'is not a tile of size'),
                                         ((0, 0), (32, 48), 'rows and columns of'),
                                         ((0, 0), (32, 32), 'does not fit a tile')):
            with self.assertRaisesRegex(KernelError, message):
                nki.simulate(tiled_matmul)(a, b, position, size)

    def test_stream_shuffle(self):
        a = np.random.default_rng(6).random((64, 8), dtype=np.float32)
        b, r, k = nki.simulate(shuffled)(a)
        want = np.full((32, 8), 7.0, np.float32)
        want[10:16] = a[0:6]
        np.testing.assert_array_equal(k, want)
        np.testing.assert_array_equal(b, np.broadcast_to(a[0], (32, 8)))
        rot = np.concatenate([a[q * 32:(q + 1) * 32][(np.arange(32) + 5) % 32] for q in (0, 1)])
        np.testing.assert_array_equal(r, rot)

        @nki.jit
        def any_mask(a):
            t = nl.ndarray((32, 8), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a)
            nisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=[0, 2, 1] + [255] * 29)
            return a
        with self.assertRaisesRegex(KernelError, r'nisa.nc_stream_shuffle: the shuffle_mask .* '
                                    r'is not supported yet'):
            nki.simulate(any_mask)(a[:32])

        @nki.jit
        def quadrants(a, rows):
            """a [32, 8] repeated into each quadrant of a [64, 8] tile, shifted by 8 (rows of
            a beyond `rows` out of reach: the model's rule, at the call)."""
            t = nl.ndarray((32, 8), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a)
            u = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.sbuf)
            nisa.nc_stream_shuffle(dst=u, src=t[0:rows], shuffle_mask=[(i + 8) % 32
                                                                       for i in range(32)])
            o = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=u)
            return o
        want = np.tile(a[:32][(np.arange(32) + 8) % 32], (2, 1))
        np.testing.assert_array_equal(nki.simulate(quadrants)(a[:32], 32), want)
        with self.assertRaisesRegex(KernelError, r'nki_dma_test.py:\d+: nisa.nc_stream_shuffle: '
                                    r'.*reads partition 8 of a src0 of 4'):
            nki.simulate(quadrants)(a[:32], 4)


    def test_the_librarys_instruction_forms(self):
        a = np.random.default_rng(5).random((128, 8), dtype=np.float32)
        io, tp, dt, tri = nki.simulate(forms)(a)
        want = 3 + 100 * np.arange(128)[:, None] + (16 * np.arange(4)[:, None] +
                                                    np.arange(2)[None, :]).reshape(8)[None, :]
        np.testing.assert_array_equal(io, want)
        np.testing.assert_array_equal(tp, a[:, 0:8:2].T)
        np.testing.assert_array_equal(dt[:, 0, :], a.T)
        np.testing.assert_array_equal(tri, np.tril(np.ones((128, 128), np.float32)))

    def test_a_dma_transpose_between_sbuf_tiles(self):
        x = np.random.default_rng(6).random((100, 256), dtype=np.float32)
        out, second = nki.simulate(block_transposes)(x, 64)
        np.testing.assert_array_equal(out, np.concatenate([x[:, :128].T, x[:, 128:].T], 1))
        np.testing.assert_array_equal(second, x[:, 128:192].T)


def block_transposes(x, rows):
    """x [P, 2 x 128] in SBUF, its two [P, 128] blocks transposed into one [128, 2 x 128] tile
    by a DMA transpose between SBUF tiles (access patterns of four dimensions, as the NKI
    Library's attention writes them); then the first `rows` partitions' block 1 copied out
    through an .ap whose scalar_offset is a Python number (a static offset: one block)."""
    P, F = x.shape
    s = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=x)
    d = nl.ndarray((128, 2, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=d.ap([[256, 128], [1, 1], [128, 2], [1, P]]),
                       src=s.ap([[F, P], [1, 1], [128, 2], [1, 128]]))
    out = nl.ndarray((128, 2 * P), dtype=x.dtype, buffer=nl.shared_hbm)
    o = nl.ndarray((128, 2 * P), dtype=x.dtype, buffer=nl.sbuf)
    for j in range(2):
        nisa.tensor_copy(dst=o[:, j * P:(j + 1) * P], src=d[:, j, 0:P])
    nisa.dma_copy(dst=out, src=o)
    second = nl.ndarray((rows, P), dtype=x.dtype, buffer=nl.shared_hbm)
    part = nl.ndarray((rows, P), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=part, src=d.ap([[256, rows], [1, P]], offset=0, scalar_offset=1,
                                        indirect_dim=1))
    nisa.dma_copy(dst=second, src=part)
    return out, second


def doubled_tiles(a, n_tiles):
    """Rows 0 .. 128 n of a doubled, n (n_tiles[0, 0]) read at run time into a register that
    bounds a loop the device runs (nl.fori_loop); the row offset a [1, 1] tile the loop
    advances; the register stored back, and the output fenced by an HBM-to-HBM copy of
    itself."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    count = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n_tiles[0])
    reg = nisa.register_alloc()
    nisa.register_load(reg, n_sb)
    start = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=start, value=0)
    pattern = [[cols, 128], [1, cols]]

    def body(_):
        t = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=pattern, offset=0, scalar_offset=start,
                                      indirect_dim=0))
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap(pattern=pattern, offset=0, scalar_offset=start,
                                 indirect_dim=0), src=t)
        nisa.tensor_scalar(dst=start, data=start, op0=nl.add, operand0=128)
    nl.fori_loop(0, reg, body)
    again = nisa.register_alloc(0)
    nisa.register_move(again, reg)
    back = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_store(back, again)
    back_f = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back_f, src=back)
    nisa.dma_copy(dst=count, src=back_f)
    nisa.dma_copy(dst=out, src=out)
    return out, count


def scattered_rows(x, idx, skip):
    """Rows of x stored to the rows of a zeroed [16, F] tensor that idx names, through
    .ap(vector_offset=) (a scatter); with `skip`, rows whose index is out of the tensor are
    left out (oob_mode=skip)."""
    rows, F = x.shape
    out = nl.ndarray((16, F), dtype=x.dtype, buffer=nl.shared_hbm)
    z = nl.ndarray((16, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=out, src=z)
    t = nl.ndarray((rows, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    ix = nl.ndarray((rows, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    dst = out.ap(pattern=[[F, rows], [1, 1], [1, F]], offset=0, vector_offset=ix, indirect_dim=0)
    if skip:
        nisa.dma_copy(dst=dst, src=t, oob_mode=nisa.oob_mode.skip)
    else:
        nisa.dma_copy(dst=dst, src=t)
    return out


def nonzero_positions(x):
    """nisa.nonzero_with_count of a [32, T] tile into a dst set to 7 first: partitions 0 and 16
    get the positions + 100, -1 padding and the count; the others keep their 7s."""
    P, T = x.shape
    out = nl.ndarray((P, T + 1), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((P, T + 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=d, value=7)
    nisa.nonzero_with_count(dst=d, src=t, index_offset=100, padding_val=-1)
    nisa.dma_copy(dst=out, src=d)
    return out


def register_of_two_elements(a):
    t = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=3)
    reg = nisa.register_alloc()
    nisa.register_load(reg, t)
    return a


def nonzero_into_a_short_dst(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.nonzero_with_count(dst=d, src=t)
    return x


def branch_on_a_register(a):
    reg = nisa.register_alloc(2)
    if reg:
        pass
    return a


def register_bound_inside_a_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    reg = nisa.register_alloc(1)
    def body(_):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
    for _ in range(2):
        nl.fori_loop(0, reg, body)
    return out


class Registers(unittest.TestCase):
    """nisa.register_alloc / load / move / store and nl.fori_loop over a register (as
    nl.dynamic_range before NKI 0.7): the loop runs the iterations the register's value gives,
    read from the kernel's data where the loop starts; and nisa.dma_copy between HBM
    tensors."""

    def test_a_loop_bound_read_at_run_time(self):
        a = np.random.default_rng(2).random((512, 64), dtype=np.float32)
        latencies = []
        for n in (1, 3):
            sim = nki.simulate(doubled_tiles)
            out, count = sim(a, np.array([[n]], np.int32))
            want = np.zeros_like(a)
            want[:128 * n] = 2 * a[:128 * n]
            np.testing.assert_array_equal(out[:128 * n], want[:128 * n])
            self.assertEqual(float(count[0, 0]), n)
            latencies.append(sim.latency_us)
        self.assertGreater(latencies[1], latencies[0])  # (two more iterations timed)

    def test_a_scatter_by_a_vector_of_offsets(self):
        x = np.arange(32, dtype=np.float32).reshape(4, 8)
        idx = np.array([[3], [7], [0], [12]], np.int32)
        want = np.zeros((16, 8), np.float32)
        want[[3, 7, 0, 12]] = x
        np.testing.assert_array_equal(nki.simulate(scattered_rows)(x, idx, False), want)
        idx[1, 0] = 40  # (out of the 16 rows: left out under oob_mode=skip, else an error)
        want[7] = 0
        np.testing.assert_array_equal(nki.simulate(scattered_rows)(x, idx, True), want)
        with self.assertRaisesRegex(KernelError, r'index 40 of an indirect access \(row 1\) is '
                                    'out of bounds for a dimension of size 16'):
            nki.simulate(scattered_rows)(x, idx, False)

    def test_nonzero_with_count(self):
        x = (np.random.default_rng(4).random((32, 12)) > 0.6).astype(np.float32)
        out = nki.simulate(nonzero_positions)(x)
        for p in range(32):
            if p % 16:
                np.testing.assert_array_equal(out[p], 7)
                continue
            where = np.flatnonzero(x[p])
            want = np.full(13, -1)
            want[:len(where)], want[12] = where + 100, len(where)
            np.testing.assert_array_equal(out[p], want)

    def test_a_register_has_no_value_while_traced(self):
        a = np.zeros((4, 4), np.float32)
        with self.assertRaisesRegex(KernelError, r'nki_dma_test.py:\d+: nisa.VirtualRegister: '
                                    'a register has no value while the kernel is traced'):
            nki.simulate(branch_on_a_register)(a)
        with self.assertRaisesRegex(KernelError, r'nki_dma_test.py:\d+: nisa.register_load: .*'
                                    'one element of at most 32 bits'):
            nki.simulate(register_of_two_elements)(a)
        with self.assertRaisesRegex(KernelError, r'nki_dma_test.py:\d+: nisa.nonzero_with_count: '
                                    '.*one element more than src0'):
            nki.simulate(nonzero_into_a_short_dst)(a)
        with self.assertRaisesRegex(KernelError, r'nl.fori_loop: a loop bound read from a '
                                    'register inside another loop is not supported'):
            nki.simulate(register_bound_inside_a_loop)(a)


if __name__ == '__main__':
    unittest.main()

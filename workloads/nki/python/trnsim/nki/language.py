"""nki.language for trnsim: tensors, tiles, indexing, loops and the nl.* operations."""

from . import _core, _dtypes, _ops
from ._core import KernelError, ParDim, IndexRange, DynSlice, user_site, unsupported

float32 = _dtypes.float32
float16 = _dtypes.float16
bfloat16 = _dtypes.bfloat16
int32 = _dtypes.int32


class _Buffer:
    """A memory a tensor lives in (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'nl.{self.name}'


sbuf = _Buffer('sbuf')
psum = _Buffer('psum')
hbm = _Buffer('hbm')
shared_hbm = _Buffer('shared_hbm')
private_hbm = _Buffer('private_hbm')


class _TileSize:
    """nl.tile_size: the hardware tile limits, from the platform config."""

    @staticmethod
    def _platform():
        from . import _runner
        return _runner.platform()

    @property
    def pmax(self):
        return self._platform().partitions()

    @property
    def psum_fmax(self):
        return self._platform().size('core.psum.bank_size') // 4

    @property
    def gemm_stationary_fmax(self):
        return self._platform().integer('core.pe.cols')

    @property
    def gemm_moving_fmax(self):
        return self._platform().integer('core.pe.moving_max')


tile_size = _TileSize()


def par_dim(n):
    """Marks the partition dimension of an on-chip tensor's shape."""
    return ParDim(int(n))


class _Loop:
    """A loop of the kernel: iterates like range() and tells the tracer which loops are open,
    so that a tile carried across a sequential loop is known (the builder keeps it in one
    buffer). Dependencies themselves follow from the data, whatever the loop kind."""

    def __init__(self, kind, args):
        self.kind = kind
        self.range = range(*args)

    def __len__(self):
        return len(self.range)

    def __iter__(self):
        ctx = _core._State.current
        if ctx is None:
            yield from self.range
            return
        ctx.loop_count += 1
        ctx.loops.append((self.kind, ctx.loop_count))
        ctx.open_loops += (ctx.loop_count,)
        ctx.loop_trips.append(len(self.range))
        unrolled = self.kind == 'static'  # unrolled by the tracer: no level of its own
        if not unrolled:
            site = ('loop',) + tuple(_core.user_site())
            lid, nth = ctx.occurrence(site)
            level = [lid + ((site, nth),), {}]
            ctx.levels.append(level)
        try:
            for i in self.range:
                if not unrolled:
                    level[1] = {}
                yield i
        finally:
            ctx.loops.pop()
            ctx.open_loops = ctx.open_loops[:-1]
            ctx.loop_trips.pop()
            if not unrolled:
                ctx.levels.pop()


def affine_range(*args):
    """Iterations without loop-carried dependencies (the builder may overlap them)."""
    return _Loop('affine', args)


def sequential_range(*args):
    """Iterations with a loop-carried dependency, in order."""
    return _Loop('sequential', args)


def static_range(*args):
    """A loop unrolled when the kernel is traced."""
    return _Loop('static', args)


def arange(start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    return IndexRange(int(start), len(range(int(start), int(stop), int(step))), int(step))


class _Grid(tuple):
    """The indices of nl.mgrid: unpacked (i_p, i_f = nl.mgrid[...]) or named, `.p` for the
    partition index and `.x` for the free one."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        out = []
        for axis, k in enumerate(key):
            if not isinstance(k, slice) or k.step not in (None, 1):
                raise unsupported('nl.mgrid', 'nl.mgrid takes start:stop slices')
            start = k.start or 0
            out.append(IndexRange(start, k.stop - start, 1, axis))
        return _Grid(out) if len(out) > 1 else out[0]


mgrid = _MGrid()


def ds(start, size):
    return DynSlice(start, size)


def _space(buffer, api, site):
    if buffer is None:
        return 'sbuf'
    from . import compiler
    if isinstance(buffer, compiler.DirectAlloc):
        return buffer
    if isinstance(buffer, _Buffer):
        return 'hbm' if buffer.name.endswith('hbm') else buffer.name
    raise unsupported(api, f'buffer={buffer!r}', site)


def _tensor(api, shape, dtype, buffer, name, zero):
    site = user_site()
    ctx = _core.context(api)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    dt = _dtypes.dtype_name(dtype)
    space = _space(buffer, api, site)
    if space == 'hbm':
        if any(isinstance(s, ParDim) for s in shape):
            raise KernelError(api, 'nl.par_dim in an HBM tensor shape', site)
        try:
            return _core.new_hbm(ctx, ctx.hbm_name(name or 'hbm'), tuple(int(s) for s in shape),
                                 dt)
        except (_core.native.UserError, RuntimeError) as e:
            raise KernelError(api, str(e), site) from None
    alloc = None
    if not isinstance(space, str):
        alloc, space = space, 'sbuf'
    t = _core.declare(ctx, api, site, shape, dt, space, alloc, name or None)
    if zero:
        tiles = [t] if isinstance(t, _core.Tile) else None
        if tiles is None:  # zero every block
            import itertools
            tiles = [t.block(b, api, site)[0]
                     for b in itertools.product(*(range(n) for n in t.block_shape))]
        for tile in tiles:
            if space == 'psum':
                tile.zero_pending, tile.zero_site = True, site
            else:
                _ops.assign(tile, _ops.memset(api, site, tile.shape, 0.0, dt, 'dve'), site)
    return t


def ndarray(shape, dtype, buffer=None, name=''):
    """An uninitialised tensor: a tile (or tiles) in SBUF/PSUM, or a tensor in HBM."""
    return _tensor('nl.ndarray', shape, dtype, buffer, name, False)


def zeros(shape, dtype, buffer=None, name=''):
    """A zeroed tensor. In PSUM the zeroing is folded into the first matmul that overwrites it."""
    return _tensor('nl.zeros', shape, dtype, buffer, name, True)


def full(shape, fill_value, dtype, buffer=None, name=''):
    """A tensor filled with one value (a memset)."""
    site = user_site()
    t = _tensor('nl.full', shape, dtype, buffer, name, False)
    if not isinstance(t, _core.Tile):
        raise unsupported('nl.full', 'nl.full outside SBUF or with block dimensions', site)
    _ops.assign(t, _ops.memset('nl.full', site, t.shape, fill_value, t.dtype_name, 'dve'),
                site)
    return t


def ones(shape, dtype, buffer=None, name=''):
    return full(shape, 1.0, dtype, buffer, name)


def _no_mask(api, mask, site):
    if mask is not None:
        raise unsupported(api, 'mask=', site)


def load(src, mask=None, dtype=None):
    return _ops.load('nl.load', user_site(), src, dtype, mask)


def store(dst, value, mask=None):
    _ops.store('nl.store', user_site(), dst, value, mask)


def _binary(api, alu, x, y, dtype, mask):
    return _ops.tensor_tensor(api, user_site(), x, y, alu, None, dtype, mask)


def add(x, y, dtype=None, mask=None):
    return _binary('nl.add', 'add', x, y, dtype, mask)


def subtract(x, y, dtype=None, mask=None):
    return _binary('nl.subtract', 'subtract', x, y, dtype, mask)


def multiply(x, y, dtype=None, mask=None):
    return _binary('nl.multiply', 'multiply', x, y, dtype, mask)


def maximum(x, y, dtype=None, mask=None):
    return _binary('nl.maximum', 'max', x, y, dtype, mask)


def minimum(x, y, dtype=None, mask=None):
    return _binary('nl.minimum', 'min', x, y, dtype, mask)


def _activation(api, func, x, dtype, mask):
    return _ops.activation(api, user_site(), func, x, 1.0, None, dtype, mask)


def exp(x, dtype=None, mask=None):
    return _activation('nl.exp', 'exp', x, dtype, mask)


def relu(x, dtype=None, mask=None):
    return _activation('nl.relu', 'relu', x, dtype, mask)


def reciprocal(x, dtype=None, mask=None):
    return _activation('nl.reciprocal', 'reciprocal', x, dtype, mask)


def _unary(func):
    def op(x, dtype=None, mask=None):
        return _activation(f'nl.{func}', func, x, dtype, mask)
    op.__name__ = func
    op.__doc__ = f'{func}(x) on the Scalar engine (an activation).'
    return op


rsqrt = _unary('rsqrt')
sqrt = _unary('sqrt')
square = _unary('square')
sigmoid = _unary('sigmoid')
tanh = _unary('tanh')
silu = _unary('silu')
gelu = _unary('gelu')
log = _unary('log')


def negative(x, dtype=None, mask=None):
    """-x: an identity activation scaled by -1."""
    return _ops.activation('nl.negative', user_site(), 'identity', x, -1.0, None, dtype, mask)


def copy(x, dtype=None, mask=None):
    return _ops.copy('nl.copy', user_site(), x, dtype, None, mask)


def _reduce(api, alu, x, axis, dtype, keepdims, mask):
    return _ops.reduce(api, user_site(), x, alu, axis, keepdims, dtype, None, mask)


def max(x, axis, dtype=None, mask=None, keepdims=False):  # noqa: A001 (NKI's name)
    return _reduce('nl.max', 'max', x, axis, dtype, keepdims, mask)


def min(x, axis, dtype=None, mask=None, keepdims=False):  # noqa: A001
    return _reduce('nl.min', 'min', x, axis, dtype, keepdims, mask)


def sum(x, axis, dtype=None, mask=None, keepdims=False):  # noqa: A001
    return _reduce('nl.sum', 'add', x, axis, dtype, keepdims, mask)


def mean(x, axis, dtype=None, mask=None, keepdims=False):
    """The mean over the free axes: a sum (Vector engine) then a multiply by 1/N, two
    instructions, as the compiler lowers it."""
    site = user_site()
    t = x.materialize() if isinstance(x, _ops.Pending) else x
    if not isinstance(t, _core.Tile):
        raise KernelError('nl.mean', f'expected a tile, got {type(x).__name__}', site)
    region = _core.mask_region(mask, t.shape, 'nl.mean', site)
    shape = t.shape if region is None else t.view(region, site, 'nl.mean').shape
    n = 1
    for d in shape[1:]:
        n *= d
    total = _ops.reduce('nl.mean', site, t, 'add', axis, keepdims, dtype, None, mask)
    return _ops.tensor_scalar('nl.mean', site, total, 'multiply', 1.0 / n, 'dve', dtype)


def transpose(x, dtype=None, mask=None):
    return _ops.transpose('nl.transpose', user_site(), x, mask)


def matmul(x, y, transpose_x=False, mask=None):
    """x @ y into PSUM (x: [M, K], y: [K, N]), or x.T @ y when transpose_x (x: [K, M]). As
    documented, matmul(x, y) lowers to nc_matmul(transpose(x), y): a Tensor-engine transpose
    of x into PSUM and its copy back to SBUF (in x's dtype) come before the matmul. In an nl
    kernel the compiler hoists that transpose: while x is unchanged, later calls reuse it."""
    site = user_site()
    _no_mask('nl.matmul', mask, site)
    if not transpose_x:
        x, entry = _transposed('nl.matmul', site, _ops.operand(x, 'nl.matmul', site))
        product = _ops.matmul('nl.matmul', site, x, y)
        if entry is not None:  # the hoisted tile must hold x.T until this matmul is emitted
            entry['readers'] = [r for r in entry['readers'] if r.result is None] + [product]
        return product
    return _ops.matmul('nl.matmul', site, x, y)


def _transposed(api, site, x):
    """(x transposed into SBUF for a matmul's stationary operand, its hoisting entry or None).
    In an nl kernel each part of a tile is transposed once while it is unchanged, into a tile
    of its own (the compiler hoists loop-invariant work); an isa kernel transposes at every
    call, as written. A changed x is transposed again into the same tile, or into another one
    while a matmul of the old transpose is not emitted yet (p = nl.matmul(...) kept for
    later)."""
    ctx = _core.context(api)
    root = x.root
    if ctx.style != 'nl' or root.decl is None or root.decl.alloc is not None:
        return _ops.copy(api, site, _ops.transpose(api, site, x), dtype=x.dtype_name), None
    key = (id(root.decl), x.pabs, x.fabs, x.fstep, x.shape)
    entry = ctx.transposed.get(key)
    if entry is not None and entry['root'] is root and entry['version'] == root.version:
        return entry['tile'], entry
    flipped = _ops.transpose(api, site, x)
    row_bytes = flipped.shape[1] * _dtypes.SIZES[x.dtype_name]
    slot = 0 if entry is None else entry['slot']
    if entry is not None and any(r.result is None for r in entry['readers']):
        slot += 1  # the current tile is still to be read: a tile of its own
    if entry is None or slot != entry['slot']:
        if ctx.hoisted_bytes + row_bytes > ctx.hoist_share * ctx.sbuf_bytes:
            return _ops.copy(api, site, flipped, dtype=x.dtype_name), None
        ctx.hoisted_bytes += row_bytes
    tile = _core.declare(ctx, api, site, flipped.shape, x.dtype_name, 'sbuf',
                         name=f'{root.decl.label}.T', identity=(key, slot))
    _ops.emit_into(_ops.copy(api, site, flipped, dtype=x.dtype_name), tile, False, site)
    entry = {'root': root, 'version': root.version, 'tile': tile, 'slot': slot, 'readers': []}
    ctx.transposed[key] = entry
    return tile, entry


def shared_constant(constant, dtype=None):
    """A tensor in HBM holding constant data (a numpy array, or a .npy file's path), as the
    compiler embeds it in the kernel: an input region of the program, its values the
    constant's (rounded to dtype)."""
    import numpy as np
    site = _core.user_site()
    ctx = _core.context('nl.shared_constant')
    if isinstance(constant, str):
        try:
            constant = np.load(constant)
        except (OSError, ValueError) as e:
            raise KernelError('nl.shared_constant', f'cannot read {constant}: {e}', site) \
                from None
    arr = np.asarray(constant)
    if arr.ndim == 0 or arr.size == 0:
        raise KernelError('nl.shared_constant', f'a constant of shape {arr.shape}', site)
    dt = _dtypes.dtype_name(dtype) if dtype is not None else _dtypes.array_dtype_name(arr)
    if dt not in _core._DT:
        raise unsupported('nl.shared_constant', f'dtype {dt} is not supported yet', site)
    vals = None
    if ctx.values:
        vals = _dtypes.round_to(arr.astype(np.int32 if dt == 'int32' else np.float32), dt)
    return _core.new_hbm(ctx, ctx.hbm_name('constant'), arr.shape, dt, vals, True)


def broadcast_to(src, shape):
    """src repeated to `shape`: an HBM tensor (or access) of one partition is loaded into every
    partition (a DMA with partition stride 0); a [P, 1] tile is seen as [P, F] (the
    per-partition operand of an elementwise operation)."""
    site = _core.user_site()
    if isinstance(src, _core.HbmTensor):
        src = src[...]
    if isinstance(src, _core.HbmAccess):
        return _ops.load('nl.broadcast_to', site, src.broadcast(shape, 'nl.broadcast_to', site))
    if isinstance(src, _ops.Pending):
        src = src.materialize()
    if isinstance(src, _core.Tile):
        if tuple(src.shape) == tuple(shape):
            return src
        return src.broadcast_to(shape)
    raise KernelError('nl.broadcast_to', f'cannot broadcast {type(src).__name__}', site)


def device_print(prefix, x, mask=None):
    """Prints a tile's values (when values are computed); records no instruction."""
    site = user_site()
    _no_mask('nl.device_print', mask, site)
    ctx = _core.context('nl.device_print')
    if not ctx.values:
        return
    t = _ops.operand(x, 'nl.device_print', site)
    print(prefix, t.read())


def __getattr__(name):
    _core.missing('language', name)


_core.check_module_apis(globals(), 'nl')

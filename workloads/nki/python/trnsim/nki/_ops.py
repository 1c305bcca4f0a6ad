"""Tile operations: each builds a Pending result whose values are computed at once and whose
instruction is recorded (through _core.dispatch) when it is placed in a tile."""

import math

import numpy as np

from . import _core
from ._core import (KernelError, Tile, TileBlocks, TileRuns, HbmAccess, HbmTensor, context,
                    dispatch)

ALU = {'add': _core.native.alu_op.add, 'subtract': _core.native.alu_op.subtract,
       'multiply': _core.native.alu_op.multiply, 'max': _core.native.alu_op.max,
       'min': _core.native.alu_op.min}
NUMPY_ALU = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply,
             'max': np.maximum, 'min': np.minimum}


def _erf(x):
    try:
        from scipy.special import erf  # python3-scipy
    except ImportError:
        erf = np.vectorize(math.erf, otypes=[np.float64])
    return erf(x)


_F = _core.native.act_func
ACT = {'identity': (_F.identity, lambda x: x),
       'relu': (_F.relu, lambda x: np.maximum(x, 0)),
       'exp': (_F.exp, np.exp),
       'reciprocal': (_F.reciprocal, lambda x: 1.0 / x),
       'rsqrt': (_F.rsqrt, lambda x: 1.0 / np.sqrt(x)),
       'sqrt': (_F.sqrt, np.sqrt),
       'square': (_F.square, lambda x: x * x),
       'sigmoid': (_F.sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x))),
       'tanh': (_F.tanh, np.tanh),
       'silu': (_F.silu, lambda x: x / (1.0 + np.exp(-x))),
       'gelu': (_F.gelu, lambda x: 0.5 * x * (1.0 + _erf(x * np.float32(0.70710678)))),
       'log': (_F.log, np.log)}


class Pending(_core._Typed):
    """An operation's result not yet placed: emitted into the tile it is assigned to, or into a
    tile of its own (declared at the operation's line) when it is used as an operand."""
    _kind = 'a tile'

    def __init__(self, api, site, shape, dtype, space, emit, values, kind='op', region=None,
                 full_shape=None):
        self.api, self.site = api, site
        self.shape, self.dtype_name, self.space = tuple(shape), dtype, space
        self.emit, self.values, self.kind = emit, values, kind
        self.region = region  # a mask's part of the destination (None: all of it)
        self.full_shape = tuple(full_shape) if full_shape is not None else self.shape
        self.result = None
        # The declarations of the operands: used when the result is emitted, which may be later.
        ctx = _core._State.current
        self.uses, ctx.operands = ctx.operands, []

    def materialize(self):
        if self.result is None:
            ctx = context(self.api)
            t = _core.declare(ctx, self.api, self.site, self.full_shape, self.dtype_name,
                              self.space)
            emit_into(self, t, False, self.site)
            self.result = t
        return self.result

    def __getitem__(self, idx):
        return self.materialize().view(idx, _core.user_site(), runs=True)

    def __setitem__(self, idx, value):
        t = self.materialize()
        site = _core.user_site()
        assign(t.view(idx, site, runs=True), value, site)

    def reshape(self, *shape):
        return self.materialize().reshape(*shape)

    def broadcast_to(self, shape):
        return self.materialize().broadcast_to(shape)

    def __add__(self, other):
        from . import language
        return language.add(self, other)

    def __mul__(self, other):
        from . import language
        return language.multiply(self, other)

    __radd__ = __add__
    __rmul__ = __mul__


def _elems(shape):
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def flush_zero(tile, site):
    """A PSUM tile from nl.zeros that is used before a matmul overwrote it: zero it now."""
    root = tile.root
    if not root.zero_pending:
        return
    root.zero_pending = False
    ctx = root.ctx
    _mark_written(root)
    dispatch('nl.zeros', root.zero_site,
             lambda: ctx.kb.memset(root.handle, 0.0, _core.ENGINES['dve']))


def _written(t):
    """Which elements of PSUM tile part `t` were written since its tile was declared (a boolean
    [partitions, elements] array, a view of the root's record)."""
    root = t.root
    if root.psum_written is None:
        root.psum_written = np.zeros((root.partitions, root.elems), dtype=bool)
    last = t.fabs + t.fstep * (t.elems - 1) + 1
    return root.psum_written[t.pabs:t.pabs + t.partitions, t.fabs:last:t.fstep]


def _mark_written(t):
    if t.space == 'psum':
        _written(t)[...] = True


def _auto_accumulate(p, dst, site):
    """nisa.nc_matmul's accumulate=None: the first write to a PSUM location overwrites it, later
    ones add to it (SDK 2.30-2.33 API reference). A destination partly written before is
    neither: an error rather than a guess."""
    seen = _written(dst)
    if seen.all():
        return True
    if not seen.any():
        return False
    raise _core.unsupported(p.api, 'accumulate=None into a PSUM tile part of which was written '
                            'before and part not (pass accumulate=True or False)', site)


def operand(x, api, site, allow_broadcast=False):
    """A value read by an instruction, as a tile."""
    if isinstance(x, Pending):
        x = x.materialize()
    if isinstance(x, Tile):
        if x.broadcast_from is not None and not allow_broadcast:
            raise _core.unsupported(api, 'a broadcast tile here (it works as the per-partition '
                                    'operand of an elementwise operation)', site)
        flush_zero(x, site)
        x.ctx.note_use(x)
        return x
    if isinstance(x, TileBlocks):
        raise KernelError(api, f'a tensor of {x.block_shape} tiles is not one tile: index its '
                          'block dimensions', site)
    if isinstance(x, TileRuns):
        raise _core.unsupported(api, _core.RUNS_ONLY, site)
    if isinstance(x, (HbmAccess, HbmTensor)):
        raise KernelError(api, 'operand is in HBM: load it into SBUF first (nl.load or '
                          'nisa.dma_copy)', site)
    raise KernelError(api, f'expected a tile, got {type(x).__name__}', site)


def emit_into(p, dst, accumulate, site):
    """Records `p` with `dst` as its destination and stores its values there. `accumulate`:
    True adds the result to dst (a matmul into PSUM), False overwrites, 'auto' decides as
    nisa.nc_matmul's accumulate=None does."""
    if not isinstance(dst, Tile):
        raise KernelError(p.api, f'cannot write a result into {type(dst).__name__}', site)
    if p.region is not None and dst.shape != p.shape:
        dst = dst.view(p.region, site, p.api)
    if dst.shape[0] != p.shape[0] or dst.elems != _elems(p.shape):
        raise KernelError(p.api, f'shape mismatch: a result of shape {p.shape} assigned to a '
                          f'tile of shape {dst.shape}', site)
    if p.kind == 'matmul':
        if dst.space != 'psum':
            raise KernelError(p.api, 'the result of a matmul must be written to PSUM', site)
        if dst.root.zero_pending and dst.root is dst:
            dst.root.zero_pending = False
            _mark_written(dst)
            accumulate = False
    flush_zero(dst, site)
    if accumulate == 'auto':
        accumulate = _auto_accumulate(p, dst, site)
    _mark_written(dst)
    ctx = dst.ctx
    ctx.note_use(dst)
    dst.root.version += 1
    for d in p.uses:
        d.last_event = max(d.last_event, len(ctx.events))
    kb = ctx.kb

    def compute():
        v = p.values
        if accumulate:
            v = dst.read() + np.asarray(v).reshape(dst.shape)
        dst.write(v)

    dispatch(p.api, p.site, lambda: p.emit(kb, dst.handle, accumulate), compute)


def assign(dst, value, site):
    """tile[...] = value."""
    if isinstance(dst, TileRuns):
        if not (isinstance(value, Pending) and value.kind == 'load' and value.result is None):
            raise _core.unsupported('tile assignment', _core.RUNS_ONLY, site)
        for tile, access in _runs_of(dst, value.hbm, value.api, site):
            emit_into(load(value.api, site, access), tile, False, site)
        return
    if isinstance(value, Pending):
        if value.kind == 'load' and isinstance(dst, Tile):
            _require_sbuf(value.api, site, dst)
        if value.result is None:
            emit_into(value, dst, False, site)
            value.result = dst
            return
        value = value.result
    if isinstance(value, Tile):
        if dst.same_region(value):
            return
        emit_into(copy('tile assignment', site, value, dst.dtype_name), dst, False, site)
        return
    if isinstance(value, (int, float, np.number)):
        emit_into(memset('tile assignment', site, dst.shape, float(value), dst.dtype_name,
                         'dve'), dst, False, site)
        return
    if isinstance(value, (HbmAccess, HbmTensor)):
        raise KernelError('tile assignment', 'an HBM tensor cannot be assigned to a tile: load '
                          'it with nl.load or nisa.dma_copy', site)
    raise KernelError('tile assignment', f'cannot assign {type(value).__name__} to a tile',
                      site)


def accumulate(dst, value, site):
    """tile += value: matmuls accumulate in PSUM; anything else is an add."""
    if isinstance(value, Pending) and value.kind == 'matmul' and value.result is None:
        emit_into(value, dst, True, site)
        value.result = dst
        return
    emit_into(tensor_tensor('+=', site, dst, value, 'add', 'dve', dst.dtype_name), dst, False,
              site)


def _values(fn):
    ctx = _core._State.current
    return fn() if ctx is not None and ctx.values else None


def _engine(engine, default):
    return _core.ENGINES[engine or default]


def _part(t, region, api, site):
    return t if region is None else t.view(region, site, api)


def load(api, site, src, dtype=None, mask=None):
    if not isinstance(src, HbmAccess):
        if isinstance(src, HbmTensor):
            src = src[...]
        else:
            raise KernelError(api, f'loads from an HBM tensor, got {type(src).__name__}', site)
    ctx = context(api)
    if src.rows > ctx.partitions:
        raise KernelError(api, f'number of partitions {src.rows} exceeds the architecture '
                          f'limit of {ctx.partitions}', site)
    name = src.tensor.dtype_name
    if dtype is not None and _core._dtypes.dtype_name(dtype) != name:
        raise _core.unsupported(api, 'a dtype cast in a DMA is not supported yet', site)
    full = src.shape
    region = _core.mask_region(mask, full, api, site)
    if region is not None:
        src = src.restrict(region)
    if src.oob:
        raise KernelError(api, src.oob, site)

    def emit(kb, dst, accumulate):
        if dst.op.partitions != src.rows or dst.op.elems != src.elems:
            raise KernelError(api, f'shape mismatch: {src.rows} x {src.elems} elements loaded '
                              f'into a tile of {dst.op.partitions} x {dst.op.elems}', site)
        kb.load(dst, src.tensor.handle, src.operand(kb))

    p = Pending(api, site, src.shape, name, 'sbuf', emit, _values(src.read), 'load', region,
                full)
    p.hbm = src if region is None else None  # what a load into several runs splits
    return p


def _runs_of(runs, access, api, site):
    """(SBUF run, the HBM access it pairs with) for a DMA between a multi-run tile part and an
    HBM access of the same shape."""
    if isinstance(access, _core._BroadcastAccess):
        raise _core.unsupported(api, 'a broadcast load into a tile part of several runs', site)
    if access is None or tuple(access.shape) != runs.shape:
        raise _core.unsupported(api, _core.RUNS_ONLY + f' of the same shape as its HBM side '
                                f'(tile part {runs.shape})', site)
    return [(tile, access[tuple(slice(None) if i is None else i for i in index)])
            for index, tile in runs.parts]


def _check_dma_dtype(api, site, tile, tensor):
    if _core._dtypes.SIZES[tile.dtype_name] != _core._dtypes.SIZES[tensor.dtype_name]:
        raise _core.unsupported(api, f'a DMA between {tile.dtype_name} and '
                                f'{tensor.dtype_name} (a cast) is not supported yet', site)


def _require_sbuf(api, site, tile):
    if tile.space != 'sbuf':
        raise KernelError(api, f'DMA cannot reach {tile.space.upper()}: DMA moves data between '
                          'HBM and SBUF (copy the tile to SBUF first)', site)


def load_into(api, site, dst, src, mask=None):
    if not isinstance(dst, (Tile, TileRuns, Pending)):
        raise KernelError(api, f'loads into a tile, got {type(dst).__name__}', site)
    if isinstance(dst, Tile):
        _require_sbuf(api, site, dst)
    p = load(api, site, src, None, mask)
    _check_dma_dtype(api, site, dst, src.tensor if isinstance(src, HbmAccess) else src)
    assign(dst, p, site)


def store(api, site, dst, value, mask=None):
    if isinstance(dst, HbmTensor):
        dst = dst[...]
    if not isinstance(dst, HbmAccess):
        raise KernelError(api, f'stores to an HBM tensor, got {type(dst).__name__}', site)
    if isinstance(value, TileRuns) and mask is None:
        for tile, access in _runs_of(value, dst, api, site):
            store(api, site, access, tile)
        return
    src = operand(value, api, site)
    region = _core.mask_region(mask, src.shape, api, site)
    if region is not None:
        src, dst = src.view(region, site, api), dst.restrict(region)
    if dst.oob:
        raise KernelError(api, dst.oob, site)
    _require_sbuf(api, site, src)
    _check_dma_dtype(api, site, src, dst.tensor)
    if src.partitions != dst.rows or src.elems != dst.elems:
        raise KernelError(api, f'shape mismatch: a tile of shape {src.shape} stored to an HBM '
                          f'access of shape {dst.shape}', site)
    ctx = context(api)
    kb = ctx.kb
    dispatch(api, site, lambda: kb.store(dst.tensor.handle, dst.operand(kb), src.handle),
             lambda: dst.write(src.read()))
    ctx.operands.clear()  # the store's operand is used by the store, now


def tensor_tensor(api, site, a, b, alu, engine, dtype=None, mask=None):
    if not isinstance(b, (Tile, Pending, TileBlocks, HbmAccess, HbmTensor)):
        return tensor_scalar(api, site, a, alu, b, engine, dtype, mask=mask)
    if not isinstance(a, (Tile, Pending, TileBlocks, HbmAccess, HbmTensor)):
        if alu in ('add', 'multiply', 'max', 'min'):
            return tensor_scalar(api, site, b, alu, a, engine, dtype, mask=mask)
        raise _core.unsupported(api, 'a scalar first operand', site)
    A, B = operand(a, api, site, True), operand(b, api, site, True)
    if B.broadcast_from is not None:  # a per-partition scalar: tensor_scalar's tile operand
        return tensor_scalar(api, site, A, alu, B.broadcast_from, engine, dtype, mask=mask)
    if A.broadcast_from is not None and alu in ('add', 'multiply', 'max', 'min'):
        return tensor_scalar(api, site, B, alu, A.broadcast_from, engine, dtype, mask=mask)
    if A.broadcast_from is not None or B.broadcast_from is not None:
        raise _core.unsupported(api, 'a broadcast first operand', site)
    # numpy broadcasting of a [P, 1] operand along the free axis: a per-partition scalar.
    if B.partitions == A.partitions and B.elems == 1 and A.elems > 1:
        return tensor_scalar(api, site, A, alu, B, engine, dtype, mask=mask)
    if (A.partitions == B.partitions and A.elems == 1 and B.elems > 1 and
            alu in ('add', 'multiply', 'max', 'min')):
        return tensor_scalar(api, site, B, alu, A, engine, dtype, mask=mask)
    if A.partitions != B.partitions or A.elems != B.elems:
        raise KernelError(api, f'shape mismatch: operands of shape {A.shape} and {B.shape}',
                          site)
    full = A.shape
    region = _core.mask_region(mask, full, api, site)
    if region is not None:
        A, B = _part(A, region, api, site), _part(B, region, api, site)
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else (
        A.dtype_name if A.dtype_name == B.dtype_name else 'float32')
    f = NUMPY_ALU[alu]
    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.tensor_tensor(dst, A.handle, B.handle, ALU[alu],
                                                         _engine(engine, 'dve')),
                   _values(lambda: f(A.read(), B.read().reshape(A.shape))), region=region,
                   full_shape=full)


def _per_partition(x, A, full, region, what, api, site):
    """x as the [P, 1] operand (one value per partition) of an instruction on A; a mask's
    region cuts its partitions as it cuts A's."""
    S = operand(x, api, site)
    if region is not None and S.partitions == full[0]:
        S = S.view(region[:1], site, api)
    if S.partitions != A.partitions or S.elems != 1:
        raise KernelError(api, f'shape mismatch: {what} must be of shape ({A.partitions}, 1), '
                          f'got {S.shape}', site)
    return S


def tensor_scalar(api, site, a, alu, scalar, engine, dtype=None, reverse=False, mask=None,
                  alu1=None, scalar1=None, reverse1=False):
    """(a <alu> scalar) and, with alu1, then <alu1> scalar1 (a number) in the same instruction."""
    A = operand(a, api, site)
    full = A.shape
    region = _core.mask_region(mask, full, api, site)
    A = _part(A, region, api, site)
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    f = NUMPY_ALU[alu]
    if reverse and alu not in ('add', 'multiply', 'max', 'min'):
        raise _core.unsupported(api, f'a reversed {alu}', site)
    op1, imm1 = _core.native.alu_op.bypass, 0.0
    f1 = lambda v: v  # noqa: E731
    if alu1 is not None:
        if reverse1 and alu1 not in ('add', 'multiply', 'max', 'min'):
            raise _core.unsupported(api, f'a reversed {alu1}', site)
        if not isinstance(scalar1, (int, float, np.number)):
            raise _core.unsupported(api, 'a tile as the second operand (operand1=)', site)
        op1, imm1, g = ALU[alu1], float(scalar1), NUMPY_ALU[alu1]
        f1 = lambda v: g(v, np.float32(imm1))  # noqa: E731
    if isinstance(scalar, (Tile, Pending)):
        S = _per_partition(scalar, A, full, region, 'a per-partition scalar', api, site)
        return Pending(api, site, A.shape, dt, 'sbuf',
                       lambda kb, dst, acc: kb.tensor_scalar_ap(dst, A.handle, ALU[alu],
                                                                S.handle,
                                                                _engine(engine, 'dve'), op1,
                                                                imm1),
                       _values(lambda: f1(f(A.read().reshape(A.partitions, -1),
                                            S.read().reshape(A.partitions, 1))).reshape(
                                                A.shape)),
                       region=region, full_shape=full)
    if not isinstance(scalar, (int, float, np.number)):
        raise KernelError(api, f'expected a tile or a number, got {type(scalar).__name__}', site)
    imm = float(scalar)
    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.tensor_scalar(dst, A.handle, ALU[alu], imm,
                                                         _engine(engine, 'dve'), op1, imm1),
                   _values(lambda: f1(f(A.read(), np.float32(imm)))), region=region,
                   full_shape=full)


def _two_tiles_and_a_number(api, site, a, b, number, what):
    """The operands of a two-tile instruction with a number: `a` and `b` of one shape, and
    `number` (`what` names it) a number, not a tile."""
    A, B = operand(a, api, site), operand(b, api, site)
    if not isinstance(number, (int, float, np.number)):
        raise _core.unsupported(api, f'a tile as {what} (only a number)', site)
    if A.partitions != B.partitions or A.elems != B.elems:
        raise KernelError(api, f'shape mismatch: operands of shape {A.shape} and {B.shape}',
                          site)
    return A, B, float(number)


def scalar_tensor_tensor(api, site, a, alu0, scalar, alu1, b, dtype=None, mask=None):
    """(a <alu0> scalar) <alu1> b in one Vector-engine instruction; scalar a number."""
    A, B, imm = _two_tiles_and_a_number(api, site, a, b, scalar, 'operand0')
    full = A.shape
    region = _core.mask_region(mask, full, api, site)
    if region is not None:
        A, B = _part(A, region, api, site), _part(B, region, api, site)
    f0, f1 = NUMPY_ALU[alu0], NUMPY_ALU[alu1]
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.scalar_tensor_tensor(dst, A.handle, ALU[alu0], imm,
                                                                ALU[alu1], B.handle),
                   _values(lambda: f1(f0(A.read(), np.float32(imm)),
                                      B.read().reshape(A.shape))),
                   region=region, full_shape=full)


def tensor_tensor_scan(api, site, a, b, initial, alu0, alu1, dtype=None):
    """out[:, i] = (a[:, i] <alu0> out[:, i-1]) <alu1> b[:, i], from `initial` (a number), in
    one Vector-engine instruction."""
    A, B, init = _two_tiles_and_a_number(api, site, a, b, initial, 'the initial value')
    if A.space == 'psum' and B.space == 'psum':
        raise KernelError(api, 'data0 and data1 cannot both be in PSUM', site)
    f0, f1 = NUMPY_ALU[alu0], NUMPY_ALU[alu1]

    def values():
        x = A.read().reshape(A.partitions, -1)
        y = B.read().reshape(A.partitions, -1)
        out = np.empty_like(x, dtype=np.float32)
        prev = np.full(A.partitions, init, dtype=np.float32)
        for i in range(x.shape[1]):
            prev = f1(f0(x[:, i], prev), y[:, i]).astype(np.float32)
            out[:, i] = prev
        return out.reshape(A.shape)

    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.tensor_tensor_scan(dst, A.handle, B.handle, init,
                                                              ALU[alu0], ALU[alu1]),
                   _values(values))


def activation(api, site, func, a, scale=1.0, engine=None, dtype=None, mask=None, bias=None):
    """func(a * scale + bias), bias a [P, 1] tile (one value per partition) or None."""
    A = operand(a, api, site)
    full = A.shape
    region = _core.mask_region(mask, full, api, site)
    A = _part(A, region, api, site)
    if not isinstance(scale, (int, float, np.number)):
        raise _core.unsupported(api, 'a tile as the activation scale', site)
    B = None if bias is None else _per_partition(bias, A, full, region, 'the bias', api, site)
    code, f = ACT[func]
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    s = float(scale)

    def values():
        x = A.read().reshape(A.partitions, -1) * np.float32(s)
        if B is not None:
            x = x + B.read().reshape(A.partitions, 1)
        return f(x).astype(np.float32).reshape(A.shape)

    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.activation(dst, A.handle, code, s,
                                                      _engine(engine, 'act'),
                                                      None if B is None else B.handle),
                   _values(values), region=region, full_shape=full)


def iota(api, site, shape, offset, partition_step, dtype):
    """A tile of `shape` with value offset + partition_step * p + i at partition p, free
    element i (GpSimd engine)."""
    shape = tuple(int(x) for x in shape)
    p, n = shape[0], _elems(shape)

    def values():
        v = (float(offset) + float(partition_step) * np.arange(p, dtype=np.float64)[:, None] +
             np.arange(n, dtype=np.float64)[None, :])
        return v.reshape(shape)

    return Pending(api, site, shape, _core._dtypes.dtype_name(dtype), 'sbuf',
                   lambda kb, dst, acc: kb.iota(dst, float(offset), float(partition_step)),
                   _values(values))


def copy(api, site, a, dtype=None, engine=None, mask=None):
    ctx = context(api)
    if engine == 'act' and ctx.isa_version < 3:
        raise KernelError(api, 'tensor_copy does not run on the Scalar engine of NeuronCore-v2: '
                          'use nisa.activation with op=nl.copy', site)
    A = operand(a, api, site)
    full = A.shape
    region = _core.mask_region(mask, full, api, site)
    A = _part(A, region, api, site)
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    return Pending(api, site, A.shape, dt, 'sbuf',
                   lambda kb, dst, acc: (kb.copy(dst, A.handle) if engine is None else
                                         kb.tensor_copy(dst, A.handle, _engine(engine, 'dve'))),
                   _values(A.read), region=region, full_shape=full)


def memset(api, site, shape, value, dtype, engine=None):
    v = float(value)
    return Pending(api, site, shape, _core._dtypes.dtype_name(dtype), 'sbuf',
                   lambda kb, dst, acc: kb.memset(dst, v, _engine(engine, 'dve')),
                   _values(lambda: np.full(tuple(int(s) for s in shape), v, dtype=np.float32)))


def reduce(api, site, a, alu, axis, keepdims=False, dtype=None, engine=None, mask=None):
    """One value per partition: the reduction over the free axes (of the part a mask keeps)."""
    A = operand(a, api, site)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    free = tuple(range(1, len(A.shape)))
    if not axes or 0 in axes or any(x not in free for x in axes) or len(A.shape) < 2:
        raise _core.unsupported(api, f'a reduction over axis {axis} (only the free axes of a '
                                'tile reduce, into one value per partition)', site)
    if set(axes) != set(free):
        raise _core.unsupported(api, 'a reduction over some of the free axes', site)
    full = (A.partitions, 1) if keepdims else (A.partitions,)
    region = _core.mask_region(mask, A.shape, api, site)
    out_region = None
    if region is not None:
        A = _part(A, region, api, site)
        out_region = (region[0], slice(None)) if keepdims else (region[0],)
    shape = (A.partitions, 1) if keepdims else (A.partitions,)
    dt = _core._dtypes.dtype_name(dtype) if dtype is not None else A.dtype_name
    f = {'add': np.sum, 'max': np.max, 'min': np.min}.get(alu)
    if f is None:
        raise _core.unsupported(api, f'a {alu} reduction', site)
    return Pending(api, site, shape, dt, 'sbuf',
                   lambda kb, dst, acc: kb.tensor_reduce(dst, A.handle, ALU[alu],
                                                         _engine(engine, 'dve')),
                   _values(lambda: f(A.read().reshape(A.partitions, -1), axis=1).reshape(shape)),
                   region=out_region, full_shape=full)


def matmul(api, site, stationary, moving):
    ctx = context(api)
    S, M = operand(stationary, api, site), operand(moving, api, site)
    for t, what in ((S, 'stationary'), (M, 'moving')):
        if t.space != 'sbuf':
            raise KernelError(api, f'the {what} operand must be in SBUF', site)
    if S.partitions != M.partitions:
        raise KernelError(api, f'shape mismatch: the contraction (partition) sizes differ: '
                          f'stationary {S.shape}, moving {M.shape}', site)
    if S.partitions > ctx.pe_rows:
        raise KernelError(api, f'contraction size {S.partitions} exceeds the {ctx.pe_rows} '
                          'rows of the Tensor engine', site)
    if S.elems > ctx.pe_cols:
        raise KernelError(api, f'stationary free size {S.elems} exceeds the limit of '
                          f'{ctx.pe_cols}', site)
    if M.elems > ctx.moving_max:
        raise KernelError(api, f'moving free size {M.elems} exceeds the limit of '
                          f'{ctx.moving_max}', site)
    if S.dtype_name != M.dtype_name:
        raise KernelError(api, f'the stationary ({S.dtype_name}) and moving ({M.dtype_name}) '
                          'operands have different dtypes: the Tensor engine multiplies '
                          'operands of one dtype (cast one with nl.copy(..., dtype=))', site)
    k = S.partitions
    return Pending(api, site, (S.elems, M.elems), 'float32', 'psum',
                   lambda kb, dst, acc: kb.matmul(dst, S.handle, M.handle, acc, False),
                   _values(lambda: S.read().reshape(k, -1).T @ M.read().reshape(k, -1)),
                   'matmul')


def transpose(api, site, a, mask=None):
    """a's [P, F] (or the part a mask keeps) as [F, P] in PSUM, through the Tensor engine."""
    ctx = context(api)
    A = operand(a, api, site)
    full, out_region = (A.elems, A.partitions), None
    region = _core.mask_region(mask, A.shape, api, site)
    if region is not None:
        if len(A.shape) != 2:
            raise _core.unsupported(api, 'a mask on a transpose of a tile with several free '
                                    'dimensions', site)
        A = _part(A, region, api, site)
        out_region = (region[1], region[0])
    if A.space != 'sbuf':
        raise KernelError(api, 'the operand of a Tensor-engine transpose must be in SBUF', site)
    if A.elems > min(ctx.pe_cols, ctx.partitions) or A.partitions > ctx.pe_rows:
        raise KernelError(api, f'a Tensor-engine transpose takes at most {ctx.pe_rows} x '
                          f'{min(ctx.pe_cols, ctx.partitions)}, got {A.shape}', site)
    return Pending(api, site, (A.elems, A.partitions), 'float32', 'psum',
                   lambda kb, dst, acc: kb.transpose(dst, A.handle),
                   _values(lambda: A.read().reshape(A.partitions, -1).T), region=out_region,
                   full_shape=full)


def max8(api, site, a):
    A = operand(a, api, site)
    if A.elems < 8:
        raise KernelError(api, f'max8 needs at least 8 elements per partition, got {A.shape}',
                          site)

    def values():
        v = A.read().reshape(A.partitions, -1)
        return -np.sort(-v, axis=1)[:, :8]

    return Pending(api, site, (A.partitions, 8), A.dtype_name, 'sbuf',
                   lambda kb, dst, acc: kb.max8(dst, A.handle), _values(values))


def find_index8(api, site, data, vals):
    D, V = operand(data, api, site), operand(vals, api, site)
    if V.partitions != D.partitions or V.elems != 8:
        raise KernelError(api, f'shape mismatch: the values must be of shape '
                          f'({D.partitions}, 8), got {V.shape}', site)

    def values():
        d = D.read().reshape(D.partitions, -1)
        v = V.read().reshape(D.partitions, 8)
        hit = d[:, :, None] == v[:, None, :]
        return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int32)

    return Pending(api, site, (D.partitions, 8), 'int32', 'sbuf',
                   lambda kb, dst, acc: kb.find_index8(dst, D.handle, V.handle),
                   _values(values))

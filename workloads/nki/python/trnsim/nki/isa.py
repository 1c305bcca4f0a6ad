"""nki.isa for trnsim: the ISA-level operations (nisa.*)."""

import numpy as _np

from . import _core, _ops, language as _nl
from ._core import KernelError, user_site, unsupported

vector_engine = 'dve'
scalar_engine = 'act'
gpsimd_engine = 'pool'
tensor_engine = 'pe'
unknown_engine = None


class engine:
    """Engine selectors of NKI beta 2 (nisa.engine.vector, ...)."""

    vector = 'dve'
    scalar = 'act'
    gpsimd = 'pool'
    tensor = 'pe'
    unknown = None


_ALU = {_nl.add: 'add', _nl.subtract: 'subtract', _nl.multiply: 'multiply',
        _nl.maximum: 'max', _nl.minimum: 'min', _nl.max: 'max', _nl.min: 'min'}
# The ISA documentation spells the operations as numpy functions (op0=np.multiply).
_ALU.update({_np.add: 'add', _np.subtract: 'subtract', _np.multiply: 'multiply',
             _np.maximum: 'max', _np.minimum: 'min'})
_ACT = {_nl.exp: 'exp', _nl.copy: 'identity', _nl.relu: 'relu',
        _nl.reciprocal: 'reciprocal', _nl.rsqrt: 'rsqrt', _nl.sqrt: 'sqrt',
        _nl.square: 'square', _nl.sigmoid: 'sigmoid', _nl.tanh: 'tanh', _nl.silu: 'silu',
        _nl.gelu: 'gelu', _nl.log: 'log'}
# The ISA documentation also passes numpy functions where numpy has them.
_ACT.update({_np.exp: 'exp', _np.sqrt: 'sqrt', _np.square: 'square', _np.tanh: 'tanh',
             _np.log: 'log'})


def _alu(api, op, site):
    if op not in _ALU:
        raise unsupported(api, f'op={getattr(op, "__name__", op)}', site)
    return _ALU[op]


def _two_alus(api, op0, op1, reverse0, reverse1, site):
    """The two operations of a two-operation instruction; a reversed one must commute."""
    alu0, alu1 = _alu(api, op0, site), _alu(api, op1, site)
    commutative = ('add', 'multiply', 'max', 'min')
    if (reverse0 and alu0 not in commutative) or (reverse1 and alu1 not in commutative):
        raise unsupported(api, 'a reversed non-commutative operation', site)
    return alu0, alu1


def _check(api, site, mask=None, engine_=None, allowed=('dve', 'act', 'pool', None)):
    if mask is not None:
        raise unsupported(api, 'mask=', site)
    if engine_ not in allowed:
        raise unsupported(api, f'engine={engine_}', site)


def _result(p, dst, site):
    if dst is None:
        return p
    _ops.assign(dst, p, site)
    return dst


def nc_matmul(stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, mask=None, dst=None, accumulate=None):
    """stationary.T @ moving into PSUM. Into dst (beta 2): accumulate=True adds to dst, False
    overwrites it, None (the default) overwrites the locations no write reached since dst was
    declared and adds to the others."""
    site = user_site()
    _check('nisa.nc_matmul', site, mask)
    if is_transpose:
        raise unsupported('nisa.nc_matmul', 'is_transpose=True', site)
    p = _ops.matmul('nisa.nc_matmul', site, stationary, moving)
    if dst is None:
        if accumulate is not None:
            raise KernelError('nisa.nc_matmul', 'accumulate= needs dst=', site)
        return p
    if isinstance(dst, _ops.Pending):
        dst = dst.materialize()
    _ops.emit_into(p, dst, 'auto' if accumulate is None else bool(accumulate), site)
    p.result = dst
    return dst


def nc_transpose(data, engine=None, mask=None, dst=None, dtype=None):
    site = user_site()
    _check('nisa.nc_transpose', site, None, engine, ('pe', None))
    p = _ops.transpose('nisa.nc_transpose', site, data, mask)
    if dtype is not None and _core._dtypes.dtype_name(dtype) != p.dtype_name:
        raise unsupported('nisa.nc_transpose', f'dtype={_core._dtypes.dtype_name(dtype)} (the '
                          f'transpose gives {p.dtype_name})', site)
    return _result(p, dst, site)


def activation(op, data, bias=None, scale=1.0, mask=None, dtype=None, dst=None):
    """op(data * scale + bias), bias a [P, 1] tile (Scalar engine)."""
    site = user_site()
    _check('nisa.activation', site)
    if op not in _ACT:
        raise unsupported('nisa.activation', f'op={getattr(op, "__name__", op)}', site)
    return _result(_ops.activation('nisa.activation', site, _ACT[op], data, scale, None, dtype,
                                   mask, bias), dst, site)


def tensor_tensor(data1, data2, op, dtype=None, mask=None, engine=None, dst=None):
    site = user_site()
    _check('nisa.tensor_tensor', site, None, engine)
    return _result(_ops.tensor_tensor('nisa.tensor_tensor', site, data1, data2,
                                      _alu('nisa.tensor_tensor', op, site), engine, dtype,
                                      mask), dst, site)


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dtype=None, mask=None, engine=None, dst=None):
    site = user_site()
    _check('nisa.tensor_scalar', site, None, engine)
    alu1 = None if op1 is None else _alu('nisa.tensor_scalar', op1, site)
    return _result(_ops.tensor_scalar('nisa.tensor_scalar', site, data,
                                      _alu('nisa.tensor_scalar', op0, site), operand0, engine,
                                      dtype, reverse0, mask, alu1, operand1, reverse1), dst, site)


def iota(*args, **kwargs):
    """Index values on the GpSimd engine. The SDK 2.2x form, `nisa.iota(expr, dtype)` with an
    affine expression of nl.arange indices, returns a tile; the beta 2 form,
    `nisa.iota(dst, pattern, offset, channel_multiplier=0)`, writes dst. Both must number the
    free elements in order (value = offset + partition step * p + i)."""
    site = user_site()
    first = args[0] if args else kwargs.get('dst', kwargs.get('expr'))
    if isinstance(first, _core.Tile):
        names = ('dst', 'pattern', 'offset', 'channel_multiplier')
    else:
        names = ('expr', 'dtype')
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in given:
            raise KernelError('nisa.iota', f'{k} given twice', site)
        given[k] = v
    _check('nisa.iota', site, given.pop('mask', None))
    unknown = set(given) - set(names)
    if unknown:
        raise KernelError('nisa.iota', f'unexpected argument(s) {sorted(unknown)}', site)
    expr, dtype = given.get('expr'), given.get('dtype')
    dst, pattern = given.get('dst'), given.get('pattern')
    offset, channel_multiplier = given.get('offset', 0), given.get('channel_multiplier', 0)
    if dst is not None:  # beta 2
        if pattern is None:
            raise KernelError('nisa.iota', 'pattern= is required with dst', site)
        steps = [(int(st), int(n)) for st, n in pattern if int(n) != 1]
        expected = 1
        for st, n in reversed(steps):
            if st != expected:
                raise unsupported('nisa.iota', f'the pattern {pattern} (only patterns that '
                                  'number the free elements in order, step 1 innermost)', site)
            expected *= n
        if expected != dst.elems:
            raise KernelError('nisa.iota', f'the pattern {pattern} gives {expected} values per '
                              f'partition; dst has {dst.elems}', site)
        _ops.assign(dst, _ops.iota('nisa.iota', site, dst.shape, offset, channel_multiplier,
                                   dst.dtype_name), site)
        return dst
    if expr is None or dtype is None:
        raise KernelError('nisa.iota', 'expected nisa.iota(expr, dtype) or '
                          'nisa.iota(dst, pattern, offset)', site)
    if isinstance(expr, (int, float)) or not isinstance(expr, (_core.IndexRange,
                                                              _core.IndexExpr)):
        raise KernelError('nisa.iota', 'expr must be an affine expression of nl.arange indices',
                          site)
    e = _core.IndexExpr.of(expr)
    parts, pstep = e.terms.get(0, (1, 0))
    free = sorted(a for a in e.terms if a != 0)
    shape = (parts,) + tuple(e.terms[a][0] for a in free) if free else (parts, 1)
    expected = 1
    for a in reversed(free):
        size, coef = e.terms[a]
        if size > 1 and coef != expected:
            raise unsupported('nisa.iota', 'an expression that does not number the free '
                              'elements in order (coefficient 1 on the innermost free index, '
                              'its size on the next)', site)
        expected *= size
    return _ops.iota('nisa.iota', site, shape, e.const, pstep, dtype)


def scalar_tensor_tensor(data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                         dtype=None, mask=None, engine=None, dst=None):
    """(data op0 operand0) op1 operand1, operand0 a number and operand1 a tile of data's
    shape, in one Vector-engine instruction."""
    site = user_site()
    _check('nisa.scalar_tensor_tensor', site, None, engine, ('dve', None))
    alu0, alu1 = _two_alus('nisa.scalar_tensor_tensor', op0, op1, reverse0, reverse1, site)
    return _result(_ops.scalar_tensor_tensor('nisa.scalar_tensor_tensor', site, data, alu0,
                                             operand0, alu1, operand1, dtype, mask), dst, site)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       dtype=None, mask=None, dst=None):
    """A scan along the free axis: out[:, i] = op1(op0(data0[:, i], out[:, i-1]), data1[:, i]),
    out[:, -1] = initial (a number); one Vector-engine instruction."""
    site = user_site()
    _check('nisa.tensor_tensor_scan', site, mask)
    alu0, alu1 = _two_alus('nisa.tensor_tensor_scan', op0, op1, reverse0, reverse1, site)
    return _result(_ops.tensor_tensor_scan('nisa.tensor_tensor_scan', site, data0, data1,
                                           initial, alu0, alu1, dtype), dst, site)


def tensor_reduce(op, data, axis, mask=None, dtype=None, negate=False, keepdims=False,
                  dst=None):
    site = user_site()
    _check('nisa.tensor_reduce', site)
    if negate:
        raise unsupported('nisa.tensor_reduce', 'negate=True', site)
    alu = {_nl.add: 'add', _nl.sum: 'add', _nl.max: 'max', _nl.maximum: 'max',
           _nl.min: 'min', _nl.minimum: 'min'}.get(op)
    if alu is None:
        raise unsupported('nisa.tensor_reduce', f'op={getattr(op, "__name__", op)}', site)
    return _result(_ops.reduce('nisa.tensor_reduce', site, data, alu, axis, keepdims, dtype,
                               None, mask), dst, site)


def tensor_copy(src, mask=None, dtype=None, engine=None, dst=None):
    site = user_site()
    _check('nisa.tensor_copy', site, None, engine)
    return _result(_ops.copy('nisa.tensor_copy', site, src, dtype, engine, mask), dst, site)


def memset(shape, value, dtype=None, mask=None, engine=None):
    """nisa.memset(shape, value, dtype) returns a tile; nisa.memset(dst, value) (beta 2)
    writes into dst."""
    site = user_site()
    _check('nisa.memset', site, mask, engine)
    if isinstance(shape, _core.Tile):
        dst = shape
        _ops.assign(dst, _ops.memset('nisa.memset', site, dst.shape, value, dst.dtype_name,
                                     engine), site)
        return dst
    if dtype is None:
        raise KernelError('nisa.memset', 'dtype= is required with a shape', site)
    return _ops.memset('nisa.memset', site, tuple(shape), value, dtype, engine)


def max8(src, mask=None, dtype=None, dst=None):
    """The 8 largest values of each partition, largest first (Vector engine)."""
    site = user_site()
    _check('nisa.max8', site, mask)
    return _result(_ops.max8('nisa.max8', site, src), dst, site)


def nc_find_index8(data, vals, mask=None, dtype=None, dst=None):
    """Where each of 8 values per partition first occurs in data (int32 indices)."""
    site = user_site()
    _check('nisa.nc_find_index8', site, mask)
    return _result(_ops.find_index8('nisa.nc_find_index8', site, data, vals), dst, site)


def dma_copy(dst, src, mask=None, dge_mode=None):
    """A DMA between HBM and SBUF: a load when src is in HBM, a store when dst is."""
    site = user_site()
    hbm = (_core.HbmAccess, _core.HbmTensor)
    if isinstance(src, hbm) and isinstance(dst, hbm):
        raise unsupported('nisa.dma_copy', 'a copy from HBM to HBM', site)
    if isinstance(src, hbm):
        if isinstance(dst, _core.TileBlocks):
            raise KernelError('nisa.dma_copy', 'index the block dimensions of dst', site)
        _ops.load_into('nisa.dma_copy', site, dst, src, mask)
        return None
    if isinstance(dst, hbm):
        _ops.store('nisa.dma_copy', site, dst, src, mask)
        return None
    raise unsupported('nisa.dma_copy', 'a copy between two on-chip tiles', site)


def __getattr__(name):
    _core.missing('isa', name)


_core.check_module_apis(globals(), 'nisa')

"""nki.isa (nisa): each instruction API declared once, with its signature in each edition. In
beta 1 (SDK 2.2x) an instruction returns its result (and takes an optional dst=); from NKI 0.2
it writes its first argument, dst."""

import enum
import math

import numpy as np

from . import _ops, _prims, _tensors
from ._errors import KernelError, unsupported, user_site
from ._dtypes import dtype_name
from ._index import AffinePredicate, IndexExpr, IndexRange, Mask, concrete, whole_mask
from ._registry import alias, api, called, value
from ._trace import current


class Engine:
    """Engine selectors of NKI 0.x (nisa.engine.vector, ...)."""

    vector = 'dve'
    scalar = 'act'
    gpsimd = 'pool'
    tensor = 'pe'
    sync = 'sp'
    unknown = None


value('isa.engine', Engine)
value('isa.vector_engine', 'dve')
value('isa.scalar_engine', 'act')
value('isa.gpsimd_engine', 'pool')
value('isa.tensor_engine', 'pe')
value('isa.unknown_engine', None)


class MatmulPerfMode:
    """nisa.matmul_perf_mode (NKI 0.3+): none, or double_row (fp8 at twice the rate,
    NeuronCore-v3)."""

    none = 'none'
    double_row = 'double_row'


value('isa.matmul_perf_mode', MatmulPerfMode, '0.3+')


class NcVersion(str, enum.Enum):
    """nisa.nc_version: the NeuronCore generation (gen2: Trn1 and Inf2, gen3: Trn2, gen4:
    Trn3); each a name (.name, as the NKI Library's harness reads it) equal to its string, in
    the generations' order."""

    gen2 = 'gen2'
    gen3 = 'gen3'
    gen4 = 'gen4'


value('isa.nc_version', NcVersion)


@api('isa.get_nc_version', signature='')
def get_nc_version():
    """The NeuronCore generation of the platform the kernel is traced for (--config)."""
    api_name, site = called()
    return {2: NcVersion.gen2, 3: NcVersion.gen3, 4: NcVersion.gen4}[
        current(api_name).limits['isa_version']]

# Operations are given as nl functions (op=nl.add) or, as the ISA documentation spells them,
# numpy functions (op0=np.multiply).
# nl function -> the model's ALU operation (models/isa/isa.h)
_ALU = {'language.add': 'add', 'language.subtract': 'subtract', 'language.multiply': 'multiply',
        'language.maximum': 'max', 'language.minimum': 'min', 'language.max': 'max',
        'language.min': 'min', 'language.divide': 'divide', 'language.power': 'pow',
        'language.mod': 'mod', 'language.fmod': 'mod', 'language.abs_max': 'abs_max',
        'language.abs': 'abs',  # (|data|, its operand unused: the NKI Library's use)
        'language.equal': 'is_equal', 'language.not_equal': 'not_equal',
        'language.greater': 'is_gt', 'language.greater_equal': 'is_ge', 'language.less': 'is_lt',
        'language.less_equal': 'is_le', 'language.logical_and': 'logical_and',
        'language.logical_or': 'logical_or', 'language.logical_xor': 'logical_xor',
        'language.bitwise_and': 'bitwise_and', 'language.bitwise_or': 'bitwise_or',
        'language.bitwise_xor': 'bitwise_xor', 'language.left_shift': 'left_shift',
        'language.right_shift': 'right_shift'}
_NUMPY_ALU = {np.add: 'add', np.subtract: 'subtract', np.multiply: 'multiply', np.maximum: 'max',
              np.minimum: 'min', np.divide: 'divide', np.true_divide: 'divide',
              np.power: 'pow', np.mod: 'mod', np.equal: 'is_equal', np.not_equal: 'not_equal',
              np.greater: 'is_gt', np.greater_equal: 'is_ge', np.less: 'is_lt',
              np.less_equal: 'is_le', np.logical_and: 'logical_and',
              np.logical_or: 'logical_or', np.logical_xor: 'logical_xor',
              np.bitwise_and: 'bitwise_and', np.bitwise_or: 'bitwise_or',
              np.bitwise_xor: 'bitwise_xor', np.left_shift: 'left_shift',
              np.right_shift: 'right_shift', np.max: 'max', np.min: 'min'}
_REDUCE = {'language.add': 'add', 'language.sum': 'add', 'language.max': 'max',
           'language.maximum': 'max', 'language.min': 'min', 'language.minimum': 'min',
           'language.multiply': 'multiply', 'language.subtract': 'subtract'}
_NUMPY_REDUCE = {np.add: 'add', np.sum: 'add', np.maximum: 'max', np.max: 'max',
                 np.minimum: 'min', np.min: 'min', np.multiply: 'multiply',
                 np.subtract: 'subtract'}
# nl function -> the Scalar engine's activation function
_ACT = {f'language.{f}': f for f in ('exp', 'relu', 'reciprocal', 'rsqrt', 'sqrt', 'square',
                                      'sigmoid', 'tanh', 'silu', 'gelu', 'log',
                                      'gelu_apprx_tanh', 'softplus', 'mish', 'sin', 'cos',
                                      'arctan', 'abs', 'sign', 'erf', 'gelu_dx', 'silu_dx',
                                      'negative', 'tan', 'erf_dx', 'gelu_apprx_sigmoid')}
_ACT['language.copy'] = 'identity'
_NUMPY_ACT = {np.exp: 'exp', np.sqrt: 'sqrt', np.square: 'square', np.tanh: 'tanh',
              np.log: 'log', np.sin: 'sin', np.cos: 'cos', np.arctan: 'arctan', np.abs: 'abs',
              np.sign: 'sign', np.negative: 'negative', np.reciprocal: 'reciprocal'}
COMMUTATIVE = _ops.COMMUTATIVE


def _named(table, numpy_table, api_name, op, site, what='op'):
    name = table.get(getattr(op, '_nki_api', None))
    if name is None and numpy_table is not None:
        try:
            name = numpy_table.get(op)
        except TypeError:  # unhashable
            name = None
    if name is None:
        raise unsupported(api_name, f'{what}={getattr(op, "__name__", op)}', site)
    return name


def _alu(api_name, op, site, what='op'):
    return _named(_ALU, _NUMPY_ALU, api_name, op, site, what)


def _two_alus(api_name, op0, op1, reverse0, reverse1, site):
    """The two operations of a two-operation instruction, and its flags (a reversed operation
    that does not commute: rev0, rev1)."""
    alu0, alu1 = _alu(api_name, op0, site, 'op0'), _alu(api_name, op1, site, 'op1')
    flags = _ops._flags('rev0' if reverse0 and alu0 not in COMMUTATIVE else '',
                        'rev1' if reverse1 and alu1 not in COMMUTATIVE else '')
    return alu0, alu1, flags


def _check(api_name, site, mask=None, engine=None, allowed=('dve', 'act', 'pool', None)):
    whole_mask(mask, api_name, site)
    if engine not in allowed:
        raise unsupported(api_name, f'engine={engine}', site)


def _result(p, dst, site):
    """The instruction's result: returned (beta 1), or written into dst. An instruction with a
    second output (reduce_res) is recorded now, its result used or not."""
    if dst is None:
        if isinstance(p, _ops.Pending) and {'O', 'O?'} & set(_prims.PRIMS[p.prim].layout):
            if p.region is None:
                return p.materialize()
            p.materialize()  # (still the result: assigning it copies what its mask kept)
        return p
    _ops.assign(dst, p, site)
    return dst


@api('isa.nc_matmul',
     beta1='stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, '
           'is_transpose=False, tile_position=(), tile_size=(), mask=None, dst=None, '
           'accumulate=None, perf_mode=None',
     v0_2='dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, '
          'is_transpose=False, tile_position=(), tile_size=(), perf_mode=None',
     v0_3_plus='dst, stationary, moving, is_stationary_onezero=False, '
               'is_moving_onezero=False, is_transpose=False, accumulate=None, tile_position=(), '
               'tile_size=(), perf_mode=None')
def nc_matmul(stationary, moving, dst=None, is_stationary_onezero=False,
              is_moving_onezero=False, is_transpose=False, accumulate=None, tile_position=(),
              tile_size=(), perf_mode=None, mask=None):
    """stationary.T @ moving into PSUM (Tensor engine). Into dst: accumulate=True adds to dst,
    False overwrites it, None (the default, NKI 0.2's behaviour too) overwrites the locations no
    write reached since dst was declared and adds to the others (SDK 2.30-2.33 API reference).
    is_stationary_onezero / is_moving_onezero declare that operand ones and zeros: an fp32
    operand so declared takes half the Tensor engine's passes (the reference: "could lead to
    2x better performance" in fp32; nothing checks the values). A mask of tile indices keeps a
    block of the result (rows of stationary's columns, columns of moving's): the matmul of
    those, into that part of dst."""
    api_name, site = called()
    keep = mask if isinstance(mask, Mask) else None
    if keep is None:
        _check(api_name, site, mask)
    elif (is_transpose or getattr(perf_mode, 'value', perf_mode) not in (None, 'none') or
          tile_position or tile_size):
        raise unsupported(api_name, 'mask= of tile indices with is_transpose, perf_mode or '
                          'tile_position', site)
    if is_transpose:  # the Tensor engine's transpose: stationary.T, moving the identity
        if accumulate:
            raise KernelError(api_name, 'is_transpose=True does not accumulate', site)
        return _result(_ops.transpose_by_matmul(
            api_name, site, stationary, moving,
            ('moving_onezero',) if is_moving_onezero else ()), dst, site)
    if tile_position or tile_size:
        _pe_tile(api_name, site, tile_position, tile_size, stationary, perf_mode)
    mode = getattr(perf_mode, 'value', perf_mode)
    # beta 1's double_row_gen3, and NKI 0.x's double_row given [K, 2, M] and [K, 2, N] operands
    # (the NKI Library's form): each partition's two rows contracted together
    if mode == 'double_row_gen3' or (mode == 'double_row' and _two_rows(stationary, moving)):
        p = _ops.double_row_pair(api_name, site, stationary, moving)
    elif mode not in (None, 'none', 'double_row'):
        raise KernelError(api_name, f'perf_mode={perf_mode!r} (none or double_row; beta 1: '
                          'double_row_gen3)', site)
    else:
        hints = tuple(name for name, on in (('stationary_onezero', is_stationary_onezero),
                                            ('moving_onezero', is_moving_onezero)) if on)
        p = _ops.matmul(api_name, site, stationary, moving, mode == 'double_row', keep, hints)
    if dst is None:
        if accumulate is not None:
            raise KernelError(api_name, 'accumulate= needs dst=', site)
        return p
    if isinstance(dst, _ops.Pending):
        dst = dst.materialize()
    _ops.emit_into(p, dst, 'auto' if accumulate is None else bool(accumulate), site)
    p.result = dst
    return dst


def _two_rows(stationary, moving):
    """Whether both matmul operands are [K, 2, F]: the double-row layout of two rows a
    partition."""
    shapes = [tuple(getattr(x, 'shape', ())) for x in (stationary, moving)]
    return all(len(sh) == 3 and sh[1] == 2 for sh in shapes)


def _pe_tile(api_name, site, position, size, stationary, perf_mode):
    """tile_position= / tile_size= of nc_matmul: the matmul on a tile of the Tensor engine's
    array (row and column tiling: 2 x 64 rows or columns, 4 x 32 from NeuronCore-v3), checked
    as the reference states it. Timed as an ordinary matmul of its size: the model does not run
    tiles at once (a model choice, pessimistic for kernels that fill the array with several)."""
    try:
        (row, col), (rows, cols) = [int(x) for x in position], [int(x) for x in size]
    except (TypeError, ValueError):
        raise KernelError(api_name, f'tile_position={position!r} and tile_size={size!r}: '
                          '(row, column) pairs, both given', site) from None
    sizes = (32, 64, 128) if current(api_name).limits['isa_version'] >= 3 else (64, 128)
    if rows not in sizes or cols not in sizes:
        raise KernelError(api_name, f'tile_size={tuple(size)}: rows and columns of '
                          f'{", ".join(map(str, sizes))}', site)
    if row % rows or col % cols or row + rows > 128 or col + cols > 128:
        raise KernelError(api_name, f'tile_position={tuple(position)} is not a tile of '
                          f'size {tuple(size)} in the 128 x 128 array', site)
    if cols < 128 and getattr(perf_mode, 'value', perf_mode) not in (None, 'none'):
        raise KernelError(api_name, 'double_row does not combine with column tiling', site)
    shape = getattr(stationary, 'shape', None)
    if shape is not None and (shape[0] > rows or math.prod(shape[1:]) > cols):
        raise KernelError(api_name, f'a stationary of shape {tuple(shape)} does not fit a tile '
                          f'of {rows} x {cols}', site)


@api('isa.nc_transpose', beta1='data, engine=None, mask=None, dst=None, dtype=None',
     v0='dst, data, engine=None')
def nc_transpose(data, dst=None, engine=None, mask=None, dtype=None):
    """data [P, F] as [F, P]: in PSUM through the Tensor engine, or (engine=vector, at most
    32 x 32) on the Vector engine."""
    api_name, site = called()
    _check(api_name, site, None, engine, ('pe', 'dve', None))
    if engine == 'dve':  # the Vector engine's, at most 32 x 32
        if mask is not None:
            raise unsupported(api_name, 'mask= with engine=vector', site)
        return _result(_ops.vector_transpose(api_name, site, data, dtype), dst, site)
    p = _ops.transpose(api_name, site, data, mask)
    if dtype is not None and dtype_name(dtype) != p.dtype_name:
        raise unsupported(api_name, f'dtype={dtype_name(dtype)} (the transpose '
                          f'gives {p.dtype_name})', site)
    return _result(p, dst, site)


@api('isa.nc_stream_shuffle', beta1='src, dst, shuffle_mask, *, dtype=None, mask=None',
     v0='dst, src, shuffle_mask')
def nc_stream_shuffle(src, dst, shuffle_mask, dtype=None, mask=None):
    """Partitions moved within each quadrant of 32 on the Vector engine: dst partition i of a
    quadrant is src partition shuffle_mask[i] of it (of src itself when it has at most 32
    partitions: the NKI Library broadcasts one partition so). The model's instruction
    (stream_shuffle) carries masks of the form (a i + b) mod 32, which covers a broadcast of one
    partition, the identity, rotations and reversal, on a run of partitions of the quadrant
    (255 elsewhere: those keep dst's values, which the instruction then reads); other masks
    are not supported yet."""
    api_name, site = called()
    _check(api_name, site, mask)
    m = [int(x) for x in shuffle_mask]
    if len(m) != 32:
        raise KernelError(api_name, f'shuffle_mask has {len(m)} entries: it has 32, one per '
                          'partition of a quadrant', site)
    moved = [i for i, x in enumerate(m) if x != 255]
    lo, hi = (moved[0], moved[-1] + 1) if moved else (0, 0)
    a = (m[lo + 1] - m[lo]) % 32 if hi - lo > 1 else 0
    b = (m[lo] - a * lo) % 32 if moved else 0
    if not moved or len(moved) != hi - lo or \
            any(m[i] != (a * i + b) % 32 for i in range(lo, hi)):
        raise unsupported(api_name, f'the shuffle_mask {m} (the model\'s instruction takes '
                          'masks (a i + b) mod 32 on a run of partitions, 255 elsewhere)', site)
    return _result(_ops.stream_shuffle(api_name, site, src, dst, a, b, lo, hi, dtype), dst,
                   site)


@api('isa.activation',
     beta1='op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, '
           'mask=None, dtype=None, dst=None',
     v0_2_to_0_6='dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, '
                 'reduce_cmd=None',
     v0_7='dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, '
          'reduce_cmd=None, engine=None')
def activation(op, data, dst=None, bias=None, scale=1.0, mask=None, dtype=None, reduce_op=None,
               reduce_res=None, reduce_cmd=None, engine=None):
    """op(data * scale + bias), bias a [P, 1] tile (Scalar engine)."""
    api_name, site = called()
    _check(api_name, site, None, engine, ('act', None))
    func = _named(_ACT, _NUMPY_ACT, api_name, op, site)
    flags = _reduce_cmd(api_name, reduce_cmd, site)
    if reduce_res is not None or flags is not None:
        ralu = 'add' if reduce_op is None else _named(_REDUCE, _NUMPY_REDUCE, api_name,
                                                       reduce_op, site, 'reduce_op')
        return _result(_ops.activation(api_name, site, func, data, scale, None, dtype,
                                       mask, bias, ralu, reduce_res, flags), dst, site)
    if reduce_op is not None:
        raise KernelError(api_name, 'reduce_op= needs reduce_res= or reduce_cmd=', site)
    return _result(_ops.activation(api_name, site, func, data, scale, None, dtype, mask,
                                   bias), dst, site)


def _reduce_cmd(api_name, cmd, site):
    """The flags of activation_reduce for a reduce_cmd (nisa.reduce_cmd): '' for reset_reduce
    (and for idle or none, with which a reduce_res is written as by activation_reduce),
    'racc' for reduce, 'rzero' for reset."""
    name = getattr(cmd, 'name', cmd)
    if cmd is None or name in ('idle', 'reset_reduce'):
        return '' if name == 'reset_reduce' else None
    if name == 'reduce':
        return 'racc'
    if name == 'reset':
        return 'rzero'
    raise unsupported(api_name, f'reduce_cmd={name}', site)


class _ReduceCmd:
    """One command of nisa.reduce_cmd."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'reduce_cmd.{self.name}'


class ReduceCmd:
    """nisa.reduce_cmd: what an activation does with the Scalar engine's reduce registers."""

    idle = _ReduceCmd('idle')
    reset = _ReduceCmd('reset')
    reduce = _ReduceCmd('reduce')
    reset_reduce = _ReduceCmd('reset_reduce')
    load_reduce = _ReduceCmd('load_reduce')


value('isa.reduce_cmd', ReduceCmd)


@api('isa.activation_reduce',
     beta1='op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None',
     v0='dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0')
def activation_reduce(op, data, reduce_op, reduce_res, dst=None, bias=None, scale=1.0, mask=None,
                      dtype=None):
    """op(data * scale + bias), and the reduce_op reduction of each partition's results into
    reduce_res [P, 1], in one Scalar-engine instruction."""
    api_name, site = called()
    func = _named(_ACT, _NUMPY_ACT, api_name, op, site)
    ralu = _named(_REDUCE, _NUMPY_REDUCE, api_name, reduce_op, site, 'reduce_op')
    return _result(_ops.activation(api_name, site, func, data, scale, None,
                                   dtype, mask, bias, ralu, reduce_res), dst, site)



@api('isa.tensor_tensor', beta1='data1, data2, op, dtype=None, mask=None, engine=None, dst=None',
     v0='dst, data1, data2, op, engine=None')
def tensor_tensor(data1, data2, op, dst=None, dtype=None, mask=None, engine=None):
    """data1 <op> data2 elementwise (Vector engine, or GpSimd)."""
    api_name, site = called()
    _check(api_name, site, None, engine)
    return _result(_ops.tensor_tensor(api_name, site, data1, data2,
                                      _alu(api_name, op, site), engine, dtype, mask),
                   dst, site)


@api('isa.tensor_scalar',
     beta1='data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, '
           'dtype=None, mask=None, engine=None, dst=None',
     v0='dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, '
        'engine=None')
def tensor_scalar(data, op0, operand0, dst=None, reverse0=False, op1=None, operand1=None,
                  reverse1=False, dtype=None, mask=None, engine=None):
    """(data <op0> operand0) <op1> operand1: each operand a number or a [P, 1] tile, either
    operation reversed (operand <op> data) by reverse0 / reverse1; one instruction."""
    api_name, site = called()
    _check(api_name, site, None, engine)
    if op1 is None and operand1 is not None:
        raise KernelError(api_name, 'operand1= needs op1= (the second operation)',
                          site)
    alu1 = None if op1 is None else _alu(api_name, op1, site, 'op1')
    return _result(_ops.tensor_scalar(api_name, site, data,
                                      _alu(api_name, op0, site, 'op0'), operand0,
                                      engine, dtype, reverse0, mask, alu1, operand1, reverse1),
                   dst, site)


@api('isa.tensor_scalar_reduce',
     beta1='*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, '
           'mask=None',
     v0_2_to_0_6='dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False',
     v0_7='dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False, '
          'reduce_cmd=None, reduce_init=None, reduce_res_negate=False')
def tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res=None, dst=None,
                         reverse0=False, dtype=None, mask=None, reduce_cmd=None,
                         reduce_init=None, reduce_res_negate=False):
    """data <op0> operand0 (a number or a [P, 1] tile), and the reduce_op reduction of each
    partition's results into reduce_res [P, 1], in one Vector-engine instruction."""
    api_name, site = called()
    _check(api_name, site, mask)
    if _reduce_cmd(api_name, reduce_cmd, site) not in (None, ''):
        raise unsupported(api_name, 'reduce_cmd= accumulating across '
                          'instructions (the Vector engine\'s registers)', site)
    if reduce_init is not None or reduce_res_negate:
        raise unsupported(api_name, 'reduce_init= / reduce_res_negate=',
                          site)
    if reduce_res is None:
        raise KernelError(api_name, 'reduce_res= is required (the tile the '
                          'reduction goes to)', site)
    alu0 = _alu(api_name, op0, site, 'op0')
    ralu = _named(_REDUCE, _NUMPY_REDUCE, api_name, reduce_op, site,
                  'reduce_op')
    return _result(_ops.tensor_scalar_reduce(api_name, site, data, alu0,
                                             operand0, ralu, reduce_res, reverse0, dtype),
                   dst, site)


_CMP = {'language.equal': 'is_equal', 'language.not_equal': 'not_equal',
        'language.greater': 'is_gt', 'language.greater_equal': 'is_ge',
        'language.less': 'is_lt', 'language.less_equal': 'is_le'}
_NUMPY_CMP = {np.equal: 'is_equal', np.not_equal: 'not_equal', np.greater: 'is_gt',
              np.greater_equal: 'is_ge', np.less: 'is_lt', np.less_equal: 'is_le'}


@api('isa.affine_select', beta1='pred, on_true_tile, on_false_value, *, mask=None, dtype=None',
     v0='dst, pattern, offset=0, channel_multiplier=0, on_true_tile=None, on_false_value=None, '
        'cmp_op=None')
def affine_select(on_true_tile, on_false_value, pred=None, dst=None, pattern=None, offset=0,
                  channel_multiplier=0, cmp_op=None, mask=None, dtype=None):
    """on_true_tile where an affine predicate of the element's indices holds, else
    on_false_value, on the GpSimd engine (a causal mask). Beta 1: `pred` a comparison of
    nl.arange index expressions (`i_q - i_k >= 0`); NKI 0.x: the value offset +
    channel_multiplier * p + the pattern's steps (as nisa.iota), compared with 0 by cmp_op
    (nl.equal by default). The reference lists offset and channel_multiplier without
    defaults; the NKI Library's kernels call it without offset: 0 (as iota's)."""
    api_name, site = called()
    _check(api_name, site, mask)
    if dst is not None:
        if on_true_tile is None or on_false_value is None:
            raise KernelError(api_name, 'on_true_tile and on_false_value are required', site)
        t = _ops.operand(on_true_tile, api_name, site)
        cmp = 'is_equal' if cmp_op is None else _named(_CMP, _NUMPY_CMP, api_name,
                                                        cmp_op, site, 'cmp_op')
        try:
            dims = [(int(st), int(n)) for st, n in pattern if int(n) != 1]
        except (TypeError, ValueError):
            raise KernelError(api_name, f'pattern must be a list of [step, count] '
                              f'pairs, got {pattern!r}', site) from None
        total = math.prod(n for _, n in dims)
        if total != t.elems:
            raise KernelError(api_name, f'the pattern {pattern} gives {total} values '
                              f'per partition; on_true_tile has {t.elems}', site)
        fstep = dims[-1][0] if dims else 0
        for k, (st, _) in enumerate(dims):
            if st != fstep * math.prod(n for _, n in dims[k + 1:]):
                raise unsupported(api_name, f'the pattern {pattern} (only patterns '
                                  'that number the free elements in order)', site)
        flat = t if len(t.shape) == 2 else t.reshape((t.partitions, t.elems))
        return _result(_ops.affine_select(api_name, site,
                                          [int(channel_multiplier), fstep], int(offset), flat,
                                          on_false_value, cmp), dst, site)
    if not isinstance(pred, AffinePredicate):
        raise KernelError(api_name, 'pred must be a comparison of nl.arange index '
                          'expressions (such as i_q - i_k >= 0)', site)
    t = _ops.operand(on_true_tile, api_name, site)
    e = pred.expr
    if any(a >= len(t.shape) for a in e.terms):
        raise KernelError(api_name, f'the predicate uses a tile axis that a tile '
                          f'of shape {t.shape} does not have', site)
    for a, (n, _) in e.terms.items():
        if n != t.shape[a]:
            raise KernelError(api_name, f'the predicate ranges over {n} indices on '
                              f'axis {a}; on_true_tile has {t.shape[a]}', site)
    steps = [e.terms.get(a, (0, 0))[1] for a in range(len(t.shape))]
    return _ops.affine_select(api_name, site, steps, concrete(e.const), t,
                              on_false_value, pred.op, dtype)


@api('isa.bn_stats', beta1='data, *, mask=None, dtype=None', v0='dst, data')
def bn_stats(data, dst=None, mask=None, dtype=None):
    """Per partition, the count, mean and variance * count of the even and the odd elements of
    data (at most 512 elements): [P, 6], one Vector-engine instruction; a mask keeps some of
    the elements (all the partitions: the 2024 layernorm tutorial's v2 masks the last
    columns)."""
    api_name, site = called()
    return _result(_ops.bn_stats(api_name, site, data, dtype, mask), dst, site)


@api('isa.bn_aggr', beta1='data, *, mask=None, dtype=None', v0='dst, data')
def bn_aggr(data, dst=None, mask=None, dtype=None):
    """The mean and variance of each partition from one or more bn_stats results: [P, 2], one
    Vector-engine instruction."""
    api_name, site = called()
    _check(api_name, site, mask)
    return _result(_ops.bn_aggr(api_name, site, data, dtype), dst, site)


@api('isa.tensor_copy_predicated',
     beta1='src, dst, predicate, mask=None, dtype=None, reverse_pred=False',
     v0='dst, src, predicate, reverse_pred=False')
def tensor_copy_predicated(src, dst, predicate, mask=None, dtype=None, reverse_pred=False):
    """src copied into dst where predicate is not 0 (is 0, with reverse_pred), dst unchanged
    elsewhere: one Vector-engine select reading dst as its other operand."""
    api_name, site = called()
    _check(api_name, site, mask)
    if isinstance(dst, _ops.Pending):
        dst = dst.materialize()
    _ops.assign(dst, _ops.select(api_name, site, predicate, src, dst,
                                 bool(reverse_pred)), site)
    return dst


@api('isa.select_reduce',
     beta1='*, dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None, '
           'reduce_op=None, reverse_pred=False, mask=None, dtype=None',
     v0='dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None, reduce_op=None, '
        'reverse_pred=False')
def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None,
                  reduce_op=None, reverse_pred=False, mask=None, dtype=None):
    """np.where(predicate, on_true, on_false) into dst and, with reduce_res, each partition's
    max of it, in one Vector-engine instruction."""
    api_name, site = called()
    _check(api_name, site, mask)
    if _reduce_cmd(api_name, reduce_cmd, site) not in (None, ''):
        name = getattr(reduce_cmd, 'name', reduce_cmd)
        raise unsupported(api_name, f'reduce_cmd={name} (a reduction across '
                          'instructions)', site)
    ralu = 'max' if reduce_op is None else _named(_REDUCE, _NUMPY_REDUCE, api_name,
                                                   reduce_op, site, 'reduce_op')
    if ralu != 'max':
        raise KernelError(api_name, f'reduce_op={ralu}: only max', site)
    return _result(_ops.select(api_name, site, predicate, on_true, on_false,
                               bool(reverse_pred), reduce_res, ralu, dtype), dst, site)


_FP32_MIN = -3.4028234663852886e38  # the most negative float32 (the reference's FP32_MIN)


@api('isa.range_select',
     beta1='*, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None, '
           'reduce_res=None, reduce_op=None, range_start=0, on_false_value=None, mask=None, '
           'dtype=None',
     v0='dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None, '
        'reduce_res=None, reduce_op=None, range_start=0, on_false_value=None')
def range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, dst=None, reduce_cmd=None,
                 reduce_res=None, reduce_op=None, range_start=0, on_false_value=None, mask=None,
                 dtype=None):
    """on_true_tile where its free index + range_start passes comp_op0 against bound0 and
    comp_op1 against bound1 ([P, 1] tiles), else on_false_value (FP32_MIN by default), and the
    max of each partition's result into reduce_res: one Vector-engine instruction
    (NeuronCore-v3)."""
    api_name, site = called()
    _check(api_name, site, mask)
    if _reduce_cmd(api_name, reduce_cmd, site) not in (None, ''):
        raise unsupported(api_name, 'reduce_cmd= accumulating across instructions',
                          site)
    if reduce_op is not None and _named(_REDUCE, _NUMPY_REDUCE, api_name, reduce_op,
                                        site, 'reduce_op') != 'max':
        raise KernelError(api_name, 'reduce_op: only max', site)
    cmp0 = _named(_CMP, _NUMPY_CMP, api_name, comp_op0, site, 'comp_op0')
    cmp1 = _named(_CMP, _NUMPY_CMP, api_name, comp_op1, site, 'comp_op1')
    fill = _FP32_MIN if on_false_value is None or on_false_value is Ellipsis else on_false_value
    return _result(_ops.range_select(api_name, site, on_true_tile, cmp0, cmp1, bound0,
                                     bound1, range_start, fill, reduce_res, dtype), dst, site)


@api('isa.reciprocal', beta1='data, *, dtype=None, mask=None', v0='dst, data')
def reciprocal(data, dst=None, dtype=None, mask=None):
    """1 / data on the Vector engine, more precise than the Scalar engine's reciprocal
    activation: core.dve.reciprocal_cycles an element (the reference's 8; trn1 calibrated)."""
    api_name, site = called()
    return _result(_ops.reciprocal(api_name, site, data, dtype, mask), dst, site)


@api('isa.iota', beta1='expr, dtype, mask=None', v0_2='dst, pattern, offset, channel_multiplier=0',
     v0_3_plus='dst, pattern, offset=0, channel_multiplier=0')
def iota(expr=None, dtype=None, mask=None, dst=None, pattern=None, offset=0,
         channel_multiplier=0):
    """Index values on the GpSimd engine: value = offset + partition step * p + i. Beta 1:
    `nisa.iota(expr, dtype)` with an affine expression of nl.arange indices, returned; NKI 0.x:
    `nisa.iota(dst, pattern, offset, channel_multiplier=0)` into dst, each free element the sum
    of its pattern's step x index."""
    api_name, site = called()
    _check(api_name, site, mask)
    if dst is not None:
        if not isinstance(dst, _tensors.Tile):
            raise KernelError(api_name, f'dst must be a tile, got {type(dst).__name__}', site)
        axes = [(int(n), int(st)) for st, n in pattern]  # [(size, step)], outermost first
        count = math.prod(n for n, _ in axes)
        if count != dst.elems:
            raise KernelError(api_name, f'the pattern {pattern} gives {count} values per '
                              f'partition; dst has {dst.elems}', site)
        in_order, expected = True, 1
        for n, st in reversed(axes):
            in_order &= n == 1 or st == expected
            expected *= n
        # (a pattern that numbers the elements in order is the plain instruction's; any other
        # gives each element the sum of step x index: the same instruction and cost)
        _ops.assign(dst, _ops.iota(api_name, site, dst.shape, offset, channel_multiplier,
                                   dst.dtype_name, None if in_order else axes), site)
        return dst
    if isinstance(expr, (int, float)) or not isinstance(expr, (IndexRange, IndexExpr)):
        raise KernelError(api_name, 'expr must be an affine expression of nl.arange indices',
                          site)
    e = IndexExpr.of(expr)
    if e.grid:
        # an expression of nl.mgrid's axes: a tile of the whole (dense) grid, its values the
        # expression's at each grid point (the instruction's pattern; 0 along axes it leaves
        # out)
        parts, pstep = e.terms.get(0, (e.grid[0], 0))
        pattern = tuple(e.terms.get(a, (n, 0)) for a, n in enumerate(e.grid) if a > 0)
        return _ops.iota(api_name, site, (parts,) + e.grid[1:], concrete(e.const), pstep,
                         dtype, pattern)
    parts, pstep = e.terms.get(0, (1, 0))
    free = sorted(a for a in e.terms if a != 0)
    shape = (parts,) + tuple(e.terms[a][0] for a in free) if free else (parts, 1)
    expected = 1
    for a in reversed(free):
        size, coef = e.terms[a]
        if size > 1 and coef != expected:
            raise unsupported(api_name, 'an expression that does not number the free '
                              'elements in order (coefficient 1 on the innermost free index, '
                              'its size on the next)', site)
        expected *= size
    return _ops.iota(api_name, site, shape, concrete(e.const), pstep, dtype)


@api('isa.scalar_tensor_tensor',
     beta1='data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None, '
           'mask=None, engine=None, dst=None',
     v0='dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, engine=None')
def scalar_tensor_tensor(data, op0, operand0, op1, operand1, dst=None, reverse0=False,
                         reverse1=False, dtype=None, mask=None, engine=None):
    """(data op0 operand0) op1 operand1, operand0 a number or a [P, 1] tile and operand1 a
    tile of data's shape, in one Vector-engine instruction."""
    api_name, site = called()
    _check(api_name, site, None, engine, ('dve', None))
    alu0, alu1, flags = _two_alus(api_name, op0, op1, reverse0, reverse1,
                                  site)
    return _result(_ops.scalar_tensor_tensor(api_name, site, data, alu0,
                                             operand0, alu1, operand1, dtype, mask, flags),
                   dst, site)


@api('isa.tensor_tensor_scan',
     beta1='data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, '
           'mask=None, dst=None',
     v0='dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False')
def tensor_tensor_scan(data0, data1, initial, op0, op1, dst=None, reverse0=False,
                       reverse1=False, dtype=None, mask=None):
    """A scan along the free axis: out[:, i] = op1(op0(data0[:, i], out[:, i-1]), data1[:, i]),
    out[:, -1] = initial (a number); one Vector-engine instruction."""
    api_name, site = called()
    _check(api_name, site, mask)
    alu0, alu1, flags = _two_alus(api_name, op0, op1, reverse0, reverse1, site)
    return _result(_ops.tensor_tensor_scan(api_name, site, data0, data1,
                                           initial, alu0, alu1, dtype, flags), dst, site)


@api('isa.tensor_reduce',
     beta1='op, data, axis, mask=None, dtype=None, negate=False, keepdims=False, dst=None',
     v0='dst, op, data, axis, negate=False, keepdims=False')
def tensor_reduce(op, data, axis, dst=None, mask=None, dtype=None, negate=False, keepdims=False):
    """The reduction of data over its last free axes (all of them: one value per partition),
    negated by negate=True at no cost (Vector engine)."""
    api_name, site = called()
    _check(api_name, site)
    alu = _named(_REDUCE, _NUMPY_REDUCE, api_name, op, site)
    return _result(_ops.reduce(api_name, site, data, alu, axis, keepdims, dtype,
                               None, mask, bool(negate)), dst, site)


@api('isa.tensor_copy', beta1='src, mask=None, dtype=None, engine=None, dst=None',
     v0='dst, src, engine=None, dtype=None')
def tensor_copy(src, dst=None, mask=None, dtype=None, engine=None):
    """src copied (and cast to dst's dtype), on the given engine or the one the compiler
    picks. NKI 0.x's dtype= (the current matmul tutorial passes it; the reference does not
    list it): the copy writes dst's dtype; another dtype is said in a note."""
    api_name, site = called()
    _check(api_name, site, None, engine)
    if dst is not None and dtype is not None and hasattr(dst, 'dtype_name'):
        if dtype_name(dtype) != dst.dtype_name:
            current(api_name).note(site, api_name, f'dtype={dtype_name(dtype)} is not applied: '
                                   f'the copy writes dst\'s dtype, {dst.dtype_name} (NKI 0.x\'s '
                                   'reference has no dtype= here)')
        dtype = None
    return _result(_ops.copy(api_name, site, src, dtype, engine, mask), dst, site)


@api('isa.memset', beta1='shape, value, dtype=None, mask=None, engine=None',
     v0='dst, value, engine=None')
def memset(value, shape=None, dtype=None, mask=None, engine=None, dst=None):
    """A tile of `shape` filled with value (beta 1, returned), or dst filled (NKI 0.x)."""
    api_name, site = called()
    _check(api_name, site, mask, engine)
    if dst is not None:
        if not isinstance(dst, (_tensors.Tile, _tensors.TileRuns)):
            raise KernelError(api_name, f'dst must be a tile, got {type(dst).__name__}',
                              site)
        _ops.assign(dst, _ops.memset(api_name, site, dst.shape, value, dst.dtype_name,
                                     engine), site)
        return dst
    if dtype is None:
        raise KernelError(api_name, 'dtype= is required with a shape', site)
    return _ops.memset(api_name, site, tuple(shape), value, dtype, engine)


@api('isa.max8', beta1='src, mask=None, dtype=None, dst=None', v0='dst, src')
def max8(src, dst=None, mask=None, dtype=None):
    """The 8 largest values of each partition, largest first (Vector engine)."""
    api_name, site = called()
    _check(api_name, site, mask)
    return _result(_ops.max8(api_name, site, src), dst, site)


@api('isa.exponential', '0.x', signature='dst, src, max_value=0.0, reduce_res=None, '
     'reduce_cmd=None, reduce_init=0.0')
def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd=None, reduce_init=0.0):
    """exp(src - max_value) on the Vector engine, at 4x the Scalar engine's exp (NeuronCore-v4);
    max_value a number or a [P, 1] tile; with reduce_res (reduce_cmd as for nisa.activation:
    reduce sums onto the Vector engine's reduce registers, reset zeroes them), each row's sum
    into it."""
    api_name, site = called()
    if not (_ops._number(reduce_init) and float(reduce_init) == 0.0):
        raise unsupported(api_name, 'reduce_init other than 0 (reduce_cmd='
                          'load_reduce)', site)
    flags = _reduce_cmd(api_name, reduce_cmd, site)
    if flags == '' and reduce_res is None:
        raise unsupported(api_name, 'reduce_cmd=reset_reduce without reduce_res (give '
                          'reduce_res, or reduce onto the registers with reduce_cmd=reduce after '
                          'a reset)', site)
    return _result(_ops.exponential(api_name, site, src, max_value, reduce_res, flags),
                   dst, site)


@api('isa.nc_matmul_mx', '0.x', signature='dst, stationary, moving, stationary_scale, '
     'moving_scale, tile_position=None, tile_size=None, accumulate=None')
def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None):
    """An MX matmul (NeuronCore-v4): stationary [P, M] and moving [P, N] of x4-packed MX types
    (nl.float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4), each scaled by its scale (uint8
    or nl.float8_e8m0fnu, 4 partitions of each 32), contracted over the partitions and the 4
    packed values into dst [M, N] in PSUM (fp32 or bf16); accumulate as nc_matmul's."""
    api_name, site = called()
    if tile_position or tile_size:
        raise unsupported(api_name, 'tile_position= / tile_size= (Tensor-engine '
                          'row tiling)', site)
    p = _ops.matmul_mx(api_name, site, stationary, moving, stationary_scale,
                       moving_scale)
    if isinstance(dst, _ops.Pending):
        dst = dst.materialize()
    _ops.emit_into(p, dst, 'auto' if accumulate is None else bool(accumulate), site)
    p.result = dst
    return None


@api('isa.quantize_mx', '0.x', signature='dst, src, dst_scale')
def quantize_mx(dst, src, dst_scale):
    """src [P, 4F] (bf16 or fp16) quantized into dst [P, F] of an fp8 x4 MX type and its scales
    (Vector engine, NeuronCore-v4): each 8 partitions x 4 elements share the scale X = 2^(floor(
    log2 max|x|) - (emax - 1)), "two times larger" than OCP's (SDK 2.32 on), its exponent + 127
    at partition 32 (p / 32) + (p % 32) / 8 of dst_scale."""
    api_name, site = called()
    _ops.quantize_mx(api_name, site, dst, src, dst_scale)


@api('isa.topk', '0.6+', signature='val_dst, idx_dst, src, n, sorted=False')
def topk(val_dst, idx_dst, src, n, sorted=False):
    """The k largest values (k = val_dst's free size) of each 16-partition snake of src's first
    n elements, and their indices, written in the same snake layout into the first ceil(k / 16)
    columns of val_dst and idx_dst (GpSimd engine, NeuronCore-v3). Largest first, sorted or not
    (the reference leaves the unsorted order open)."""
    api_name, site = called()
    _ops.topk(api_name, site, val_dst, idx_dst, src, n)


@api('isa.sendrecv', '0.x', signature='src, dst, send_to_rank, recv_from_rank, pipe_id, '
     'dma_engine=None')
def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=None):
    """The two NeuronCores of an HBM stack exchange SBUF tiles: this core's src goes into the
    dst of core send_to_rank, core recv_from_rank's src into this dst (NeuronCore-v3, LNC=2).
    Every sendrecv is a meeting of the two cores (pipe_id groups change nothing in the
    model)."""
    api_name, site = called()
    if not isinstance(pipe_id, int) or isinstance(pipe_id, bool) or pipe_id < 0:
        raise KernelError(api_name, f'pipe_id must be a non-negative integer, got '
                          f'{pipe_id!r}', site)
    _ops.sendrecv(api_name, site, src, dst, send_to_rank, recv_from_rank)


@api('isa.core_barrier', '0.x', signature='data, cores, engine=None')
def core_barrier(data, cores, engine=None):
    """The two NeuronCores of an HBM stack wait for each other (after their accesses of `data`
    before it, before those after it): nisa.core_barrier, cores=(0, 1) only, on `engine` (the
    GpSimd engine by default, as SDK 2.33's). `data`: a shared HBM tensor, as the reference
    says, or a tile of the core's own, as AWS's MoE kernels pass. cores=(0,) (AWS's MoE
    kernels' single-shard paths write `(0)`) in a launch on one core: that core alone, which
    passes it at once."""
    api_name, site = called()
    try:
        cores = tuple(cores) if not isinstance(cores, int) else (cores,)
    except TypeError:
        raise KernelError(api_name, f'cores must be a tuple of core numbers, got {cores!r}',
                          site) from None
    alone = cores == (0,) and current(api_name).core is None
    if cores != (0, 1) and not alone:
        raise unsupported(api_name, f'cores={cores} (only (0, 1), the two cores of an HBM '
                          'stack, as the reference says, or (0,) in a launch on one core)',
                          site)
    eng = getattr(engine, 'value', engine)
    if eng not in (None, 'pool', 'dve', 'act', 'sp'):
        raise unsupported(api_name, f'engine={engine}', site)
    _ops.core_barrier(api_name, site, data, eng or 'pool')


class VirtualRegister:
    """nisa.VirtualRegister: a 32-bit scalar register of the engine sequencers (nisa.register_alloc
    gives one). Its value exists on the device only: the tracer cannot branch on it; it bounds
    the loops the device runs (nl.dynamic_range, nl.fori_loop), whose trip count the model reads
    from the values the kernel's operations compute (register_values)."""

    def __init__(self, number):
        self.number = number

    def _no_value(self, *_):
        site = user_site()
        raise KernelError('nisa.VirtualRegister', 'a register has no value while the kernel is '
                          'traced (bound a loop with it: nl.dynamic_range, nl.fori_loop)',
                          site)

    __bool__ = __int__ = __index__ = __float__ = _no_value

    def __repr__(self):
        return f'<register {self.number}>'


value('isa.VirtualRegister', VirtualRegister, '0.3+')


def _register(reg, api_name, site, what='dst'):
    if not isinstance(reg, VirtualRegister):
        raise KernelError(api_name, f'{what} must be a register (nisa.register_alloc), got '
                          f'{type(reg).__name__}', site)
    return reg


@api('isa.register_alloc', '0.3+', signature='x=None')
def register_alloc(x=None):
    """A new register; `x`: its initial value, an integer (register_move) or a one-element tile
    (register_load)."""
    api_name, site = called()
    trace = current(api_name)
    reg = VirtualRegister(trace.vregs)
    trace.vregs += 1
    if x is not None:
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            _ops.register_move(api_name, site, reg.number, int(x), None)
        else:
            _ops.register_load(api_name, site, reg.number, x)
    return reg


@api('isa.register_move', '0.3+', signature='dst, src')
def register_move(dst, src):
    """dst = src, an integer constant or another register."""
    api_name, site = called()
    dst = _register(dst, api_name, site)
    if isinstance(src, VirtualRegister):
        _ops.register_move(api_name, site, dst.number, 0, src.number)
    elif isinstance(src, (int, np.integer)) and not isinstance(src, bool):
        _ops.register_move(api_name, site, dst.number, int(src), None)
    else:
        raise KernelError(api_name, f'src must be an integer or a register, got '
                          f'{type(src).__name__}', site)


@api('isa.register_load', '0.3+', signature='dst, src')
def register_load(dst, src):
    """dst = src[0, 0], a tile of one element."""
    api_name, site = called()
    _ops.register_load(api_name, site, _register(dst, api_name, site).number, src)


@api('isa.register_store', '0.3+', signature='dst, src')
def register_store(dst, src):
    """dst[0, 0] = the register src, into a tile of one element."""
    api_name, site = called()
    _ops.register_store(api_name, site, dst, _register(src, api_name, site, 'src').number)


@api('isa.nonzero_with_count', '0.3+', signature='dst, src, index_offset=0, padding_val=-1')
def nonzero_with_count(dst, src, index_offset=0, padding_val=-1):
    """The indices of each row's nonzero elements, padding, and their count, at partitions 0,
    16, ..., 112 (each GpSimd core's first; the others unchanged), NeuronCore-v3 on."""
    api_name, site = called()
    _ops.nonzero_with_count(api_name, site, dst, src, index_offset, padding_val)


@api('isa.nc_find_index8', beta1='data, vals, mask=None, dtype=None, dst=None',
     v0='dst, data, vals')
def nc_find_index8(data, vals, dst=None, mask=None, dtype=None):
    """Where each of 8 values per partition first occurs in data (int32 indices)."""
    api_name, site = called()
    _check(api_name, site, mask)
    return _result(_ops.find_index8(api_name, site, data, vals), dst, site)


@api('isa.nc_match_replace8', v0='dst, data, vals, imm, dst_idx=None')
def nc_match_replace8(dst, data, vals, imm, dst_idx=None):
    """data with the first occurrence of each of 8 values per partition replaced by imm (the
    last value first, so duplicates take distinct occurrences), their indices into dst_idx
    (Vector engine, NeuronCore-v3)."""
    api_name, site = called()
    _ops.match_replace8(api_name, site, dst, data, vals, imm, dst_idx)


@api('isa.dma_transpose', beta1='src, axes=None, *, mask=None, dtype=None',
     v0_2_to_0_3='dst, src, axes=None, dge_mode=None',
     v0_4_plus='dst, src, axes=None, priority=None, dge_mode=None, oob_mode=None')
def dma_transpose(src, dst=None, axes=None, mask=None, dtype=None, dge_mode=None, priority=None,
                  oob_mode=None):
    """An HBM tensor (part) into SBUF with its dimensions permuted by `axes` (the reference's
    [1, 0], [2, 1, 0], [3, 1, 2, 0]; default the one of those of the part's rank) by the DMA
    engines, as nl.load_transpose2d (one DMA transpose of a 2-D part, else a transfer per run:
    _ops.transposed_hbm); an SBUF tile (part)
    into another as the compiler may lower it, by the Tensor engine (_ops.onchip_dma_transpose)."""
    api_name, site = called()
    priority = _dma_priority(api_name, priority, site, dge_mode)
    if isinstance(src, (_tensors.Tile, _tensors.TileRuns)):
        if dst is None or mask is not None or dtype is not None:
            raise unsupported(api_name, 'a transpose of an on-chip tile without dst=, or with '
                              'mask= or dtype=', site)
        _ops.onchip_dma_transpose(api_name, site, dst, src, axes)
        return dst
    view = _ops.transposed_hbm(api_name, src, site, axes)
    p = _ops.load(api_name, site, view, dtype, mask, priority)
    if dst is None:
        return p
    if not isinstance(dst, (_tensors.Tile, _tensors.TileRuns)):
        raise KernelError(api_name, f'dst must be a tile, got {type(dst).__name__}',
                          site)
    _ops.assign(dst, p, site)
    return dst


class DgeMode:
    """nisa.dge_mode: which descriptor generation a DMA uses (the model times every DMA alike;
    core.dma.hardware_dge sets where a core's transfers go)."""

    none = 'none'
    swdge = 'swdge'
    hwdge = 'hwdge'
    unknown = 'unknown'


value('isa.dge_mode', DgeMode)


def _dma_priority(api_name, priority, site, dge_mode=None):
    """priority= (NKI 0.4 on): NeuronCore-v4's DMA quality of service, 0 (the highest) to 3;
    the level (0 without one: a model choice, docs/hardware-facts.md 1f)."""
    if priority is None:
        return 0
    if dge_mode == DgeMode.none:
        raise KernelError(api_name, 'priority= with dge_mode=nisa.dge_mode.none: the DMA '
                          'quality of service is not supported when descriptor generation is '
                          'turned off (the reference)', site)
    if not isinstance(priority, int) or isinstance(priority, bool) or priority < 0:
        raise KernelError(api_name, f'priority={priority!r}: a DMA quality-of-service level, '
                          '0 the highest', site)
    return priority  # (the core's levels: the model's rule, checked as the program is built)


class _OobMode:
    """One mode of nisa.oob_mode."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'oob_mode.{self.name}'


class OobMode:
    """nisa.oob_mode: what a DMA of device-computed indices does out of bounds."""

    skip = _OobMode('skip')
    error = _OobMode('error')


value('isa.oob_mode', OobMode)


class DmaEngine:
    """nisa.dma_engine (NKI 0.x): which engine moves an SBUF-to-SBUF exchange between the two
    cores of LNC=2 (nisa.sendrecv's dma_engine=): the shared DMA, or GpSimd's own."""

    dma = 'dma'
    gpsimd_dma = 'gpsimd_dma'


value('isa.dma_engine', DmaEngine, '0.x')
# NKI 0.x's nki.isa.constants: the same enums under a second module (the NKI Library imports
# them from there; not in the API reference)
for _name in ('dge_mode', 'oob_mode', 'matmul_perf_mode', 'engine', 'nc_version', 'reduce_cmd'):
    alias(f'isa.constants.{_name}', f'isa.{_name}')


@api('isa.dma_compute', '0.3+',
     signature='dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=None')
def dma_compute(dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=None):
    """dst = reduce_op(srcs[0] * scales[0], ...) on the DMA engines, in fp32 ("only nl.add is
    supported ... all values in scales must be 1.0"): one source is a copy; more, from HBM
    (and dst itself, an SBUF tile, at most once), the first copied into dst unless dst is
    one, each other a read-add-write into dst."""
    api_name, site = called()
    if _alu(api_name, reduce_op, site, 'reduce_op') != 'add':
        raise KernelError(api_name, f'reduce_op={reduce_op!r}: only nl.add is '
                          'supported', site)
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    if scales is not None and len(scales) != len(srcs):
        raise KernelError(api_name, f'{len(scales)} scales for {len(srcs)} srcs',
                          site)
    if scales is not None and any(float(x) != 1.0 for x in scales):
        raise KernelError(api_name, 'scales: every value must be 1.0', site)
    if len(srcs) == 1:
        _dma_between(api_name, site, dst, srcs[0], None)
        return None
    others = [x for x in srcs if not (isinstance(x, _tensors.Tile) and
                                      isinstance(dst, _tensors.Tile) and x.same_region(dst))]
    if len(srcs) - len(others) > 1:
        raise KernelError(api_name, 'dst is among srcs more than once', site)
    if any(not isinstance(x, (_tensors.HbmAccess, _tensors.HbmTensor)) for x in others):
        raise unsupported(api_name, 'a read-add-write from an on-chip tile', site)
    # Several sources from HBM: the first loaded into dst (unless dst is one of the srcs), each
    # other added into it by the DMA's read-add-write (a model choice: one pass a source; no
    # cost of a many-source DMA compute is published)
    if len(others) == len(srcs):
        _dma_between(api_name, site, dst, others.pop(0), None)
    for x in others:
        _ops.load_add_into(api_name, site, dst, x)
    return None


def _dma_between(api_name, site, dst, src, mask, priority=0):
    """A DMA between HBM and SBUF: a load when src is in HBM, a store when dst is."""
    hbm = (_tensors.HbmAccess, _tensors.HbmTensor)
    if isinstance(src, hbm) and isinstance(dst, hbm):
        if mask is not None:
            raise unsupported(api_name, 'a mask on a copy from HBM to HBM', site)
        _ops.hbm_dma(api_name, site, dst, src)
        return
    if isinstance(src, hbm):
        if isinstance(dst, _tensors.TileBlocks):
            raise KernelError(api_name, 'index the block dimensions of dst', site)
        _ops.load_into(api_name, site, dst, src, mask, priority)
        return
    if isinstance(dst, hbm):
        _ops.store(api_name, site, dst, src, mask, priority)
        return
    _ops.sbuf_dma(api_name, site, dst, src, mask)


@api('isa.dma_copy', beta1='dst, src, mask=None, dge_mode=None',
     v0_2='dst, src, dst_rmw_op=None, oob_mode=None, dge_mode=None, unique_indices=True',
     v0_3='dst, src, oob_mode=None, dge_mode=None, engine=None',
     v0_4_plus='dst, src, priority=None, oob_mode=None, dge_mode=None, engine=None')
def dma_copy(dst, src, mask=None, dge_mode=None, dst_rmw_op=None, oob_mode=None,
             unique_indices=True, engine=None, priority=None):
    """A DMA between HBM and SBUF: a load when src is in HBM, a store when dst is."""
    api_name, site = called()
    priority = _dma_priority(api_name, priority, site, dge_mode)
    if dst_rmw_op is not None:  # dst += src (the DMA's read-add-write; only nl.add)
        if _alu(api_name, dst_rmw_op, site, 'dst_rmw_op') != 'add':
            raise KernelError(api_name, f'dst_rmw_op={dst_rmw_op!r}: only nl.add is '
                              'supported', site)
        if not isinstance(src, (_tensors.HbmAccess, _tensors.HbmTensor)):
            raise unsupported(api_name, 'dst_rmw_op= from an on-chip tile (a '
                              'read-add-write from SBUF)', site)
        _ops.load_add_into(api_name, site, dst, src, priority)
        return None
    # oob_mode (skip or error) is about offsets computed on the device (a run-time offset,
    # an indirect DMA: checked as the kernel runs); the accesses known when the kernel is
    # traced are checked then, and one out of bounds is an error at its line whatever the mode
    if oob_mode is not None and getattr(oob_mode, 'name', oob_mode) not in ('skip', 'error'):
        raise KernelError(api_name, f'oob_mode={oob_mode!r} (nisa.oob_mode.skip or '
                          'error)', site)
    if oob_mode is not None:
        for side in (dst, src):
            if isinstance(side, (_tensors.OffsetAccess, _tensors.GatherAccess)):
                side.oob_mode = getattr(oob_mode, 'name', oob_mode)
    _dma_between(api_name, site, dst, src, mask, priority)
    return None


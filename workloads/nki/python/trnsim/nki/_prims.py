"""The instruction set a kernel is recorded in: one primitive per call of the C++ kernel
builder (workloads/builder/kernel_builder.h), each declared once with its operands (their order
in the recording's text form, which workloads/nki/recording_reader.cpp reads) and its values
(numpy, on [partitions, elements] arrays in float32, int32 for int32; the interpreter rounds the
result to the destination's dtype).

Operand kinds: T a tile (dst first), T? an optional tile, O a second output tile, H an HBM
access, alu an operation, eng an engine, func an activation function, f a number, acc a matmul's
accumulation, flags instruction flags ('rev0|neg', '' for none), str text (the rest of the line).

The primitives declared with `instruction` are one instruction of the model's ISA each
(models/isa/isa.h), recorded generically as `ins ENGINE OPCODE field=value ...` with the
trace's field names; a new instruction needs its declaration there, its cost rule, and one here."""

import math

import numpy as np

def _as_int(v):
    """The int32 value of a bitwise operation's operand (truncated, saturated; NaN the least),
    as the model's ALU takes it."""
    v = np.asarray(v, dtype=np.float64)
    out = np.trunc(np.clip(np.nan_to_num(v, nan=-2.0 ** 31), -2.0 ** 31, 2.0 ** 31 - 1))
    return out.astype(np.int64)


def _from_int(v):
    return np.asarray(np.asarray(v, dtype=np.int64).astype(np.int32), dtype=np.float32)


def _mod(a, b):
    """numpy's mod (the divisor's sign), as the model's ALU computes it."""
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m).astype(np.float32)


def _shift_left(a, b):
    n, v = _as_int(b), _as_int(a)
    ok = (n >= 0) & (n <= 31)
    r = np.where(ok, (v << np.where(ok, n, 0)) & 0xffffffff, 0)
    return np.asarray(r).astype(np.uint32).view(np.int32).astype(np.float32)


def _shift_right(a, b):
    n = _as_int(b)
    return _from_int(np.where(n >= 0, _as_int(a) >> np.clip(n, 0, 31), 0))


def _flag(f):
    return lambda a, b: f(a, b).astype(np.float32)


# The ALU operations (models/isa/isa.h), in float32: comparisons and logical operations give
# 1 or 0; the bitwise operations act on the int32 values of their operands.
ALU = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply, 'max': np.maximum,
       'min': np.minimum, 'divide': np.divide, 'pow': np.power, 'mod': _mod,
       'abs_max': lambda a, b: np.maximum(np.abs(a), np.abs(b)),
       'abs': lambda a, b: np.abs(a),
       'is_equal': _flag(np.equal), 'not_equal': _flag(np.not_equal),
       'is_gt': _flag(np.greater), 'is_ge': _flag(np.greater_equal), 'is_lt': _flag(np.less),
       'is_le': _flag(np.less_equal),
       'logical_and': _flag(lambda a, b: (a != 0) & (b != 0)),
       'logical_or': _flag(lambda a, b: (a != 0) | (b != 0)),
       'logical_xor': _flag(lambda a, b: (a != 0) ^ (b != 0)),
       'bitwise_and': lambda a, b: _from_int(_as_int(a) & _as_int(b)),
       'bitwise_or': lambda a, b: _from_int(_as_int(a) | _as_int(b)),
       'bitwise_xor': lambda a, b: _from_int(_as_int(a) ^ _as_int(b)),
       'left_shift': _shift_left, 'right_shift': _shift_right}
def alu(name, a, b, reverse=False):
    """a <name> b (b <name> a when `reverse`), in float32."""
    with np.errstate(all='ignore'):
        out = ALU[name](b, a) if reverse else ALU[name](a, b)
    return np.asarray(out, dtype=np.float32)


def reduce_rows(name, x, groups=1):
    """The reduction `name` of each of `groups` equal groups of each row of x [P, N], in order
    (a left fold, as the model's ALU): [P, groups]."""
    p = x.shape[0]
    g = x.reshape(p, groups, -1)
    acc = g[:, :, 0].astype(np.float32)
    with np.errstate(all='ignore'):
        for k in range(1, g.shape[2]):
            acc = ALU[name](acc, g[:, :, k]).astype(np.float32)
    return acc
ENGINES = ('pe', 'dve', 'act', 'pool', 'sp')


def _erf(x):
    try:
        from scipy.special import erf  # python3-scipy
    except ImportError:
        erf = np.vectorize(math.erf, otypes=[np.float64])
    return erf(x)


_INV_SQRT2 = np.float32(0.70710678118654752)

# The activation functions of the Scalar engine (models/isa/isa.h), by the model's names, in
# float32 in the model's order of operations.
ACT = {'identity': lambda x: x,
       'relu': lambda x: np.maximum(x, 0),
       'exp': np.exp,
       'reciprocal': lambda x: 1.0 / x,
       'rsqrt': lambda x: 1.0 / np.sqrt(x),
       'sqrt': np.sqrt,
       'square': lambda x: x * x,
       'sigmoid': lambda x: 1.0 / (1.0 + np.exp(-x)),
       'tanh': np.tanh,
       'silu': lambda x: x / (1.0 + np.exp(-x)),
       'gelu': lambda x: 0.5 * x * (1.0 + _erf(x * np.float32(0.70710678))),
       'log': np.log,
       'gelu_apprx_tanh': lambda x: x / (np.float32(1) + np.exp(
           np.float32(-1.5957691216057308) * (x + np.float32(0.044715) * x * x * x))),
       'softplus': lambda x: np.log1p(np.exp(x)),
       'mish': lambda x: x * np.tanh(np.log1p(np.exp(x))),
       'sin': np.sin, 'cos': np.cos, 'arctan': np.arctan, 'abs': np.abs, 'sign': np.sign,
       'erf': lambda x: _erf(x).astype(np.float32),
       'gelu_dx': lambda x: (np.float32(0.5) * (np.float32(1) + _erf(x * _INV_SQRT2).astype(
           np.float32)) + x * _INV_SQRT2 * np.float32(0.56418958354775628) *
           np.exp(np.float32(-0.5) * x * x)),
       'silu_dx': lambda x: _silu_dx(x),
       'negative': np.negative,
       'tan': np.tan,
       'erf_dx': lambda x: np.float32(1.1283791670955126) * np.exp(-x * x),
       'gelu_apprx_sigmoid': lambda x: x / (np.float32(1) + np.exp(np.float32(-1.702) * x))}


def _silu_dx(x):
    s = np.float32(1) / (np.float32(1) + np.exp(-x))
    return s * (np.float32(1) + x * (np.float32(1) - s))


class Prim:
    """A primitive: its name (the builder call), operand kinds and values. impl takes the
    operands after dst (tiles as arrays, a second output O left out; and dst's [partitions,
    elements] shape last when `shaped`) and returns dst's values. An instruction primitive
    (`opcode` set) names its operands by the trace's fields (`fields`, in layout order);
    `reduce`: the field whose operation reduces each row of dst (as stored) into the second
    output ('=max': that operation, fixed); `elementwise`: each result element depends on the same element of each tile operand
    (a [P, 1] operand: its partition's); `values_only`: how many operands after the layout's
    only the values take (not recorded)."""

    def __init__(self, name, layout, impl, shaped, opcode=None, fields=(), reduce=None,
                 elementwise=False, values_only=0):
        self.name, self.layout, self.impl, self.shaped = name, layout, impl, shaped
        self.opcode, self.fields, self.reduce = opcode, fields, reduce
        self.elementwise, self.values_only = elementwise, values_only


PRIMS = {}


def prim(name, *layout, shaped=False):
    def declare(impl):
        PRIMS[name] = Prim(name, layout, impl, shaped)
        return impl
    return declare


_FIELD_KINDS = {'dst': 'T', 'src0': 'T', 'src1': 'T', 'src2': 'T', 'dst1': 'O', 'alu': 'alu',
                'alu1': 'alu', 'imm': 'f', 'imm1': 'f', 'imm2': 'f', 'imm3': 'f', 'func': 'func',
                'flags': 'flags',
                'eng': 'eng'}


def instruction(name, opcode, *fields, shaped=False, reduce=None, elementwise=True,
                values_only=0):
    """Declares primitive `name`, one `opcode` instruction (models/isa/isa.h) with the trace
    fields given in order (dst first; a tile field ending in '?' is optional; 'eng' the engine
    that runs it)."""
    names = tuple(f.rstrip('?') for f in fields)
    layout = tuple(_FIELD_KINDS[n] + ('?' if f.endswith('?') else '')
                   for f, n in zip(fields, names))

    def declare(impl):
        PRIMS[name] = Prim(name, layout, impl, shaped, opcode, names, reduce, elementwise,
                           values_only)
        return impl
    return declare


# (a DMA's optional last operand: its quality-of-service level, 'priority=N', no value's concern)
# ('bits': the tensor's bytes read as the tile's dtype, no cast: NkiTensor.view / .ap(dtype=);
# or 'transpose': one DMA transpose, H the source, read transposed by the interpreter)
@prim('load', 'T', 'H', 'prio?', 'bits?')
def _load(src, priority=None, bits=None):
    return src


@prim('gather', 'T', 'H', 'T')
def _gather(src, index):
    """An indirect load (the interpreter reads the rows the index names: _Interpreter._gather);
    recorded with the rows it is timed on."""
    return src


@prim('scatter', 'H', 'T', 'T')
def _scatter(src, index):
    """An indirect store (the interpreter writes the rows the index names:
    _Interpreter._scatter); recorded with the rows it is timed on."""
    return src


@prim('dma', 'T', 'T')
def _dma(src):
    """A DMA between two SBUF tiles: the values, into dst's dtype."""
    return src


@prim('hbm_dma', 'H', 'H')
def _hbm_dma(src):
    """A DMA from one HBM access to another (the interpreter copies the values:
    _Interpreter._exec)."""
    return src


@prim('load_at', 'T', 'H', 'T')
def _load_at(src, offset):
    """A load from an HBM access whose start moves at run time by the value of a [1, 1] tile
    (NkiTensor.ap's scalar_offset: the interpreter reads it, _Interpreter._dma_at); recorded
    with the access it is timed on."""
    return src


@prim('store_at', 'H', 'T', 'T')
def _store_at(src, offset):
    """A store to an HBM access whose start moves at run time (as load_at)."""
    return src


@prim('load_add', 'T', 'H', 'prio?')
def _load_add(src, priority=None):
    """dst += src by a DMA read-add-write: the interpreter adds dst's values, in fp32."""
    return src


@prim('store', 'H', 'T', 'prio?')
def _store(src, priority=None):
    return src


@prim('copy', 'T', 'T')
def _copy(a):
    return a


@prim('matmul', 'T', 'T', 'T', 'acc', 'mode?')
def _matmul(stationary, moving, accumulate, mode=None):
    """(mode: 'double_row', the fp8 double-row mode, and the operands declared ones and zeros,
    'stationary_onezero' and 'moving_onezero', space-separated: the same values)"""
    return stationary.T @ moving


@prim('matmul_mx', 'T', 'T', 'T', 'T', 'T', 'acc')
def _matmul_mx(stationary, moving, stationary_scale, moving_scale, accumulate):
    """(the interpreter computes it with the operands' MX types: mx_matmul_values)"""


def _mx_scales(scale, partitions, columns):
    """The scale factor of each element [p, j] of MX data of `partitions` partitions: 2^(s -
    127) of scale element [32 (p / 32) + (p % 32) / 8, j] (0xFF: NaN)."""
    p = np.arange(partitions)
    bits = np.asarray(scale, dtype=np.int64)[(32 * (p // 32) + p % 32 // 8)][:, :columns]
    return np.where(bits == 0xFF, np.float32(np.nan),
                    np.ldexp(np.float32(1), (bits - 127).astype(np.int32))).astype(np.float32)


def mx_matmul_values(stationary, st_dtype, moving, mv_dtype, stationary_scale, moving_scale):
    """nisa.nc_matmul_mx: sum over partitions p and packed values q of stationary[p, m].q *
    its scale * moving[p, n].q * its scale (the MX deep dive's reference: dequantize, then
    contract over the partitions and the x4 dimension), in float32."""
    from . import _dtypes
    P, M = np.shape(stationary)
    N = np.shape(moving)[1]
    st = _dtypes.unpack_mx(stationary, st_dtype) * _mx_scales(stationary_scale, P, M)[..., None]
    mv = _dtypes.unpack_mx(moving, mv_dtype) * _mx_scales(moving_scale, P, N)[..., None]
    return np.einsum('pmq,pnq->mn', st.astype(np.float64), mv.astype(np.float64)).astype(
        np.float32)


def quantize_mx_values(src, dst_dtype, scale_before):
    """nisa.quantize_mx: each 8 partitions x 4 elements (one packed column) divided by X =
    2^(floor(log2 max|x|) - (emax - 1)) (emax 8 for e4m3fn, 15 for e5m2; 2^-127 for a group of
    zeros: "a block scale that is two times larger" than OCP's, SDK 2.32 on) and packed, its
    exponent + 127 into the scale at partition 32 (p / 32) + (p % 32) / 8; the scale's other
    partitions keep their values. Returns (dst bits, scale bits)."""
    from . import _dtypes
    x = np.asarray(src, dtype=np.float32)
    P, F = x.shape
    groups = x.reshape(P // 8, 8, F // 4, 4)
    amax = np.nanmax(np.abs(groups), axis=(1, 3)) if groups.size else np.zeros((P // 8, F // 4))
    amax = np.nan_to_num(np.minimum(amax, np.finfo(np.float32).max), nan=0.0)
    emax = 8 if dst_dtype == 'float8_e4m3fn_x4' else 15
    e = np.where(amax > 0, np.frexp(amax)[1] - 1 - (emax - 1), -127)
    e = np.clip(e, -127, 127).astype(np.int32)
    scaled = groups * np.ldexp(np.float32(1), -e)[:, None, :, None]
    bits = _dtypes.pack_fp8(scaled.reshape(P, F // 4, 4), dst_dtype)
    scale = np.array(scale_before, dtype=np.int64)
    g = np.arange(P // 8)
    scale[32 * (g // 4) + g % 4, :F // 4] = e + 127
    return bits, scale


@prim('transpose', 'T', 'T', 'mode?')
def _transpose(a, mode=None):
    """(mode: 'moving_onezero', the identity declared ones and zeros: the same values)"""
    return a.T


# The register instructions: an engine sequencer's 32-bit registers (the interpreter keeps
# them: _Interpreter._register); imm is the register's number.
@instruction('isa.register_load', 'register_load', 'src0', 'imm', 'eng', elementwise=False)
def _register_load(src, number):
    """register imm = src[0, 0]"""


@instruction('isa.register_store', 'register_store', 'dst', 'imm', 'eng', elementwise=False)
def _register_store(number):
    """dst[0, 0] = register imm"""


@instruction('isa.register_move', 'register_move', 'imm', 'imm1', 'imm2', 'eng',
             elementwise=False)
def _register_move(number, constant, source):
    """register imm = register imm2 (imm2 >= 0), else imm1"""


REGISTER_OPS = ('isa.register_load', 'isa.register_store', 'isa.register_move')


@prim('barrier', 'eng', 'H')
def _barrier(engine, tensor):
    """nisa.core_barrier: orders the cores' accesses of a shared HBM tensor (no values)."""


@prim('tile_barrier', 'eng', 'T')
def _tile_barrier(engine, tile):
    """nisa.core_barrier over a tile of this core: the cores meet after this core's accesses of
    the tile before it, and before its accesses after it (no values)."""


@prim('sendrecv', 'T', 'T')
def _sendrecv(src):
    """nisa.sendrecv: the interpreter moves the other core's src into dst (the ranks follow
    the operands)."""
    return src


@prim('print', 'T', 'str')
def _print(a, prefix):
    print(prefix, a)


def _per_partition(t, a):
    return t.reshape(a.shape[0], 1)


def _scalar(tile, imm, a):
    """A [P, 1] operand's values, or the immediate."""
    return np.float32(imm) if tile is None else _per_partition(tile, a)


@instruction('isa.tensor_scalar', 'tensor_scalar', 'dst', 'src0', 'src1?', 'src2?', 'alu', 'imm',
             'alu1', 'imm1', 'flags', 'eng')
def _isa_tensor_scalar(a, s0, s1, alu0, imm, alu1, imm1, flags, engine):
    x = alu(alu0, a, _scalar(s0, imm, a), 'rev0' in flags)
    if alu1 == 'bypass':
        return x
    return alu(alu1, x, _scalar(s1, imm1, a), 'rev1' in flags)


@instruction('isa.tensor_tensor', 'tensor_tensor', 'dst', 'src0', 'src1', 'alu', 'eng')
def _isa_tensor_tensor(a, b, alu0, engine):
    return alu(alu0, a, b.reshape(a.shape))


def _activate(a, bias, scale, func, imm):
    s = _scalar(scale, imm if imm else 1.0, a)
    b = np.float32(0) if bias is None else _per_partition(bias, a)
    with np.errstate(all='ignore'):
        return np.asarray(ACT[func]((a * s + b).astype(np.float32)), dtype=np.float32)


@instruction('isa.activation', 'activation', 'dst', 'src0', 'src1?', 'src2?', 'func', 'imm',
             'eng')
def _isa_activation(a, bias, scale, func, imm, engine):
    """func(a * scale + bias): scale src2 [P, 1] or imm (0: 1), bias src1 [P, 1] or 0."""
    return _activate(a, bias, scale, func, imm)


@instruction('isa.activation_reduce', 'activation_reduce', 'dst', 'dst1?', 'src0', 'src1?',
             'src2?', 'func', 'imm', 'alu', 'flags', 'eng', reduce='alu')
def _isa_activation_reduce(a, bias, scale, func, imm, alu0, flags, engine):
    """The activation; its row reductions go through the Scalar engine's reduce registers
    (the interpreter keeps them: racc adds onto them, rzero zeroes them) into dst1."""
    return _activate(a, bias, scale, func, imm)


@instruction('isa.tensor_scalar_reduce', 'tensor_scalar_reduce', 'dst', 'dst1', 'src0', 'src1?',
             'alu', 'imm', 'alu1', 'flags', 'eng', reduce='alu1')
def _isa_tensor_scalar_reduce(a, s0, alu0, imm, alu1, flags, engine):
    return alu(alu0, a, _scalar(s0, imm, a), 'rev0' in flags)


@instruction('isa.tensor_reduce', 'tensor_reduce', 'dst', 'src0', 'alu', 'flags', 'eng',
             shaped=True, elementwise=False)
def _isa_tensor_reduce(a, alu0, flags, engine, shape):
    """Each of dst's elements reduces its group of a's row; 'neg' negates."""
    r = reduce_rows(alu0, a, int(np.prod(shape[1:])))
    return -r if 'neg' in flags else r


@instruction('isa.exponential', 'exponential', 'dst', 'dst1?', 'src0', 'src1?', 'imm', 'flags',
             'eng', reduce='=add')
def _isa_exponential(a, m, imm, flags, engine):
    """exp(a - m), m a [P, 1] tile or the immediate (Vector engine, NeuronCore-v4); its row sums
    go through the Vector engine's reduce registers (the interpreter keeps them) into dst1."""
    with np.errstate(all='ignore'):
        return np.exp(np.float32(a) - _scalar(m, imm, a), dtype=np.float32)


@instruction('isa.reciprocal', 'reciprocal', 'dst', 'src0', 'eng')
def _isa_reciprocal(a, engine):
    with np.errstate(all='ignore'):
        return np.float32(1) / a


@instruction('isa.transpose', 'transpose', 'dst', 'src0', 'eng', elementwise=False)
def _isa_transpose(a, engine):
    """The Vector engine's transpose (at most 32 x 32): the Tensor engine's values."""
    return _transpose(a)


@instruction('isa.scalar_tensor_tensor', 'scalar_tensor_tensor', 'dst', 'src0', 'src1', 'src2?',
             'alu', 'imm', 'alu1', 'flags', 'eng')
def _isa_scalar_tensor_tensor(a, b, s, alu0, imm, alu1, flags, engine):
    return alu(alu1, alu(alu0, a, _scalar(s, imm, a), 'rev0' in flags), b.reshape(a.shape),
               'rev1' in flags)


@instruction('isa.tensor_tensor_scan', 'tensor_tensor_scan', 'dst', 'src0', 'src1', 'src2?',
             'alu', 'imm', 'alu1', 'flags', 'eng', elementwise=False)
def _isa_tensor_tensor_scan(a, b, init, alu0, imm, alu1, flags, engine):
    """The scan from `imm`, or from each partition's value of the [P, 1] tile `init`."""
    y = b.reshape(a.shape)
    out = np.empty_like(a, dtype=np.float32)
    prev = (np.asarray(init, dtype=np.float32).reshape(a.shape[0]) if init is not None else
            np.full(a.shape[0], imm, dtype=np.float32))
    for i in range(a.shape[1]):
        prev = alu(alu1, alu(alu0, a[:, i], prev, 'rev0' in flags), y[:, i], 'rev1' in flags)
        out[:, i] = prev
    return out


@instruction('isa.affine_select', 'affine_select', 'dst', 'src0', 'alu', 'imm', 'imm1', 'imm2',
             'imm3', 'eng', shaped=True)
def _isa_affine_select(a, cmp, c, pstep, fstep, fill, engine, shape):
    """a where (c + pstep * p + fstep * i) <cmp> 0, else fill (GpSimd engine)."""
    p = np.arange(shape[0], dtype=np.float64)[:, None]
    i = np.arange(int(np.prod(shape[1:])), dtype=np.float64)[None, :]
    v = (np.float64(c) + np.float64(pstep) * p + np.float64(fstep) * i).astype(np.float32)
    keep = alu(cmp, v, np.float32(0)) != 0
    return np.where(keep, a.reshape(shape[0], -1), np.float32(fill))


@instruction('isa.bn_stats', 'bn_stats', 'dst', 'src0', 'eng', elementwise=False)
def _isa_bn_stats(a, engine):
    """Per half (even, then odd elements): count, mean, sum of squared deviations, in fp32 in
    the model's order (left folds)."""
    out = []
    for half in (0, 1):
        x = a[:, half::2].astype(np.float32)
        n = np.float32(x.shape[1])
        total = reduce_rows('add', x)[:, 0] if x.shape[1] else np.zeros(a.shape[0], np.float32)
        mean = total / n if n > 0 else np.zeros_like(total)
        dev = (x - mean[:, None]).astype(np.float32)
        m2 = reduce_rows('add', dev * dev)[:, 0] if x.shape[1] else np.zeros_like(total)
        out += [np.full(a.shape[0], n, np.float32), mean, m2]
    return np.stack(out, axis=1).astype(np.float32)


@instruction('isa.bn_aggr', 'bn_aggr', 'dst', 'src0', 'eng', elementwise=False)
def _isa_bn_aggr(a, engine):
    """The (count, mean, M2) triples of each row combined: mean, variance (fp32)."""
    t = a.reshape(a.shape[0], -1, 3).astype(np.float32)
    count = np.zeros(a.shape[0], np.float32)
    weighted = np.zeros(a.shape[0], np.float32)
    for k in range(t.shape[1]):
        count = count + t[:, k, 0]
        weighted = weighted + t[:, k, 0] * t[:, k, 1]
    with np.errstate(all='ignore'):
        mean = np.where(count > 0, weighted / count, np.float32(0)).astype(np.float32)
        m2 = np.zeros(a.shape[0], np.float32)
        for k in range(t.shape[1]):
            dev = t[:, k, 1] - mean
            m2 = np.where(t[:, k, 0] > 0, m2 + (t[:, k, 2] + t[:, k, 0] * dev * dev), m2)
        var = np.where(count > 0, m2 / count, np.float32(0))
    return np.stack([mean, var], axis=1).astype(np.float32)


@instruction('isa.select', 'select', 'dst', 'dst1?', 'src0', 'src1', 'src2?', 'imm', 'alu',
             'flags', 'eng', reduce='alu')
def _isa_select(pred, on_true, on_false, imm, alu0, flags, engine):
    """on_true where pred is not 0 (is, with rev0), else on_false ([P, 1], of the shape, or
    imm); the optional second output reduces each row (the interpreter)."""
    keep = (pred != 0) != ('rev0' in flags)
    if on_false is None:
        other = np.float32(imm)
    elif on_false.size == pred.shape[0] and pred.size != pred.shape[0]:
        other = on_false.reshape(pred.shape[0], 1)
    else:
        other = on_false.reshape(pred.shape)
    return np.where(keep, on_true.reshape(pred.shape), other).astype(np.float32)


@instruction('isa.range_select', 'range_select', 'dst', 'dst1?', 'src0', 'src1', 'src2', 'alu',
             'alu1', 'imm', 'imm1', 'eng', reduce='=max')
def _isa_range_select(a, bound0, bound1, cmp0, cmp1, start, fill, engine):
    """a where (i + start) <cmp0> bound0[p] and (i + start) <cmp1> bound1[p], else fill
    (NeuronCore-v3; the second output, the row max, the interpreter's)."""
    at = (np.arange(a.shape[1], dtype=np.float32) + np.float32(start))[None, :]
    keep = (alu(cmp0, at, bound0.reshape(-1, 1)) != 0) & (alu(cmp1, at, bound1.reshape(-1, 1))
                                                         != 0)
    return np.where(keep, a, np.float32(fill)).astype(np.float32)


@instruction('isa.tensor_copy', 'tensor_copy', 'dst', 'src0', 'eng')
def _isa_tensor_copy(a, engine):
    return a


@instruction('isa.memset', 'memset', 'dst', 'imm', 'eng')
def _isa_memset(value, engine):
    return np.float32(value)


@instruction('isa.stream_shuffle', 'stream_shuffle', 'dst', 'src0', 'src1?', 'imm', 'imm1',
             'imm2', 'imm3', 'eng', shaped=True, elementwise=False)
def _isa_stream_shuffle(a, kept, mult, add, lo, hi, engine, shape):
    """Partition p of the result, where lo <= p % 32 < hi, is a's partition (mult (p % 32) +
    add) mod 32 of its quadrant (of a itself when a has at most 32 partitions); elsewhere
    `kept`'s (dst's own values), as models/isa/matrix.cpp computes it."""
    a = np.asarray(a)
    p = np.arange(shape[0])
    src = (int(mult) * (p % 32) + int(add)) % 32
    if a.shape[0] > 32:
        src = src + 32 * (p // 32)
    moved = (p % 32 >= lo) & (p % 32 < hi)
    out = a[np.where(moved, src, 0)]
    if kept is not None:
        out = np.where(moved[:, None], out, np.asarray(kept))
    return out


@instruction('isa.nonzero_with_count', 'nonzero_count', 'dst', 'src0', 'src1?', 'imm', 'imm1',
             'eng', shaped=True, elementwise=False)
def _isa_nonzero_with_count(a, kept, index_offset, padding, engine, shape):
    """At partitions 0, 16, ..., 112: the positions (+ index_offset) of the row's nonzero
    elements in order, then `padding`, then their count; the other partitions `kept`'s (dst's
    own values), as models/isa/reductions.cpp computes it."""
    a = np.asarray(a, dtype=np.float32)
    out = np.array(kept, dtype=np.float32) if kept is not None else \
        np.zeros(shape, dtype=np.float32)
    t = a.shape[1]
    for p in range(0, shape[0], 16):
        where = np.flatnonzero(a[p] != 0)
        row = np.full(t + 1, np.float32(padding))
        row[:len(where)] = where + np.float32(index_offset)
        row[t] = len(where)
        out[p] = row
    return out


@instruction('isa.iota', 'iota', 'dst', 'imm', 'imm1', 'eng', shaped=True,
             elementwise=False, values_only=1)
def _isa_iota(offset, partition_step, engine, pattern, shape):
    """offset + partition_step * p + i (computed in double, as the model); with `pattern` (the
    values' own operand, not the recording's: [(size, coefficient)] per free axis; None: in
    order), the free elements' values are its sum of coefficient x index."""
    p, n = shape
    if pattern is None:
        free = np.arange(n, dtype=np.float64)
    else:
        grids = np.meshgrid(*(np.arange(size, dtype=np.float64) for size, _ in pattern),
                            indexing='ij')
        free = sum(g * coef for g, (_, coef) in zip(grids, pattern)).reshape(n)
    return float(offset) + float(partition_step) * np.arange(p, dtype=np.float64)[:, None] + \
        free[None, :]


@instruction('isa.max8', 'max8', 'dst', 'src0', 'eng', elementwise=False)
def _isa_max8(a, engine):
    """The 8 largest values of each row, largest first."""
    return -np.sort(-a, axis=1)[:, :8]


@instruction('isa.topk', 'topk', 'dst', 'dst1', 'src0', 'imm', 'imm1', 'eng', shaped=True,
             elementwise=False)
def _isa_topk(a, n, k, engine, shape):
    """Each 16-partition snake's first n elements sorted largest first (NaN last, ties in index
    order): (values, indices) of results j < 16 * dst's columns at [j % 16, j // 16]; past n,
    -inf and index n."""
    n, (parts, cols) = int(n), shape
    slots = 16 * cols
    vals = np.full((parts, cols), -np.inf, np.float32)
    idx = np.full((parts, cols), float(n), np.float32)
    for g in range(0, parts, 16):
        snake = a[g:g + 16].T.reshape(-1)[:n]  # element e at partition e % 16, column e // 16
        order = np.lexsort((np.arange(n), -snake, np.isnan(snake)))[:slots]
        j = np.arange(len(order))
        vals[g + j % 16, j // 16] = snake[order]
        idx[g + j % 16, j // 16] = order
    return vals, idx


@instruction('isa.quantize_mx', 'quantize_mx', 'dst', 'dst1', 'src0', 'eng', elementwise=False)
def _isa_quantize_mx(src, engine):
    """(the interpreter computes it with dst's MX type and the scale's values before it:
    quantize_mx_values)"""


@instruction('isa.find_index8', 'find_index8', 'dst', 'src0', 'src1', 'eng',
             elementwise=False)
def _isa_find_index8(data, vals, engine):
    """Where each of 8 values per row first occurs in data (-1: nowhere)."""
    v = vals.reshape(data.shape[0], 8)
    hit = data[:, :, None] == v[:, None, :]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int32)


@instruction('isa.match_replace8', 'match_replace8', 'dst', 'dst1?', 'src0', 'src1', 'imm', 'eng',
             elementwise=False)
def _isa_match_replace8(data, vals, imm, engine):
    """data with, for j = 7 down to 0, the first element equal to vals[p, j] not matched before
    replaced by imm; (the result, each value's index, -1 where none)."""
    out = np.array(data, dtype=np.float32)
    v = vals.reshape(data.shape[0], 8)
    idx = np.full((data.shape[0], 8), -1.0, np.float32)
    for p in range(data.shape[0]):
        taken = np.zeros(data.shape[1], dtype=bool)
        for j in range(7, -1, -1):
            hit = np.flatnonzero((data[p] == v[p, j]) & ~taken)
            if hit.size:
                taken[hit[0]] = True
                out[p, hit[0]] = imm
                idx[p, j] = hit[0]
    return out, idx


# Where tensor indirection (Tile.indirect) may be used: per primitive, the operands that may be
# indirect views (dst scatters, the inputs gather) and the engines, as the NKI reference's
# "Tensor indirection" paragraphs list them (nc_matmul's dst is not modelled).
INDIRECT = {
    'copy': (('dst', 'src0'), ('dve', 'act')),
    'isa.tensor_copy': (('dst', 'src0'), ('dve', 'act')),
    'isa.activation': (('dst', 'src0'), ('act',)),
    'isa.activation_reduce': (('dst', 'src0'), ('act',)),
    'isa.tensor_tensor': (('dst', 'src0'), ('dve', 'pool')),
    'isa.tensor_scalar': (('dst', 'src0'), ('dve', 'act', 'pool')),
    'isa.exponential': (('dst', 'src0'), ('dve',)),
    'isa.tensor_reduce': (('dst', 'src0'), ('dve',)),
    'matmul': (('src0', 'src1'), ('pe',)),
}


def indirect_group(engine):
    """The partition group an engine reads an indirect view's offsets in (NkiTensor.indirect's
    G): 32 on the Tensor engine, 16 on the others."""
    return 32 if engine == 'pe' else 16


def indirect_position(i, group, k):
    """Where offset i (an int or a numpy array) of an indirect view lies in its [P, k] index:
    (row, column), index[i % G, i // G] continued past G x k into the next G partitions
    (program/program.h's indirection_position)."""
    return (i // (group * k)) * group + i % group, (i // group) % k

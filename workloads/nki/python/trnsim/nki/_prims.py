"""The instruction set a kernel is recorded in: one primitive per call of the C++ kernel
builder (workloads/builder/kernel_builder.h), each declared once with its operands (their order
in the recording's text form, which workloads/nki/recording.cpp reads) and its values (numpy,
on [partitions, elements] arrays in float32, int32 for int32; the interpreter rounds the result
to the destination's dtype).

Operand kinds: T a tile (dst first), T? an optional tile, H an HBM access, alu an operation,
eng an engine, func an activation function, f a number, acc a matmul's accumulation, str text
(the rest of the line)."""

import math

import numpy as np

ALU = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply, 'max': np.maximum,
       'min': np.minimum}
REDUCE = {'add': np.sum, 'max': np.max, 'min': np.min}
ENGINES = ('pe', 'dve', 'act', 'pool', 'sp')


def _erf(x):
    try:
        from scipy.special import erf  # python3-scipy
    except ImportError:
        erf = np.vectorize(math.erf, otypes=[np.float64])
    return erf(x)


# The activation functions of the Scalar engine (models/core/program.h, act_func), by the
# builder's names.
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
       'log': np.log}


class Prim:
    """A primitive: its name (the builder call), operand kinds and values. impl takes the
    operands after dst (tiles as arrays; and dst's [partitions, elements] shape last when
    `shaped`) and returns dst's values."""

    def __init__(self, name, layout, impl, shaped):
        self.name, self.layout, self.impl, self.shaped = name, layout, impl, shaped


PRIMS = {}


def prim(name, *layout, shaped=False):
    def declare(impl):
        PRIMS[name] = Prim(name, layout, impl, shaped)
        return impl
    return declare


@prim('load', 'T', 'H')
def _load(src):
    return src


@prim('store', 'H', 'T')
def _store(src):
    return src


@prim('tensor_tensor', 'T', 'T', 'T', 'alu', 'eng')
def _tensor_tensor(a, b, alu, engine):
    return ALU[alu](a, b.reshape(a.shape))


def _second(v, alu1, imm1):
    return v if alu1 == 'bypass' else ALU[alu1](v, np.float32(imm1))


@prim('tensor_scalar', 'T', 'T', 'alu', 'f', 'eng', 'alu', 'f')
def _tensor_scalar(a, alu, imm, engine, alu1, imm1):
    return _second(ALU[alu](a, np.float32(imm)), alu1, imm1)


@prim('tensor_scalar_ap', 'T', 'T', 'alu', 'T', 'eng', 'alu', 'f')
def _tensor_scalar_ap(a, alu, scalar, engine, alu1, imm1):
    return _second(ALU[alu](a, scalar.reshape(a.shape[0], 1)), alu1, imm1)


@prim('tensor_copy', 'T', 'T', 'eng')
def _tensor_copy(a, engine):
    return a


@prim('copy', 'T', 'T')
def _copy(a):
    return a


@prim('memset', 'T', 'f', 'eng')
def _memset(value, engine):
    return np.float32(value)


@prim('activation', 'T', 'T', 'func', 'f', 'eng', 'T?')
def _activation(a, func, scale, engine, bias):
    x = a * np.float32(scale)
    if bias is not None:
        x = x + bias.reshape(a.shape[0], 1)
    return ACT[func](x).astype(np.float32)


@prim('iota', 'T', 'f', 'f', shaped=True)
def _iota(offset, partition_step, shape):
    p, n = shape
    return (float(offset) + float(partition_step) * np.arange(p, dtype=np.float64)[:, None] +
            np.arange(n, dtype=np.float64)[None, :])


@prim('scalar_tensor_tensor', 'T', 'T', 'alu', 'f', 'alu', 'T')
def _scalar_tensor_tensor(a, alu0, imm, alu1, b):
    return ALU[alu1](ALU[alu0](a, np.float32(imm)), b.reshape(a.shape))


@prim('tensor_tensor_scan', 'T', 'T', 'T', 'f', 'alu', 'alu')
def _tensor_tensor_scan(a, b, initial, alu0, alu1):
    y = b.reshape(a.shape)
    out = np.empty_like(a, dtype=np.float32)
    prev = np.full(a.shape[0], initial, dtype=np.float32)
    for i in range(a.shape[1]):
        prev = ALU[alu1](ALU[alu0](a[:, i], prev), y[:, i]).astype(np.float32)
        out[:, i] = prev
    return out


@prim('tensor_reduce', 'T', 'T', 'alu', 'eng')
def _tensor_reduce(a, alu, engine):
    return REDUCE[alu](a, axis=1).reshape(a.shape[0], 1)


@prim('max8', 'T', 'T')
def _max8(a):
    return -np.sort(-a, axis=1)[:, :8]


@prim('find_index8', 'T', 'T', 'T')
def _find_index8(data, vals):
    v = vals.reshape(data.shape[0], 8)
    hit = data[:, :, None] == v[:, None, :]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int32)


@prim('matmul', 'T', 'T', 'T', 'acc', 'mode?')
def _matmul(stationary, moving, accumulate, mode=None):
    """(mode: 'double_row', the fp8 double-row mode: the same values)"""
    return stationary.T @ moving


@prim('transpose', 'T', 'T')
def _transpose(a):
    return a.T


@prim('print', 'T', 'str')
def _print(a, prefix):
    print(prefix, a)

"""Element types of NKI tensors and how values round to them.

bfloat16 and the 8-bit floats are real numpy dtypes: ml_dtypes' when it is installed, else
trnsim's own (the module _trnsim_dtypes, workloads/nki/numpy_dtypes.cpp: the same names,
formats and casts). Either way their names are numpy type names (np.dtype('bfloat16'),
x.astype('float8_e4m3')), as NKI's harnesses use them."""

import numpy as np

try:  # the real ml_dtypes, when the machine has it
    import ml_dtypes as _source
except ImportError:  # Debian 12 has no python3-ml-dtypes
    import _trnsim_dtypes as _source

# The floating-point formats beyond numpy's, by name (docs/nki.md, "Data types").
CUSTOM = ('bfloat16', 'float8_e4m3', 'float8_e4m3fn', 'float8_e5m2')
for _name in CUSTOM:
    if hasattr(_source, _name):
        np.sctypeDict.setdefault(_name, getattr(_source, _name))

bfloat16 = np.dtype(_source.bfloat16)
float8_e4m3 = np.dtype(_source.float8_e4m3)
float8_e4m3fn = np.dtype(_source.float8_e4m3fn)
float8_e5m2 = np.dtype(_source.float8_e5m2)
# (numpy dtypes, not scalar types: str(nl.float32) is 'float32', as a tensor's dtype prints;
# the NKI Library compares the two strings)
float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
int32 = np.dtype(np.int32)

# The integer types kernels may use: values truncate toward zero and saturate when stored (as the
# model's functional mode stores them, models/core/dtype.cpp), NaN stores as 0.
INTEGERS = ('int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32')


class MxDtype:
    """An MX type of NeuronCore-v4: nl.float8_e4m3fn_x4, float8_e5m2_x4 (four fp8 values in 32
    bits, value q in bits 8q .. 8q+7), float4_e2m1fn_x4 (four fp4 values in 16 bits, value q in
    bits 4q .. 4q+3), or the MX scale nl.float8_e8m0fnu (2^(bits - 127)). A kernel holds their
    elements as the unsigned integers of their bits, and takes and gives them so (uint32,
    uint16, uint8 arrays), as the MX deep dive's harness passes them."""

    def __init__(self, name, bits):
        self.name, self.bits = name, bits
        self.itemsize = np.dtype(bits).itemsize

    def __repr__(self):
        return f'nl.{self.name}'


# MX type name -> the unsigned integer type of its bits
BITS = {'float8_e4m3fn_x4': 'uint32', 'float8_e5m2_x4': 'uint32', 'float4_e2m1fn_x4': 'uint16',
        'float8_e8m0fnu': 'uint8'}
PACKED = ('float8_e4m3fn_x4', 'float8_e5m2_x4', 'float4_e2m1fn_x4')
MX = {name: MxDtype(name, bits) for name, bits in BITS.items()}

# dtype name -> bytes per element, of the types kernels may use (those of models/core/dtype.h)
SIZES = {'float32': 4, 'bfloat16': 2, 'float16': 2, 'float8_e4m3': 1, 'float8_e4m3fn': 1,
         'float8_e5m2': 1, **{name: np.dtype(name).itemsize for name in INTEGERS},
         **{name: d.itemsize for name, d in MX.items()}}


def storage(name):
    """The numpy dtype a value of dtype `name` is in memory (an MX type: its bits' integer)."""
    return np.dtype(BITS.get(name, name))


def holder(name):
    """The numpy type that holds values of dtype `name` while a kernel runs: float32 for the
    floating-point types, a wide enough integer for the integers."""
    if name in BITS:
        return holder(BITS[name])
    if name in INTEGERS:
        return np.int64 if name == 'uint32' else np.int32
    return np.float32


def dtype_name(dtype):
    """The name of a dtype given as nl.float32, a numpy dtype or type, or a string."""
    if isinstance(dtype, str):
        name = dtype
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = getattr(dtype, 'name', repr(dtype))
    if name == 'bf16':
        name = 'bfloat16'
    return name


def round_bf16(values):
    """Rounds float values to bfloat16 as the device does: round to nearest, ties to even, on
    the top 16 bits of the float32 encoding (NaN stays a quiet NaN). Returns float32."""
    x = np.ascontiguousarray(values, dtype=np.float32)
    bits = x.view(np.uint32)
    # in uint32: only NaN encodings can wrap around, and they are set apart below
    bits = (bits + ((bits >> 16) & 1) + np.uint32(0x7FFF)) & np.uint32(0xFFFF0000)
    out = bits.view(np.float32)
    nan = np.isnan(x)
    if nan.any():
        out = out.copy()
        out[nan] = np.float32('nan')
    return out.reshape(np.shape(values))


# NKI_PRECISE_FP (trnsim/nki/_runner.py, at each launch): False keeps the values of bfloat16
# and the fp8 types in float32, unrounded.
PRECISE = True


def round_to(values, name):
    """Values as the device stores them in `name`, held as holder(name)."""
    if name == 'float32' or not PRECISE and (name == 'bfloat16' or name in CUSTOM):
        return np.asarray(values, dtype=np.float32)
    if name == 'bfloat16':
        return round_bf16(values)
    if name == 'float16':
        return np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)
    if name in INTEGERS:
        return to_integer(values, name)
    if name in BITS:  # its bits
        return to_integer(values, BITS[name])
    if name in CUSTOM:
        return np.asarray(values, dtype=np.float32).astype(np.dtype(name)).astype(np.float32)
    raise TypeError(f'dtype {name} is not supported yet')


def to_integer(values, name):
    """values stored in the integer type `name`, held as holder(name)."""
    info = np.iinfo(name)
    v = np.asarray(values)
    if v.dtype.kind == 'f' or v.dtype.kind == 'V' or v.dtype.name in CUSTOM:
        v = np.nan_to_num(np.trunc(v.astype(np.float64)), nan=0.0, posinf=info.max,
                          neginf=info.min)
    return np.clip(v, info.min, info.max).astype(holder(name))


def as_bfloat16(values):
    """values as a bfloat16 array (rounded as the device rounds)."""
    return np.asarray(values, dtype=np.float32).astype(bfloat16)


def array_dtype_name(array):
    """The NKI dtype of a numpy array passed to a kernel."""
    return np.asarray(array).dtype.name


def to_user(values, name):
    """A kernel output as the caller gets it."""
    if name in CUSTOM:
        return np.asarray(values, dtype=np.float32).astype(np.dtype(name))
    if name == 'float16':
        return np.asarray(values).astype(np.float16)
    return np.asarray(values).astype(np.dtype(BITS.get(name, name)))


_FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def unpack_mx(bits, name):
    """The four values of each element of an MX type (held as its bits): float32 of shape
    bits.shape + (4,)."""
    bits = np.asarray(bits, dtype=np.int64)
    width = 4 if name == 'float4_e2m1fn_x4' else 8
    parts = np.stack([(bits >> (width * q)) & ((1 << width) - 1) for q in range(4)], axis=-1)
    if width == 4:
        return _FP4[parts]
    fp8 = float8_e4m3fn if name == 'float8_e4m3fn_x4' else float8_e5m2
    return parts.astype(np.uint8).view(fp8).astype(np.float32)


def pack_fp8(values, name):
    """Four fp8 values (the last axis) packed as the bits of MX type `name`: rounded to nearest
    even and saturated to the format's largest value."""
    fp8 = float8_e4m3fn if name == 'float8_e4m3fn_x4' else float8_e5m2
    top = 448.0 if name == 'float8_e4m3fn_x4' else 57344.0
    v = np.asarray(values, dtype=np.float32)
    v = np.where(np.isnan(v), v, np.clip(v, -top, top))
    b = v.astype(fp8).view(np.uint8).astype(np.int64)
    return b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16) | (b[..., 3] << 24)

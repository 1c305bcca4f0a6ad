"""Element types of NKI tensors and how values round to them."""

import numpy as np

try:  # the real bfloat16 numpy dtype, when the machine has it
    import ml_dtypes as _ml_dtypes
except ImportError:  # Debian 12 has no python3-ml-dtypes
    _ml_dtypes = None


class BFloat16Type:
    """The bfloat16 dtype marker used when ml_dtypes is absent."""

    name = 'bfloat16'
    itemsize = 2

    def __repr__(self):
        return 'bfloat16'


bfloat16 = np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes else BFloat16Type()
float32 = np.float32
float16 = np.float16
int32 = np.int32

# dtype name -> bytes per element
SIZES = {'float32': 4, 'bfloat16': 2, 'float16': 2, 'int32': 4}


def dtype_name(dtype):
    """The name of a dtype given as nl.float32, a numpy dtype, bfloat16 or a string."""
    if isinstance(dtype, BFloat16Type):
        return 'bfloat16'
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


def round_to(values, name):
    """Values as the device stores them in `name`, held in float32 (int32 for int32)."""
    if name == 'float32':
        return np.asarray(values, dtype=np.float32)
    if name == 'bfloat16':
        return round_bf16(values)
    if name == 'float16':
        return np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)
    if name == 'int32':
        return np.asarray(values).astype(np.int32)
    raise TypeError(f'dtype {name} is not supported yet')


class BFloat16Array(np.ndarray):
    """A float32 array whose values are bfloat16 (rounded), marked so kernels see bf16."""

    nki_dtype = 'bfloat16'

    def __array_finalize__(self, obj):
        pass


def as_bfloat16(values):
    """An input array a kernel sees as bfloat16 (values rounded as the device does). With
    ml_dtypes installed, ml_dtypes.bfloat16 arrays are accepted as well."""
    return round_bf16(values).view(BFloat16Array)


def array_dtype_name(array):
    """The NKI dtype of a numpy array passed to a kernel."""
    if getattr(array, 'nki_dtype', None):
        return array.nki_dtype
    return np.asarray(array).dtype.name


def to_user(values, name):
    """A kernel output as the caller gets it."""
    if name == 'bfloat16':
        if _ml_dtypes:
            return np.asarray(values, dtype=np.float32).astype(_ml_dtypes.bfloat16)
        return as_bfloat16(values)
    if name == 'float16':
        return np.asarray(values).astype(np.float16)
    return np.asarray(values).astype(np.dtype(name))

"""ml_dtypes (only where trnsim's aliases are installed: scripts/nki, install_aliases()): the
real package when the machine has one on the path after trnsim's aliases, else trnsim's own
dtypes (_trnsim_dtypes, workloads/nki/numpy_dtypes.cpp) with the same names, formats and casts,
and the finfo/iinfo harnesses use."""

import math

from trnsim import _aliases

if not _aliases.load_real(__name__):  # (the real one wins)
    import numpy as np

    from _trnsim_dtypes import (bfloat16, float4_e2m1fn, float8_e4m3,  # noqa: F401
                                float8_e4m3fn, float8_e5m2)

    __version__ = 'trnsim'
    iinfo = np.iinfo

    # name -> (exponent bits, mantissa bits, bias, IEEE infinities, a NaN: all ones without
    # infinities)
    _FORMATS = {'bfloat16': (8, 7, 127, True, True), 'float8_e4m3': (4, 3, 7, True, True),
                'float8_e4m3fn': (4, 3, 7, False, True), 'float8_e5m2': (5, 2, 15, True, True),
                'float4_e2m1fn': (2, 1, 1, False, False)}

    class finfo:  # noqa: N801 (numpy's name)
        """Machine limits of bfloat16, the 8-bit floats and fp4, as numpy.finfo gives them for
        numpy's own floats (which it is, for those)."""

        def __new__(cls, dtype):
            name = np.dtype(dtype).name
            if name not in _FORMATS:
                return np.finfo(dtype)
            return super().__new__(cls)

        def __init__(self, dtype):
            self.dtype = np.dtype(dtype)
            t = self.dtype.type
            nexp, nmant, bias, ieee, nan = _FORMATS[self.dtype.name]
            self.bits = 1 + nexp + nmant
            self.nexp, self.nmant = nexp, nmant
            self.maxexp = (1 << nexp) - 1 - bias + (0 if ieee else 1)
            self.minexp = 1 - bias
            top = (2.0 - 2.0 ** (1 - nmant)) if nan and not ieee else (2.0 - 2.0 ** -nmant)
            self.max = t(top * 2.0 ** (self.maxexp - 1))
            self.min = t(-float(self.max))
            self.eps = t(2.0 ** -nmant)
            self.epsneg = t(2.0 ** (-nmant - 1))
            self.tiny = self.smallest_normal = t(2.0 ** self.minexp)
            self.smallest_subnormal = t(2.0 ** (self.minexp - nmant))
            self.precision = int(math.floor(nmant * math.log10(2)))
            self.resolution = t(10.0 ** -self.precision)

        def __repr__(self):
            return (f'finfo(resolution={float(self.resolution)}, min={float(self.min)}, '
                    f'max={float(self.max)}, dtype={self.dtype.name})')

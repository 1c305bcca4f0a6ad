"""nki.typing: tensor placeholders for nki.benchmark (nt.tensor[[shape], dtype]) and the tensor
types kernels annotate their parameters with (nt.tensor, nt.tensor[128, 512], nki.tensor)."""

import numpy as np

from . import _dtypes
from ._errors import KernelError
from ._registry import value


class Placeholder:
    """An input given only by shape and dtype; benchmark runs need no values."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    def __repr__(self):
        return f'tensor[{list(self.shape)}, {_dtypes.dtype_name(self.dtype)}]'


class Annotation:
    """A tensor type used as an annotation (nt.tensor[128, 512]): no dtype, so not an input."""

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f'tensor[{self.key}]'


def _is_dtype(x):
    """A dtype as kernels give one: a name, a numpy dtype, or a scalar type (nl.float32)."""
    return isinstance(x, (str, type, np.dtype))


class Tensor:
    """nt.tensor: nt.tensor[[shape], dtype] is an input placeholder (nki.benchmark); the bare
    class and nt.tensor[shape] (NKI 0.3's spelling) annotate kernel parameters."""

    def __class_getitem__(cls, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], (list, tuple)) \
                and _is_dtype(key[1]):
            return Placeholder(key[0], key[1])
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int) and \
                _is_dtype(key[1]) and not isinstance(key[1], int):
            return Placeholder((key[0],), key[1])
        return Annotation(key)


class Mutable:
    """nt.mutable_tensor and the mutable / immutable markers: annotations only."""

    def __class_getitem__(cls, key):
        return Annotation(key)


value('typing.tensor', Tensor, 'beta1 0.3+')
value('typing.mutable_tensor', Mutable, 'beta1')
value('typing.mutable', Mutable, 'beta1')
value('typing.immutable', Mutable, 'beta1')
value('.tensor', Tensor, 'beta1')


def check_argument(x, name, where):
    """An annotation passed where an input belongs is an error."""
    if isinstance(x, Annotation):
        raise KernelError(f'kernel argument {name}', f'{x!r} is a type annotation, not an '
                          'input: pass nt.tensor[[shape], dtype] or an array', where)

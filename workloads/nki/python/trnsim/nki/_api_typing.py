"""nki.typing: tensor placeholders for nki.benchmark (nt.tensor[[shape], dtype])."""

from . import _dtypes
from ._registry import value


class Placeholder:
    """An input given only by shape and dtype; benchmark runs need no values."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    def __repr__(self):
        return f'tensor[{list(self.shape)}, {_dtypes.dtype_name(self.dtype)}]'


class Tensor:
    """nt.tensor[[shape], dtype]."""

    def __class_getitem__(cls, key):
        shape, dtype = key
        return Placeholder(shape if isinstance(shape, (list, tuple)) else (shape,), dtype)


value('typing.tensor', Tensor, 'beta1 0.3+')

"""What a kernel holds: HBM tensors and their parts (DMA operands), tiles in SBUF and PSUM and
their parts. Pure data: recording is the layers above (the operators a kernel applies to tiles
reach them through OPERATORS)."""

import copy as _copy
import math
import weakref

import numpy as np

from . import _dtypes
from ._errors import KernelError, UserFacing, unsupported, user_site
from ._index import (INTEGER, Affine, DynamicIndex, EmptySlice, IndexExpr, IndexRange,
                     concrete, high, in_order, layout, low, merge, normalise, same)

# The tile operators (t[...] = v, t += v, t + u, ...), filled by the operations layer.
OPERATORS = {}


def dtype_object(name):
    """The dtype a kernel compares a tensor's .dtype with."""
    try:
        return np.dtype(name)
    except TypeError:
        return name


class Typed(UserFacing):
    """What tensors and tiles answer alike: .dtype (as kernels compare it), .ndim and .itemsize
    (bytes per element), as the documented nki.tensor attributes."""

    __slots__ = ()

    @property
    def dtype(self):
        return dtype_object(self.dtype_name)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return _dtypes.SIZES[self.dtype_name]


class Arithmetic:
    """The operators of tiles and results: t + u, t * u, t - u (as nl.add, nl.multiply,
    nl.subtract), c - t, -t, and t / c (operations layer: OPERATORS)."""

    __slots__ = ()

    def __add__(self, other):
        return OPERATORS['add'](self, other)

    def __mul__(self, other):
        return OPERATORS['multiply'](self, other)

    def __sub__(self, other):
        return OPERATORS['subtract'](self, other)

    def __rsub__(self, other):
        return OPERATORS['rsubtract'](self, other)

    def __neg__(self):
        return OPERATORS['negative'](self)

    def __pos__(self):
        return self

    def __truediv__(self, other):
        return OPERATORS['divide'](self, other)

    def __rtruediv__(self, other):
        return OPERATORS['rdivide'](self, other)

    def __pow__(self, other):
        if isinstance(other, INTEGER) and int(other) == 2:  # t ** 2: t * t, exactly
            return OPERATORS['multiply'](self, self)
        raise unsupported('tile ** number', f'a power {other!r} (only t ** 2, a multiply)',
                          user_site())

    # comparisons (1 or 0), bitwise operators and % as the Vector engine's ALU operations
    def __lt__(self, other):
        return OPERATORS['alu'](self, other, 'is_lt')

    def __le__(self, other):
        return OPERATORS['alu'](self, other, 'is_le')

    def __gt__(self, other):
        return OPERATORS['alu'](self, other, 'is_gt')

    def __ge__(self, other):
        return OPERATORS['alu'](self, other, 'is_ge')

    def __and__(self, other):
        return OPERATORS['alu'](self, other, 'bitwise_and')

    def __or__(self, other):
        return OPERATORS['alu'](self, other, 'bitwise_or')

    def __xor__(self, other):
        return OPERATORS['alu'](self, other, 'bitwise_xor')

    def __mod__(self, other):
        return OPERATORS['alu'](self, other, 'mod')

    def __abs__(self):
        return OPERATORS['abs'](self)

    def _not_yet(self, *args):
        raise unsupported('tile operator', '~, // and number ** tile of tiles (nl.invert, ...)',
                          user_site())

    __invert__ = __rpow__ = __floordiv__ = _not_yet

    __radd__ = __add__
    __rmul__ = __mul__


class InHbm:
    """Arithmetic on a tensor in HBM is an error naming the line: the engines compute on
    tiles (load it first)."""

    __slots__ = ()

    def _in_hbm(self, *args):
        raise KernelError('HBM tensor arithmetic', 'the engines compute on tiles in SBUF or '
                          'PSUM: load the tensor first (nl.load or nisa.dma_copy)', user_site())

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = \
        __rtruediv__ = __neg__ = __pow__ = __lt__ = __le__ = __gt__ = __ge__ = _in_hbm


class Buffer:
    """A memory a tensor lives in (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm, nl.private_hbm)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f'nl.{self.name}'


BUFFERS = {_name: Buffer(_name) for _name in ('sbuf', 'psum', 'hbm', 'shared_hbm', 'private_hbm')}


class TensorViews:
    """NKI 0.5+'s NkiTensor views (slice, permute, select, broadcast, expand_dim, squeeze_dim,
    flatten_dims, reshape_dim, rearrange, get_pattern, offset, strides, size): each a new view
    of the same elements, no instruction (the NkiTensor reference: "All view operations ...
    share the same underlying storage -- no data is copied"). A view is its dimensions [(size,
    stride)] in elements from its first element; of an on-chip tensor, dimension 0 is the
    partitions and stays first. The class gives _dims() and _remade(first, dims)."""

    @property
    def buffer(self):
        """NkiTensor.buffer: the memory it is in (nl.sbuf, nl.psum, or the HBM buffer its
        tensor was allocated in: a kernel argument's is nl.hbm, nl.shared_hbm under LNC=2, as
        AWS's simulator wraps arguments)."""
        space = getattr(self, 'space', None)
        if space is None:
            space = (self if isinstance(self, HbmTensor) else self.tensor).buffer_name
        return BUFFERS[space]

    _on_chip = True

    def _dim(self, dim, name, site, allow_partition=False):
        dims = self._dims()[1]
        d = int(dim) + (len(dims) if int(dim) < 0 else 0)
        if not 0 <= d < len(dims):
            raise KernelError(f'.{name}', f'dimension {dim} of a view of {len(dims)}', site)
        if d == 0 and self._on_chip and not allow_partition:
            raise KernelError(f'.{name}', 'the partition dimension of an on-chip tensor stays '
                              'as it is (dimension 0)', site)
        return d

    def slice(self, dim, start, end, step=1):
        site = user_site()
        d = self._dim(dim, 'slice', site, allow_partition=True)
        first, dims = self._dims()
        n, st = dims[d]
        start, end, step = int(start), int(end), int(step)
        if not (0 <= start < end <= n) or step < 1 or (d == 0 and self._on_chip and step != 1):
            raise KernelError('.slice', f'start {start}, end {end}, step {step} of dimension '
                              f'{dim} of size {n}', site)
        dims[d] = (-(-(end - start) // step), st * step)
        return self._remade(first + start * st, dims, site)

    def permute(self, dims):
        site = user_site()
        first, old = self._dims()
        order = [int(d) for d in dims]
        if sorted(order) != list(range(len(old))) or (self._on_chip and order[0] != 0):
            raise KernelError('.permute', f'{tuple(order)} is not a permutation of the '
                              f'{len(old)} dimensions' + (' keeping the partition dimension '
                                                          'first' if self._on_chip else ''),
                              site)
        return self._remade(first, [old[d] for d in order], site)

    def select(self, dim, index):
        site = user_site()
        d = self._dim(dim, 'select', site)
        first, dims = self._dims()
        if not isinstance(index, int) and type(index).__module__ != 'numpy':
            raise unsupported('.select', 'an index the device computes (a dynamic select)',
                              site)
        n, st = dims[d]
        if not 0 <= int(index) < n:
            raise KernelError('.select', f'index {index} of dimension {dim} of size {n}', site)
        del dims[d]
        return self._remade(first + int(index) * st, dims, site)

    def _of_size_one(self, dim, name, site):
        """Dimension `dim` (of size 1), the view's first element and dimensions."""
        d = self._dim(dim, name, site)
        first, dims = self._dims()
        if dims[d][0] != 1:
            raise KernelError(f'.{name}', f'dimension {dim} has size {dims[d][0]}, not 1', site)
        return d, first, dims

    def broadcast(self, dim, size):
        site = user_site()
        d, first, dims = self._of_size_one(dim, 'broadcast', site)
        dims[d] = (int(size), 0)
        return self._remade(first, dims, site)

    def expand_dim(self, dim):
        site = user_site()
        first, dims = self._dims()
        d = int(dim) + (len(dims) + 1 if int(dim) < 0 else 0)
        if not 0 <= d <= len(dims) or (d == 0 and self._on_chip):
            raise KernelError('.expand_dim', f'dimension {dim} of a view of {len(dims)}' +
                              (' (the partition dimension stays first)' if d == 0 else ''),
                              site)
        dims.insert(d, (1, 0))
        return self._remade(first, dims, site)

    def squeeze_dim(self, dim):
        site = user_site()
        d, first, dims = self._of_size_one(dim, 'squeeze_dim', site)
        del dims[d]
        return self._remade(first, dims, site)

    def flatten_dims(self, start_dim, end_dim):
        site = user_site()
        a = self._dim(start_dim, 'flatten_dims', site)
        b = self._dim(end_dim, 'flatten_dims', site, allow_partition=True)
        first, dims = self._dims()
        merged = merge(dims[a:b + 1]) if b >= a else None
        if merged is None:
            raise KernelError('.flatten_dims', f'dimensions {start_dim} to {end_dim} are not one '
                              'run of evenly spaced elements', site)
        dims[a:b + 1] = [(merged[0], merged[1])]
        return self._remade(first, dims, site)

    def reshape_dim(self, dim, shape):
        site = user_site()
        d = self._dim(dim, 'reshape_dim', site, allow_partition=not self._on_chip)
        first, dims = self._dims()
        n, st = dims[d]
        sizes = [int(x) for x in shape]
        if sizes.count(-1) == 1:
            known = math.prod(x for x in sizes if x != -1)
            sizes[sizes.index(-1)] = n // known if known and n % known == 0 else -1
        if any(x < 1 for x in sizes) or math.prod(sizes) != n:
            raise KernelError('.reshape_dim', f'{tuple(shape)} does not split dimension {dim} of '
                              f'size {n}', site)
        dims[d:d + 1] = [(x, st * math.prod(sizes[k + 1:])) for k, x in enumerate(sizes)]
        return self._remade(first, dims, site)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
        """einops-style: names, a nested tuple a group split (in src) or merged (in dst)."""
        site = user_site()
        first, dims = self._dims()
        src = [g if isinstance(g, (tuple, list)) else (g,) for g in src_pattern]
        if len(src) != len(dims):
            raise KernelError('.rearrange', f'{len(src)} groups for a view of {len(dims)} '
                              'dimensions', site)
        fixed = dict(fixed_sizes or {})
        named = {}
        for group, (n, st) in zip(src, dims):
            known = math.prod(fixed[x] for x in group if x in fixed)
            free = [x for x in group if x not in fixed]
            if len(free) > 1 or (not free and known != n) or n % known:
                raise KernelError('.rearrange', f'group {group} cannot split a dimension of '
                                  f'size {n}', site)
            sizes = [fixed.get(x, n // known) for x in group]
            for k, x in enumerate(group):
                named[x] = (sizes[k], st * math.prod(sizes[k + 1:]))
        out = []
        for g in dst_pattern:
            group = g if isinstance(g, (tuple, list)) else (g,)
            if any(x not in named for x in group):
                raise KernelError('.rearrange', f'{group} names a dimension the source does '
                                  'not', site)
            merged = merge([named.pop(x) for x in group])
            if merged is None:
                raise KernelError('.rearrange', f'group {group} is not one run of evenly '
                                  'spaced elements', site)
            out.append(merged)
        if named:
            raise KernelError('.rearrange', f'{sorted(named)} left out of the result', site)
        if self._on_chip and out[0] != dims[0]:
            raise KernelError('.rearrange', 'the partition dimension stays first', site)
        return self._remade(first, out, site)

    def get_pattern(self):
        """[[stride, count], ...] per dimension, as .ap() takes it."""
        return [[st, n] for n, st in self._dims()[1]]

    @property
    def offset(self):
        return self._dims()[0]

    @property
    def strides(self):
        return tuple(st for _, st in self._dims()[1])

    @property
    def size(self):
        return math.prod(n for n, _ in self._dims()[1])


def _pattern(pattern, api, site):
    """An access pattern [[step, count], ...] as [(step, count)] of integers."""
    try:
        out = [(int(st), int(n)) for st, n in pattern]
    except (TypeError, ValueError):
        raise KernelError(api, f'pattern must be [[step, count], ...], got {pattern!r}',
                          site) from None
    if not out or any(n < 1 for _, n in out):
        raise KernelError(api, f'pattern must be [[step, count], ...] with counts of 1 or more, '
                          f'got {pattern!r}', site)
    return out


class HbmTensor(TensorViews, InHbm, Typed):
    """A tensor in HBM: a kernel argument, or one the kernel allocates (nl.ndarray); `id` is
    its place in the recording."""
    _kind = 'an HBM tensor'
    buffer_name = 'hbm'  # (the buffer it was allocated in: nl.hbm, shared_hbm, private_hbm)

    def __init__(self, tensor_id, name, shape, dtype):
        self.id = tensor_id
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype_name = dtype
        self.site = None  # where the kernel allocated it, if it did

    def reshape(self, shape):
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if math.prod(shape) != math.prod(self.shape):
            raise KernelError('reshape', f'cannot reshape {self.shape} to {shape}')
        t = HbmTensor(self.id, self.name, shape, self.dtype_name)
        t.site, t.buffer_name = self.site, self.buffer_name
        return t

    def ap(self, pattern, offset=0, dtype=None, scalar_offset=None, vector_offset=None,
           indirect_dim=0):
        """NkiTensor.ap: the access `pattern` ([[step, count], ...], the first the partition
        dimension's, steps in elements) from element `offset`, of the tensor's bits read as
        `dtype`: an MX type over unsigned integers of its size (the MX tutorial reads uint32
        arrays as float8_e5m2_x4), or back; `scalar_offset` (a [1, 1] integer tile) moves its
        start at run time by that many steps of dimension `indirect_dim` (OffsetAccess)."""
        site = user_site()
        offset = 0 if offset is None else offset
        if vector_offset is not None:
            return self._gathered(self.ap(pattern, offset), vector_offset, indirect_dim, site)
        if scalar_offset is not None:
            if dtype is not None and _dtypes.dtype_name(dtype) != self.dtype_name:
                raise unsupported('.ap', 'scalar_offset= with another dtype', site)
            if isinstance(scalar_offset, (int, np.integer, Affine)):  # known when traced
                return self.ap(pattern, offset + scalar_offset *
                               self._stride_of(indirect_dim, site))
            return self._at_offset(self.ap(pattern, offset), scalar_offset, indirect_dim, site)
        if dtype is not None and _dtypes.dtype_name(dtype) != self.dtype_name:
            return RetypedAccess(self, _dtypes.dtype_name(dtype), _pattern(pattern, '.ap', site),
                                 int(offset), site)
        return HbmAccess.pattern(self, _pattern(pattern, '.ap', site), int(offset), site)

    def view(self, dtype):
        """NkiTensor.view: the tensor's bits as `dtype`, its last dimension scaled by the ratio
        of the sizes (a load of it moves the bytes, no cast)."""
        site = user_site()
        name = _dtypes.dtype_name(dtype)
        if name == self.dtype_name:
            return self[...]
        old, new = _dtypes.SIZES[self.dtype_name], _dtypes.SIZES[name]
        last = self.shape[-1] * old
        if last % new:
            raise KernelError('.view', f'the last dimension ({self.shape[-1]} x {old} bytes) '
                              f'does not divide into {name} elements of {new} bytes', site)
        shape = self.shape[:-1] + (last // new,)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        return RetypedAccess(self, name, list(zip(strides, shape)), 0, site)

    reinterpret_cast = view

    def _stride_of(self, dim, site):
        """The elements a step of dimension `dim` of the tensor moves (scalar_offset's unit)."""
        if not isinstance(dim, int) or not 0 <= dim < len(self.shape):
            raise KernelError('.ap', f'indirect_dim={dim!r}: a dimension of the tensor (it has '
                              f'{len(self.shape)})', site)
        return math.prod(self.shape[dim + 1:])

    def _gathered(self, base, index, dim, site):
        """.ap(vector_offset=index, indirect_dim=0): row p of the access `base` moved to the row
        of the tensor element p of the [P, 1] tile `index` names: an indirect DMA, as the
        tensor indexed by the tile (GatherAccess); its rows must be whole steps of dimension 0
        and each one run of elements."""
        if dim != 0 or base.runs or base.row_stride != self._stride_of(0, site) or \
                base.rows != getattr(index, 'partitions', None):
            raise unsupported('.ap', 'vector_offset= other than rows of dimension 0, one run '
                              'of elements each, a row per partition of the offsets', site)
        cols = self._stride_of(0, site)
        col = concrete(base.first) if not isinstance(base.first, Affine) else None
        if col is None or col >= cols or col + base.elems > cols:
            raise unsupported('.ap', 'vector_offset= with an offset past the first row', site)
        return self.reshape((self.shape[0], cols))[index, col:col + base.elems]

    def _at_offset(self, base, scalar, dim, site):
        stride = self._stride_of(dim, site)
        if not isinstance(scalar, (Tile, TileRuns)) or scalar.partitions != 1 or \
                scalar.elems != 1 or scalar.dtype_name not in _dtypes.INTEGERS:
            raise KernelError('.ap', 'scalar_offset must be an integer tile of shape (1, 1) in '
                              f'SBUF, got {getattr(scalar, "shape", type(scalar).__name__)}',
                              site)
        if base.oob:
            raise KernelError('.ap', base.oob, site)
        return OffsetAccess(base, scalar, stride, site)

    _on_chip = False

    def _dims(self):
        return 0, [(n, math.prod(self.shape[d + 1:])) for d, n in enumerate(self.shape)]

    def _remade(self, first, dims, site):
        return HbmAccess.pattern(self, [(st, n) for n, st in dims], first, site)

    def __getitem__(self, idx):  # (errors find the kernel's line themselves)
        try:
            comps = normalise(self.shape, idx, 'tensor indexing', None, True, dynamic=True)
        except EmptySlice as e:
            return EmptyAccess(self, e)
        dynamic = [d for d, c in enumerate(comps) if isinstance(c, DynamicIndex)]
        if dynamic:
            return GatherAccess(self, comps, dynamic, None)
        return HbmAccess(self, comps, None)

    def __setitem__(self, idx, value):
        raise unsupported('HBM tensor assignment', 'write HBM tensors with nl.store or '
                          'nisa.dma_copy')


class EmptyAccess(Typed):
    """A part of an HBM tensor of no elements (a kernel that shares rows among cores makes one
    for a core left without any): kept as a view, as NKI keeps it; an instruction given it is
    an error naming the empty slice."""
    _kind = 'an empty part of an HBM tensor'

    def __init__(self, tensor, why):
        self.tensor, self.why = tensor, why
        self.dtype_name = tensor.dtype_name
        self.shape = (0,)

    def __getitem__(self, idx):
        return self

    def __getattr__(self, name):  # (what an instruction asks of its operand)
        if name.startswith('__'):
            raise AttributeError(name)
        raise KernelError(self.why.api, f'{self.why.detail}: an empty part of '
                          f'{self.tensor.name} used as an operand', self.why.site)


class HbmAccess(TensorViews, InHbm, Typed):
    """Part of an HBM tensor as a DMA operand: rows (the partition dimension, its first logical
    axis, any row stride) of free elements (`dims`, the other logical axes: [(size, stride)]);
    its first element may depend on loop indices. When the free elements are one contiguous
    run it is one operand (rows x elems, `runs` False); else a DMA splits it into several
    (_ops.split), one per run, as the descriptors the DMA engines process."""
    _kind = 'a part of an HBM tensor'

    def __init__(self, tensor, comps, site):
        self.tensor = tensor
        self.site = site
        self.comps = comps
        self.oob = None  # why the access runs out of the tensor, if it does
        for d, c in enumerate(comps):
            if isinstance(c, IndexRange):
                first, last = low(c.start), high(c.start) + c.step * (c.size - 1)
                if first < 0 or last >= tensor.shape[d]:
                    self.oob = (f'index range {first if first < 0 else low(c.start)}..'
                                f'{last} is out of bounds for dimension {d} of size '
                                f'{tensor.shape[d]}')
            elif isinstance(c, IndexExpr):
                first = low(c.const)
                last = high(c.const) + sum(k * (n - 1) for n, k in c.terms.values())
                if first < 0 or last >= tensor.shape[d]:
                    self.oob = (f'index expression {first}..{last} is out of bounds for '
                                f'dimension {d} of size {tensor.shape[d]}')
        strides = [math.prod(tensor.shape[d + 1:]) for d in range(len(tensor.shape))]
        self.first, dims = layout(comps, strides)
        self.shape = tuple(n for n, _ in dims) or (1,)
        self.runs = False
        if not dims:
            self.rows, self.elems, self.row_stride = 1, 1, 1
            self.dims = []
            return
        self.rows, self.row_stride = dims[0]
        self.dims = dims[1:]
        merged = merge(self.dims)
        if merged is not None and (merged[0] == 1 or merged[1] == 1):
            self.elems = merged[0]
        else:
            self.runs = True  # several runs: a DMA of it is split
            self.elems = math.prod(n for n, _ in self.dims)
        if self.row_stride < 0:
            raise unsupported('HBM access', 'access pattern not supported yet (negative '
                              'partition stride)', site)

    _on_chip = False

    def _dims(self):
        if self.comps is None and self.runs is False and len(self.shape) != 1 + len(self.dims):
            raise unsupported('tensor view', 'a view of a broadcast or indirect access',
                              self.site)
        return self.first, [(self.rows, self.row_stride)] + [tuple(x) for x in self.dims]

    def _remade(self, first, dims, site):
        return HbmAccess.pattern(self.tensor, [(st, n) for n, st in dims], first, site)

    @classmethod
    def pattern(cls, tensor, pattern, offset, site):
        """The elements of an access pattern [(step, count)] from `offset` (.ap): the first
        pair the rows, the others the free elements (one run, or several for a DMA)."""
        a = cls.__new__(cls)
        (row_stride, rows), free = pattern[0], pattern[1:]
        a.tensor, a.site, a.comps, a.oob = tensor, site, None, None
        a.first, a.rows, a.row_stride = offset, rows, row_stride if rows > 1 else 1
        a.dims = [(n, st) for st, n in free]
        a.shape = (rows,) + tuple(n for n, _ in a.dims)
        merged = merge(a.dims) if a.dims else (1, 1)
        a.runs = merged is None or (merged[0] > 1 and merged[1] != 1)
        a.elems = math.prod(n for n, _ in a.dims)
        last = offset + (rows - 1) * row_stride + sum((n - 1) * st for n, st in a.dims)
        if offset < 0 or last >= math.prod(tensor.shape) or row_stride < 0 or \
                any(st < 0 for _, st in a.dims):
            raise KernelError('.ap', f'the access pattern {[list(p) for p in pattern]} from '
                              f'element {offset} runs outside the tensor of '
                              f'{math.prod(tensor.shape)} elements', site)
        return a

    @classmethod
    def piece(cls, tensor, first, rows, row_stride, elems, site):
        """One run of a split access: rows of `elems` contiguous elements."""
        a = cls.__new__(cls)
        a.tensor, a.site, a.comps, a.oob = tensor, site, None, None
        a.first, a.rows, a.row_stride, a.elems = first, rows, row_stride, elems
        a.shape, a.dims, a.runs = (rows, elems), [(elems, 1)], False
        return a

    @property
    def dtype_name(self):
        return self.tensor.dtype_name

    def __getitem__(self, idx):
        """A part of this part (X_flat = X[b, :, :]; X_flat[k0:k1, r0:r1]), as one access of
        the tensor: each index applies to this view's own dimensions in order."""
        site = None  # (errors find the kernel's line themselves)
        if self.comps is None or not in_order(self.comps):
            raise unsupported('tensor indexing', 'an index of a part of an HBM tensor indexed '
                              'with index expressions or reordered tile axes', site)
        ranges = [(d, c) for d, c in enumerate(self.comps) if isinstance(c, IndexRange)]
        sub = normalise(tuple(c.size for _, c in ranges), idx, 'tensor indexing', site, True)
        comps = list(self.comps)
        for (d, c), s in zip(ranges, sub):
            if isinstance(s, IndexRange):
                comps[d] = IndexRange(c.start + c.step * s.start, s.size, c.step * s.step,
                                      s.axis)
            else:
                comps[d] = c.start + c.step * s
        return HbmAccess(self.tensor, comps, site)

    def restrict(self, region):
        """The part of this access a mask region (an index over its logical axes) keeps (the
        region of this iteration: its indices' values now)."""
        if self.comps is None:
            raise unsupported('mask', 'a mask on a part of a split access', self.site)
        keys = sorted({(0, c.axis) if c.axis is not None else (1, d)
                       for d, c in enumerate(self.comps) if isinstance(c, IndexRange)} |
                      {(0, a) for c in self.comps if isinstance(c, IndexExpr) for a in c.terms})
        cut = {}
        for k, key in enumerate(keys):
            r = region[k] if k < len(region) else slice(None)
            cut[key] = r
        # A whole range keeps its start live in the loops' indices, so that iterations the
        # mask keeps whole record one body, unless the live access would reach past the
        # tensor in an iteration the mask cuts (each iteration then records its own).
        live = HbmAccess(self.tensor, self._cut(cut, True), self.site)
        return live if not live.oob else HbmAccess(self.tensor, self._cut(cut, False), self.site)

    def now(self):
        """This access at its loop indices' values now: an access past the tensor's end in
        some iteration, checked in this one's (a mask keeps no part of it where it would run
        past; the loop then records each iteration's own)."""
        if self.comps is None:
            return self
        # (the loops the mask's comparison asked the value of fixed first, the others kept
        # live; all fixed if that still runs past the end)
        fixed = HbmAccess(self.tensor, self._cut({}, 'consumed', whole=True), self.site)
        if not fixed.oob:
            return fixed
        return HbmAccess(self.tensor, self._cut({}, False, whole=True), self.site)

    def _cut(self, cut, live, whole=False):
        """The components cut by a mask region (`whole`: uncut); `live`: True keeps whole
        ranges' starts live, 'consumed' fixes the loops the kernel's Python asked the value
        of, False fixes every loop."""
        def fix(x):
            if live == 'consumed' and isinstance(x, Affine):
                return x.fixed_where_consumed()
            return concrete(x)
        comps = list(self.comps)
        for d, c in enumerate(comps):
            if isinstance(c, IndexRange):
                r = slice(None) if whole else cut[(0, c.axis) if c.axis is not None else (1, d)]
                lo, hi, _ = r.indices(c.size)
                start = c.start if live is True and (lo, hi) == (0, c.size) else fix(c.start)
                comps[d] = IndexRange(start + c.step * lo, hi - lo, c.step, c.axis)
            elif isinstance(c, IndexExpr):
                cuts = {a: slice(None) if whole else cut[(0, a)] for a in c.terms}
                kept = live is True and all(cuts[a].indices(n)[:2] == (0, n)
                                            for a, (n, _) in c.terms.items())
                const, terms = c.const if kept else fix(c.const), {}
                for a, (n, k) in c.terms.items():
                    lo, hi, _ = cuts[a].indices(n)
                    const = const + k * lo
                    terms[a] = (hi - lo, k)
                comps[d] = IndexExpr(const, terms)
        return comps

    def ref(self):
        """The recording's operand: (tensor, first element, rows, elements, row stride)."""
        if self.runs:
            raise unsupported('HBM access', 'access pattern not supported yet (the free '
                              'elements are several runs: only a DMA splits them)', self.site)
        return HbmRef(self.tensor.id, self.first, self.rows, self.elems, self.row_stride)

    def free_dims(self):
        return list(self.dims)

    def broadcast(self, shape, api, site):
        """This access, of one partition, repeated over shape[0] partitions: a DMA whose
        partition stride is 0 (nl.broadcast_to of a tensor in HBM)."""
        shape = tuple(int(x) for x in shape)
        if self.runs:
            raise unsupported(api, 'a broadcast of an HBM access of several runs', site)
        if self.rows != 1 or len(shape) < 2 or math.prod(shape[1:]) != self.elems:
            raise KernelError(api, f'cannot broadcast an HBM access of shape {self.shape} to '
                              f'{shape}: it must have one partition and the same free size',
                              site)
        return BroadcastAccess(self, shape)


class TransposedAccess(HbmAccess):
    """A 2-D part of an HBM tensor read transposed by one DMA (nl.load_transpose2d,
    nisa.dma_transpose): the view `plain` (its rows the source's elements, its elements the
    source's rows, each a run of its own) moved by one transfer whose rows are the tile's
    partitions; recorded as the source `source` (rows of contiguous elements), its load marked
    `transpose`. A masked load reads the plain view instead (a transfer per run)."""
    _kind = 'a part of an HBM tensor read transposed'

    def __init__(self, plain, source):  # pylint: disable=super-init-not-called
        self.__dict__.update(plain.__dict__)
        self.plain, self.source = plain, source
        self.runs = False  # (one transfer: the recording's operand is the source's)

    def ref(self):
        return self.source.ref()

    def restrict(self, region):
        return self.plain.restrict(region)

    def now(self):
        return TransposedAccess(self.plain.now(), self.source.now())

    def __getitem__(self, idx):
        raise unsupported('tensor indexing', 'an index of a transposed view', self.site)

    def _dims(self):
        raise unsupported('tensor view', 'a view of a transposed view', self.site)


class RetypedAccess(HbmAccess):
    """Part of an HBM tensor's bytes read as another dtype (NkiTensor.view, reinterpret_cast,
    .ap(dtype=)): the access pattern in elements of that dtype; recorded in the tensor's own
    elements, a load of it marked `bits` (the bytes moved, no cast)."""
    _kind = 'a part of an HBM tensor read as another dtype'

    def __init__(self, tensor, name, pattern, offset, site):  # pylint: disable=super-init-not-called
        view = HbmTensor(tensor.id, tensor.name, (math.prod(tensor.shape) *
                                                  _dtypes.SIZES[tensor.dtype_name] //
                                                  _dtypes.SIZES[name],), name)
        view.buffer_name = tensor.buffer_name
        self.__dict__.update(HbmAccess.pattern(view, pattern, offset, site).__dict__)
        self.viewed, self.view_dtype = tensor, name
        if self.runs:
            raise unsupported('tensor view', 'another dtype\'s view of several runs', site)
        ratio = _dtypes.SIZES[name] / _dtypes.SIZES[tensor.dtype_name]
        at = [self.first * ratio, self.elems * ratio, self.row_stride * ratio]
        if any(x != int(x) for x in at):
            raise KernelError('tensor view', f'a view as {name} that does not start and end on '
                              f'whole {tensor.dtype_name} elements', site)
        self.own = HbmRef(tensor.id, int(at[0]), self.rows, int(at[1]), int(at[2]))

    @property
    def dtype_name(self):
        return self.view_dtype

    def ref(self):
        return self.own

    def restrict(self, region):
        raise unsupported('nl.load', 'a mask on a load of another dtype\'s view', self.site)

    def _dims(self):
        raise unsupported('tensor view', 'a view of another dtype\'s view', self.site)


class GatherAccess(HbmAccess):
    """Rows of an HBM tensor chosen at run time (NKI's indirect DMA, `t[b, idx, i_f]` with
    `idx` a [P, 1] tile of indices in SBUF): row p is the one element p of the index tile
    names on dimension `dim`, each row the free elements the other components select (one
    run). A load of it is a gather the GpSimd engine's software DGE describes (nisa.dma_copy's
    reference: "When sw_dge is selected, nisa.dma_copy can also perform a gather or scatter
    operation, using a list of dynamic indices from SBUF"). Its transfer is timed as rows of
    the dimension in order (the model does not read the indices' values): `row_stride` the
    dimension's stride, 0 if it has fewer rows than the index."""
    _kind = 'an indirectly indexed part of an HBM tensor'

    def __init__(self, tensor, comps, dynamic, site):  # pylint: disable=super-init-not-called
        if len(dynamic) != 1:
            raise unsupported('tensor indexing', 'tiles of indices on several dimensions', site)
        self.dim = dim = dynamic[0]
        self.index = comps[dim].tile
        fixed = list(comps)
        fixed[dim] = 0
        base = HbmAccess(tensor, fixed, site)
        self.tensor, self.site, self.comps, self.oob = tensor, site, None, base.oob
        free = [(base.rows, base.row_stride)] + list(base.dims)
        merged = merge(free)
        if merged is None or (merged[0] > 1 and merged[1] != 1):
            raise unsupported('tensor indexing', 'an indirect access whose rows are not one '
                              'run of elements each', site)
        self.first = base.first
        self.rows = self.index.shape[0]
        self.elems = merged[0]
        self.dims = [(self.elems, 1)]
        self.shape = (self.rows,) + tuple(n for n, _ in free)
        self.runs = False
        self.stride = math.prod(tensor.shape[dim + 1:])  # between two rows' indices
        self.bound = tensor.shape[dim]  # the indices' bound
        self.row_stride = self.stride if self.bound >= self.rows else 0
        self.oob_mode = 'error'  # (nisa.dma_copy's oob_mode: skip leaves such rows unwritten)

    def restrict(self, region):
        """The rows a mask keeps (the first partitions of the index)."""
        rows = region[0] if region else slice(None)
        if any(r != slice(None) and r.indices(n)[:2] != (0, n)
               for r, n in zip(region[1:], self.shape[1:])):
            raise unsupported('nl.load', 'a mask on the free elements of an indirect access',
                              self.site)
        lo, hi, _ = rows.indices(self.rows)
        out = _copy.copy(self)
        out.index = self.index[lo:hi] if (lo, hi) != (0, self.rows) else self.index
        out.rows = hi - lo
        out.shape = (hi - lo,) + self.shape[1:]
        return out

    def now(self):
        return self

    def free_dims(self):
        return list(self.dims)


class OffsetAccess(HbmAccess):
    """An access pattern of an HBM tensor whose start moves at run time (NkiTensor.ap's
    scalar_offset=): the static access `base` shifted by the value of a [1, 1] integer tile in
    SBUF times `stride` (the elements right of the base tensor's `indirect_dim`, the access
    pattern guide's "offset + scalar_offset * prod(A.shape[indirect_dim+1:])"). A DMA of it
    waits for that tile, and is timed as the static access (the model does not read the
    offset's value); the interpreter reads it, and an access out of the tensor is an error, or
    skipped under oob_mode=skip (`oob_mode`)."""
    _kind = 'a part of an HBM tensor at a run-time offset'

    def __init__(self, base, offset_tile, stride, site):  # pylint: disable=super-init-not-called
        self.__dict__.update(base.__dict__)
        self.offset_tile, self.stride, self.site = offset_tile, stride, site
        self.reach = math.prod(base.tensor.shape)  # the elements it may reach
        self.oob_mode = 'error'

    def shifted(self, piece):
        """A piece of this access (a run of it, _ops.split) at the same run-time offset."""
        out = OffsetAccess(piece, self.offset_tile, self.stride, self.site)
        out.oob_mode = self.oob_mode
        return out

    def now(self):
        return self


class BroadcastAccess(HbmAccess):
    """One partition of an HBM tensor read into every partition of a tile."""
    _kind = 'a broadcast HBM operand'

    def __init__(self, one, shape):  # pylint: disable=super-init-not-called
        self.__dict__.update(one.__dict__)
        self.one = one
        self.shape = shape
        self.rows, self.row_stride = shape[0], 0

    def restrict(self, region):
        raise unsupported('nl.broadcast_to', 'a mask on a broadcast load', self.site)


class HbmRef(tuple):
    """An HBM operand of the recording: (tensor, first, rows, elems, row_stride)."""
    __slots__ = ()

    def __new__(cls, tensor, first, rows, elems, row_stride):
        return tuple.__new__(cls, (tensor, first, rows, elems, row_stride))


class TileRef(tuple):
    """A tile operand of the recording: (declaration, instances back, logical tile, first
    partition, partitions, first element, elements, element stride)."""
    __slots__ = ()

    def __new__(cls, decl, back, block, p0, pc, f0, fc, es):
        return tuple.__new__(cls, (decl, back, block, p0, pc, f0, fc, es))


class Tile(TensorViews, Typed, Arithmetic):
    """A logical tile in SBUF or PSUM, or a part of one. A whole tile (a root) is one instance
    of a declaration; its record-time state (writes, pending zeroing, the NKI loops open when
    it was made) lives on the root. A part is partitions [pabs, pabs + shape[0]) and the
    elements fabs, fabs + fstep, ... of the root (its operand's element stride `estride`, as
    the builder's chain of slices would give it)."""
    _kind = 'a tile'

    def __init__(self, name, shape, dtype, space, root=None, pabs=0, fabs=0, fstep=1,
                 estride=1):
        self.name = name
        self.shape = shape = tuple(shape)
        self.partitions = shape[0]
        elems = 1
        for s in shape[1:]:
            elems *= s
        self.elems = elems
        self.dtype_name = dtype
        self.space = space
        self._root = root  # None: this is the root
        self.pabs, self.fabs, self.fstep, self.estride = pabs, fabs, fstep, estride
        self.broadcast_from = None  # a [P, 1] tile this one repeats along the free axis
        if root is None:
            self.decl = None
            self.serial = 0  # which instance of its declaration
            self.block = 0   # which logical tile of it (an int or a loop index expression)
            self.born = ()   # the NKI loops open when it was made
            self.version = 0  # writes so far (nl.matmul's hoisted transposes of it)
            self.writes = {}  # PSUM: the parts written since it was made (their values now), each once
            self.zero_site = None  # nl.zeros in PSUM: where; the zeroing waits for a matmul
            self.zero_done = False  # that zeroing was folded into a matmul or emitted
            self.read_since_write = False  # PSUM: an instruction read it since its last write
            self._group = None  # the TileBlocks it is a logical tile of (a weak reference)

    @property
    def root(self):
        return self._root if self._root is not None else self

    @property
    def group(self):
        """The tensor of tiles (TileBlocks) a root is a logical tile of, while it lives."""
        return self._group() if self._group is not None else None

    def _part(self, shape, pabs, fabs, fstep, estride):
        return Tile(self.name, shape, self.dtype_name, self.space, self.root, pabs, fabs, fstep,
                    estride)

    def view(self, idx, site, api='tile indexing', runs=False):
        """The part of this tile `idx` selects. `runs`: a part of several runs may be returned
        (a TileRuns, for the SBUF side of a DMA; the kernel's own indexing), else it is an
        error."""
        if idx is Ellipsis:
            return self
        if len(self.shape) == 1 and isinstance(idx, tuple) and len(idx) == 2:
            # a tile of one element per partition (a column taken with an integer, t[:, i])
            # is the [P, 1] tile it stands for: t[:, 0] and t[:, 0:1] are all of it
            return self.reshape(self.shape[0], 1).view(idx, site, api, runs)
        comps = normalise(self.shape, idx, api, site)
        if all(isinstance(c, IndexRange) and not isinstance(c.start, Affine) and c.start == 0
               and c.step == 1 and c.size == n and c.axis in (None, d)
               for d, (c, n) in enumerate(zip(comps, self.shape))):
            return self
        if not in_order(comps):
            return self._general_view(comps, site, api, runs)
        pc = comps[0]
        if not isinstance(pc, IndexRange):
            pc = IndexRange(pc, 1)
        if pc.step != 1:
            raise unsupported(api, 'access pattern not supported yet (strided partitions of a '
                              'tile)', site)
        free = comps[1:]
        strides = [math.prod(self.shape[1 + d + 1:]) for d in range(len(free))]
        first = 0
        for c, s in zip(free, strides):
            first = first + (c.start if isinstance(c, IndexRange) else c) * s
        # The free part must be one arithmetic progression of elements (contiguous, or every
        # step-th element); else it is several runs.
        merged = merge([(c.size, s * c.step) for c, s in zip(free, strides)
                        if isinstance(c, IndexRange)])
        if merged is None:
            return self._general_view(comps, site, api, runs)
        count, step = merged
        shape = (pc.size,) + tuple(c.size for c in free if isinstance(c, IndexRange))
        whole_f = not free or (not isinstance(first, Affine) and first == 0 and step == 1 and
                               count == self.elems)
        if whole_f:
            return self._part(shape, self.pabs + pc.start, self.fabs, self.fstep, self.estride)
        estride = self.estride * step if count > 1 else self.estride
        return self._part(shape, self.pabs + pc.start, self.fabs + first * self.fstep,
                          self.fstep * step, estride)

    def free_dims(self):
        """This part's free elements as [(size, stride in the root's elements)], per
        dimension of its shape."""
        return [(n, self.fstep * math.prod(self.shape[2 + d:]))
                for d, n in enumerate(self.shape[1:])]

    def _general_view(self, comps, site, api, runs):
        """A part selected by index expressions or tile axes in another order than the
        dimensions: the logical axes are the tile axes, in order; one run of evenly spaced
        elements is a Tile, several a TileRuns."""
        pc = comps[0]
        if isinstance(pc, IndexExpr) or (isinstance(pc, IndexRange) and
                                         (pc.step != 1 or pc.axis not in (None, 0))):
            raise unsupported(api, 'access pattern not supported yet (the partition dimension '
                              'of a tile indexed by anything but its own range)', site)
        if not isinstance(pc, IndexRange):
            pc = IndexRange(pc, 1, 1, 0)
        strides = [self.fstep * math.prod(self.shape[2 + d:]) for d in range(len(comps) - 1)]
        first, dims = layout(comps[1:], strides, self.fabs)
        merged = merge(dims)
        shape = (pc.size,) + tuple(n for n, _ in dims)
        if merged is not None:
            count, step = merged
            estride = step if count > 1 else self.estride
            return self._part(shape, self.pabs + pc.start, first, step if count > 1 else
                              self.fstep, estride)
        if not runs:
            raise unsupported(api, RUNS_ONLY, site)
        return TileRuns(self.root, self.pabs + pc.start, pc.size, first, dims, site)

    def same_region(self, other):
        return (other.__class__ is self.__class__ and other.root is self.root and
                same(other.pabs, self.pabs) and same(other.fabs, self.fabs) and
                other.fstep == self.fstep and other.shape == self.shape)

    def __getitem__(self, idx):
        return self.view(idx, None, runs=True)  # (errors find the kernel's line themselves)

    def __setitem__(self, idx, value):
        site = user_site()
        OPERATORS['assign'](self.view(idx, site, runs=True), _staged(self, value), site)

    def __iadd__(self, value):
        OPERATORS['accumulate'](self, value, user_site())
        return self

    def _dims(self):
        width = self.root.elems
        return (self.pabs * width + self.fabs,
                [(self.partitions, width)] + [tuple(x) for x in self.free_dims()])

    def _remade(self, first, dims, site):
        return _tile_view(self.root, first, dims, site)

    def ap(self, pattern, offset=0, dtype=None, scalar_offset=None, vector_offset=None,
           indirect_dim=0):
        """NkiTensor.ap of a tile: the access `pattern` ([[step, count], ...], the first over
        partitions, a step of one partition's elements) from element `offset` (partition
        offset // elements, element offset % elements), a part of this tile."""
        site = user_site()
        offset = 0 if offset is None else offset
        if isinstance(scalar_offset, (int, np.integer, Affine)) and \
                not isinstance(scalar_offset, bool):  # known when traced: a static offset of
            # that many steps of dimension indirect_dim ("offset + scalar_offset *
            # prod(A.shape[indirect_dim+1:])", the access pattern guide)
            if not 0 <= int(indirect_dim) < len(self.shape):
                raise KernelError('.ap', f'indirect_dim {indirect_dim} of a tile of shape '
                                  f'{self.shape}', site)
            step = math.prod(self.shape[int(indirect_dim) + 1:])
            offset, scalar_offset = offset + scalar_offset * step, None
        if scalar_offset is not None or vector_offset is not None:
            raise unsupported('.ap', 'scalar_offset= / vector_offset= of an on-chip tile (an '
                              'engine access at a run-time offset)', site)
        if dtype is not None and _dtypes.dtype_name(dtype) != self.dtype_name:
            raise unsupported('.ap', 'dtype= of a tile', site)
        (pstep, rows), free = _pattern(pattern, '.ap', site)[0], _pattern(pattern, '.ap',
                                                                           site)[1:]
        width = self.root.elems
        if self is not self.root or (rows > 1 and pstep != width):
            raise unsupported('.ap', 'a pattern whose partition step is not one partition of a '
                              'whole tile', site)
        p0, f0 = divmod(int(offset), width)
        dims = [(n, st) for st, n in free]
        last = f0 + sum((n - 1) * st for n, st in dims)
        if p0 + rows > self.partitions or last >= width or any(st < 0 for _, st in dims):
            raise KernelError('.ap', f'the access pattern {pattern} from element {offset} runs '
                              f'outside the tile of shape {self.shape}', site)
        return _tile_view(self.root, int(offset), [(rows, width)] + dims, site)

    def reshape(self, *shape):
        """The same tile seen with other free dimensions (no instruction); the partition
        dimension stays."""
        site = user_site()
        shape = tuple(int(x) for x in (shape[0] if len(shape) == 1 and
                                       isinstance(shape[0], (tuple, list)) else shape))
        if not shape or shape[0] != self.shape[0] or math.prod(shape[1:]) != self.elems:
            raise unsupported('tile.reshape', f'a reshape of {self.shape} to {shape} (only the '
                              'free dimensions of a tile can be reshaped)', site)
        t = self._part(shape, self.pabs, self.fabs, self.fstep, self.estride)
        t.broadcast_from = self.broadcast_from
        return t

    def broadcast_to(self, shape):
        """A [P, 1] tile seen as [P, F] (each partition's value repeated along the free axis):
        a per-partition scalar operand; a [1, F] tile repeated into P partitions (a new tile,
        _ops.partition_broadcast)."""
        site = user_site()
        shape = tuple(int(x) for x in shape)
        if len(shape) >= 2 and self.partitions == 1 and shape[0] > 1:
            return OPERATORS['partition_broadcast']('tile.broadcast_to', site, self, shape)
        if len(shape) < 2 or shape[0] != self.shape[0] or self.elems != 1:
            raise unsupported('tile.broadcast_to', f'a broadcast of {self.shape} to {shape} (a '
                              '[1, F] tile across partitions, a [P, 1] tile along the free '
                              'axis)', site)
        t = self._part(shape, self.pabs, self.fabs, self.fstep, self.estride)
        t.broadcast_from = self
        return t

    def __repr__(self):
        return f'<{self.space} tile {self.name} {self.shape} {self.dtype_name}>'

    def indirect(self, index, num_elem=None):
        """NeuronCore-v4's tensor indirection (NkiTensor.indirect): a [P, num_elem] view of
        this [P, F] tile whose column i is column index[i % G, i // G] of it (G: 16 on the
        Vector, Scalar and GpSimd engines, 32 on the Tensor engine; offsets past the first
        G x K continue in the next G partitions of index), gathered when an instruction reads
        it, scattered when one writes it."""
        return IndirectTile.make(self, index, num_elem, user_site())

    @property
    def is_indirect(self):
        return False


class IndirectTile(Tile):
    """A view with tensor indirection (Tile.indirect): `shape` is (P, count); its columns are
    columns of the `extent` columns of `base` at the offsets in tile `index`."""
    _kind = 'an indirect tile view'

    def __init__(self, base, index, count):
        super().__init__(base.name + '.indirect', (base.partitions, count), base.dtype_name,
                         base.space, base.root, base.pabs, base.fabs, base.fstep, base.estride)
        self.base, self.index, self.extent = base, index, base.elems

    @classmethod
    def make(cls, base, index, num_elem, site):
        api = 'tile.indirect'
        lim = OPERATORS['limits']()
        if not lim.get('indirect'):
            raise KernelError(api, 'tensor indirection is a NeuronCore-v4 feature '
                              '(core.sbuf.indirect=false on this platform)', site)
        if isinstance(base, IndirectTile):
            raise KernelError(api, 'an indirect view cannot be indirected again', site)
        if len(base.shape) != 2 or base.broadcast_from is not None:
            raise unsupported(api, f'an indirect view of a tile of shape {base.shape} (a [P, F] '
                              'tile: index the columns of one free dimension)', site)
        if not isinstance(index, Tile) or isinstance(index, IndirectTile):
            raise KernelError(api, f'index is {type(index).__name__}, not a tile', site)
        if index.space != 'sbuf' or index.dtype_name not in _dtypes.INTEGERS:
            raise KernelError(api, f'index is a tile of integer offsets in SBUF, not '
                              f'{index.dtype_name} in {index.space.upper()}', site)
        if index.partitions != base.partitions:
            raise KernelError(api, f'index has {index.partitions} partitions, the tile '
                              f'{base.partitions} (the same)', site)
        size = index.partitions * index.elems
        count = size if num_elem is None else num_elem
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or \
                not 1 <= count <= size:
            raise KernelError(api, f'num_elem={num_elem!r}: from 1 to index.size ({size})', site)
        return cls(base, index, int(count))

    @property
    def is_indirect(self):
        return True

    def view(self, idx, site, api='tile indexing', runs=False):
        if idx is Ellipsis:
            return self
        raise unsupported(api, 'indexing an indirect view (index the tile, then take '
                          '.indirect() of the part)', site)

    def reshape(self, *shape):
        raise unsupported('tile.reshape', 'a reshape of an indirect view', user_site())

    def broadcast_to(self, shape):
        raise unsupported('tile.broadcast_to', 'a broadcast of an indirect view', user_site())

    def same_region(self, other):
        return (other.__class__ is IndirectTile and self.base.same_region(other.base) and
                self.index.same_region(other.index) and self.shape == other.shape)

    def __repr__(self):
        return (f'<{self.space} tile {self.base.name}.indirect({self.index.name}) {self.shape} '
                f'{self.dtype_name}>')


class IndirectRef(tuple):
    """An indirect operand of the recording: (the view's TileRef: partitions, first column,
    count, element stride; the offsets' TileRef; the columns it indexes; the partition group
    of the engine that runs it)."""
    __slots__ = ()

    def __new__(cls, view, index, extent, group):
        return tuple.__new__(cls, (view, index, extent, group))


RUNS_ONLY = ('access pattern not supported yet (a tile part of several runs of elements is an '
             'operand of DMAs and elementwise operations only)')


def _tile_view(root, first, dims, site):
    """The part of tile `root` of those dimensions from element `first` (partition-major):
    a Tile when its free elements are one run, else a TileRuns."""
    width = root.elems
    (pc, _), free = dims[0], dims[1:]
    p0, f0 = divmod(first, width)
    if p0 + pc > root.partitions:
        raise KernelError('tile view', f'partitions {p0}..{p0 + pc - 1} of a tile of '
                          f'{root.partitions}', site)
    merged = merge(free) if free else (1, 1)
    if merged is not None and all(st != 0 or n == 1 for n, st in free):
        count, step = merged
        shape = (pc,) + tuple(n for n, _ in free) if free else (pc, 1)
        return root._part(shape, p0, f0, step, step)
    return TileRuns(root, p0, pc, f0, free, site)


class TileRuns(TensorViews, Typed, Arithmetic):
    """A part of a tile whose free elements are several runs, such as t[:, :, k, :] of a
    [P, A, B, C] tile or t[i_p, i_b, i_a] (its axes in another order than the tile's
    dimensions): partitions [p0, p0 + pc) of the root, and the free elements f0 + sum of
    index * stride over `dims` [(size, stride)]. An operation on it is split into one
    instruction (or DMA transfer) per run (_ops.split)."""
    _kind = 'a tile part'

    def __init__(self, root, p0, pc, f0, dims, site):
        self.root, self.site = root, site
        self.p0, self.partitions, self.f0, self.dims = p0, pc, f0, list(dims)
        self.shape = (pc,) + tuple(n for n, _ in dims)
        self.elems = math.prod(n for n, _ in dims)
        self.dtype_name, self.space = root.dtype_name, root.space
        self.broadcast_from = None
        self.name = root.name

    def free_dims(self):
        return list(self.dims)

    def _dims(self):
        width = self.root.elems
        return self.p0 * width + self.f0, [(self.partitions, width)] + list(self.dims)

    def _remade(self, first, dims, site):
        return _tile_view(self.root, first, dims, site)

    def _unsupported(self, *args, **kwargs):
        raise unsupported('tile indexing', 'an index, reshape or broadcast of a tile part of '
                          'several runs (index the tile itself)', self.site)

    def view(self, idx, site, api='tile indexing', runs=False):
        if idx is Ellipsis:
            return self
        raise unsupported(api, 'a mask or an index on a tile part of several runs', site)

    def __setitem__(self, idx, value):
        site = user_site()
        OPERATORS['assign'](self.view(idx, site), value, site)

    def __iadd__(self, value):
        OPERATORS['accumulate'](self, value, user_site())
        return self

    def same_region(self, other):
        return (isinstance(other, TileRuns) and other.root is self.root and
                same(other.p0, self.p0) and same(other.f0, self.f0) and other.dims == self.dims)

    __getitem__ = reshape = broadcast_to = _unsupported


class TileBlocks(Typed):
    """An instance of a declaration with block dimensions (before the partition one): each block
    index is a logical tile, made the first time the instance uses it (make_tile)."""
    _kind = 'a tile'

    def __init__(self, block_shape, make_tile, tile_shape, dtype, space, serial_cell=None):
        self.block_shape = tuple(block_shape)
        self.make_tile = make_tile
        self.serial_cell = serial_cell  # the instance's serial, as make_tile reads it
        self.tiles = {}  # the logical tiles made so far, by block index
        self.tile_shape = tile_shape
        self.shape = self.block_shape + tuple(tile_shape)
        self.dtype_name = dtype
        self.space = space

    def serial_shift(self, grew):
        """Moves the instance's serial (and its tiles') past the instances of iterations not
        run (_trace._shift_serial)."""
        shift = grew.get(self.decl.id, 0)
        if shift:
            for t in self.tiles.values():
                t.serial += shift
            self.serial_cell[0] += shift

    def block(self, idx, api, site):
        """(the logical tile of the block indices leading idx, the rest of idx)."""
        if not isinstance(idx, tuple):
            idx = (idx,)
        nb = len(self.block_shape)
        if len(idx) < nb or not all(isinstance(i, (INTEGER, Affine)) for i in idx[:nb]):
            raise unsupported(api, 'index every block dimension of a tile tensor with an '
                              'integer', site)
        linear = 0
        for d, (i, n) in enumerate(zip(idx[:nb], self.block_shape)):
            if low(i) < 0 or high(i) >= n:
                raise KernelError(api, f'block index {tuple(high(x) for x in idx[:nb])} is out '
                                  f'of bounds for blocks {self.block_shape}', site)
            linear = linear + i * math.prod(self.block_shape[d + 1:])
        # the same expression of the same loops' indices: the same logical tile (in PSUM,
        # whose tiles keep their pending zeroing and writes, the tile of its value now)
        key = linear
        if isinstance(linear, Affine):
            key = concrete(linear) if self.space == 'psum' else (linear.c, linear.terms)
        t = self.tiles.get(key)
        if t is None:
            t = self.tiles[key] = self.make_tile(linear)
            t._group = weakref.ref(self)  # (no cycle: a tile outlives its tensor by itself)
        else:
            t.block = linear  # the recording names it by this access's expression
        return t, idx[nb:]

    def __getitem__(self, idx):
        site = user_site()
        t, rest = self.block(idx, 'tile indexing', site)
        return t.view(rest, site, runs=True) if rest else t

    def __setitem__(self, idx, value):
        site = user_site()
        t, rest = self.block(idx, 'tile assignment', site)
        OPERATORS['assign'](t.view(rest, site, runs=True) if rest else t, _staged(self, value),
                            site)


def _staged(dst, value):
    """The value `dst[...] = value` assigns: a Tensor-engine result assigned to SBUF is made in
    PSUM, then copied (the compiler's lowering; an instruction's own dst= has no such copy)."""
    if getattr(value, 'space', None) == 'psum' and dst.space == 'sbuf' and \
            hasattr(value, 'materialize'):
        return value.materialize()
    return value


class ParDim(int):
    """nl.par_dim(n): marks the partition dimension of an on-chip tensor shape."""

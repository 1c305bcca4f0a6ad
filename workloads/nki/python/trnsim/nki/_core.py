"""The frontend's core: the kernel context, HBM tensors, tiles, index patterns and the one
dispatch point through which every tile operation reaches the C++ kernel builder.

A kernel runs eagerly: each operation computes its values with numpy (unless only the program
is wanted) and records, with the kernel's file:line, the builder calls it needs; when the kernel
returns they are replayed into the builder, which alone decides buffer counts, allocates and
rotates buffers and derives the semaphores.
"""

import functools
import inspect
import itertools
import math
import os
import re
import sys

import numpy as np

from . import _dtypes

try:
    import _trnsim as native
except ImportError as _e:  # pragma: no cover - explained to the user
    raise ImportError(
        'trnsim.nki needs the _trnsim module built by CMake (build/python); run the '
        'kernel through scripts/nki, or put that folder on PYTHONPATH') from _e

_SHIM_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
              os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
                  os.path.abspath(__file__)))), 'alias') + os.sep)

_MEM = {'sbuf': native.mem_space.sbuf, 'psum': native.mem_space.psum}
_DT = {'float32': native.dtype.float32, 'bfloat16': native.dtype.bfloat16,
       'float16': native.dtype.float16, 'int32': native.dtype.int32}
ENGINES = {'dve': native.engine.dve, 'act': native.engine.act, 'pool': native.engine.pool,
           'pe': native.engine.pe}


class KernelError(Exception):
    """An error in a kernel: names the API and the kernel's file:line."""

    def __init__(self, api, message, site=None):
        self.api = api
        self.site = site if site is not None else user_site()
        self.detail = message
        super().__init__(f'{self.site[0]}:{self.site[1]}: {api}: {message}')


def user_site():
    """(file, line) of the innermost frame outside the frontend: the kernel's own line."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_SHIM_DIRS):
        f = f.f_back
    if f is None:
        return ('<unknown>', 0)
    return (f.f_code.co_filename, f.f_lineno)


def unsupported(api, what=None, site=None):
    """The error for an API or a use of it that the frontend does not support yet."""
    if what is None:
        what = 'not supported by trnsim yet'
    elif 'not supported' not in what:
        what += ' is not supported yet'
    return KernelError(api, what + ' (docs/nki.md lists what is supported)', site)


class UnsupportedAttribute(KernelError, AttributeError):
    """An attribute the frontend does not have: a kernel error (scripts/nki reports it in one
    line), and an AttributeError, so that hasattr() and getattr(x, name, default) still work."""


def missing(module, name):
    """The module __getattr__ of nki.language, nki.isa and nki.compiler: an API the frontend
    does not have, named with the kernel's file:line."""
    if name.startswith('__'):
        raise AttributeError(name)
    api = f'nki.{module}.{name}' if module else f'nki.{name}'
    raise UnsupportedAttribute(api, 'not supported by trnsim yet '
                               '(docs/nki.md lists what is supported)')


_CALL_PREFIX = re.compile(r'^[\w.<>]+\(\) ')


def checked_api(api, fn):
    """fn as the NKI API `api`: a call with arguments its signature does not take (a keyword it
    does not know, a missing argument) is a KernelError at the kernel's line, not a TypeError
    from inside the frontend. A TypeError raised inside fn is left alone. `name=` (the name
    NKI gives a tile or an instruction, which changes no timing) is accepted by every API."""
    takes_name = 'name' in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def api_call(*args, **kwargs):
        if not takes_name and 'name' in kwargs:
            del kwargs['name']
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if e.__traceback__.tb_next is not None:  # raised inside fn, not by the call
                raise
            raise KernelError(api, _CALL_PREFIX.sub('', str(e)) + ' (docs/nki.md lists what '
                              'is supported)') from None
    api_call.__name__ = api_call.__qualname__ = api.rsplit('.', 1)[-1]
    return api_call


def check_module_apis(namespace, prefix):
    """Replaces each public function defined in a module (its globals, `namespace`) by its
    checked_api form, named `prefix.name`."""
    module = namespace['__name__']
    for name, obj in list(namespace.items()):
        if (not name.startswith('_') and inspect.isfunction(obj) and
                obj.__module__ == module):
            namespace[name] = checked_api(f'{prefix}.{name}', obj)


class _UserFacing:
    """A frontend object a kernel holds: an attribute it lacks, asked for by the kernel, is a
    kernel error at the kernel's line rather than a traceback from inside the frontend (private
    names, and lookups by the frontend itself, stay plain misses)."""

    __slots__ = ()
    _kind = 'this object'  # what the error calls it

    def __getattr__(self, name):
        if name.startswith('_') or sys._getframe(1).f_code.co_filename.startswith(_SHIM_DIRS):
            raise AttributeError(name)
        raise UnsupportedAttribute(f'.{name}', f'{self._kind} has no such attribute in trnsim '
                                   '(docs/nki.md lists what is supported)')


class _State:
    """The kernel being traced (one at a time)."""

    current = None


def context(api):
    ctx = _State.current
    if ctx is None:
        raise KernelError(api, 'called outside a kernel: call the kernel through nki.jit, '
                          'nki.baremetal, nki.simulate_kernel or nki.benchmark')
    return ctx


def dispatch(api, site, record, compute=None):
    """The one place a tile operation is recorded: `record` (the builder calls) is kept, with
    the operation's API and file:line, to be replayed in program order by build(); `compute`
    gives the numpy values now (skipped when only the program is wanted)."""
    ctx = _State.current
    ctx.events.append((api, site, record))
    ctx.ops += 1
    if compute is not None and ctx.values:
        compute()


def _phases(ctx):
    """The kernel's phases, as (first event, last event, declarations): the groups of
    declarations whose lifetimes (from the declaration to the last use) overlap, chained. A
    later group can reuse the memory of an earlier one, whose tiles are dead by then, as the
    compiler's allocator would: a kernel that runs steps one after the other (a transpose, then
    a matmul, ...) frees each step's tiles for the next. One group: the whole kernel."""
    groups = []
    for d in sorted(ctx.decl_list, key=lambda d: d.first_event):
        end = max(d.first_event, d.last_event)
        if groups and d.first_event <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
            groups[-1][2].append(d)
        else:
            groups.append([d.first_event, end, [d]])
    return groups


def _plan(kb, decls):
    auto = [d for d in decls if d.alloc is None]
    plan = kb.plan_buffers([native.TileRequest(_MEM[d.space], d.bytes, d.count,
                                               d.carried or d.instances == 1, d.loops)
                            for d in auto])
    for d, b in zip(auto, plan):
        d.buffers = b


def build(ctx):
    """The kernel's program: the declarations get their buffer counts from the builder, which
    decides them for each phase (_phases) at once, then every recorded call is replayed, each
    phase between the builder's begin_phase and end_phase when there are several."""
    kb = ctx.kb
    groups = _phases(ctx)
    starts = {g[0]: g for g in groups} if len(groups) > 1 else {}
    ends = {g[1] for g in groups} if len(groups) > 1 else set()
    if not starts:
        _plan(kb, ctx.decl_list)
    try:
        for i, (api, site, fn) in enumerate(ctx.events):
            try:
                if i in starts:
                    kb.begin_phase()
                    _plan(kb, starts[i][2])
                fn()
                if i in ends:
                    kb.end_phase()
            except KernelError:
                raise
            except (native.UserError, RuntimeError, ValueError) as e:
                raise KernelError(api, str(e), site) from None
        return kb.finish()
    finally:
        # The recording refers to tiles that refer to the context: drop it, so that the
        # kernel's objects go by reference counting rather than by a cyclic collection.
        ctx.events.clear()
        ctx.decls.clear()
        ctx.decl_list.clear()


class Context:
    """One traced kernel: its builder, its declarations and its options."""

    def __init__(self, platform, style, values):
        self.platform = platform
        self.style = style
        self.kb = platform.builder(native.style.isa if style == 'isa' else native.style.nl)
        self.values = values
        self.partitions = platform.partitions()
        self.pe_rows = platform.integer('core.pe.rows')
        self.pe_cols = platform.integer('core.pe.cols')
        self.moving_max = platform.integer('core.pe.moving_max')
        self.psum_bank = platform.size('core.psum.bank_size')
        self.sbuf_bytes = platform.sbuf_partition_bytes()
        self.decls = {}       # declaration key -> Decl
        self.decl_list = []   # in declaration order
        self.events = []      # (api, site, builder calls), replayed by build()
        self.loops = []       # open loops: (kind, id)
        self.open_loops = ()  # their ids
        self.loop_trips = []  # their trip counts
        self.loop_count = 0
        # Per open NKI loop (the kernel's top level first): the loop's identity and how many
        # times each declaration or loop site has run in its current iteration. A site that
        # runs again within one iteration (a Python loop, a list comprehension,
        # nl.static_range, a helper called twice) declares another tile or loop, as the NKI
        # tracer would; the next iteration of an NKI loop takes the next instance of the same
        # tiles. A loop's identity is its site and occurrence, within its parent's.
        self.levels = [[(), {}]]
        self.operands = []  # declarations read since the last operation was built (_ops.Pending)
        self.hbm_names = set()
        self.sbuf_mem = None
        self.ops = 0
        # nl.matmul's transposes of its x, hoisted (language._transposed): x's declaration and
        # view -> x's root and version, the transposed tile, its slot and pending readers
        self.transposed = {}
        self.hoisted_bytes = 0  # SBUF per partition their declarations take
        self.hoist_share = platform.real('compiler.hoist_sbuf_share')  # ... at most this share
        self.isa_version = platform.integer('core.isa_version')

    def hbm_name(self, wanted):
        name, n = wanted, 1
        while name in self.hbm_names:
            n += 1
            name = f'{wanted}_{n}'
        self.hbm_names.add(name)
        return name

    def occurrence(self, site):
        """(identity of the innermost open NKI loop, how many times `site` ran before in its
        current iteration)."""
        lid, hits = self.levels[-1]
        nth = hits.get(site, 0)
        hits[site] = nth + 1
        return lid, nth

    def note_use(self, tile):
        """A tile is used by the next recorded event. One used inside a sequential loop it was
        declared outside of carries state across that loop's iterations (an accumulator): the
        builder keeps it in one buffer."""
        root = tile.root
        root.decl.last_event = max(root.decl.last_event, len(self.events))
        self.operands.append(root.decl)
        for kind, lid in self.loops:
            if kind == 'sequential' and lid not in root.born:
                root.decl.carried = True
                return

    def direct_memory(self):
        if self.sbuf_mem is None:
            self.sbuf_mem = np.zeros((self.partitions, self.sbuf_bytes), dtype=np.uint8)
        return self.sbuf_mem


# ---------------------------------------------------------------------------------------------
# Values held in float32 (int32 for int32); bfloat16 rounds as on the device (_dtypes.round_bf16).

def read_values(arr, dtype):
    if arr.dtype == np.uint16:  # bfloat16 bits in directly allocated SBUF
        return (arr.astype(np.uint32) << 16).view(np.float32)
    if dtype == 'int32':
        return np.array(arr, dtype=np.int32)
    return np.array(arr, dtype=np.float32)


def write_values(arr, dtype, values):
    v = _dtypes.round_to(values, dtype)
    if arr.dtype == np.uint16:
        arr[...] = np.broadcast_to(v, arr.shape).astype(np.float32).view(np.uint32) >> 16
    else:
        arr[...] = np.broadcast_to(v, arr.shape)


def dtype_object(name):
    return {'float32': _dtypes.float32, 'float16': _dtypes.float16, 'int32': _dtypes.int32,
            'bfloat16': _dtypes.bfloat16}.get(name, name)


# ---------------------------------------------------------------------------------------------
# Index patterns

class IndexRange(_UserFacing):
    """An affine index start + step * i, i < size, on tile axis `axis` (None: in order)."""
    _kind = 'an index'

    __slots__ = ('start', 'size', 'step', 'axis')

    def __init__(self, start, size, step=1, axis=None):
        self.start, self.size, self.step, self.axis = start, size, step, axis

    def _with(self, start=None, step=None, axis=None):
        return IndexRange(self.start if start is None else start, self.size,
                          self.step if step is None else step,
                          self.axis if axis is None else axis)

    def __add__(self, other):
        if isinstance(other, (int, np.integer)):
            return self._with(start=self.start + int(other))
        if isinstance(other, (IndexRange, IndexExpr)):
            return IndexExpr.of(self) + other
        raise unsupported('index expression', 'only index + integer is supported in an index')

    __radd__ = __add__

    def __sub__(self, other):
        return self.__add__(-other)

    def __mul__(self, other):
        if isinstance(other, (int, np.integer)):
            return IndexRange(self.start * int(other), self.size, self.step * int(other),
                              self.axis)
        raise unsupported('index expression', 'only index * integer is supported in an index')

    __rmul__ = __mul__

    def _bound(self, lo=None, hi=None):
        """The mask keeping the tile indices i whose value start + step * i is in [lo, hi)."""
        if self.axis is None:
            raise unsupported('mask', 'a mask on an index without a tile axis (use '
                              'nl.arange(n)[:, None], [None, :] or nl.mgrid)')
        i_lo = 0 if lo is None else max(0, -(-(lo - self.start) // self.step))
        i_hi = self.size if hi is None else min(self.size, -(-(hi - self.start) // self.step))
        return Mask({self.axis: (i_lo, i_hi)})

    def __lt__(self, n):
        return self._bound(hi=int(n))

    def __le__(self, n):
        return self._bound(hi=int(n) + 1)

    def __ge__(self, n):
        return self._bound(lo=int(n))

    def __gt__(self, n):
        return self._bound(lo=int(n) + 1)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axes = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(axes) != 1 or any(k is not None for k in key if not isinstance(k, slice)):
            raise unsupported('nl.arange indexing', 'use nl.arange(n)[:, None] or [None, :]')
        return self._with(axis=axes[0])


class IndexExpr(_UserFacing):
    """An affine expression of indices on several tile axes, const + sum of coef * k_axis with
    k_axis < size: what nisa.iota takes (`i_p * 512 + i_f`). Not an index of a tensor."""
    _kind = 'an index expression'

    def __init__(self, const, terms):
        self.const = const
        self.terms = terms  # axis -> (size, coef)

    @staticmethod
    def of(x):
        if isinstance(x, IndexExpr):
            return x
        if x.axis is None:
            raise unsupported('index expression', 'an index without a tile axis (use '
                              'nl.arange(n)[:, None] or [None, :])')
        return IndexExpr(x.start, {x.axis: (x.size, x.step)})

    def __add__(self, other):
        if isinstance(other, (int, np.integer)):
            return IndexExpr(self.const + int(other), dict(self.terms))
        other = IndexExpr.of(other)
        if set(self.terms) & set(other.terms):
            raise unsupported('index expression', 'two terms on the same tile axis')
        return IndexExpr(self.const + other.const, {**self.terms, **other.terms})

    __radd__ = __add__

    def __sub__(self, other):
        return self.__add__(-other)

    def __mul__(self, other):
        if not isinstance(other, (int, np.integer)):
            raise unsupported('index expression', 'only expression * integer')
        k = int(other)
        return IndexExpr(self.const * k, {a: (n, c * k) for a, (n, c) in self.terms.items()})

    __rmul__ = __mul__


class Mask:
    """A rectangular mask (comparisons of tile indices, combined with &): on each tile axis,
    the indices [lo, hi) an operation keeps."""

    def __init__(self, bounds):
        self.bounds = dict(bounds)

    def __and__(self, other):
        if not isinstance(other, Mask):
            raise unsupported('mask', 'only comparisons of indices combined with & are '
                              'supported in a mask')
        out = dict(self.bounds)
        for axis, (lo, hi) in other.bounds.items():
            a, b = out.get(axis, (lo, hi))
            out[axis] = (max(a, lo), min(b, hi))
        return Mask(out)

    __rand__ = __and__


def mask_region(mask, shape, api, site):
    """The part of a tile of `shape` a mask keeps, as an index (None: all of it)."""
    if mask is None or mask is True:
        return None
    if not isinstance(mask, Mask):
        raise unsupported(api, f'a mask of type {type(mask).__name__}', site)
    idx = [slice(None)] * len(shape)
    for axis, (lo, hi) in mask.bounds.items():
        if axis >= len(shape):
            raise unsupported(api, f'a mask on axis {axis} of a tile of shape {shape}', site)
        lo, hi = max(0, lo), min(shape[axis], hi)
        if hi <= lo:
            raise unsupported(api, 'a mask that keeps nothing', site)
        idx[axis] = slice(lo, hi)
    return tuple(idx)


def _normalise(shape, idx, api, site, lenient=False):
    """Index components, one per dimension: int or IndexRange. `lenient`: an index range may
    run out of bounds (an HBM access a mask will keep in bounds; HbmAccess checks it)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        fill = len(shape) - (len(idx) - 1)
        idx = idx[:k] + (slice(None),) * fill + idx[k + 1:]
    if len(idx) > len(shape):
        raise KernelError(api, f'{len(idx)} indices for a tensor of shape {tuple(shape)}', site)
    idx = idx + (slice(None),) * (len(shape) - len(idx))
    out = []
    for d, (c, n) in enumerate(zip(idx, shape)):
        if isinstance(c, DynSlice):
            c = slice(c.start, c.start + c.size)
        if isinstance(c, (int, np.integer)):
            c = int(c)
            if not 0 <= c < n:
                raise KernelError(api, f'index {c} is out of bounds for dimension {d} of size '
                                  f'{n}', site)
            out.append(c)
        elif isinstance(c, slice):
            start, stop, step = c.indices(n)
            if step < 1:
                raise unsupported(api, f'access pattern not supported yet (slice step {step})',
                                  site)
            if c.start is not None and c.start > n or c.stop is not None and c.stop > n:
                raise KernelError(api, f'slice {c.start}:{c.stop} is out of bounds for '
                                  f'dimension {d} of size {n}', site)
            size = len(range(start, stop, step))
            if size == 0:
                raise KernelError(api, f'empty slice on dimension {d}', site)
            out.append(IndexRange(start, size, step))
        elif isinstance(c, IndexRange):
            if c.step < 1:
                raise unsupported(api, 'access pattern not supported yet (index step '
                                  f'{c.step})', site)
            last = c.start + c.step * (c.size - 1)
            if not lenient and (c.start < 0 or last >= n):
                raise KernelError(api, f'index range {c.start}..{last} is out of bounds for '
                                  f'dimension {d} of size {n}', site)
            out.append(c)
        else:
            raise unsupported(api, f'index of type {type(c).__name__}', site)
    ranges = [c for c in out if isinstance(c, IndexRange)]
    tagged = [c.axis for c in ranges if c.axis is not None]
    if tagged and (len(tagged) != len(ranges) or tagged != sorted(tagged)):
        raise unsupported(api, 'access pattern not supported yet (index axes out of the '
                          "tensor's dimension order)", site)
    return out


def _np_index(comps):
    return tuple(c if isinstance(c, int) else
                 slice(c.start, c.start + c.step * (c.size - 1) + 1, c.step) for c in comps)


class DynSlice:
    """nl.ds(start, size): `size` elements from `start`."""

    def __init__(self, start, size):
        self.start, self.size = int(start), int(size)


# ---------------------------------------------------------------------------------------------
# HBM tensors

class _Typed(_UserFacing):
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


class HbmTensor(_Typed):
    """A tensor in HBM: a kernel argument, or one the kernel allocates (nl.ndarray)."""
    _kind = 'an HBM tensor'

    def __init__(self, ctx, name, shape, dtype, values, handle):
        self.ctx = ctx
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype_name = dtype
        self.values = values  # float32 (int32) array of `shape`, or None
        self.handle = handle
        self.written = False
        self.base = None  # the tensor this one reshapes

    def reshape(self, shape):
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if math.prod(shape) != math.prod(self.shape):
            raise KernelError('reshape', f'cannot reshape {self.shape} to {shape}')
        t = HbmTensor(self.ctx, self.name, shape, self.dtype_name,
                      None if self.values is None else self.values.reshape(shape), self.handle)
        t.base = self.root()
        return t

    def root(self):
        return self.base or self

    def __getitem__(self, idx):
        site = user_site()
        return HbmAccess(self, _normalise(self.shape, idx, 'tensor indexing', site, True), site)

    def __setitem__(self, idx, value):
        raise unsupported('HBM tensor assignment', 'write HBM tensors with nl.store or '
                          'nisa.dma_copy')


class HbmAccess(_Typed):
    """Part of an HBM tensor as one DMA operand: rows (the partition dimension, any row stride)
    of contiguous elements."""
    _kind = 'a part of an HBM tensor'

    def __init__(self, tensor, comps, site):
        self.tensor = tensor
        self.site = site
        self.comps = comps
        self.oob = None  # why the access runs out of the tensor, if it does
        for d, c in enumerate(comps):
            if isinstance(c, IndexRange):
                last = c.start + c.step * (c.size - 1)
                if c.start < 0 or last >= tensor.shape[d]:
                    self.oob = (f'index range {c.start}..{last} is out of bounds for dimension '
                                f'{d} of size {tensor.shape[d]}')
        self.np_index = _np_index(comps)
        strides = [math.prod(tensor.shape[d + 1:]) for d in range(len(tensor.shape))]
        ranges = [(d, c) for d, c in enumerate(comps) if isinstance(c, IndexRange)]
        self.shape = tuple(c.size for _, c in ranges) or (1,)
        self.first = sum((c if isinstance(c, int) else c.start) * strides[d]
                         for d, c in enumerate(comps))
        if not ranges:
            self.rows, self.elems, self.row_stride = 1, 1, 1
            return
        pd, pc = ranges[0]
        self.rows = pc.size
        self.row_stride = strides[pd] * pc.step
        expected = 1
        for d, c in reversed(ranges[1:]):
            if strides[d] * c.step != expected:
                raise unsupported('HBM access', 'access pattern not supported yet (the free '
                                  'dimensions of a DMA must be contiguous in memory)', site)
            expected *= c.size
        self.elems = expected
        if self.row_stride < 0:
            raise unsupported('HBM access', 'access pattern not supported yet (negative '
                              'partition stride)', site)

    @property
    def dtype_name(self):
        return self.tensor.dtype_name

    def __getitem__(self, idx):
        """A part of this part (X_flat = X[b, :, :]; X_flat[k0:k1, r0:r1]), as one access of
        the tensor: each index applies to this view's own dimensions in order."""
        site = user_site()
        ranges = [(d, c) for d, c in enumerate(self.comps) if isinstance(c, IndexRange)]
        sub = _normalise(tuple(c.size for _, c in ranges), idx, 'tensor indexing', site, True)
        comps = list(self.comps)
        for (d, c), s in zip(ranges, sub):
            if isinstance(s, int):
                comps[d] = c.start + c.step * s
            else:
                comps[d] = IndexRange(c.start + c.step * s.start, s.size, c.step * s.step,
                                      s.axis)
        return HbmAccess(self.tensor, comps, site)

    def restrict(self, region):
        """The part of this access a mask region (an index over its tile axes) keeps."""
        comps, k = list(self.comps), 0
        for d, c in enumerate(comps):
            if isinstance(c, IndexRange):
                r = region[k] if k < len(region) else slice(None)
                lo, hi, _ = r.indices(c.size)
                comps[d] = IndexRange(c.start + c.step * lo, hi - lo, c.step, c.axis)
                k += 1
        return HbmAccess(self.tensor, comps, self.site)

    def operand(self, kb):
        return kb.view(self.tensor.handle, self.first, self.rows, self.elems, self.row_stride)

    def read(self):
        return np.array(self.tensor.values[self.np_index]).reshape(self.shape)

    def write(self, values):
        t = self.tensor
        region = t.values[self.np_index]
        t.values[self.np_index] = _dtypes.round_to(
            np.asarray(values).reshape(np.shape(region)), t.dtype_name)
        t.root().written = True

    def broadcast(self, shape, api, site):
        """This access, of one partition, repeated over shape[0] partitions: a DMA whose
        partition stride is 0 (nl.broadcast_to of a tensor in HBM)."""
        shape = tuple(int(x) for x in shape)
        if self.rows != 1 or len(shape) < 2 or math.prod(shape[1:]) != self.elems:
            raise KernelError(api, f'cannot broadcast an HBM access of shape {self.shape} to '
                              f'{shape}: it must have one partition and the same free size',
                              site)
        return _BroadcastAccess(self, shape)


class _BroadcastAccess(HbmAccess):
    """One partition of an HBM tensor read into every partition of a tile."""
    _kind = 'a broadcast HBM operand'

    def __init__(self, one, shape):  # pylint: disable=super-init-not-called
        self.__dict__.update(one.__dict__)
        self.one = one
        self.shape = shape
        self.rows, self.row_stride = shape[0], 0

    def restrict(self, region):
        raise unsupported('nl.broadcast_to', 'a mask on a broadcast load', self.site)

    def read(self):
        return np.broadcast_to(self.one.read().reshape(1, -1), (self.rows, self.elems)).reshape(
            self.shape).copy()

    def write(self, values):
        raise KernelError('nl.store', 'a broadcast of an HBM tensor cannot be stored to',
                          self.site)


def new_hbm(ctx, name, shape, dtype, values=None, is_input=False):
    dt = _DT.get(dtype)
    if dt is None:
        raise unsupported('HBM tensor', f'dtype {dtype} is not supported yet')
    elems = math.prod(shape)
    handle = (ctx.kb.input(name, elems, dt, 0.0, 1.0, 0) if is_input
              else ctx.kb.output(name, elems, dt))
    if values is None and ctx.values:
        values = np.zeros(shape, dtype=np.int32 if dtype == 'int32' else np.float32)
    return HbmTensor(ctx, name, shape, dtype, values, handle)


# ---------------------------------------------------------------------------------------------
# Tiles

class Tile(_Typed):
    """A logical tile in SBUF or PSUM (or part of one): its values, and the builder's tile,
    known once the recording is replayed (a root gets it from the builder's next(), a part
    from its parent)."""
    _kind = 'a tile'

    def __init__(self, ctx, name, shape, dtype, space, arr, parent=None, sel=None, decl=None):
        self.ctx = ctx
        self.name = name
        self.shape = tuple(shape)
        self.dtype_name = dtype
        self.space = space
        self.arr = arr
        self.parent = parent
        # (first partition, partitions or None, first element, elements or None, element step)
        self.sel = sel if sel is None or len(sel) == 5 else tuple(sel) + (1,)
        self._root = parent.root if parent is not None else None  # None: this is the root
        self.pabs = (parent.pabs + sel[0]) if parent is not None else 0
        self.fabs = (parent.fabs + sel[2] * parent.fstep) if parent is not None else 0
        self.fstep = parent.fstep * self.sel[4] if parent is not None else 1
        self._handle = None
        self.decl = decl
        self.born = ctx.open_loops if parent is None else None
        self.version = 0  # writes to this root so far (nl.matmul's transposes of it stay valid)
        self.zero_pending = False  # nl.zeros in PSUM: the first matmul overwrites instead
        self.zero_site = None
        self.psum_written = None  # a PSUM root's written elements (_ops._written)
        self.broadcast_from = None  # a [P, 1] tile this one repeats along the free axis

    @property
    def root(self):
        return self._root if self._root is not None else self

    @property
    def handle(self):
        h = self._handle
        if h is None:
            if self.parent is None:
                raise RuntimeError(f'tile {self.name} is used before it is declared')
            h = self.parent.handle
            pf, pc, ff, fc, fs = self.sel
            if pc is not None:
                h = native.KernelBuilder.partitions_of(h, pf, pc)
            if fc is not None:
                h = native.KernelBuilder.strided(h, ff, fc, fs)
            self._handle = h
        return h

    @property
    def partitions(self):
        return self.shape[0]

    @property
    def elems(self):
        return math.prod(self.shape[1:]) if len(self.shape) > 1 else 1

    def read(self):
        return read_values(self.arr, self.dtype_name).reshape(self.shape)

    def write(self, values):
        v = np.asarray(values)
        if v.size == self.arr.size and v.shape != self.arr.shape:
            v = v.reshape(self.arr.shape)
        write_values(self.arr, self.dtype_name, v)

    def view(self, idx, site, api='tile indexing', runs=False):
        """The part of this tile `idx` selects. `runs`: a part of several runs may be returned
        (a TileRuns, for the SBUF side of a DMA; the kernel's own indexing), else it is an
        error."""
        if idx is Ellipsis:
            return self
        comps = _normalise(self.shape, idx, api, site)
        if all(isinstance(c, IndexRange) and c.start == 0 and c.step == 1 and c.size == n
               for c, n in zip(comps, self.shape)):
            return self
        pc = comps[0]
        if isinstance(pc, int):
            pc = IndexRange(pc, 1)
        if pc.step != 1:
            raise unsupported(api, 'access pattern not supported yet (strided partitions of a '
                              'tile)', site)
        whole_p = pc.start == 0 and pc.size == self.shape[0]
        free = comps[1:]
        strides = [math.prod(self.shape[1 + d + 1:]) for d in range(len(free))]
        first = sum((c if isinstance(c, int) else c.start) * s for c, s in zip(free, strides))
        # The free part must be one arithmetic progression of elements: its ranges, innermost
        # first, each continuing the one inside it (contiguous, or every step-th element).
        step, count = 1, 1
        for d in reversed(range(len(free))):
            c, s = free[d], strides[d]
            if not isinstance(c, IndexRange) or c.size == 1:
                continue
            if count == 1:
                step, count = s * c.step, c.size
            elif s * c.step == step * count:
                count *= c.size
            elif runs and self.space == 'sbuf':
                return TileRuns(self, [pc] + list(free), d + 1, site)
            else:
                raise unsupported(api, RUNS_ONLY, site)
        if count == 1:
            step = 1
        whole_f = not free or (first == 0 and step == 1 and count == self.elems)
        sel = (pc.start, None if whole_p else pc.size, first if not whole_f else 0,
               None if whole_f else count, step)
        shape = (pc.size,) + tuple(c.size for c in free if isinstance(c, IndexRange))
        arr = None
        if self.arr is not None:
            arr = self.arr[_np_index([pc] + list(free))].reshape(shape)
        return Tile(self.ctx, self.name, shape, self.dtype_name, self.space, arr, self, sel)

    def same_region(self, other):
        return (isinstance(other, Tile) and other.root is self.root and
                other.pabs == self.pabs and other.fabs == self.fabs and
                other.fstep == self.fstep and
                other.shape == self.shape)

    def __getitem__(self, idx):
        return self.view(idx, user_site(), runs=True)

    def __setitem__(self, idx, value):
        from . import _ops
        site = user_site()
        dst = self.view(idx, site, runs=True)
        _ops.assign(dst, value, site)

    def __iadd__(self, value):
        from . import _ops
        _ops.accumulate(self, value, user_site())
        return self

    def __add__(self, other):
        from . import language
        return language.add(self, other)

    def __mul__(self, other):
        from . import language
        return language.multiply(self, other)

    def __sub__(self, other):
        from . import language
        return language.subtract(self, other)

    __radd__ = __add__
    __rmul__ = __mul__

    def reshape(self, *shape):
        """The same tile seen with other free dimensions (no instruction); the partition
        dimension stays."""
        site = user_site()
        shape = tuple(int(x) for x in (shape[0] if len(shape) == 1 and
                                       isinstance(shape[0], (tuple, list)) else shape))
        if not shape or shape[0] != self.shape[0] or math.prod(shape[1:]) != self.elems:
            raise unsupported('tile.reshape', f'a reshape of {self.shape} to {shape} (only the '
                              'free dimensions of a tile can be reshaped)', site)
        t = Tile(self.ctx, self.name, shape, self.dtype_name, self.space,
                 None if self.arr is None else self.arr.reshape(shape), self, (0, None, 0, None))
        t.broadcast_from = self.broadcast_from
        return t

    def broadcast_to(self, shape):
        """A [P, 1] tile seen as [P, F] (each partition's value repeated along the free axis):
        a per-partition scalar operand. Broadcasting across partitions is not supported."""
        site = user_site()
        shape = tuple(int(x) for x in shape)
        if len(shape) < 2 or shape[0] != self.shape[0] or self.elems != 1:
            raise unsupported('tile.broadcast_to', f'a broadcast of {self.shape} to {shape} (only '
                              'a [P, 1] tile broadcast along the free axis)', site)
        t = Tile(self.ctx, self.name, shape, self.dtype_name, self.space,
                 None if self.arr is None else np.broadcast_to(
                     self.arr.reshape(shape[0], *([1] * (len(shape) - 1))), shape),
                 self, (0, None, 0, None))
        t.broadcast_from = self
        return t

    def __repr__(self):
        return f'<{self.space} tile {self.name} {self.shape} {self.dtype_name}>'


RUNS_ONLY = ('access pattern not supported yet (a tile part must be one run of evenly spaced '
             'elements in the free dimensions, except as the SBUF side of a DMA)')


class TileRuns(_Typed):
    """A part of an SBUF tile whose free elements are several runs, such as t[:, :, k, :] of a
    [P, A, B, C] tile: usable only as the SBUF side of a DMA, which is recorded as one transfer
    per run (the same bytes and descriptors; dma_transfers counts each)."""
    _kind = 'a tile part'

    def __init__(self, tile, comps, split, site):
        self.tile, self.site = tile, site
        self.shape = (comps[0].size,) + tuple(
            c.size for c in comps[1:] if isinstance(c, IndexRange))
        self.dtype_name, self.space = tile.dtype_name, tile.space
        # Dimensions up to `split` (of comps) are walked, the rest is one run per walk.
        walked = [d for d in range(1, split + 1) if isinstance(comps[d], IndexRange)]
        positions = {d: i + 1 for i, d in enumerate(
            [d for d in range(1, len(comps)) if isinstance(comps[d], IndexRange)])}
        self.parts = []  # (index into self.shape, with None where kept whole; the tile run)
        for combo in itertools.product(*(range(comps[d].size) for d in walked)):
            sub = [c if isinstance(c, int) else slice(c.start, c.start + c.size * c.step, c.step)
                   for c in comps]
            index = [None] * len(self.shape)
            for d, i in zip(walked, combo):
                sub[d] = comps[d].start + comps[d].step * i
                index[positions[d]] = i
            self.parts.append((tuple(index), tile.view(tuple(sub), site)))

    @property
    def dtype(self):
        return dtype_object(self.dtype_name)

    def _unsupported(self, *args, **kwargs):
        raise unsupported('tile indexing', RUNS_ONLY, self.site)

    __getitem__ = __setitem__ = __iadd__ = __add__ = __radd__ = __sub__ = __rsub__ = \
        __mul__ = __rmul__ = __truediv__ = reshape = broadcast_to = _unsupported


class TileBlocks(_Typed):
    """A tensor of several logical tiles: leading block dimensions before the partition one."""
    _kind = 'a tile'

    def __init__(self, block_shape, make_tile, tile_shape, dtype, space):
        self.block_shape = block_shape
        self.make_tile = make_tile
        self.tiles = {}
        self.tile_shape = tile_shape
        self.shape = tuple(block_shape) + tuple(tile_shape)
        self.dtype_name = dtype
        self.space = space

    def block(self, idx, api, site):
        if not isinstance(idx, tuple):
            idx = (idx,)
        nb = len(self.block_shape)
        if len(idx) < nb or not all(isinstance(i, (int, np.integer)) for i in idx[:nb]):
            raise unsupported(api, 'index every block dimension of a tile tensor with an '
                              'integer', site)
        b = tuple(int(i) for i in idx[:nb])
        for i, n in zip(b, self.block_shape):
            if not 0 <= i < n:
                raise KernelError(api, f'block index {b} is out of bounds for blocks '
                                  f'{tuple(self.block_shape)}', site)
        if b not in self.tiles:
            self.tiles[b] = self.make_tile(b)
        return self.tiles[b], idx[nb:]

    def __getitem__(self, idx):
        site = user_site()
        t, rest = self.block(idx, 'tile indexing', site)
        return t.view(rest, site) if rest else t

    def __setitem__(self, idx, value):
        from . import _ops
        site = user_site()
        t, rest = self.block(idx, 'tile assignment', site)
        _ops.assign(t.view(rest, site) if rest else t, value, site)


def _decl_shape(ctx, api, shape, site):
    """(block dims, partitions, free dims) of an on-chip tensor shape."""
    shape = list(shape)
    pos = [i for i, s in enumerate(shape) if isinstance(s, ParDim)]
    if len(pos) > 1:
        raise KernelError(api, 'more than one nl.par_dim in a shape', site)
    k = pos[0] if pos else 0
    blocks = [int(s) for s in shape[:k]]
    p = int(shape[k])
    free = [int(s) for s in shape[k + 1:]]
    if p > ctx.partitions:
        raise KernelError(api, f'number of partitions {p} exceeds the architecture limit of '
                          f'{ctx.partitions}', site)
    if p < 1 or any(s < 1 for s in blocks + free):
        raise KernelError(api, f'shape {tuple(int(s) for s in shape)} has an empty dimension',
                          site)
    return blocks, p, free


class ParDim(int):
    """nl.par_dim(n): marks the partition dimension of an on-chip tensor shape."""


class Decl:
    """A tile declaration (one line of the kernel): `count` tiles of `bytes` per partition."""

    def __init__(self, label, space, partitions, elems, dtype, count, alloc, offsets, phys):
        self.label, self.space, self.partitions, self.elems = label, space, partitions, elems
        self.dtype, self.count, self.alloc, self.offsets = dtype, count, alloc, offsets
        self.phys = phys  # direct allocation: block index -> position in offsets
        self.bytes = elems * _dtypes.SIZES[dtype]
        self.carried = False
        self.instances = 0  # how many times the declaration ran (one needs no rotation)
        self.loops = []  # trip counts of the loops around it, outermost first
        self.buffers = 0
        self.ids = None
        self.first_event = self.last_event = 0  # recorded events: declared, last used

    def declare(self, kb):
        """The builder's declaration (replayed in program order, after plan_buffers)."""
        mem, dt = _MEM[self.space], _DT[self.dtype]
        if self.alloc is not None:
            self.ids = [kb.declare_tile_at(f'{self.label}@{off}', mem, self.partitions,
                                           self.elems, dt, off, 1) for off in self.offsets]
        elif self.count == 1:
            self.ids = [kb.declare_tile(self.label, mem, self.partitions, self.elems, dt,
                                        self.buffers)]
        else:
            self.ids = list(kb.declare_tile_array(self.label, self.count, mem, self.partitions,
                                                  self.elems, dt, self.buffers))


def declare(ctx, api, site, shape, dtype, space, alloc=None, name=None, identity=None):
    """A tile (or a tensor of tiles) from an on-chip tensor declaration at `site`: the first
    time a site runs it declares the tile to the builder, each run takes the next instance.
    `identity` names the declaration instead of the site and its occurrence; such a
    declaration keeps one buffer (each instance replaces the previous one)."""
    blocks, p, free = _decl_shape(ctx, api, shape, site)
    tile_shape = (p,) + tuple(free)
    elems = math.prod(free) if free else 1
    if dtype not in _DT:
        raise unsupported(api, f'dtype {dtype} is not supported yet', site)
    size = _dtypes.SIZES[dtype]
    if space == 'psum' and elems * size > ctx.psum_bank:
        raise KernelError(api, f'PSUM tile of {elems * size} bytes per partition exceeds the '
                          f'{ctx.psum_bank} bytes of a PSUM bank', site)
    nblocks = math.prod(blocks) if blocks else 1
    if identity is None:
        lid, nth = ctx.occurrence(site)
        label = name or f'{os.path.basename(site[0])}:{site[1]}' + (f'#{nth + 1}' if nth else '')
        key = (lid, site, nth, tuple(blocks), tile_shape, dtype, space,
               alloc.key() if alloc else None)
    else:
        label, key = name, ('identity', identity, tile_shape, dtype, space)
    decl = ctx.decls.get(key)
    if decl is None:
        offsets, phys = None, None
        if alloc is not None:
            if space != 'sbuf':
                raise unsupported(api, 'direct allocation in PSUM is not supported yet', site)
            offsets, phys = alloc.layout(blocks, p, elems * size, api, site)
            for off in offsets:
                if off < 0 or off + elems * size > ctx.sbuf_bytes:
                    raise KernelError(api, f'direct allocation at byte {off} of a tile of '
                                      f'{elems * size} bytes per partition does not fit in the '
                                      f'{ctx.sbuf_bytes} bytes of an SBUF partition', site)
        decl = Decl(label, space, p, elems, dtype, nblocks, alloc, offsets, phys)
        decl.carried = identity is not None
        decl.loops = list(ctx.loop_trips)
        ctx.decls[key] = decl
        ctx.decl_list.append(decl)
        decl.first_event = decl.last_event = len(ctx.events)
        ctx.events.append((api, site, lambda: decl.declare(ctx.kb)))
    decl.instances += 1

    def make(b):
        lin = _linear(blocks, b)
        i = decl.phys(b) if decl.phys else lin
        arr = None
        if ctx.values:
            if alloc is not None:
                off = decl.offsets[i]
                raw = ctx.direct_memory()[:p, off:off + elems * size]
                np_dt = {'float32': np.float32, 'float16': np.float16, 'int32': np.int32,
                         'bfloat16': np.uint16}[dtype]
                arr = raw.view(np_dt).reshape(tile_shape)
            else:
                arr = np.zeros(tile_shape, dtype=np.int32 if dtype == 'int32' else np.float32)
        t = Tile(ctx, label + (str(list(b)) if blocks else ''), tile_shape, dtype, space, arr,
                 decl=decl)

        def take():
            t._handle = ctx.kb.next(decl.ids[i])
        decl.last_event = len(ctx.events)
        ctx.events.append((api, site, take))
        return t

    if not blocks:
        return make(())
    return TileBlocks(blocks, make, tile_shape, dtype, space)


def _linear(shape, idx):
    return sum(i * math.prod(shape[d + 1:]) for d, i in enumerate(idx))

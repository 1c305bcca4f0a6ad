"""nki.language (nl): each API declared once, with its editions (_registry)."""

import ast
import dis
import itertools
import linecache
import math
import sys
import weakref

import numpy as np

from . import _dtypes, _ops, _trace
from ._api_compiler import NoReorder
from ._errors import KernelError, unsupported, user_frame, user_site
from ._index import DynSlice, IndexRange, whole_mask
from ._registry import REGISTRY, alias, api, called, value
from ._tensors import BUFFERS, Buffer, HbmAccess, HbmTensor, ParDim, TensorViews, Tile

for _name in ('float32', 'float16', 'bfloat16', 'int32', 'float8_e4m3', 'float8_e5m2'):
    value(f'language.{_name}', getattr(_dtypes, _name))
value('language.float8_e4m3fn', _dtypes.float8_e4m3fn, '0.3+')
for _name, _mx in _dtypes.MX.items():  # NeuronCore-v4's MX types and scale
    value(f'language.{_name}', _mx, '0.x')
for _name in ('int8', 'uint8', 'int16', 'uint16', 'uint32', 'bool_'):
    value(f'language.{_name}', np.dtype(_name))
# nl.tfloat32 (fp32 with a 10-bit mantissa, a matmul input format): its name, which the
# harnesses compare dtypes with; a tensor of it is not supported yet (an error naming it)
value('language.tfloat32', 'tfloat32')
# NKI 0.x's nki.language.dtypes (also nki.dtype): nl's dtypes under a second module
for (_ns, _name) in list(REGISTRY):
    if _ns == 'language' and (_name in _dtypes.SIZES or _name == 'bool_'):
        alias(f'language.dtypes.{_name}', f'language.{_name}')


class NKIObject:
    """nl.NKIObject: the base class of a kernel's configuration objects and helpers (the NKI
    Library's configs, tiled ranges, loggers). NKI 0.4-0.6's language module gives only
    `__init__(**kwargs)`; here the kernel's Python runs as Python, so it is a plain object whose
    arguments become attributes: keyword arguments by name, positional ones in the order of the
    class's annotated fields. A subclass without an `__init__` of its own gets this one, before
    a `@dataclass` decorator would write one from its annotations alone: the NKI Library
    constructs `@dataclass` subclasses whose fields are unannotated class attributes by keyword
    (a model choice from that use; the API reference does not describe it)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if '__init__' not in cls.__dict__:
            cls.__init__ = NKIObject.__init__

    def __init__(self, *args, **kwargs):
        import dataclasses
        fields = dataclasses.fields(self) if dataclasses.is_dataclass(self) else ()
        names = [f.name for f in fields if f.init]
        if len(args) > len(names):
            raise TypeError(f'{type(self).__name__}() takes {len(names)} positional arguments '
                            f'(its fields), got {len(args)}')
        given = dict(zip(names, args))
        for key in kwargs:
            if key in given:
                raise TypeError(f'{type(self).__name__}() got multiple values for {key!r}')
        given.update(kwargs)
        for f in fields:  # a dataclass's fields not given: their defaults, as its __init__
            if f.name in given or not f.init:
                continue
            if f.default is not dataclasses.MISSING:
                given[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                given[f.name] = f.default_factory()
            else:  # (the caller's file:line first: the one line a harness keeps of it)
                where = user_site()
                raise TypeError(f'{where[0]}:{where[1]}: {type(self).__name__}() missing the '
                                f'argument {f.name!r}')
        for key, val in given.items():
            object.__setattr__(self, key, val)  # (a frozen dataclass's too, as its __init__)
        if hasattr(self, '__post_init__'):
            self.__post_init__()


value('language.NKIObject', NKIObject, '0.x')


# nl.NkiTensor (also nki.tensor.NkiTensor, the module the NKI Library's harness imports): the
# class of every tensor and view a kernel holds (HBM tensors, their accesses, tiles)
value('language.NkiTensor', TensorViews, '0.x')
alias('tensor.NkiTensor', 'language.NkiTensor')


for _name, _buffer in BUFFERS.items():
    value(f'language.{_name}', _buffer)


class TileSize:
    """nl.tile_size: the hardware tile limits, from the platform config."""

    @property
    def pmax(self):
        return _trace.limits()['partitions']

    @property
    def psum_fmax(self):
        return _trace.limits()['psum_bank'] // 4

    @property
    def gemm_stationary_fmax(self):
        return _trace.limits()['pe_cols']

    @property
    def gemm_moving_fmax(self):
        return _trace.limits()['moving_max']

    @property
    def bn_stats_fmax(self):
        """The most elements per partition nisa.bn_stats takes (the ISA reference)."""
        return 512

    @property
    def total_available_sbuf_size(self):
        """Bytes of an SBUF partition (core.sbuf.partition_size)."""
        return _trace.limits()['sbuf_bytes']


value('language.tile_size', TileSize())


@api('language.par_dim', 'beta1', note='block dimensions were removed in NKI 0.2')
def par_dim(n):
    """Marks the partition dimension of an on-chip tensor's shape."""
    return ParDim(int(n))


class _Loop:
    """A loop of the kernel: iterates like range(), its index live (docs/nki.md, "Loops").
    `mode` (_trace.Trace.iterate): how its edition runs it; `independent`: NKI may run its
    iterations in any order."""

    def __init__(self, kind, args, independent=False, mode='eager', directives=None):
        self.kind = kind
        self.args = args
        self.independent = independent
        self.mode = mode
        # (nki.compiler.no_reorder() as directives=: its instructions in program order)
        self.keep_order = any(isinstance(d, NoReorder) for d in
                              (directives if isinstance(directives, (list, tuple)) else
                               [directives]))

    def __len__(self):
        return len(range(*self.args))

    def __iter__(self):
        # (a loop stops early only under a `for` statement: a comprehension, list() or zip()
        # over it gets every element)
        frame = sys._getframe(1)
        return self._iterate(frame if _for_statement(frame) else None)

    def _iterate(self, frame):
        """Its iterations, for the `for` statement running in `frame`."""
        trace = _trace.Trace.current
        if trace is None:
            return iter(range(*self.args))
        it = trace.iterate(self.kind, self.args, self.independent, self.mode, frame)
        return self._in_order(trace, it) if self.keep_order else it

    @staticmethod
    def _in_order(trace, it):
        trace.order_mark(True)
        try:
            yield from it
        finally:
            trace.order_mark(False)


@api('language.affine_range', signature='*args, directives=None')
def affine_range(*args, directives=None, edition=None):
    """Iterations without loop-carried dependencies (the builder may overlap them; iterations
    writing the same bytes are a race). From NKI 0.7 a plain range (its iterations run in
    order)."""
    if edition == '0.7':
        return _Loop('range', args, mode='python', directives=directives)
    return _Loop('affine', args, independent=True, mode='traced', directives=directives)


@api('language.sequential_range', signature='*args, directives=None')
def sequential_range(*args, directives=None, edition=None):
    """Iterations with a loop-carried dependency, in order. From NKI 0.7 a plain range.
    `directives` (nki.compiler.no_reorder()): its instructions in program order (NoReorder)."""
    if edition == '0.7':
        return _Loop('range', args, mode='python', directives=directives)
    return _Loop('sequential', args, mode='traced', directives=directives)


def _bounds(api_name, site, *bounds):
    """The loop's bounds as integers: a register's (nisa.register_alloc) is its value where
    the loop starts, computed from the kernel's inputs by the operations recorded so far (the
    device reads it there; the model times the iterations it gives)."""
    from ._api_isa import VirtualRegister
    from ._interpret import register_values
    regs = [b for b in bounds if isinstance(b, VirtualRegister)]
    got = dict(zip(map(id, regs), register_values(_trace.current(api_name), regs, api_name,
                                                  site))) if regs else {}
    out = []
    for b in bounds:
        if isinstance(b, VirtualRegister):
            out.append(got[id(b)])
        elif isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise KernelError(api_name, f'a bound must be an integer or a register, got '
                              f'{type(b).__name__}', site)
        else:
            out.append(int(b))
    return out


@api('language.dynamic_range', '0.3-0.6', signature='start, stop=None, step=1')
def dynamic_range(start, stop=None, step=1):
    """A loop the device runs (a loop instruction) rather than the tracer: one copy of its
    body, its index a register; start and stop may be registers (their values where the loop
    starts), step a positive integer. Removed in NKI 0.7 (nl.fori_loop there)."""
    api_name, site = called()
    from ._api_isa import VirtualRegister
    if isinstance(step, VirtualRegister) or isinstance(step, bool) or \
            not isinstance(step, (int, np.integer)) or step <= 0:
        raise KernelError(api_name, f'step must be a positive integer, got {step!r}', site)
    args = (0, start) if stop is None else (start, stop)
    return _Loop('sequential', tuple(_bounds(api_name, site, *args)) + (int(step),),
                 mode='compiled')


@api('language.fori_loop', '0.6+', signature='lower, upper, body_fun, step=1')
def fori_loop(lower, upper, body_fun, step=1):
    """body_fun(i) for i in range(lower, upper, step), as a loop the device runs: body_fun is
    called once, its index a register (no value when the kernel is traced), and the loop
    repeats that one copy of the body. A bound may be a register (its value where the loop
    starts, as nl.dynamic_range reads it)."""
    api_name, site = called()
    lower, upper = _bounds(api_name, site, lower, upper)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step <= 0:
        raise KernelError(api_name, f'step must be a positive integer, got {step}',
                          site)
    for i in _Loop('sequential', (lower, upper, step), mode='compiled'):
        body_fun(i)


class _PythonRange(_Loop):
    """Python's range in an NKI kernel's module while it is traced: when iterated, the loop
    its edition makes of it (NKI 0.7: the loop nl.affine_range is there; before: "any use of
    Python range(...) will be replaced with sequential_range(...) by Neuron compiler", the
    sequential_range reference); otherwise a range (len, indexing, reversed, in)."""

    def __init__(self, args, edition):
        self._range = range(*args)  # (Python's checks and errors)
        if edition == '0.7':
            super().__init__('range', args, mode='python')
        else:  # (a list comprehension over it, which NKI's tracer leaves to Python, gets all
            # its elements)
            super().__init__('sequential', args, mode='python')

    def __iter__(self):
        # the loop of a `for` statement; a comprehension, list(range(n)), zip(...) iterate
        # Python's range (NKI's tracer rewrites the kernel's loops, not Python's iteration)
        frame = sys._getframe(1)
        if _for_statement(frame):
            return self._iterate(frame)
        return iter(self._range)

    def __getitem__(self, i):
        return self._range[i]

    def __reversed__(self):
        return reversed(self._range)

    def __contains__(self, x):
        return x in self._range

    def __repr__(self):
        return repr(self._range)

    def __eq__(self, other):
        return self._range == (other._range if isinstance(other, _PythonRange) else other)

    __hash__ = None

    def __getattr__(self, name):  # start, stop, step, count, index
        return getattr(self._range, name)


_FOR_ITERS = {}  # code object -> offsets of its GET_ITERs that begin `for` statements


def _for_statement(frame):
    """Whether `frame` is taking an iterator for a `for` statement (not a comprehension's
    `for`): its current instruction a GET_ITER whose source position is a `for` keyword that
    begins a statement (a comprehension's is the comprehension's bracket); without the
    source, a GET_ITER followed by a FOR_ITER outside a comprehension's own code."""
    code = frame.f_code
    offsets = _FOR_ITERS.get(code)
    if offsets is None:
        offsets = _FOR_ITERS[code] = set()
        ins = [i for i in dis.get_instructions(code) if i.opname not in ('CACHE', 'EXTENDED_ARG')]
        for a, b in zip(ins, ins[1:]):
            if a.opname != 'GET_ITER':
                continue
            pos = a.positions
            line = linecache.getline(code.co_filename, pos.lineno) if pos and pos.lineno else ''
            if line and pos.col_offset is not None:
                text = line[pos.col_offset:]
                if text.startswith('for') and text[3:4] in (' ', '\t', '('):
                    offsets.add(a.offset)
            elif b.opname == 'FOR_ITER' and not code.co_name.startswith('<'):
                offsets.add(a.offset)
    return frame.f_lasti in offsets


_CALL_SPOTS = {}  # code object -> {instruction offset: the source span of its expression}
_ASSIGNED_CALLS = {}  # file -> the source spans of calls that are all of `t[...] = call(...)`'s
# right side


def _assigned_to_part(frame):
    """Whether the call under way in `frame` is the whole right side of an assignment to a
    subscript (`t[...] = nl.loop_reduce(...)`): found by the call's source span (its
    instruction's position) among the file's assignments."""
    code = frame.f_code
    spots = _CALL_SPOTS.get(code)
    if spots is None:
        spots = _CALL_SPOTS[code] = {
            i.offset: tuple(i.positions) for i in dis.get_instructions(code, show_caches=True)
            if i.positions and i.positions.lineno is not None}
    spans = _ASSIGNED_CALLS.get(code.co_filename)
    if spans is None:
        spans = _ASSIGNED_CALLS[code.co_filename] = set()
        try:
            tree = ast.parse(''.join(linecache.getlines(code.co_filename)))
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Subscript) and isinstance(node.value, ast.Call):
                v = node.value
                spans.add((v.lineno, v.end_lineno, v.col_offset, v.end_col_offset))
    return spots.get(frame.f_lasti) in spans


def python_range(edition):
    """range as a kernel of `edition` sees it while it is traced."""
    return lambda *args: _PythonRange(args, edition)


@api('language.static_cast', 'beta1', signature='x, dtype')
def static_cast(x, dtype):
    """x converted to dtype: a numpy array on the host (as the SDK's tests use it, undocumented
    in the API reference), or a tile (a copy in dtype, as nl.copy)."""
    api_name, site = called()
    if isinstance(x, (Tile, _ops.Pending)):
        return _ops.copy(api_name, site, x, dtype, None, None)
    return np.asarray(x).astype(np.dtype(_dtypes.dtype_name(dtype)))


@api('language.static_range', signature='*args')
def static_range(*args, edition=None):
    """A loop unrolled when the kernel is traced (each iteration's declarations its own);
    from NKI 0.7 a plain range, as affine_range is."""
    if edition == '0.7':
        return _Loop('range', args, mode='python')
    return _Loop('static', args)


@api('language.arange', 'beta1', note='removed in NKI 0.2: index with slices')
def arange(start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    return IndexRange(int(start), len(range(int(start), int(stop), int(step))), int(step))


class _Grid(tuple):
    """The indices of nl.mgrid: unpacked (i_p, i_f = nl.mgrid[...]) or named, `.p` for the
    partition index and `.x`, `.y`, `.z` for the free ones in order (AWS's vision kernels
    name a 4-D grid's so)."""

    def _axis(self, k, name):
        if k >= len(self):
            raise KernelError('nl.mgrid', f'.{name} of a grid of {len(self)} axes',
                              user_site())
        return self[k]

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self._axis(1, 'x')

    @property
    def y(self):
        return self._axis(2, 'y')

    @property
    def z(self):
        return self._axis(3, 'z')


class MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        for k in key:
            if not isinstance(k, slice) or k.step not in (None, 1):
                raise unsupported('nl.mgrid', 'nl.mgrid takes start:stop slices')
        grid = tuple(k.stop - (k.start or 0) for k in key)
        out = [IndexRange(k.start or 0, n, 1, axis, grid)
               for axis, (k, n) in enumerate(zip(key, grid))]
        return _Grid(out) if len(out) > 1 else out[0]


value('language.mgrid', MGrid(), 'beta1', note='removed in NKI 0.2: index with slices')


@api('language.ds')
def ds(start, size):
    """`size` elements from `start`."""
    return DynSlice(start, size)


def _space(buffer, api_name, site):
    if buffer is None:
        return 'sbuf'
    from ._api_compiler import DirectAlloc
    if isinstance(buffer, DirectAlloc):
        return buffer
    if isinstance(buffer, Buffer):
        return 'hbm' if buffer.name.endswith('hbm') else buffer.name
    raise unsupported(api_name, f'buffer={buffer!r}', site)


def _placed(api_name, site, space, address):
    """address= of nl.ndarray (NKI 0.x): an on-chip tile the kernel places itself at
    (partition offset, byte offset in the partition; in PSUM the byte offset runs across its
    banks), as a direct allocation of that one place."""
    from ._api_compiler import PSUM_BANK, DirectAlloc
    if space not in ('sbuf', 'psum'):
        raise unsupported(api_name, f'address= of a tensor in {space}', site)
    if not (isinstance(address, (tuple, list)) and len(address) == 2 and
            all(isinstance(a, (int, np.integer)) and a >= 0 for a in address)):
        raise KernelError(api_name, f'address={address!r}: (partition offset, byte offset) of '
                          'the tile in SBUF or PSUM, whole numbers', site)
    part, offset = int(address[0]), int(address[1])
    if space == 'psum':
        place = (offset // PSUM_BANK, part, offset % PSUM_BANK)
    else:
        place = (part, offset)
    return DirectAlloc(lambda idx, pdim_size, fdim_size: place, ('address', space, part, offset),
                       psum=space == 'psum')


def _tensor(api_name, shape, dtype, buffer, name, zero, address=None, fill=0.0):
    site = user_site()
    trace = _trace.current(api_name)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    dt = _dtypes.dtype_name(dtype)
    space = _space(buffer, api_name, site)
    if address is not None:
        space = _placed(api_name, site, space, address)
    if space == 'hbm':
        # (nl.par_dim marks nothing in HBM, which has no partitions: AWS's select-and-scatter
        # kernel so declares a private_hbm tensor; its size is kept)
        return trace.new_hbm(name or 'hbm', tuple(int(s) for s in shape), dt,
                             shared=buffer.name == 'shared_hbm', site=site, buffer=buffer.name)
    alloc = None
    if not isinstance(space, str):
        alloc, space = space, getattr(space, 'space', 'sbuf')
    t = trace.declare(api_name, site, shape, dt, space, alloc, name or None)
    if zero:
        tiles = [t] if isinstance(t, Tile) else [
            t.block(b, api_name, site)[0]
            for b in itertools.product(*(range(n) for n in t.block_shape))]
        for tile in tiles:
            if space == 'psum' and fill == 0.0:
                tile.zero_site = site  # folded into the first matmul that overwrites it
            else:
                _ops.assign(tile, _ops.memset(api_name, site, tile.shape, fill, dt, 'dve'), site)
    return t


@api('language.ndarray', beta1="shape, dtype, buffer=None, name=''",
     v0="shape, dtype, buffer=None, name='', address=None")
def ndarray(shape, dtype, buffer=None, name='', address=None):
    """An uninitialised tensor: a tile (or tiles) in SBUF/PSUM, or a tensor in HBM."""
    api_name, site = called()
    return _tensor(api_name, shape, dtype, buffer, name, False, address)


@api('language.zeros', beta1="shape, dtype, buffer=None, name='', lazy_initialization=False",
     v0="shape, dtype, buffer=None, name='', address=None")
def zeros(shape, dtype, buffer=None, name='', address=None, lazy_initialization=False):
    """A zeroed tensor. In PSUM the zeroing is folded into the first matmul that overwrites it.
    `lazy_initialization` (beta 1 kernels pass it; the reference does not document it) changes
    nothing: the model's zeroing is already lazy where it can be."""
    api_name, site = called()
    return _tensor(api_name, shape, dtype, buffer, name, True, address)


def _like(api_name, a, dtype, buffer, site):
    shape = getattr(a, 'shape', None)
    if shape is None:
        raise KernelError(api_name, f'expected a tensor or tile, got {type(a).__name__}', site)
    space = getattr(a, 'space', None)
    if buffer is None:  # a tile's memory; an HBM tensor's like: a tensor in HBM
        buffer = BUFFERS.get(space if space in ('sbuf', 'psum') else 'shared_hbm')
    return tuple(shape), a.dtype_name if dtype is None else dtype, buffer


@api('language.zeros_like', 'beta1 0.3+', signature="a, dtype=None, buffer=None, name=''")
def zeros_like(a, dtype=None, buffer=None, name=''):
    """A zeroed tensor of a's shape (and dtype, and memory, unless given)."""
    api_name, site = called()
    shape, dt, buf = _like(api_name, a, dtype, buffer, site)
    return _tensor(api_name, shape, dt, buf, name, True)


@api('language.empty_like', 'beta1 0.3+', signature="a, dtype=None, buffer=None, name=''")
def empty_like(a, dtype=None, buffer=None, name=''):
    """An uninitialised tensor of a's shape (and dtype, and memory, unless given)."""
    api_name, site = called()
    shape, dt, buf = _like(api_name, a, dtype, buffer, site)
    return _tensor(api_name, shape, dt, buf, name, False)


@api('language.expand_dims', 'beta1 0.3+', signature='data, axis')
def expand_dims(data, axis):
    """data with a dimension of 1 inserted at `axis` (a free axis): a view, no instruction."""
    api_name, site = called()
    if isinstance(data, _ops.Pending):
        data = data.materialize()
    shape = list(getattr(data, 'shape', ()))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    for a in sorted(int(x) if int(x) >= 0 else len(shape) + len(axes) + int(x) for x in axes):
        if a == 0 and isinstance(data, Tile):
            raise unsupported(api_name, 'a new partition dimension', site)
        shape.insert(a, 1)
    return data.reshape(tuple(shape))


@api('language.full', signature="shape, fill_value, dtype, buffer=None, name=''",
     beta1="shape, fill_value, dtype, buffer=None, name='', lazy_initialization=False")
def full(shape, fill_value, dtype, buffer=None, name='', lazy_initialization=False):
    """A tensor filled with one value (a memset, where it is declared). `lazy_initialization`
    (beta 1 kernels pass it, as to nl.zeros; the reference does not document it) changes
    nothing."""
    api_name, site = called()
    if _space(buffer, api_name, site) == 'hbm':
        raise unsupported(api_name, 'nl.full in HBM', site)
    return _tensor(api_name, shape, dtype, buffer, name, True, fill=fill_value)


@api('language.ones', 'beta1', signature="shape, dtype, buffer=None, name=''")
def ones(shape, dtype, buffer=None, name=''):
    return full(shape, 1.0, dtype, buffer, name)


@api('language.load', 'beta1 0.3+', beta1='src, mask=None, dtype=None', v0_3_plus='src, dtype=None',
     note='removed in NKI 0.2, back from 0.3: use nisa.dma_copy')
def load(src, mask=None, dtype=None):
    """An HBM tensor (or part) into a new SBUF tile, by DMA."""
    api_name, site = called()
    return _ops.load(api_name, site, src, dtype, mask)


@api('language.load_transpose2d', 'beta1 0.3+', beta1='src, mask=None, dtype=None',
     v0_3_plus='src, dtype=None')
def load_transpose2d(src, mask=None, dtype=None):
    """src [K, M] (HBM) into a new SBUF tile [M, K], transposed by one DMA transpose
    (_ops.transposed_hbm)."""
    api_name, site = called()
    return _ops.load(api_name, site,
                     _ops.transposed_hbm(api_name, src, site), dtype, mask)


@api('language.store', 'beta1 0.3+', beta1='dst, value, mask=None', v0_3_plus='dst, value',
     note='removed in NKI 0.2, back from 0.3: use nisa.dma_copy')
def store(dst, value, mask=None):
    """A tile into an HBM tensor (or part), by DMA. A tile in PSUM, which DMA does not reach,
    is copied to SBUF first, as the compiler lowers it (AWS's attention tutorial v1 and v2
    store a matmul's PSUM result); nisa.dma_copy, the ISA's own DMA, has no such copy."""
    api_name, site = called()
    if isinstance(value, (Tile, _ops.Pending)) and value.space == 'psum':
        value = _ops.copy(api_name, site, value, None, None, mask)
    _ops.store(api_name, site, dst, value, mask)


def _binary(qualname, alu, eds='beta1 0.3+'):
    signatures = {'beta1': 'x, y, dtype=None, mask=None'}
    if eds != 'beta1':
        signatures['v0_3_plus'] = 'x, y, dtype=None'

    @api(qualname, eds, **signatures)
    def op(x, y, dtype=None, mask=None):
        api_name, site = called()
        return _ops.tensor_tensor(api_name, site, x, y, alu, None, dtype, mask)
    op.__name__ = qualname.rpartition('.')[2]
    op.__doc__ = f'x {alu} y elementwise (Vector engine); y a tile, a [P, 1] tile or a number.'
    return op


# nl's elementwise functions of two operands, as the Vector engine's ALU operations
# (models/isa/isa.h): comparisons and logical operations give 1 or 0.
for _name, _alu in (('add', 'add'), ('subtract', 'subtract'), ('multiply', 'multiply'),
                    ('maximum', 'max'), ('minimum', 'min'), ('divide', 'divide'),
                    ('power', 'pow'), ('mod', 'mod'), ('fmod', 'mod'), ('equal', 'is_equal'),
                    ('not_equal', 'not_equal'), ('greater', 'is_gt'),
                    ('greater_equal', 'is_ge'), ('less', 'is_lt'), ('less_equal', 'is_le'),
                    ('logical_and', 'logical_and'), ('logical_or', 'logical_or'),
                    ('logical_xor', 'logical_xor'), ('bitwise_and', 'bitwise_and'),
                    ('bitwise_or', 'bitwise_or'), ('bitwise_xor', 'bitwise_xor'),
                    ('left_shift', 'left_shift'), ('right_shift', 'right_shift')):
    # divide and mod are in beta 1's reference, not in 0.x's (there, the / operator)
    _binary(f'language.{_name}', _alu,
            'beta1' if _name in ('divide', 'mod', 'fmod') else 'beta1 0.3+')


def _unary(func, scale=1.0, name=None):
    name = name or func

    @api(f'language.{name}', 'beta1 0.3+', beta1='x, dtype=None, mask=None',
         v0_3_plus='x, dtype=None')
    def op(x, dtype=None, mask=None):
        api_name, site = called()
        return _ops.activation(api_name, site, func, x, scale, None, dtype, mask)
    op.__name__ = name
    op.__doc__ = f'{name}(x): one Scalar-engine activation ({func}, scale {scale}).'
    return op


for _name in ('exp', 'relu', 'reciprocal', 'rsqrt', 'sqrt', 'square', 'sigmoid', 'tanh', 'silu',
              'gelu', 'log', 'gelu_apprx_tanh', 'softplus', 'mish', 'sin', 'cos', 'arctan', 'abs',
              'sign', 'erf', 'gelu_dx', 'silu_dx', 'tan', 'erf_dx', 'gelu_apprx_sigmoid'):
    _unary(_name)
_unary('identity', -1.0, 'negative')


class Fp32:
    """nl.fp32: FP32 constants. `min`: the bit pattern 0xff7fffff, the most negative finite
    fp32 (-3.4028235e38), what kernels fill with for minus infinity."""

    min = float(np.finfo(np.float32).min)


value('language.fp32', Fp32, 'beta1')


class _Finfo:
    """Limits of a floating-point dtype, as numpy.finfo gives them (`min`, `max`, `eps`,
    `tiny`, `bits`)."""

    # (bits, largest finite, eps, smallest normal) of the formats numpy does not know
    _FORMATS = {'bfloat16': (16, 3.3895313892515355e38, 2.0 ** -7, 2.0 ** -126),
                'float8_e4m3fn': (8, 448.0, 2.0 ** -3, 2.0 ** -6),
                'float8_e4m3': (8, 240.0, 2.0 ** -3, 2.0 ** -6),
                'float8_e5m2': (8, 57344.0, 2.0 ** -2, 2.0 ** -14)}

    def __init__(self, name):
        self.dtype = name
        if name in self._FORMATS:
            self.bits, self.max, self.eps, self.tiny = self._FORMATS[name]
        else:
            f = np.finfo(np.dtype(name))
            self.bits, self.max, self.eps, self.tiny = f.bits, float(f.max), float(f.eps), \
                float(f.tiny)
        self.min = -self.max

    def __repr__(self):
        return f'finfo(min={self.min}, max={self.max}, dtype={self.dtype})'


@api('language.finfo', 'beta1', signature='dtype',
     note='not in the API reference; AWS\'s vision kernels (nki-samples) use it')
def finfo(dtype):
    """The limits of a floating-point dtype (numpy.finfo's, bfloat16 and the fp8 formats
    included)."""
    api_name, site = called()
    name = _dtypes.dtype_name(dtype)
    if name in _dtypes.INTEGERS:
        raise KernelError(api_name, f'{name} is not a floating-point dtype (numpy.iinfo)', site)
    if name not in _Finfo._FORMATS and name not in ('float32', 'float16'):
        raise KernelError(api_name, f'{name} is not a floating-point dtype of NKI', site)
    return _Finfo(name)


@api('language.floor', 'beta1 0.3+', beta1='x, dtype=None, mask=None', v0_3_plus='x, dtype=None')
def floor(x, dtype=None, mask=None):
    """The largest integer not above each element: x - mod(x, 1) (mod the divisor's sign, as
    numpy's), two Vector-engine instructions. The reference names no engine: the lowering is
    this model's."""
    api_name, site = called()
    t = x.materialize() if isinstance(x, _ops.Pending) else x
    frac = _ops.tensor_scalar(api_name, site, t, 'mod', 1.0, 'dve', 'float32', mask=mask)
    return _ops.tensor_tensor(api_name, site, t, frac, 'subtract', 'dve', dtype, mask)


@api('language.copy', 'beta1 0.3+', beta1='x, dtype=None, mask=None', v0_3_plus='x, dtype=None')
def copy(x, dtype=None, mask=None):
    """x into a new tile (in dtype), on the engine the compiler picks."""
    api_name, site = called()
    return _ops.copy(api_name, site, x, dtype, None, mask)


def _reduction(qualname, alu):
    @api(qualname, 'beta1 0.3+', beta1='x, axis, dtype=None, mask=None, keepdims=False',
         v0_3_plus='x, axis, dtype=None, keepdims=False')
    def op(x, axis, dtype=None, mask=None, keepdims=False):
        api_name, site = called()
        return _ops.reduce(api_name, site, x, alu, axis, keepdims, dtype,
                           None, mask)
    op.__name__ = qualname.rpartition('.')[2]
    op.__doc__ = f'The {alu} over the free axes of x, one value per partition (Vector engine).'
    return op


_reduction('language.max', 'max')
_reduction('language.prod', 'multiply')
_reduction('language.min', 'min')
_reduction('language.sum', 'add')


@api('language.mean', 'beta1 0.3+', beta1='x, axis, dtype=None, mask=None, keepdims=False',
     v0_3_plus='x, axis, dtype=None, keepdims=False')
def mean(x, axis, dtype=None, mask=None, keepdims=False):
    """The mean over the free axes: a sum (Vector engine) then a multiply by 1/N, two
    instructions, as the compiler lowers it."""
    api_name, site = called()
    t = x.materialize() if isinstance(x, _ops.Pending) else x
    if not isinstance(t, Tile):
        raise KernelError(api_name, f'expected a tile, got {type(x).__name__}', site)
    from ._index import mask_region
    region = mask_region(mask, t.shape, api_name, site)
    shape = t.shape if region is None else t.view(region, site, api_name).shape
    n = 1
    for d in shape[1:]:
        n *= d
    total = _ops.reduce(api_name, site, t, 'add', axis, keepdims, dtype, None, mask)
    return _ops.tensor_scalar(api_name, site, total, 'multiply', 1.0 / n, 'dve', dtype)


_LOOP_REDUCE = {np.add: 'add', np.multiply: 'multiply', np.max: 'max', np.maximum: 'max',
                np.min: 'min', np.minimum: 'min'}
_LOOP_REDUCE_NL = {'language.add': 'add', 'language.multiply': 'multiply',
                   'language.maximum': 'max', 'language.max': 'max', 'language.minimum': 'min',
                   'language.min': 'min'}


@api('language.loop_reduce', 'beta1', beta1='x, op, loop_indices, *, dtype=None, mask=None')
def loop_reduce(x, op, loop_indices, dtype=None, mask=None):
    """x reduced with op across the iterations of the loops of loop_indices, into a tile of
    its own (one Vector-engine instruction per iteration, after the accumulator is set to op's
    identity in the first)."""
    api_name, site = called()
    whole_mask(mask, api_name, site)
    alu = _LOOP_REDUCE_NL.get(getattr(op, '_nki_api', None))
    if alu is None:
        try:
            alu = _LOOP_REDUCE.get(op)
        except TypeError:
            alu = None
    if alu is None:
        raise unsupported(api_name, f'op={getattr(op, "__name__", op)}', site)
    indices = loop_indices if isinstance(loop_indices, (list, tuple)) else [loop_indices]
    # `t[...] = nl.loop_reduce(x, ...)`: "the destination tile is also the rhs input to op"
    # (the reference), so t[...] accumulates: t = t <op> x
    into = _assigned_to_part(user_frame())
    return _ops.loop_reduce(api_name, site, x, alu, indices, dtype, into_destination=into)


@api('language.where', 'beta1 0.3+', beta1='condition, x, y, dtype=None, mask=None',
     v0_3_plus='condition, x, y, dtype=None')
def where(condition, x, y, dtype=None, mask=None):
    """x where condition is not 0, else y: one Vector-engine select (y a number, a [P, 1] tile
    or a tile; x a tile, or a number when y is a tile: the condition inverted)."""
    api_name, site = called()
    whole_mask(mask, api_name, site)
    if _ops.is_number(x):
        if _ops.is_number(y):
            raise unsupported(api_name, 'two numbers as x and y', site)
        return _ops.select(api_name, site, condition, y, x, True, dtype=dtype)
    return _ops.select(api_name, site, condition, x, y, dtype=dtype)


@api('language.softmax', 'beta1 0.3+', beta1='x, axis, dtype=None, compute_dtype=None, mask=None',
     v0_3_plus='x, axis, dtype=None')
def softmax(x, axis, dtype=None, compute_dtype=None, mask=None):
    """exp(x - max) / sum over the free axes, one value set per partition, in four
    instructions as a compiler lowers it (a model choice): the negated max (Vector), the
    exponential shifted by it with its sum in the same pass (Scalar), the sum's reciprocal
    (Vector) and the scaling (Vector)."""
    api_name, site = called()
    t, axes = _over_free_axes(api_name, x, axis, mask, site)
    trace = _trace.current(api_name)
    neg_max = trace.declare(api_name, site, (t.partitions, 1), 'float32', 'sbuf',
                            name='softmax_max')
    _ops.assign(neg_max, _ops.reduce(api_name, site, t, 'max', axes, True, 'float32',
                                     negate=True), site)
    total = trace.declare(api_name, site, (t.partitions, 1), 'float32', 'sbuf',
                          name='softmax_sum')
    e = _ops.activation(api_name, site, 'exp', t, 1.0, None, 'float32', None, neg_max,
                        'add', total)
    inv = _ops.reciprocal(api_name, site, total)
    return _ops.tensor_scalar(api_name, site, e, 'multiply', inv, None,
                              dtype or t.dtype_name)


def _over_free_axes(api_name, x, axis, mask, site):
    """(x as a tile, axis as a tuple) for an operation over all of x's free axes (a negative
    axis counts from the last); another axis set, or a mask, is unsupported."""
    whole_mask(mask, api_name, site)
    t = _ops.operand(x, api_name, site)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    n = len(t.shape)
    try:
        given = sorted(int(a) + n if int(a) < 0 else int(a) for a in axes)
    except (TypeError, ValueError):
        given = None
    if given != list(range(1, n)):
        raise unsupported(api_name, f'axis {axis} (only all the free axes)', site)
    return t, axes


@api('language.var', 'beta1 0.3+', beta1='x, axis, dtype=None, mask=None',
     v0_3_plus='x, axis, dtype=None')
def var(x, axis, dtype=None, mask=None):
    """The variance over the free axes (one value per partition): bn_stats on each run of at
    most 512 elements and one bn_aggr (Vector engine), as the ISA reference suggests for means
    and variances (a model choice for how nl.var lowers)."""
    api_name, site = called()
    t, _ = _over_free_axes(api_name, x, axis, mask, site)
    if len(t.shape) != 2:
        t = t.reshape((t.partitions, t.elems))
    trace = _trace.current(api_name)
    chunks = -(-t.elems // 512)
    stats = trace.declare(api_name, site, (t.partitions, 6 * chunks), 'float32', 'sbuf',
                          name='var_stats')
    for c in range(chunks):
        part = t[:, 512 * c:min(t.elems, 512 * (c + 1))]
        _ops.assign(stats[:, 6 * c:6 * (c + 1)], _ops.bn_stats(api_name, site, part), site)
    mv = _ops.bn_aggr(api_name, site, stats).materialize()
    return _ops.copy(api_name, site, mv[:, 1:2], dtype or t.dtype_name)


@api('language.logical_not', 'beta1 0.3+', beta1='x, dtype=None, mask=None',
     v0_3_plus='x, dtype=None')
def logical_not(x, dtype=None, mask=None):
    """1 where x is 0, else 0: one Vector-engine comparison with 0."""
    api_name, site = called()
    return _ops.tensor_scalar(api_name, site, x, 'is_equal', 0.0, None, dtype,
                              mask=mask)


@api('language.invert', 'beta1 0.3+', beta1='x, dtype=None, mask=None',
     v0_3_plus='x, dtype=None')
def invert(x, dtype=None, mask=None):
    """The bitwise not of x's integer values: an exclusive or with all ones of its width
    (Vector engine; -1 for signed integers)."""
    api_name, site = called()
    t = _ops.operand(x, api_name, site)
    ones = {'uint8': 255.0, 'uint16': 65535.0}.get(_dtypes.dtype_name(dtype) if dtype else
                                                   t.dtype_name, -1.0)
    if (_dtypes.dtype_name(dtype) if dtype else t.dtype_name) == 'uint32':
        raise unsupported(api_name, 'a uint32 invert (beyond the int32 values the ALU '
                          'takes)', site)
    return _ops.tensor_scalar(api_name, site, t, 'bitwise_xor', ones, None, dtype, mask=mask)


@api('language.transpose', 'beta1 0.3+', beta1='x, dtype=None, mask=None',
     v0_3_plus='x, dtype=None')
def transpose(x, dtype=None, mask=None):
    """x [P, F] as [F, P] in PSUM, through the Tensor engine."""
    api_name, site = called()
    return _ops.transpose(api_name, site, x, mask)


@api('language.matmul', 'beta1 0.3+', beta1='x, y, transpose_x=False, mask=None',
     v0_3_plus='x, y, transpose_x=False')
def matmul(x, y, transpose_x=False, mask=None):
    """x @ y into PSUM (x: [M, K], y: [K, N]), or x.T @ y when transpose_x (x: [K, M]). As
    documented, matmul(x, y) lowers to nc_matmul(transpose(x), y): a Tensor-engine transpose
    of x into PSUM and its copy back to SBUF (in x's dtype) come before the matmul. In an nl
    kernel the compiler hoists that transpose: while x is unchanged, later calls reuse it."""
    api_name, site = called()
    whole_mask(mask, api_name, site)
    # (an operand in PSUM, an nl.transpose's result say, is copied to SBUF first, as the
    # compiler lowers it: the Tensor engine reads SBUF)
    x, y = (_ops.copy(api_name, site, a) if isinstance(a, (Tile, _ops.Pending)) and
            a.space == 'psum' else a for a in (x, y))
    if not transpose_x:
        X = _ops.operand(x, api_name, site)
        x, entry = _ops.hoisted_transpose(api_name, site, X)
        plain = None
        if entry is not None:  # also recorded transposed at this call: the builder's fallback
            with _trace.current(api_name).choice('plain'):  # when the hoisted tiles do not fit
                plain = _ops.operand(_ops.plain_transpose(api_name, site, X), api_name, site)
        product = _ops.matmul(api_name, site, x, y)
        if plain is not None:
            product.args = (_ops.Choices(x, plain),) + product.args[1:]
        if entry is not None:  # the hoisted tile must hold x.T until this matmul is emitted
            # (weakly: a result nothing holds any more is never placed)
            entry['readers'] = [r for r in entry['readers'] if r() is not None and
                                not r().placed] + [weakref.ref(product)]
        return product
    return _ops.matmul(api_name, site, x, y)


@api('language.shared_constant', 'beta1 0.2+', signature='constant, dtype=None')
def shared_constant(constant, dtype=None):
    """A tensor in HBM holding constant data (a numpy array, or a .npy file's path), as the
    compiler embeds it in the kernel: an input region of the program, its values the
    constant's (rounded to dtype)."""
    api_name, site = called()
    trace = _trace.current(api_name)
    if isinstance(constant, str):
        try:
            constant = np.load(constant)
        except (OSError, ValueError) as e:
            raise KernelError(api_name, f'cannot read {constant}: {e}', site) \
                from None
    arr = np.asarray(constant)
    if arr.ndim == 0 or arr.size == 0:
        raise KernelError(api_name, f'a constant of shape {arr.shape}', site)
    dt = _dtypes.dtype_name(dtype) if dtype is not None else _dtypes.array_dtype_name(arr)
    if dt not in _dtypes.SIZES:
        raise unsupported(api_name, f'dtype {dt} is not supported yet', site)
    vals = _dtypes.round_to(arr, dt)
    return trace.new_hbm('constant', arr.shape, dt, vals, True)


@api('language.shared_identity_matrix', 'beta1 0.3+', beta1='n, dtype=None',
     v0_3='n, dtype=None', v0_4_plus='n, dtype=None, dst=None')
def shared_identity_matrix(n, dtype=None, dst=None, edition=None):
    """The [n, n] identity (uint8 unless dtype says): in beta 1 and NKI 0.3 in HBM, as
    nl.shared_constant(np.eye(n), dtype) (the reference: "the same behavior" as
    shared_constant); from NKI 0.4 "an identity matrix in SBUF" (a new tile, or `dst`),
    loaded from that constant by one DMA (the compiler's reuse of identities is not modelled:
    each call loads its own)."""
    hbm = shared_constant(np.eye(int(n)), np.uint8 if dtype is None else dtype)
    if edition in ('beta1', '0.2', '0.3'):
        return hbm
    api_name, site = called()
    if dst is None:
        dst = _tensor(api_name, (int(n), int(n)), hbm.dtype_name, BUFFERS['sbuf'],
                      'identity', False)
    _ops.load_into(api_name, site, dst, hbm[...])
    return dst


@api('language.broadcast_to', 'beta1 0.3+', beta1='src, shape', v0_3_plus='x, shape, dtype=None')
def broadcast_to(src=None, shape=None, x=None, dtype=None):
    """src repeated to `shape`: an HBM tensor (or access) of one partition is loaded into every
    partition (a DMA with partition stride 0); a [P, 1] tile is seen as [P, F] (the
    per-partition operand of an elementwise operation); a [1, F] tile is repeated into every
    partition of a new tile (_ops.partition_broadcast)."""
    api_name, site = called()
    src = x if src is None else src
    if isinstance(src, (Tile, _ops.Pending)) and dtype is not None:
        t = _ops.operand(src, api_name, site)
        if t.partitions == 1 and shape[0] > 1:
            return _ops.partition_broadcast(api_name, site, t, shape, dtype)
    if isinstance(src, HbmTensor):
        src = src[...]
    if isinstance(src, HbmAccess):
        return _ops.load(api_name, site, src.broadcast(shape, api_name, site))
    if isinstance(src, _ops.Pending):
        src = src.materialize()
    if isinstance(src, Tile):
        if tuple(src.shape) == tuple(shape):
            return src
        return src.broadcast_to(shape)
    raise KernelError(api_name, f'cannot broadcast {type(src).__name__}', site)


@api('language.device_print', beta1='prefix, x, mask=None', v0='prefix, x')
def device_print(prefix, x, mask=None):
    """Prints a tile's values when a run computes them (nki.jit, baremetal, simulate); records
    no instruction."""
    api_name, site = called()
    whole_mask(mask, api_name, site)
    trace = _trace.current(api_name)
    t = _ops.operand(x, api_name, site)
    trace.emit('print', api_name, site, (t, prefix, t.shape))


_ops.OPERATORS['partition_broadcast'] = _ops.partition_broadcast

# The tile operators t + u, t * u, t - u, as nl.add, nl.multiply, nl.subtract.
for _name, _alu in (('add', 'add'), ('multiply', 'multiply'), ('subtract', 'subtract')):
    _ops.OPERATORS[_name] = (lambda api_name, alu: lambda a, b: _ops.tensor_tensor(
        api_name, user_site(), a, b, alu, None))(f'nl.{_name}', _alu)


def _rsubtract(a, b):
    """c - t: one Vector-engine instruction, (t * -1) + c (exact: the negation is)."""
    site = user_site()
    if not _ops.is_number(b):
        return _ops.tensor_tensor('nl.subtract', site, b, a, 'subtract', None)
    return _ops.tensor_scalar('nl.subtract', site, a, 'multiply', -1.0, None, alu1='add',
                              scalar1=b)


def _negative(a):
    return _ops.tensor_scalar('-tile', user_site(), a, 'multiply', -1.0, None)


def _divide(a, b):
    """t / u: the Vector engine's divide (u a tile, a [P, 1] tile or a number)."""
    return _ops.tensor_tensor('nl.divide', user_site(), a, b, 'divide', None)


def _rdivide(a, b):
    """c / t: the divide with its operands reversed, one instruction."""
    return _ops.tensor_tensor('nl.divide', user_site(), b, a, 'divide', None)


def _alu_operator(a, b, alu):
    """t <op> u as nl's function of that operation (a comparison gives 1 or 0)."""
    return _ops.tensor_tensor(f'tile operator ({alu})', user_site(), a, b, alu, None)


def _abs(a):
    return _ops.activation('abs(tile)', user_site(), 'abs', a)


_ops.OPERATORS.update(rsubtract=_rsubtract, negative=_negative, divide=_divide,
                      rdivide=_rdivide, alu=_alu_operator, abs=_abs)


# SPMD (docs/nki.md, "SPMD and logical NeuronCores")

@api('language.program_id', 'beta1 0.x', beta1='axis', v0_2='axis', v0_3_plus='axis=0')
def program_id(axis=0):
    """The index of this SPMD instance along `axis` of the launch grid (0 without one)."""
    api_name, site = called()
    trace = _trace.current(api_name)
    axis = _grid_axis(api_name, trace, axis)
    return trace.program[axis] if trace.grid else 0


@api('language.num_programs', 'beta1 0.x', beta1='axes=None', v0_2='axes=None',
     v0_3_plus='axes=0')
def num_programs(axes=None):
    """The instances along `axes` of the launch grid: all of them for None, the product over
    a tuple of axes (1 without a grid)."""
    api_name, site = called()
    trace = _trace.current(api_name)
    if axes is None:
        return math.prod(trace.grid)
    if isinstance(axes, (tuple, list)):
        return math.prod(trace.grid[_grid_axis(api_name, trace, a)] if trace.grid
                         else 1 for a in axes)
    axis = _grid_axis(api_name, trace, axes)
    return trace.grid[axis] if trace.grid else 1


@api('language.program_ndim', 'beta1 0.x', signature='')
def program_ndim():
    """The number of axes of the launch grid (0 without one)."""
    api_name, site = called()
    return len(_trace.current(api_name).grid)


def _grid_axis(api_name, trace, axis):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise KernelError(api_name, f'axis must be an integer, got {axis!r}', user_site())
    axis = int(axis)
    if trace.grid and not 0 <= axis < len(trace.grid):
        raise KernelError(api_name, f'axis {axis} of a launch grid of {len(trace.grid)} '
                          f'dimensions {trace.grid}', user_site())
    if not trace.grid and axis != 0:
        raise KernelError(api_name, f'axis {axis} without a launch grid (only axis 0, the '
                          'single instance)', user_site())
    return axis


class GridDim:
    """A dimension of a beta 1 launch grid: `size` instances, `cores` of them physical
    NeuronCores (nl.nc(n) and its products, nl.spmd_dim)."""

    def __init__(self, size, cores):
        self.size, self.cores = size, cores

    def __mul__(self, other):
        other = other if isinstance(other, GridDim) else GridDim(_count(other), 1)
        return GridDim(self.size * other.size, self.cores * other.cores)

    __rmul__ = __mul__

    def __repr__(self):
        return f'<launch grid dimension of {self.size} ({self.cores} NeuronCores)>'


def _count(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise KernelError('kernel[grid]', f'a grid dimension must be a positive integer, '
                          f'got {n!r}', user_site())
    return int(n)


@api('language.nc', 'beta1', signature='n')
def nc(n):
    """A launch grid dimension of n instances on n physical NeuronCores."""
    return GridDim(_count(n), _count(n))


@api('language.spmd_dim', 'beta1', signature='*dims')
def spmd_dim(*dims):
    """A launch grid dimension made of sub-dimensions (their product)."""
    out = GridDim(1, 1)
    for d in dims:
        out = out * d
    return out

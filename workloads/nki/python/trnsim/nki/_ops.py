"""Tile operations: the shape and dtype rules shared by the APIs, and their lowering to the
primitives of _prims. An operation's result is a Pending until it is placed: recorded
(Trace.emit) into the tile it is assigned to, or into a tile of its own (declared at the
operation's line) when it is used as an operand."""

import copy as _copy
import itertools
import math

import numpy as np

from . import _dtypes
from ._errors import KernelError, unsupported, user_site
from ._index import NOTHING, Affine, NothingKept, IndexRange, concrete, mask_region, merge
from ._tensors import (OPERATORS, RUNS_ONLY, Arithmetic, BroadcastAccess, GatherAccess,
                       OffsetAccess, ParDim,
                       HbmAccess, HbmTensor, IndirectTile, RetypedAccess, TensorViews, Tile,
                       TileBlocks, TileRuns, TransposedAccess, Typed, _tile_view)
from ._prims import INDIRECT, PRIMS, indirect_group, indirect_position
from ._trace import current, region_of

COMMUTATIVE = ('add', 'multiply', 'max', 'min')
# The operation pairs (op0, op1) of a tensor_scalar whose engine the kernel leaves open
# (nki.isa engine=unknown: "let compiler select best engine based on the input tile shape")
# that the compiler may put on the Scalar engine as well as the Vector engine: the Scalar
# engine's own scale and bias, multiply and add (the reference's (multiply, None),
# (multiply, add), (add, None)); the others run on the Vector engine.
EITHER_ALU = (('multiply', 'bypass'), ('add', 'bypass'), ('multiply', 'add'))


_VIEWS = frozenset(n for n in vars(TensorViews) if not n.startswith('_'))


class Pending(Typed, Arithmetic):
    """An operation's result not yet placed: primitive `prim` with operands `args` (those after
    its destination), emitted into the tile it is assigned to, or into a tile of its own
    (declared at the operation's line) when it is used as an operand."""
    _kind = 'a tile'

    def __init__(self, api, site, shape, dtype, space, prim, args, kind='op', region=None,
                 full_shape=None):
        self.api, self.site = api, site
        self.shape, self.dtype_name, self.space = tuple(shape), dtype, space
        self.prim, self.args, self.kind = prim, tuple(args), kind
        self.region = region  # a mask's part of the destination (None: all of it)
        self.full_shape = tuple(full_shape) if full_shape is not None else self.shape
        self.result = None  # the tile it was placed in
        self.hbm = None  # a load: the HBM access (what a load into several runs splits)
        self.priority = 0  # a load: its DMA quality-of-service level (0 the highest)
        self.loops = ()  # a load: the loops with a live index open when it was called
        current(api).track(self)

    @property
    def placed(self):
        return self.result is not None

    def materialize(self):
        """The result in a tile of its own, made at its first use (inside a loop: in the
        iteration that first uses it; later ones use that tile)."""
        if self.result is None:
            trace = current(self.api)
            t = hoisted_load(self, trace) if self.loops else None
            if t is None:
                t = trace.declare(self.api, self.site, self.full_shape, self.dtype_name,
                                  self.space, counted=getattr(self, 'counted', None))
                emit_into(self, t, False, self.site)
            self.result = t
        return self.result

    def __getitem__(self, idx):
        return self.materialize().view(idx, user_site(), runs=True)

    def __setitem__(self, idx, value):
        t = self.materialize()
        site = user_site()
        assign(t.view(idx, site, runs=True), value, site)

    def reshape(self, *shape):
        return self.materialize().reshape(*shape)

    def broadcast_to(self, shape):
        return self.materialize().broadcast_to(shape)

    def ap(self, *args, **kwargs):
        return self.materialize().ap(*args, **kwargs)

    def __getattr__(self, name):
        # (NkiTensor's views of a result: those of the tile it is made in)
        if name in _VIEWS:
            return getattr(self.materialize(), name)
        return super().__getattr__(name)



def _elems(shape):
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def _name(dtype, default):
    return _dtypes.dtype_name(dtype) if dtype is not None else default


# Record-time state of PSUM tiles: their pending zeroing (nl.zeros) and the parts written.

def _zero_pending(root, trace):
    return root.zero_site is not None and not root.zero_done


def _part(t):
    """The part of its root a tile part is, by the values of its indices now."""
    return (concrete(t.pabs), t.partitions, concrete(t.fabs), t.elems, t.fstep)


def _note_write(t, trace):
    if t.space == 'psum':
        t.root.writes.setdefault(_part(t))


def flush_zero(tile, site):
    """A PSUM tile from nl.zeros used before a matmul overwrote it: zero it now."""
    root = tile.root
    if root.zero_site is None:
        return
    trace = current('nl.zeros')
    if not _zero_pending(root, trace):
        return
    root.zero_done = True
    root.writes.setdefault(_part(root))
    trace.emit('isa.memset', 'nl.zeros', root.zero_site, (root, 0.0, 'dve'))


def _coverage(dst, parts):
    """How much of dst the parts (partitions, elements of the root) cover: 'all', 'none' or
    'partial'."""
    mine = _part(dst)
    import numpy as np
    root = dst.root
    seen = np.zeros((root.partitions, root.elems), dtype=bool)
    for p0, pc, f0, fc, fs in parts:
        seen[p0:p0 + pc, f0:f0 + fs * (fc - 1) + 1:fs] = True
    mine_seen = seen[mine[0]:mine[0] + mine[1], mine[2]:mine[2] + mine[4] * (mine[3] - 1) + 1:
                     mine[4]]
    if mine_seen.all():
        return 'all'
    return 'partial' if mine_seen.any() else 'none'


def _auto_accumulate(p, dst, site, trace):
    """nisa.nc_matmul's accumulate=None: the first write to a PSUM location overwrites it, later
    ones add to it (SDK 2.30-2.33 API reference). A destination partly written before is
    neither: an error rather than a guess."""
    root = dst.root
    cover = _coverage(dst, root.writes) if root.writes else 'none'
    if cover == 'all':
        if root.read_since_write:  # the classic bug: a new sum onto a result already used
            trace.warn(site, p.api, 'accumulate=None adds to a PSUM tile whose sum was read '
                       'since its last write (its result used): a new sum needs '
                       'accumulate=False or a tile of its own, else it adds onto the old one, '
                       'as the hardware does')
        return True
    if cover == 'partial':
        raise unsupported(p.api, 'accumulate=None into a PSUM tile part of which was written '
                          'before and part not (pass accumulate=True or False)', site)
    return False


def note_use(tile, trace):
    """A tile used inside a sequential loop of several iterations it was declared outside of
    carries state across them (an accumulator): the builder keeps it in one buffer. A loop of
    one iteration carries nothing: the tile rotates with the loops it is declared in."""
    if trace.loops and trace.carries(tile.root):
        tile.root.decl.carried = True


def operand(x, api, site, allow_broadcast=False):
    """A value read by an instruction, as a tile."""
    if isinstance(x, Pending):
        x = x.materialize()
    if isinstance(x, Tile):
        if x.broadcast_from is not None and not allow_broadcast:
            raise unsupported(api, 'a broadcast tile here (it works as the per-partition '
                              'operand of an elementwise operation)', site)
        flush_zero(x, site)
        note_use(x, current(api))
        if x.space == 'psum':
            x.root.read_since_write = True
        return x
    if isinstance(x, TileBlocks):
        raise KernelError(api, f'a tensor of {x.block_shape} tiles is not one tile: index its '
                          'block dimensions', site)
    if isinstance(x, TileRuns):  # an elementwise operation splits it (split)
        flush_zero(x.root, site)
        note_use(x.root, current(api))
        return x
    if isinstance(x, (HbmAccess, HbmTensor)):
        raise KernelError(api, 'operand is in HBM: load it into SBUF first (nl.load or '
                          'nisa.dma_copy)', site)
    if x is NOTHING:
        raise KernelError(api, 'operand is the result of an operation whose mask keeps '
                          'nothing (no instruction computed it)', site)
    raise KernelError(api, f'expected a tile, got {type(x).__name__}', site)


# The primitives that apply element by element (what split() may cut into runs).
ELEMENTWISE = ('load', 'load_add', 'load_at', 'store', 'copy')  # and the instructions
# declared elementwise in _prims (without a second output)


def _several_runs(x):
    return isinstance(x, TileRuns) or (isinstance(x, HbmAccess) and x.runs)


def split(operands, contiguous, api, site):
    """Operands of one logical shape (tile parts, tile parts of several runs, HBM accesses)
    operated on together, cut into runs: for each run, each operand's piece (a Tile part, an
    HBM access of rows x elements). The operands of several runs set the cut (the same sizes
    per axis); the others, each one run, are read in the same order. The runs are as long as
    every operand allows: evenly spaced elements, or contiguous (`contiguous`, a DMA)."""
    shaped = [x.free_dims() for x in operands if _several_runs(x)]
    sizes = [n for n, _ in shaped[0]]
    total = math.prod(sizes)
    dims_of = []
    for x in operands:
        dims = x.free_dims()
        if _several_runs(x):
            if [n for n, _ in dims] != sizes:
                raise unsupported(api, f'operands of several runs with different shapes '
                                  f'({x.shape} and {operands[0].shape})', site)
        else:
            count, step = merge(dims) or (None, None)
            if count is None or (count != total and total != 1):
                raise KernelError(api, f'shape mismatch: {x.shape} and {operands[0].shape}',
                                  site)
            dims = [(n, step * math.prod(sizes[i + 1:])) for i, n in enumerate(sizes)]
        dims_of.append(dims)

    def fits(dims, kept):
        m = merge([dims[a] for a in kept])
        return m is not None and (not contiguous or m[0] == 1 or m[1] == 1)

    # the axes iterated over (one instruction, or transfer, per combination of theirs) and the
    # ones each piece keeps as its run: the fewest pieces, the innermost axes kept first (a
    # broadcast operand's step-0 axes are always iterated)
    axes = range(len(sizes))
    best = None
    for r in range(len(sizes) + 1):
        for over in itertools.combinations(axes, r):
            kept = [a for a in axes if a not in over]
            if all(fits(d, kept) for d in dims_of):
                n = math.prod(sizes[a] for a in over)
                if best is None or n < best[0]:
                    best = (n, over, kept)
    _, over, kept = best
    for combo in itertools.product(*(range(sizes[a]) for a in over)):
        pieces = []
        for x, dims in zip(operands, dims_of):
            off = sum(i * dims[a][1] for i, a in zip(combo, over))
            count, step = merge([dims[a] for a in kept])
            if isinstance(x, HbmAccess):
                pieces.append(HbmAccess.piece(x.tensor, x.first + off, x.rows, x.row_stride,
                                              count, site))
            else:
                p0, f0 = (x.p0, x.f0) if isinstance(x, TileRuns) else (x.pabs, x.fabs)
                pieces.append(x.root._part((x.partitions, count), p0, f0 + off, step, step))
        yield pieces


def _emit_split(p, dst, accumulate, site):
    """p into dst where an operand is several runs: one instruction (transfer) per run."""
    prim = PRIMS[p.prim]
    # (a second output, a reduction of each row, is not cut; an optional one left out is none)
    second = [p.args[k - 1] for k, kind in enumerate(prim.layout) if kind in ('O', 'O?')]
    if p.prim not in ELEMENTWISE and not (prim.elementwise and
                                          all(a is None for a in second)):
        return _emit_staged(p, dst, accumulate, site)
    if dst.partitions != p.shape[0] or dst.elems != _elems(p.shape):
        raise KernelError(p.api, f'shape mismatch: a result of shape {p.shape} assigned to a '
                          f'tile of shape {dst.shape}', site)
    # the operands split with dst: tiles and HBM accesses of dst's size (not [P, 1] ones)
    at = [i for i, a in enumerate(p.args) if isinstance(a, (Tile, TileRuns, HbmAccess)) and
          a.elems == dst.elems and (a.elems > 1 or _several_runs(a))]
    trace = current(p.api)
    for k, pieces in enumerate(split([dst] + [p.args[i] for i in at],
                                     p.prim in ('load', 'load_at'), p.api, site)):
        q = _copy.copy(p)
        args = list(p.args)
        for i, piece in zip(at, pieces[1:]):
            # (a run of an access at a run-time offset: at the same offset)
            args[i] = p.args[i].shifted(piece) if isinstance(p.args[i], OffsetAccess) else piece
        q.args = tuple(args)
        q.shape = q.full_shape = pieces[0].shape
        q.region = None
        first = len(trace.ops)
        emit_into(q, pieces[0], accumulate, site)
        if k and p.prim in _PARTED:  # (the DMA's runs spread over the engines: docs/nki.md)
            # (part 256 begins where part 0 does: 256 parts go round 16 engines whole)
            for op in trace.ops[first:]:
                if op.kind == p.prim and k % 256:
                    op.suffix += f' part={k % 256}'
                    op.line += f' part={k % 256}'
        elif k and p.prim not in _DMAS:  # (one instruction of several runs: docs/nki.md)
            for op in trace.ops[first:]:
                if op.kind == p.prim:
                    op.suffix += ' cont'
                    op.line += ' cont'


def _emit_staged(p, dst, accumulate, site):
    """p, an instruction that is not elementwise (a transpose, a search, a matmul), whose
    operands or dst are tile parts of several runs: each such operand copied first into a tile
    of its own, one run a partition, and a dst of several runs written from such a tile (the
    copies the compiler would insert: a model choice, one copy each)."""
    trace = current(p.api)
    if p.prim in ('load', 'load_add', 'store') or any(
            isinstance(a, HbmAccess) and a.runs for a in p.args):
        raise unsupported(p.api, RUNS_ONLY, site)

    def staged(a):
        if not isinstance(a, TileRuns):
            return a
        t = trace.declare(p.api, site, a.shape, a.dtype_name, 'sbuf', name='staged')
        emit_into(copy(p.api, site, a), t, False, site)
        return t
    q = _copy.copy(p)
    q.args = tuple(staged(a) for a in p.args)
    if not isinstance(dst, TileRuns):
        return emit_into(q, dst, accumulate, site)
    if accumulate not in (False, 'auto'):
        raise unsupported(p.api, 'an accumulation into a tile part of several runs', site)
    out = trace.declare(p.api, site, q.shape, dst.dtype_name, dst.space, name='staged')
    emit_into(q, out, False, site)
    return emit_into(copy(p.api, site, out), dst, False, site)


# the primitives with a second output tile
_SECOND_OUTPUT = frozenset(n for n, p in PRIMS.items() if {'O', 'O?'} & set(p.layout))


# the DMAs that may rewrite a tile (Trace.rewrite)
_REWRITING = frozenset(('load', 'load_at', 'gather', 'dma'))
_SPLITTING = []  # the DMA whose transfers are being recorded
# the DMAs whose transfers a split into one a run says apart (part=N)
_PARTED = frozenset(('load', 'load_add', 'store', 'dma'))
_DMAS = _PARTED | {'load_at', 'store_at', 'gather', 'scatter', 'hbm_dma'}


def _written(t, trace):
    """The record-time state of a tile an instruction writes: its PSUM writes, its use inside
    loops, its version."""
    root = t.root
    _note_write(t, trace)
    note_use(t, trace)
    root.version += 1
    trace.wrote(root)
    root.read_since_write = False
    if root.group is not None and isinstance(root.block, Affine):
        # a write through a loop index: any logical tile of the tensor may have changed
        for other in root.group.tiles.values():
            if other is not root:
                other.version += 1


def emit_into(p, dst, accumulate, site):
    """Records `p` with `dst` as its destination. `accumulate`: True adds the result to dst (a
    matmul into PSUM), False overwrites, 'auto' decides as nisa.nc_matmul's accumulate=None
    does, 'add' (`dst += matmul`) adds unless nothing wrote dst's part of PSUM yet (the
    accumulation begins there: AWS's attention tutorial, v8a, sums so into PSUM it never
    zeroed)."""
    if not isinstance(dst, (Tile, TileRuns)):
        raise KernelError(p.api, f'cannot write a result into {type(dst).__name__}', site)
    if p.region is not None and isinstance(dst, Tile) and dst.shape != p.shape:
        dst = dst.view(p.region, site, p.api, runs=True)
    if p.prim in _REWRITING and not _SPLITTING and isinstance(dst, (Tile, TileRuns)) and \
            not any(getattr(a, 'root', None) is dst.root for a in p.args):
        trace = current(p.api)
        if trace.can_rewrite(dst.root):
            root = dst.root
            first, held = len(trace.ops), trace.held_before(root)
            _SPLITTING.append(p)  # (its parts, recorded through emit_into, are not rewrites)
            try:
                _emit_into(p, dst, accumulate, site)
            finally:
                _SPLITTING.pop()
            # (the line of its first transfer says it; a split DMA's others follow it)
            op = next((o for o in trace.ops[first:] if o.kind == p.prim), None)
            if op is not None:
                trace.rewrite(dst.root, op, region_of(dst), held)
            return
    _emit_into(p, dst, accumulate, site)


def _emit_into(p, dst, accumulate, site):
    if p.prim in ('load', 'load_add', 'load_at'):
        dst = _dma_runs(dst, site)
        if isinstance(dst, TileRuns) and p.args and isinstance(p.args[0], TransposedAccess):
            # (into a tile part of several runs a partition: a transfer per run)
            slow_transpose(p.api, site, p.args[0].plain)
            p = _copy.copy(p)
            p.args = (p.args[0].plain,) + p.args[1:]
    if isinstance(dst, TileRuns) or any(_several_runs(a) for a in p.args):
        return _emit_split(p, dst, accumulate, site)
    if dst.shape[0] != p.shape[0] or dst.elems != _elems(p.shape):
        raise KernelError(p.api, f'shape mismatch: a result of shape {p.shape} assigned to a '
                          f'tile of shape {dst.shape}', site)
    trace = current(p.api)
    root = dst.root
    args = p.args
    _check_indirect_use(p, dst, site, trace)
    if p.kind in ('matmul', 'matmul_mx'):
        if dst.space != 'psum':
            raise KernelError(p.api, 'the result of a matmul must be written to PSUM', site)
        # (its dtypes, sizes and modes: the model's rules, models/engines/tensor_engine.cpp,
        # checked as the program is built)
        if root is dst and _zero_pending(root, trace):
            # the zeroing folds into the first matmul, which overwrites
            root.zero_done = True
            accumulate = False
        flush_zero(dst, site)
        if accumulate == 'auto':
            accumulate = _auto_accumulate(p, dst, site, trace)
        elif accumulate == 'add':  # `psum += matmul`: onto PSUM nothing wrote, the sum begins
            accumulate = bool(root.writes) and _coverage(dst, root.writes) != 'none'
        args = args + (accumulate,)
        # the mode words: the fp8 double-row mode, the operands declared ones and zeros
        words = ('double_row',) * bool(getattr(p, 'double_row', False)) + \
            tuple(getattr(p, 'onezero', ()))
        if words:
            args = args + (' '.join(words),)
    elif p.prim == 'transpose':  # (its mode slot: the identity declared ones and zeros)
        flush_zero(dst, site)
        args = args + (' '.join(getattr(p, 'onezero', ())) or None,)
    else:
        flush_zero(dst, site)
        if p.prim in ('load', 'load_add'):
            args = args + dma_priority_word(p.priority)
            if isinstance(args[0], RetypedAccess):
                if dst.dtype_name != args[0].dtype_name or p.prim != 'load':
                    raise KernelError(p.api, f'a view of {args[0].viewed.dtype_name} bits as '
                                      f'{args[0].dtype_name} loaded into a {dst.dtype_name} '
                                      'tile: a DMA moves those bits, without a cast', site)
                args = args + ('bits',)  # (after the priority word, when there is one)
            elif isinstance(args[0], TransposedAccess):
                args = args + ('transpose',)  # (the recording's H is the source)
    _written(dst, trace)
    if p.prim in _SECOND_OUTPUT:
        for what, a in zip(PRIMS[p.prim].layout[1:], args):
            if what in ('O', 'O?') and a is not None:  # a second output (a row reduction)
                flush_zero(a, site)
                _written(a, trace)
    identity = getattr(p, 'identity', None)
    if identity is not None:  # read by the values run only (is_transpose's moving operand)
        note_use(identity, trace)
        args = args + (trace.tile_ref(identity, p.api, site),)
    if any(a.__class__ is Choices for a in args):  # one operation per compiler choice
        for variant in ('hoist', 'plain'):
            with trace.choice(variant):
                trace.emit(p.prim, p.api, p.site, (dst,) + tuple(
                    a.pick(variant) if a.__class__ is Choices else a for a in args))
        return
    trace.emit(p.prim, p.api, p.site, (dst,) + args)
    then = getattr(p, 'then', None)
    if then is not None:  # (a second matmul, onto the first: double_row_pair)
        emit_into(then, dst, True, site)



def _check_indirect_use(p, dst, site, trace):
    """Indirect views (Tile.indirect) only where the reference allows them; their offsets
    are read by the instruction."""
    names = PRIMS[p.prim].fields if PRIMS[p.prim].opcode else ('dst',) + tuple(
        f'src{i}' for i in range(len(p.args)))
    used = [(n, a) for n, a in zip(names, (dst,) + tuple(p.args)) if isinstance(a, IndirectTile)]
    if not used:
        return
    where, engines = INDIRECT.get(p.prim, ((), ()))
    for name, a in used:
        if name not in where:
            what = 'its destination' if name == 'dst' else f'its input {names.index(name)}'
            allowed = ('its destination and first input' if where == ('dst', 'src0') else
                       'its first two inputs' if where else 'none of its operands')
            raise KernelError(p.api, f'an indirect view as {what}: NKI allows tensor '
                              f'indirection on {allowed} here', site)
        note_use(a.index, trace)
    engine = 'pe' if p.prim == 'matmul' else (
        p.args[PRIMS[p.prim].fields.index('eng') - 1] if PRIMS[p.prim].opcode else None)
    engine = 'dve' if engine == 'either' else engine  # (both candidates take indirection)
    if engine is not None and engine not in engines:
        raise KernelError(p.api, f'tensor indirection runs on the {" or ".join(engines)} '
                          f'engine here, not {engine}', site)
    group = indirect_group(engine)
    for name, a in used:
        index = a.index
        first = _first_partition(index)
        if first is not None and first % 32:
            raise KernelError(p.api, f'the index of an indirect view starts at partition {first}, '
                              'not on a quadrant boundary (a multiple of 32)', site)
        rows = 1 + max(indirect_position(i, group, index.elems)[0]
                       for i in range(max(0, a.elems - group), a.elems))
        if rows > index.partitions:
            raise KernelError(p.api, f'{a.elems} offsets in groups of {group} partitions '
                              f'({"Tensor" if group == 32 else "Vector, Scalar or GpSimd"} '
                              f'engine) need {rows} partitions of an index of {index.elems} '
                              f'columns; it has {index.partitions}', site)


def _first_partition(t):
    """The partition a tile part starts at, as allocated (None: known only as its loops run)."""
    root = t.root
    if isinstance(t.pabs, Affine) or isinstance(root.block, Affine):
        return None
    offsets = getattr(root.decl, 'offsets', None)
    if offsets is None:
        return t.pabs
    return offsets[root.decl.phys[root.block]][0] + t.pabs


def assign(dst, value, site):
    """tile[...] = value."""
    if value is NOTHING:  # an operation whose mask keeps nothing: no instruction
        return
    if isinstance(value, Pending) and value.kind == 'loop_reduce' and value.result is None:
        X, alu = value.args
        emit_into(tensor_tensor(value.api, value.site, dst, X, alu, 'dve', value.dtype_name),
                  dst, False, site)
        value.result = dst
        return
    if isinstance(value, Pending):
        if value.kind == 'load' and isinstance(dst, (Tile, TileRuns)):
            _require_sbuf(value.api, site, dst)
        if value.result is None:
            emit_into(value, dst, False, site)
            value.result = dst
            return
        region, full = value.region, value.full_shape
        value = value.result
        if region is not None and isinstance(value, Tile) and isinstance(dst, Tile) and \
                value.shape == full == dst.shape:
            # (made already, for a second output it writes: the part its mask kept)
            value = value.view(region, site, 'tile assignment')
            dst = dst.view(region, site, 'tile assignment')
    if isinstance(value, (Tile, TileRuns)):
        if dst.same_region(value):
            return
        emit_into(copy('tile assignment', site, value, dst.dtype_name), dst, False, site)
        return
    if isinstance(value, (int, float, Affine)) or type(value).__module__ == 'numpy':
        emit_into(memset('tile assignment', site, dst.shape, float(value), dst.dtype_name,
                         'dve'), dst, False, site)
        return
    if isinstance(value, (HbmAccess, HbmTensor)):
        raise KernelError('tile assignment', 'an HBM tensor cannot be assigned to a tile: load '
                          'it with nl.load or nisa.dma_copy', site)
    raise KernelError('tile assignment', f'cannot assign {type(value).__name__} to a tile',
                      site)


def accumulate(dst, value, site):
    """tile += value: matmuls accumulate in PSUM; anything else is an add. The result of an
    operation whose mask kept nothing adds nothing (no instruction)."""
    if value is NOTHING:
        return
    if isinstance(value, Pending) and value.kind in ('matmul', 'matmul_mx') and \
            value.result is None:
        emit_into(value, dst, 'add', site)
        value.result = dst
        return
    emit_into(tensor_tensor('+=', site, dst, value, 'add', 'dve', dst.dtype_name), dst, False,
              site)


def _engine(engine, default):
    return engine or default


def _view(t, region, api, site):
    return t if region is None else t.view(region, site, api, runs=True)


def hbm_dma(api, site, dst, src):
    """A DMA from one HBM tensor's part to another's (nisa.dma_copy between HBM tensors, as
    the NKI Library's fence of its output writes): each of equal rows and elements a row, one
    run each."""
    dst, src = (x[...] if isinstance(x, HbmTensor) else x for x in (dst, src))
    for x in (dst, src):
        if type(x) is not HbmAccess:
            raise unsupported(api, f'a DMA between HBM tensors of {x._kind}', site)
    dst, src = _in_bounds(dst, api, site), _in_bounds(src, api, site)
    if dst.runs or src.runs or dst.rows != src.rows or dst.elems != src.elems:
        raise unsupported(api, f'a DMA between HBM accesses of shapes {src.shape} and '
                          f'{dst.shape} (only of equal rows and elements a row, one run each)',
                          site)
    current(api).emit('hbm_dma', api, site, (dst, src))


def _in_bounds(access, api, site):
    """An HBM access within its tensor in this iteration: one at live loop indices that runs
    past the tensor's end in some other iteration is taken at their values now (the loops
    then record each iteration's own: a mask's, or Python's min() of a chunk's end); an
    error when it runs past in this one."""
    if access.oob:
        access = access.now()
    if access.oob:
        raise KernelError(api, access.oob, site)
    return access


def load(api, site, src, dtype=None, mask=None, priority=0):
    if not isinstance(src, HbmAccess):
        if isinstance(src, HbmTensor):
            src = src[...]
        else:
            raise KernelError(api, f'loads from an HBM tensor, got {type(src).__name__}', site)
    trace = current(api)
    if src.rows > trace.limits['partitions']:
        raise KernelError(api, f'number of partitions {src.rows} exceeds the architecture '
                          f'limit of {trace.limits["partitions"]}', site)
    # a dtype other than the tensor's: the DMA casts each element (through fp32)
    name = src.dtype_name if dtype is None else _dtypes.dtype_name(dtype)
    if isinstance(src, RetypedAccess) and name != src.dtype_name:
        raise KernelError(api, f'a view of {src.viewed.dtype_name} bits as {src.dtype_name} '
                          f'loaded as {name}: a DMA moves those bits, without a cast', site)
    full = src.shape
    region = mask_region(mask, full, api, site)
    transposed = isinstance(src, TransposedAccess)
    if region is not None:
        src = src.restrict(region)
    elif transposed and _dtypes.SIZES[name] not in _DMA_TRANSPOSE_SIZES:
        src = src.plain
    src = _in_bounds(src, api, site)
    if transposed and not isinstance(src, TransposedAccess):  # (masked, or cast: per run)
        slow_transpose(api, site, src)
    if isinstance(src, OffsetAccess):
        if region is not None:
            raise unsupported(api, 'a mask on an access at a run-time offset', site)
        p = Pending(api, site, src.shape, name, 'sbuf', 'load_at',
                    (src, operand(src.offset_tile, api, site), src.stride, src.reach,
                     src.oob_mode), 'load', region, full)
        p.priority = priority
        return p
    if isinstance(src, GatherAccess):
        index = operand(src.index, api, site)
        if index.elems != 1 or index.dtype_name not in _dtypes.INTEGERS:
            raise KernelError(api, f'the indices of an indirect access must be an integer tile '
                              f'of one element per row, got {index.shape} {index.dtype_name}',
                              site)
        p = Pending(api, site, src.shape, name, 'sbuf', 'gather',
                    (src, index, src.stride, src.bound, src.oob_mode), 'load', region, full)
        p.priority = priority
        return p
    p = Pending(api, site, src.shape, name, 'sbuf', 'load', (src,), 'load', region, full)
    p.hbm = src if region is None else None
    p.priority = priority
    p.loops = tuple(trace.live_loops)
    return p


# The declarations of hoisted loads count apart from the others at their line (hoisted_load)
_HOISTED_LOADS = 'hoisted loads'


def hoisted_load(p, trace):
    """The tile load `p` (a Pending load used as a tile of its own) is in when the compiler
    hoists it out of the loops its HBM address does not use, or None: loaded where written.
    The compiler keeps an input tensor's tiles in SBUF across a loop whose index their address
    does not use when the whole tensor fits in SBUF (a model choice; AccelOpt's profiles of
    NKIBench kernels give the HBM bytes each read: add_rmsnorm_matmul's 8 MB weight and mamba's
    7.3 MB delta and u read once, M1n's 64 MB and fp32_matmul's 84 MB operands re-read for
    every tile; docs/results.md, "Where the engines' time goes"). Such a load runs in the first
    iteration of those loops only (they fold with it under `if=`), into a logical tile of its
    own of a declaration made there, one per combination of the indices of the loops inside
    them that the address does use; their later iterations read that tile. Not in an isa
    kernel, a loop the device runs (nl.fori_loop), for a load the runner keeps where written
    (its tile or tensor written by something else, which Trace.emit notes; its tiles where
    the built kernel did not fit), nor past SBUF: the kernel's declarations so far, the
    hoisted transposes and the group must fit in a partition."""
    src, limits = p.hbm, trace.limits
    if src is None or p.prim != 'load' or p.kind != 'load' or trace.style != 'nl' or \
            not limits['hoist_loads'] or trace.compiled or \
            p.site in trace.no_hoist or not all(lp.open for lp in p.loops):
        return None
    tensor = src.tensor
    kind = trace.tensors[tensor.id][1]
    size = _dtypes.SIZES[tensor.dtype_name]
    if kind != 'input' or tensor.id in trace.no_hoist or \
            math.prod(tensor.shape) * size > limits['sbuf_bytes'] * limits['partitions']:
        return None
    first = src.first
    coef = {id(lp): k for lp, k in (first.terms if isinstance(first, Affine) else ())}
    out = next((i for i, lp in enumerate(p.loops) if id(lp) not in coef), None)
    if out is None:
        return None  # (every loop around it moves its address)
    loop = p.loops[out]
    inner = [lp for lp in p.loops[out + 1:] if id(lp) in coef]
    decision = (p.site, tensor.id, loop.id, p.full_shape, p.dtype_name)
    tile_bytes = _elems(p.full_shape) * _dtypes.SIZES[p.dtype_name]
    count = math.prod(lp.trips for lp in inner)
    fits = trace.hoist_decisions.get(decision)
    if fits is None:
        fits = trace.hoist_decisions[decision] = trace.declared_sbuf + trace.hoisted_bytes + \
            count * tile_bytes <= limits['sbuf_bytes']
    if not fits:
        return None
    # (the address where the loops inside `loop` that move it are at 0: the group's)
    base = concrete(first) - sum(coef[id(lp)] * lp.cur for lp in inner)
    key = decision + (base, tuple(coef[id(lp)] for lp in inner), src.rows, src.row_stride,
                      tuple(src.dims), src.elems)
    group = trace.load_groups.get(key)
    trips = tuple(lp.trips for lp in inner)
    if group is not None and group['loop'] is loop and group['trips'] != trips:
        trace.hoist_conflicts.add(p.site)  # (inner loops of other lengths: where written)
        return None
    if group is None or group['loop'] is not loop:
        blocks = trace.declare(p.api, p.site, (count, ParDim(p.full_shape[0])) +
                               tuple(p.full_shape[1:]), p.dtype_name, 'sbuf',
                               counted=_HOISTED_LOADS)
        blocks.frontend = True  # (kept by the frontend across the loop's iterations)
        blocks.decl.hoisted = p.site  # (Trace.emit: what else writes its tiles is a conflict)
        group = trace.load_groups[key] = {'loop': loop, 'blocks': blocks, 'loaded': set(),
                                          'trips': trips}
        trace.hoisted_tensors.add(tensor.id)
        trace.hoisted_sites[p.site] = max(trace.hoisted_sites.get(p.site, 0), count * tile_bytes)
    index, stride = 0, 1
    for lp in reversed(inner):  # (the innermost loop's index moves fastest)
        index = Affine.index(lp, 0, stride, lp.cur) + index
        stride *= lp.trips
    tile, _ = group['blocks'].block((index,), p.api, p.site)
    tile.frontend = True
    if concrete(index) not in group['loaded']:
        group['loaded'].add(concrete(index))
        trace.hoisting = True
        try:
            emit_into(p, tile, False, p.site)
        finally:
            trace.hoisting = False
    return tile


def onchip_dma_transpose(api, site, dst, src, axes=None):
    """nisa.dma_transpose of an SBUF tile (part) into another, its first and last dimensions
    swapped (the middle ones kept: the reference's [1, 0], [2, 1, 0], [3, 1, 2, 0]), as the
    compiler may lower a DMA transpose: on the Tensor engine ("8 [PSUM banks] (7 when
    dma_transpose is lowered to PE transpose, bank 7 reserved)", the tile_size reference), a
    transpose into PSUM and a copy into dst for each [P, F] block of the middle indices (a model
    choice: the DMA's own transpose, "up to 50%" of its throughput SBUF to SBUF, is not
    modelled)."""
    S, D = src, dst
    for x in (S, D):
        if not isinstance(x, (Tile, TileRuns)) or x.space != 'sbuf':
            raise KernelError(api, f'a transpose between SBUF tiles, got {x._kind}', site)
    n = len(S.shape)
    default = (n - 1,) + tuple(range(1, n - 1)) + (0,)
    axes = default if axes is None else tuple(int(a) for a in axes)
    if n < 2 or axes != default:
        raise unsupported(api, f'axes {axes} of an on-chip tile of shape {S.shape} (its first '
                          'and last dimensions swapped only)', site)
    if tuple(D.shape) != tuple(S.shape[a] for a in axes):
        raise KernelError(api, f'dst {tuple(D.shape)} is not src {tuple(S.shape)} with its '
                          f'dimensions permuted by {axes}', site)

    def block(view, m):  # view's [P, last] part at middle indices m
        first, dims = view._dims()
        first += sum(i * st for i, (_, st) in zip(m, dims[1:-1]))
        return _tile_view(view.root, first, [dims[0], dims[-1]], site)
    for m in itertools.product(*(range(k) for k in S.shape[1:-1])):
        t = transpose(api, site, block(S, m)).materialize()
        assign(block(D, m), copy(api, site, t), site)


def transposed_hbm(api, src, site, axes=None):
    """src in HBM read with its dimensions permuted: dimension d of the result is `axes[d]` of
    src (default: the first and last dimensions swapped), as the index expression
    src[i_.., ...] with each of src's dimensions on its result axis. A 2-D part of rows of
    contiguous elements is one DMA transpose (TransposedAccess: its rows the tile's partitions,
    at core.dma.transpose_rate of a copy's rate); any other permutation is a DMA transfer per
    run of the result (a descriptor per element when the partitions run along src's last
    dimension: much slower than the hardware's DMA transpose, said in a note)."""
    if isinstance(src, HbmTensor):
        src = src[...]
    if not isinstance(src, HbmAccess):
        raise unsupported(api, f'a transpose of {type(src).__name__} (only of an HBM tensor '
                          'or part, into SBUF)', site)
    n = len(src.shape)
    if axes is None and n >= 2:  # the first and last swapped: the reference's [1, 0],
        axes = (n - 1,) + tuple(range(1, n - 1)) + (0,)  # [2, 1, 0] and [3, 1, 2, 0]
    try:
        axes = tuple(int(a) for a in axes)
    except TypeError:
        raise KernelError(api, f'axes must be a permutation of the dimensions, got {axes!r}',
                          site) from None
    if sorted(axes) != list(range(n)):
        raise KernelError(api, f'axes {axes} is not a permutation of the {n} dimensions of '
                          f'{src.shape}', site)
    view = src.permute(axes) if src.comps is None else \
        src[tuple(IndexRange(0, src.shape[s])._with(axis=axes.index(s)) for s in range(n))]
    if n == 2 and axes == (1, 0) and type(src) is HbmAccess and not src.runs and \
            _dtypes.SIZES[src.dtype_name] in _DMA_TRANSPOSE_SIZES:
        return TransposedAccess(view, src)  # (rows of contiguous elements: one DMA transpose)
    slow_transpose(api, site, view)
    return view


# The element sizes a DMA transpose moves ("2- and 4-byte dtypes", the Trn2 guide; the model's
# validation says the same: check_transfer)
_DMA_TRANSPOSE_SIZES = (2, 4)


def slow_transpose(api, site, view):
    """Notes, once per line, that a transposed read `view` is a transfer per run with a
    descriptor per element (when its partitions run along its source's last dimension)."""
    if view.dims and view.dims[-1][1] != 1 or view.elems == 1 and view.rows > 1:
        current(api).note(site, api, _SLOW_TRANSPOSE)


# What a DMA transpose's timing is not when it is not one transfer (transposed_hbm): said once
# per line.
_SLOW_TRANSPOSE = (
    'timed as a transfer per run with a descriptor per element (not one DMA transpose: only a '
    '2-D part of rows of contiguous 2- or 4-byte elements, unmasked, into a tile part of one '
    'run a partition is), several times slower than the documented DMA transpose (up to 90% '
    "of a copy's DMA throughput from HBM on NeuronCore-v3, the Trn2 guide; 0.58x on an Inf2 "
    'microbenchmark): expect its DMA time over-estimated (docs/nki.md)')


def _require_sbuf(api, site, tile):
    if tile.space != 'sbuf':
        raise KernelError(api, f'DMA cannot reach {tile.space.upper()}: DMA moves data between '
                          'HBM and SBUF (copy the tile to SBUF first)', site)


def _one_row(hbm, tile):
    """A 1-D HBM access (`t[i, :]`, its first dimension indexed away) moved to or from a tile
    of one partition: the access as one row of its elements, as the DMA moves them."""
    if isinstance(hbm, HbmTensor):
        hbm = hbm[...]
    if isinstance(hbm, HbmAccess) and len(hbm.shape) == 1 and \
            getattr(tile, 'partitions', None) == 1 and len(tile.shape) >= 2 and \
            hbm.shape[0] == tile.elems:
        return hbm.expand_dim(0)
    return hbm


def load_into(api, site, dst, src, mask=None, priority=0):
    if not isinstance(dst, (Tile, TileRuns, Pending)):
        raise KernelError(api, f'loads into a tile, got {type(dst).__name__}', site)
    if isinstance(dst, (Tile, TileRuns)):
        _require_sbuf(api, site, dst)
        src = _one_row(src, dst)
    p = load(api, site, src, None, mask, priority)
    assign(dst, p, site)  # into dst's dtype: the DMA casts


def load_add_into(api, site, dst, src, priority=0):
    """dst += src by a DMA read-add-write (nisa.dma_copy's dst_rmw_op=nl.add, nisa.dma_compute):
    dst a tile in SBUF, src in HBM, both bf16 or both fp32 ("must have a matching data type",
    the Trainium3 guide); the DMA adds in fp32."""
    if not isinstance(dst, Tile):
        raise KernelError(api, f'a DMA read-add-write adds into a tile, got '
                          f'{type(dst).__name__}', site)
    _require_sbuf(api, site, dst)
    p = load(api, site, src, priority=priority)
    p.kind = p.prim = 'load_add'
    assign(dst, p, site)


def store(api, site, dst, value, mask=None, priority=0):
    if mask is False:  # (a mask of loop indices alone, false now: no store)
        raise NothingKept(api)
    if value is NOTHING:
        raise KernelError(api, 'stores the result of an operation whose mask keeps nothing (no '
                          'instruction computed it; on the device, whatever the tile held)',
                          site)
    if isinstance(dst, HbmTensor):
        dst = dst[...]
    if not isinstance(dst, HbmAccess):
        raise KernelError(api, f'stores to an HBM tensor, got {type(dst).__name__}', site)
    src = _dma_runs(operand(value, api, site), site)
    dst = _one_row(dst, src)
    if isinstance(dst, GatherAccess):  # a scatter: row p into the row index p names
        if mask is not None or isinstance(src, TileRuns):
            raise unsupported(api, 'a mask, or a tile part of several runs, on an indirect '
                              'store', site)
        index = operand(dst.index, api, site)
        if index.elems != 1 or index.dtype_name not in _dtypes.INTEGERS:
            raise KernelError(api, f'the indices of an indirect access must be an integer tile '
                              f'of one element per row, got {index.shape} {index.dtype_name}',
                              site)
        if src.partitions != dst.rows or src.elems != dst.elems:
            raise KernelError(api, f'shape mismatch: a tile of shape {src.shape} stored to an '
                              f'indirect access of shape {dst.shape}', site)
        _require_sbuf(api, site, src)
        current(api).emit('scatter', api, site, (dst, src, index, dst.stride, dst.bound,
                                                 dst.oob_mode))
        return
    if isinstance(dst, OffsetAccess) and mask is not None:
        raise unsupported(api, 'a mask on an access at a run-time offset', site)
    if isinstance(src, TileRuns) or dst.runs:
        if mask is not None:
            raise unsupported(api, 'a mask on a DMA of several runs', site)
        if isinstance(dst, BroadcastAccess):
            raise KernelError(api, 'a broadcast of an HBM tensor cannot be stored to', site)
        dst = _in_bounds(dst, api, site)
        if src.partitions != dst.rows or src.elems != dst.elems:
            raise KernelError(api, f'shape mismatch: a tile of shape {src.shape} stored to an '
                              f'HBM access of shape {dst.shape}', site)
        for access, tile in split([dst, src], True, api, site):
            if isinstance(dst, OffsetAccess):  # (each run at the same run-time offset)
                access = dst.shifted(access)
            store(api, site, access, tile, priority=priority)
        return
    region = mask_region(mask, src.shape, api, site)
    if region is not None:
        src, dst = src.view(region, site, api), dst.restrict(region)
    if isinstance(dst, BroadcastAccess):
        raise KernelError(api, 'a broadcast of an HBM tensor cannot be stored to', site)
    dst = _in_bounds(dst, api, site)
    _require_sbuf(api, site, src)  # (into the tensor's dtype: the DMA casts)
    if src.partitions != dst.rows or src.elems != dst.elems:
        raise KernelError(api, f'shape mismatch: a tile of shape {src.shape} stored to an HBM '
                          f'access of shape {dst.shape}', site)
    if isinstance(dst, OffsetAccess):
        current(api).emit('store_at', api, site,
                          (dst, src, operand(dst.offset_tile, api, site), dst.stride,
                           dst.reach, dst.oob_mode))
        return
    current(api).emit('store', api, site, (dst, src) + dma_priority_word(priority))


def sbuf_dma(api, site, dst, src, mask=None):
    """A DMA between two SBUF tiles (nisa.dma_copy of on-chip operands: the NKI Library's
    SBUF-to-SBUF copies), into dst's dtype: one transfer a run of elements."""
    if mask is not None:
        raise unsupported(api, 'a mask on a DMA between tiles', site)
    d, s = _dma_runs(operand(dst, api, site), site), _dma_runs(operand(src, api, site), site)
    for t in (d, s):
        _require_sbuf(api, site, t)
    if d.partitions != s.partitions or d.elems != s.elems:
        raise KernelError(api, f'shape mismatch: a DMA from a tile of shape {s.shape} to one of '
                          f'shape {d.shape}', site)
    if isinstance(d, TileRuns) or isinstance(s, TileRuns):
        for a, b in split([d, s], True, api, site):
            current(api).emit('dma', api, site, (a, b))
        return
    current(api).emit('dma', api, site, (d, s))


def _dma_runs(t, site):
    """A tile part of evenly spaced elements, not contiguous (`t[:, 0:n:2]`), as the DMA side
    of a transfer: a part of several runs of one element (a descriptor per element), as a DMA
    moves contiguous runs only."""
    if isinstance(t, Tile) and t.elems > 1:
        merged = merge(t.free_dims())
        if merged is not None and merged[1] != 1:
            return TileRuns(t.root, t.pabs, t.partitions, t.fabs, t.free_dims(), site)
    return t


def dma_priority_word(priority):
    """The recording's optional last word of a DMA: its quality-of-service level, if not 0."""
    return (f'priority={priority}',) if priority else ()


def is_number(x):
    """x is a number (a loop index as a number: its value is needed)."""
    return _number(x)


def _number(x):
    return isinstance(x, (int, float, Affine)) or type(x).__module__ == 'numpy'


def tensor_tensor(api, site, a, b, alu, engine, dtype=None, mask=None):
    tiles = (Tile, TileRuns, Pending, TileBlocks, HbmAccess, HbmTensor)
    if not isinstance(b, tiles):
        return tensor_scalar(api, site, a, alu, b, engine, dtype, mask=mask)
    if not isinstance(a, tiles):
        if alu in COMMUTATIVE:
            return tensor_scalar(api, site, b, alu, a, engine, dtype, mask=mask)
        if alu == 'subtract' and is_number(a):  # c - t: (t * -1) + c, exactly
            return tensor_scalar(api, site, b, 'multiply', -1.0, engine, dtype, mask=mask,
                                 alu1='add', scalar1=a)
        return tensor_scalar(api, site, b, alu, a, engine, dtype, reverse=True, mask=mask)
    A, B = operand(a, api, site, True), operand(b, api, site, True)
    if B.broadcast_from is not None:  # a per-partition scalar: tensor_scalar's tile operand
        return tensor_scalar(api, site, A, alu, B.broadcast_from, engine, dtype, mask=mask)
    if A.broadcast_from is not None:
        return tensor_scalar(api, site, B, alu, A.broadcast_from, engine, dtype,
                             reverse=alu not in COMMUTATIVE, mask=mask)
    # numpy broadcasting of a [1, F] operand across partitions: repeated into a tile first
    if B.partitions == 1 and A.partitions > 1 and B.elems in (1, A.elems):
        B = operand(partition_broadcast(api, site, B, (A.partitions, B.elems)), api, site)
    elif A.partitions == 1 and B.partitions > 1 and A.elems in (1, B.elems):
        A = operand(partition_broadcast(api, site, A, (B.partitions, A.elems)), api, site)
    # numpy broadcasting of a [P, 1] operand along the free axis: a per-partition scalar.
    if B.partitions == A.partitions and B.elems == 1 and A.elems > 1:
        return tensor_scalar(api, site, A, alu, B, engine, dtype, mask=mask)
    if A.partitions == B.partitions and A.elems == 1 and B.elems > 1 and alu in COMMUTATIVE:
        return tensor_scalar(api, site, B, alu, A, engine, dtype, mask=mask)
    if A.partitions == B.partitions and A.elems == 1 and B.elems > 1 and alu == 'subtract':
        # m - t of a [P, 1] m: (t - m) * -1 in one instruction (exact: negation is)
        return tensor_scalar(api, site, B, alu, A, engine, dtype, mask=mask, alu1='multiply',
                             scalar1=-1.0)
    if A.partitions == B.partitions and A.elems == 1 and B.elems > 1:  # m <op> t, reversed
        return tensor_scalar(api, site, B, alu, A, engine, dtype, reverse=True, mask=mask)
    A, B = _free_broadcast(A, B, site)
    if A.partitions != B.partitions or A.elems != B.elems:
        raise KernelError(api, f'shape mismatch: operands of shape {A.shape} and {B.shape}',
                          site)
    full = A.shape
    region = mask_region(mask, full, api, site)
    if region is not None:
        A, B = _view(A, region, api, site), _view(B, region, api, site)
    dt = _name(dtype, A.dtype_name if A.dtype_name == B.dtype_name else 'float32')
    return Pending(api, site, A.shape, dt, 'sbuf', 'isa.tensor_tensor',
                   (A, B, alu, _engine(engine, 'dve')), region=region, full_shape=full)


def _free_broadcast(A, B, site):
    """numpy broadcasting along the free axes of two operands of one rank and partitions (a
    [P, 56, 1, 1] tile against a [P, 56, 3, 3] one): an axis of size 1 is read again along
    the other's (a step-0 axis of the access pattern; the operation is then one instruction
    per element of such axes, each over the other axes, _emit_split)."""
    if A.partitions != B.partitions or len(A.shape) != len(B.shape) or A.shape == B.shape:
        return A, B
    try:
        shape = tuple(np.broadcast_shapes(A.shape[1:], B.shape[1:]))
    except ValueError:
        return A, B

    def widen(x):  # (NkiTensor.broadcast of each axis of size 1)
        if x.shape[1:] == shape:
            return x
        first, dims = x._dims()
        return x._remade(first, dims[:1] + [(n, 0) if m == 1 else (n, step)
                                            for (m, step), n in zip(dims[1:], shape)], site)
    return widen(A), widen(B)


def _per_partition(x, A, full, region, what, api, site):
    """x as the [P, 1] operand (one value per partition) of an instruction on A; a mask's
    region cuts its partitions as it cuts A's."""
    S = operand(x, api, site)
    if region is not None and S.partitions == full[0]:
        S = S.view(region[:1], site, api)
    if S.partitions != A.partitions or S.elems != 1:
        raise KernelError(api, f'shape mismatch: {what} must be of shape ({A.partitions}, 1), '
                          f'got {S.shape}', site)
    return S


def _flags(*names):
    return '|'.join(n for n in names if n)


def tensor_scalar(api, site, a, alu, scalar, engine, dtype=None, reverse=False, mask=None,
                  alu1=None, scalar1=None, reverse1=False):
    """(a <alu> scalar) and, with alu1, then <alu1> scalar1, in one instruction: each scalar a
    number or a [P, 1] tile; `reverse`: scalar <alu> a (and `reverse1` for the second)."""
    A = operand(a, api, site)
    full = A.shape
    region = mask_region(mask, full, api, site)
    A = _view(A, region, api, site)
    dt = _name(dtype, A.dtype_name)
    rev0 = reverse and alu not in COMMUTATIVE
    rev1 = alu1 is not None and reverse1 and alu1 not in COMMUTATIVE
    S = S1 = None
    if isinstance(scalar, (Tile, Pending)):
        S = _per_partition(scalar, A, full, region, 'a per-partition scalar', api, site)
    elif not _number(scalar):
        raise KernelError(api, f'expected a tile or a number, got {type(scalar).__name__}', site)
    op1, imm1 = 'bypass', 0.0
    if alu1 is not None:
        op1 = alu1
        if isinstance(scalar1, (Tile, Pending)):
            S1 = _per_partition(scalar1, A, full, region, 'the second scalar (operand1)', api,
                                site)
        elif _number(scalar1):
            imm1 = float(scalar1)
        else:
            raise KernelError(api, f'expected a tile or a number as operand1, got '
                              f'{type(scalar1).__name__}', site)
    if engine is None:  # (the compiler's choice, where the Scalar engine can run it too)
        ints = any(d in _dtypes.INTEGERS for d in (dt, A.dtype_name)) or any(
            x is not None and x.dtype_name in _dtypes.INTEGERS for x in (S, S1))
        engine = 'dve' if ints or (alu, op1) not in EITHER_ALU else 'either'
    return Pending(api, site, A.shape, dt, 'sbuf', 'isa.tensor_scalar',
                   (A, S, S1, alu, 0.0 if S is not None else float(scalar), op1, imm1,
                    _flags('rev0' if rev0 else '', 'rev1' if rev1 else ''), engine),
                   region=region, full_shape=full)


def tensor_scalar_reduce(api, site, a, alu, scalar, reduce_alu, reduce_res, reverse=False,
                         dtype=None):
    """a <alu> scalar (a number or a [P, 1] tile), and the reduce_alu reduction of each row of
    the result into reduce_res [P, 1], in one Vector-engine instruction."""
    A = operand(a, api, site)
    R = _reduce_result(reduce_res, A, api, site)
    S = None
    if isinstance(scalar, (Tile, Pending)):
        S = _per_partition(scalar, A, A.shape, None, 'operand0', api, site)
    elif not _number(scalar):
        raise KernelError(api, f'expected a tile or a number, got {type(scalar).__name__}', site)
    return Pending(api, site, A.shape, _name(dtype, A.dtype_name), 'sbuf',
                   'isa.tensor_scalar_reduce',
                   (R, A, S, alu, 0.0 if S is not None else float(scalar), reduce_alu,
                    'rev0' if reverse and alu not in COMMUTATIVE else '', 'dve'))


def _reduce_result(t, A, api, site):
    """The [P, 1] tile an instruction's row reductions are written to."""
    if isinstance(t, Pending):
        t = t.materialize()
    if not isinstance(t, Tile):
        raise KernelError(api, f'reduce_res must be a tile, got {type(t).__name__}', site)
    if t.partitions != A.partitions or t.elems != 1:
        raise KernelError(api, f'shape mismatch: reduce_res must be of shape ({A.partitions}, '
                          f'1), got {t.shape}', site)
    return t


def _two_tiles_and_a_number(api, site, a, b, number, what):
    """The operands of a two-tile instruction with a number: `a` and `b` of one shape, and
    `number` (`what` names it) a number, not a tile."""
    A, B = operand(a, api, site), operand(b, api, site)
    if not _number(number):
        raise unsupported(api, f'a tile as {what} (only a number)', site)
    if A.partitions != B.partitions or A.elems != B.elems:
        raise KernelError(api, f'shape mismatch: operands of shape {A.shape} and {B.shape}',
                          site)
    return A, B, float(number)


def scalar_tensor_tensor(api, site, a, alu0, scalar, alu1, b, dtype=None, mask=None, flags=''):
    """(a <alu0> scalar) <alu1> b in one Vector-engine instruction; scalar a number or a
    [P, 1] tile (one value per partition); flags rev0 / rev1 reverse an operation."""
    S = None
    if isinstance(scalar, (Tile, Pending)):
        S, scalar = scalar, 0.0
    A, B, imm = _two_tiles_and_a_number(api, site, a, b, scalar, 'operand0')
    full = A.shape
    region = mask_region(mask, full, api, site)
    if region is not None:
        A, B = _view(A, region, api, site), _view(B, region, api, site)
    if S is not None:
        S = _per_partition(S, A, full, region, 'operand0', api, site)
    return Pending(api, site, A.shape, _name(dtype, A.dtype_name), 'sbuf',
                   'isa.scalar_tensor_tensor', (A, B, S, alu0, imm, alu1, flags, 'dve'),
                   region=region, full_shape=full)


def tensor_tensor_scan(api, site, a, b, initial, alu0, alu1, dtype=None, flags=''):
    """out[:, i] = (a[:, i] <alu0> out[:, i-1]) <alu1> b[:, i], from `initial` (a number, or a
    [P, 1] tile: one value per partition), in one Vector-engine instruction."""
    S = None
    if isinstance(initial, (Tile, Pending)):
        S, initial = initial, 0.0
    A, B, init = _two_tiles_and_a_number(api, site, a, b, initial, 'the initial value')
    if A.space == 'psum' and B.space == 'psum':
        raise KernelError(api, 'data0 and data1 cannot both be in PSUM', site)
    if S is not None:
        S = _per_partition(S, A, A.shape, None, 'the initial value', api, site)
    return Pending(api, site, A.shape, _name(dtype, A.dtype_name), 'sbuf',
                   'isa.tensor_tensor_scan', (A, B, S, alu0, init, alu1, flags, 'dve'))


def activation(api, site, func, a, scale=1.0, engine=None, dtype=None, mask=None, bias=None,
               reduce_alu=None, reduce_res=None, reduce_flags=None):
    """func(a * scale + bias): scale a number or a [P, 1] tile, bias a [P, 1] tile or None;
    with reduce_res, the reduce_alu reduction of each row of the result into it [P, 1], in the
    same instruction, through the Scalar engine's reduce registers (`reduce_flags` not None:
    'racc' reduces onto them, 'rzero' zeroes them; reduce_res may then be None)."""
    A = operand(a, api, site)
    full = A.shape
    region = mask_region(mask, full, api, site)
    A = _view(A, region, api, site)
    B = None if bias is None else _per_partition(bias, A, full, region, 'the bias', api, site)
    SC = None
    if _number(scale) and float(scale) == 0.0:  # (the instruction's scale 0 stands for 1)
        raise unsupported(api, 'scale=0.0 (an activation of the bias alone)', site)
    if not _number(scale):
        if not isinstance(scale, (Tile, Pending)):
            raise KernelError(api, f'scale must be a number or a tile, got '
                              f'{type(scale).__name__}', site)
        SC = _per_partition(scale, A, full, region, 'the scale', api, site)
    dt, eng = _name(dtype, A.dtype_name), _engine(engine, 'act')
    if reduce_res is not None or reduce_flags is not None:
        if eng != 'act':
            raise KernelError(api, 'the reduce registers are the Scalar engine\'s', site)
        R = None
        if reduce_res is not None:  # (a mask: the rows it keeps reduce into their partitions)
            R = reduce_res.materialize() if isinstance(reduce_res, Pending) else reduce_res
            if region is not None and isinstance(R, Tile) and R.partitions == full[0]:
                R = R.view(region[:1], site, api)
            R = _reduce_result(R, A, api, site)
        return Pending(api, site, A.shape, dt, 'sbuf', 'isa.activation_reduce',
                       (R, A, B, SC, func, float(scale) if SC is None else 0.0,
                        reduce_alu or 'add', reduce_flags or '', eng),
                       region=region, full_shape=full)
    return Pending(api, site, A.shape, dt, 'sbuf', 'isa.activation',
                   (A, B, SC, func, 0.0 if SC is not None else float(scale), eng),
                   region=region, full_shape=full)


def affine_select(api, site, steps, const, on_true, fill, cmp, dtype=None):
    """on_true where const + steps[0] * p + sum of steps[k] * (index k) <cmp> 0 over the tile's
    axes (steps: one per axis of on_true), else fill, in one GpSimd instruction: the free
    steps must number the free elements in order (each the innermost's times the sizes after
    it). on_true in PSUM, which the GpSimd engine does not reach, is copied to SBUF first (AWS's
    flash attention selects from a matmul's PSUM result: a lowering of this model's)."""
    A = operand(on_true, api, site)
    if isinstance(A, Tile) and A.space == 'psum':
        A = operand(copy(api, site, A), api, site)
    if isinstance(A, TileRuns) or A.space != 'sbuf':
        raise KernelError(api, 'on_true_tile must be a tile in SBUF', site)
    free = list(steps[1:])
    sizes = list(A.shape[1:])
    fstep = free[-1] if free else 0
    for k, st in enumerate(free):
        if st != fstep * math.prod(sizes[k + 1:]):
            raise unsupported(api, f'a predicate whose steps {tuple(steps)} do not number the '
                              f'free elements of a {A.shape} tile in order', site)
    if not _number(fill):
        raise KernelError(api, f'on_false_value must be a number, got {type(fill).__name__}',
                          site)
    return Pending(api, site, A.shape, _name(dtype, A.dtype_name), 'sbuf', 'isa.affine_select',
                   (A, cmp, float(const), float(steps[0]), float(fstep), float(fill), 'pool'))


def bn_stats(api, site, a, dtype=None, mask=None):
    """The count, mean and variance * count of the even and the odd elements of each
    partition ([P, 6], Vector engine; at most 512 elements), of the elements a mask keeps."""
    A = operand(a, api, site)
    region = mask_region(mask, A.shape, api, site)
    if region is not None:
        if region[0] != slice(None) and region[0] != slice(0, A.shape[0]):
            raise unsupported(api, 'a mask that cuts partitions on bn_stats (its [P, 6] result '
                              'would be cut too)', site)
        A = _view(A, region, api, site)
    if isinstance(A, TileRuns) or merge(A.free_dims()) is None:
        raise unsupported(api, 'data of several runs', site)
    if A.elems > 512:
        raise KernelError(api, f'at most 512 elements per partition (nl.tile_size.'
                          f'bn_stats_fmax), got {A.elems}', site)
    return Pending(api, site, (A.partitions, 6), _name(dtype, 'float32'), 'sbuf',
                   'isa.bn_stats', (A, 'dve'))


def bn_aggr(api, site, a, dtype=None):
    """The mean and variance of each partition from its bn_stats triples ([P, 2])."""
    A = operand(a, api, site)
    if isinstance(A, TileRuns) or merge(A.free_dims()) is None:
        raise unsupported(api, 'data of several runs', site)
    if A.elems % 3:
        raise KernelError(api, f'bn_stats triples: the elements per partition must be a '
                          f'multiple of 3, got {A.elems}', site)
    return Pending(api, site, (A.partitions, 2), _name(dtype, 'float32'), 'sbuf',
                   'isa.bn_aggr', (A, 'dve'))


def select(api, site, pred, on_true, on_false, reverse=False, reduce_res=None, reduce_alu='max',
           dtype=None):
    """on_true where pred is not 0 (is 0 with `reverse`), else on_false (a number, a [P, 1]
    tile or a tile of on_true's shape); with reduce_res, each row's reduce_alu reduction of the
    result too, in one Vector-engine instruction."""
    Pr, T = operand(pred, api, site), operand(on_true, api, site)
    Pr, T = _free_broadcast(Pr, T, site)
    if reduce_res is not None and any(isinstance(t, TileRuns) for t in (Pr, T)):
        raise unsupported(api, 'an operand of several runs with reduce_res', site)
    if Pr.partitions != T.partitions or Pr.elems != T.elems:
        raise KernelError(api, f'shape mismatch: the predicate {Pr.shape} and the values '
                          f'{T.shape}', site)
    F, imm = None, 0.0
    if _number(on_false):
        imm = float(on_false)
    else:
        F = operand(on_false, api, site)
        if F.elems > 1:
            T, F = _free_broadcast(T, F, site)
            Pr = _free_broadcast(Pr, T, site)[0]
        if (isinstance(F, TileRuns) and reduce_res is not None) or \
                F.partitions != T.partitions or F.elems not in (1, T.elems):
            raise KernelError(api, f'shape mismatch: on_false must be a number, a '
                              f'({T.partitions}, 1) tile or of shape {T.shape}, got {F.shape}',
                              site)
    R = None if reduce_res is None else _reduce_result(reduce_res, T, api, site)
    return Pending(api, site, T.shape, _name(dtype, T.dtype_name), 'sbuf', 'isa.select',
                   (R, Pr, T, F, imm, reduce_alu, 'rev0' if reverse else '', 'dve'))


_IDENTITY = {'add': 0.0, 'multiply': 1.0, 'max': -3.4028234663852886e38,
             'min': 3.4028234663852886e38}


def loop_reduce(api, site, x, alu, indices, dtype=None, into_destination=False):
    """nl.loop_reduce: x reduced across the iterations of the loops of `indices` into one
    accumulator tile per call site, as `b = nisa.tensor_tensor(b, x, op)` with b made before
    those loops (the reference's equivalence): in their first iteration the accumulator is
    set to op's identity (Vector engine), then each iteration is one Vector-engine
    tensor_tensor. Returns the accumulator. `into_destination`: the call's result is assigned
    to a tile part, which is then the accumulator (one tensor_tensor onto it, as the kernel
    set it up): returns what the assignment emits."""
    trace = current(api)
    X = operand(x, api, site)
    if into_destination:
        p = Pending(api, site, X.shape, _name(dtype, X.dtype_name), 'sbuf', None, (X, alu),
                    kind='loop_reduce')
        return p
    if isinstance(X, TileRuns):
        raise unsupported(api, 'an operand of several runs', site)
    if alu not in _IDENTITY:
        raise unsupported(api, f'a {alu} loop reduction (add, multiply, max, min)', site)
    first = True  # the first iteration of the loops the reduction runs over: a new one
    for i in indices:
        if isinstance(i, Affine) or isinstance(i, int) or type(i).__module__ == 'numpy':
            first = first and all(loop.cur == 0 for loop in i.loops()) \
                if isinstance(i, Affine) else first and int(i) == 0
        else:
            raise KernelError(api, f'loop_indices must be loop indices, got {type(i).__name__}',
                              site)
    dt = _name(dtype, X.dtype_name)
    key = (site, X.shape, dt)
    entry = trace.loop_reduced.get(key)
    if entry is None or first:
        acc = trace.declare(api, site, X.shape, dt, 'sbuf', name='loop_reduce',
                            identity=('loop_reduce', site))
        emit_into(memset(api, site, X.shape, _IDENTITY[alu], dt, 'dve'), acc, False, site)
        entry = trace.loop_reduced[key] = (acc,)
    acc = entry[0]
    emit_into(tensor_tensor(api, site, acc, X, alu, 'dve', dt), acc, False, site)
    return acc


def exponential(api, site, a, max_value=0.0, reduce_res=None, reduce_flags=None, dtype=None):
    """exp(a - max_value) on the Vector engine (NeuronCore-v4): max_value a number or a [P, 1]
    tile; with reduce_res (or reduce_flags: 'racc' sums onto the Vector engine's reduce
    registers, 'rzero' zeroes them), each row's sum into it [P, 1], in the same instruction."""
    A = operand(a, api, site)
    M, imm = None, 0.0
    if _number(max_value):
        imm = float(max_value)
    else:
        M = _per_partition(max_value, A, A.shape, None, 'max_value', api, site)
    dt = _name(dtype, A.dtype_name)
    R = None if reduce_res is None else _reduce_result(reduce_res, A, api, site)
    return Pending(api, site, A.shape, dt, 'sbuf', 'isa.exponential',
                   (R, A, M, imm, reduce_flags or '', 'dve'))


def _mx_operands(api, site, data, scale, what):
    """An MX data tile and its scale, 2-D tiles (their memories, dtypes and partitions: the
    model's rules, models/isa/matrix.cpp, checked as the program is built)."""
    D, S = operand(data, api, site), operand(scale, api, site)
    for t, role in ((D, what), (S, f'{what}_scale')):
        if isinstance(t, TileRuns) or len(t.shape) != 2:
            raise KernelError(api, f'{role} must be a 2-D tile', site)
    return D, S


def matmul_mx(api, site, stationary, moving, stationary_scale, moving_scale):
    """nisa.nc_matmul_mx: stationary [P, M] and moving [P, N] of x4-packed MX types, each with
    its scale, contracted over the partitions and the 4 packed values into [M, N] (fp32 or
    bf16) in PSUM (Tensor engine, NeuronCore-v4)."""
    S, SS = _mx_operands(api, site, stationary, stationary_scale, 'stationary')
    M, MS = _mx_operands(api, site, moving, moving_scale, 'moving')
    if S.partitions != M.partitions:
        raise KernelError(api, f'shape mismatch: the contraction (partition) sizes differ: '
                          f'stationary {S.shape}, moving {M.shape}', site)
    return Pending(api, site, (S.elems, M.elems), 'float32', 'psum', 'matmul_mx',
                   (S, M, SS, MS), 'matmul_mx')


def quantize_mx(api, site, dst, src, dst_scale):
    """nisa.quantize_mx: src [P, 4F] (bf16/fp16, SBUF) into dst [P, F] of an fp8 x4 MX type and
    its scale [4 partitions of each 32, F] (Vector engine, NeuronCore-v4)."""
    D, S = _mx_operands(api, site, dst, dst_scale, 'dst')
    A = operand(src, api, site)
    if isinstance(A, TileRuns) or len(A.shape) != 2:
        raise KernelError(api, 'src must be a 2-D tile', site)
    if A.partitions != D.partitions or A.elems != 4 * D.elems:
        raise KernelError(api, f'shape mismatch: src {A.shape} packs into dst [{A.partitions}, '
                          f'{A.elems // 4}], got {D.shape}', site)
    p = Pending(api, site, D.shape, D.dtype_name, 'sbuf', 'isa.quantize_mx', (S, A, 'dve'))
    assign(D, p, site)


def range_select(api, site, on_true, cmp0, cmp1, bound0, bound1, start, fill, reduce_res=None,
                 dtype=None):
    """on_true where the element's free index + start passes both comparisons with the
    per-partition bounds, else fill, and each row's max into reduce_res (Vector engine,
    NeuronCore-v3 and newer)."""
    T = operand(on_true, api, site)
    if isinstance(T, TileRuns):
        raise unsupported(api, 'an operand of several runs', site)
    B0 = _per_partition(bound0, T, T.shape, None, 'bound0', api, site)
    B1 = _per_partition(bound1, T, T.shape, None, 'bound1', api, site)
    for x, what in ((start, 'range_start'), (fill, 'on_false_value')):
        if not _number(x):
            raise KernelError(api, f'{what} must be a number', site)
    R = None if reduce_res is None else _reduce_result(reduce_res, T, api, site)
    return Pending(api, site, T.shape, _name(dtype, T.dtype_name), 'sbuf', 'isa.range_select',
                   (R, T, B0, B1, cmp0, cmp1, float(start), float(fill), 'dve'))


def reciprocal(api, site, a, dtype=None, mask=None):
    """1 / a on the Vector engine (nisa.reciprocal)."""
    A = operand(a, api, site)
    full = A.shape
    region = mask_region(mask, full, api, site)
    A = _view(A, region, api, site)
    return Pending(api, site, A.shape, _name(dtype, A.dtype_name), 'sbuf', 'isa.reciprocal',
                   (A, 'dve'), region=region, full_shape=full)


def vector_transpose(api, site, a, dtype=None):
    """a [P, F] as [F, P] on the Vector engine: at most 32 x 32, SBUF or PSUM."""
    A = operand(a, api, site)
    if isinstance(A, TileRuns) or A.partitions > 32 or A.elems > 32:
        raise KernelError(api, f'a Vector-engine transpose takes at most 32 x 32, got {A.shape}',
                          site)
    return Pending(api, site, (A.elems, A.partitions), _name(dtype, A.dtype_name), 'sbuf',
                   'isa.transpose', (A, 'dve'))


def stream_shuffle(api, site, src, dst, a, b, lo=0, hi=32, dtype=None):
    """dst's partitions from src's, within quadrants of 32 (partition i of a quadrant, for lo
    <= i < hi, from (a i + b) mod 32; the others keep dst's values, which the instruction then
    reads): one Vector-engine instruction (its dtypes, shapes and the partitions it may read:
    the model's rules, models/isa/matrix.cpp, checked as the program is built)."""
    A = operand(src, api, site)
    D = operand(dst, api, site) if dst is not None else A
    if isinstance(A, TileRuns) or isinstance(D, TileRuns):
        raise unsupported(api, RUNS_ONLY, site)
    kept = D if (lo, hi) != (0, 32) else None
    return Pending(api, site, (D.partitions,) + tuple(A.shape[1:]), _name(dtype, A.dtype_name),
                   'sbuf', 'isa.stream_shuffle',
                   (A, kept, float(a), float(b), float(lo), float(hi), 'dve'))


def nonzero_with_count(api, site, dst, src, index_offset, padding):
    """dst [P, T + 1] at partitions 0, 16, ..., 112: the positions of src's nonzero elements
    (+ index_offset), padding, their count; one GpSimd instruction (nonzero_count) that keeps
    dst's other partitions, reading them."""
    A, D = operand(src, api, site), operand(dst, api, site)
    if isinstance(A, TileRuns) or isinstance(D, TileRuns):
        raise unsupported(api, RUNS_ONLY, site)
    # (a row of several free dimensions: its elements in order; the shapes' rules are the
    # instruction's row, models/isa/reductions.cpp)
    A, D = (x.reshape((x.partitions, x.elems)) if len(x.shape) != 2 else x for x in (A, D))
    for name, x in (('index_offset', index_offset), ('padding_val', padding)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise KernelError(api, f'{name} must be an integer, got {x!r}', site)
    kept = D if D.partitions > 1 else None
    assign(D, Pending(api, site, D.shape, D.dtype_name, 'sbuf', 'isa.nonzero_with_count',
                      (A, kept, float(index_offset), float(padding), 'pool')), site)


def iota(api, site, shape, offset, partition_step, dtype, pattern=None):
    """A tile of `shape` with value offset + partition_step * p + i at partition p, free
    element i (GpSimd engine); with `pattern` ([(size, coefficient)] per free axis), the sum
    of coefficient x index instead of i (the instruction's access pattern; the same cost)."""
    shape = tuple(int(x) for x in shape)
    return Pending(api, site, shape, _dtypes.dtype_name(dtype), 'sbuf', 'isa.iota',
                   (float(offset), float(partition_step), 'pool', pattern))


def copy(api, site, a, dtype=None, engine=None, mask=None):
    if isinstance(a, Tile) and a.broadcast_from is not None and engine in (None, 'dve'):
        # A [P, 1] tile broadcast along the free axis, made a tile of its own: zeros plus the
        # per-partition value, two Vector-engine instructions (the hardware could read the
        # column with a step-0 access pattern in one: not modelled, a model choice)
        dt = _name(dtype, a.dtype_name)
        zeros = memset(api, site, a.shape, 0.0, dt, 'dve').materialize()
        return tensor_scalar(api, site, zeros, 'add', a.broadcast_from, 'dve', dt, mask=mask)
    A = operand(a, api, site)
    full = A.shape
    region = mask_region(mask, full, api, site)
    A = _view(A, region, api, site)
    dt = _name(dtype, A.dtype_name)
    if engine is None:
        return Pending(api, site, A.shape, dt, 'sbuf', 'copy', (A,), region=region,
                       full_shape=full)
    return Pending(api, site, A.shape, dt, 'sbuf', 'isa.tensor_copy', (A, engine),
                   region=region, full_shape=full)


def memset(api, site, shape, value, dtype, engine=None):
    return Pending(api, site, shape, _dtypes.dtype_name(dtype), 'sbuf', 'isa.memset',
                   (float(value), _engine(engine, 'dve')))


def reduce(api, site, a, alu, axis, keepdims=False, dtype=None, engine=None, mask=None,
           negate=False):
    """The reduction over free axes: over all of them, one value per partition; over the last
    ones (consecutive), one value per element of the others, in one instruction; over others
    (an nl reduction only), after copying the tile so that they come last, as the compiler
    would. `negate`: the result times -1 (free on the Vector engine)."""
    A = operand(a, api, site)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    n = len(A.shape)
    try:  # (a negative axis counts from the last)
        axes = tuple(sorted(int(x) + n if int(x) < 0 else int(x) for x in axes))
    except (TypeError, ValueError):
        raise KernelError(api, f'axis must be integers, got {axis!r}', site) from None
    free = tuple(range(1, n))
    if not axes or 0 in axes or any(x not in free for x in axes) or n < 2 or \
            len(set(axes)) != len(axes):
        raise unsupported(api, f'a reduction over axis {axis} (only the free axes of a tile '
                          'reduce)', site)
    if alu not in ('add', 'max', 'min', 'multiply', 'subtract'):
        raise unsupported(api, f'a {alu} reduction', site)
    dt = _name(dtype, A.dtype_name)
    if set(axes) == set(free) and not negate:
        if isinstance(A, TileRuns) or merge(A.free_dims()) is None:  # not one run: copied first
            A = _moved_last(api, site, A, (), axes)
        full = (A.partitions, 1) if keepdims else (A.partitions,)
        region = mask_region(mask, A.shape, api, site)
        out_region = None
        if region is not None:
            A = _view(A, region, api, site)
            out_region = (region[0], slice(None)) if keepdims else (region[0],)
        shape = (A.partitions, 1) if keepdims else (A.partitions,)
        return Pending(api, site, shape, dt, 'sbuf', 'isa.tensor_reduce',
                       (A, alu, '', _engine(engine, 'dve')), region=out_region,
                       full_shape=full)
    if mask is not None:
        raise unsupported(api, 'a mask on a reduction over some of the free axes, or negated',
                          site)
    kept = tuple(x for x in free if x not in axes)
    orig = A.shape
    sizes = tuple(A.shape[x] for x in kept)
    suffix = axes == free[len(kept):]
    if not suffix:
        if not api.startswith('nl.'):
            raise KernelError(api, f'axis {axis}: the reduced axes must be the last free axes, '
                              'consecutive (the ISA reference)', site)
        A = _moved_last(api, site, A, kept, axes)
    elif isinstance(A, TileRuns) or merge(A.free_dims()) is None:  # not one run: copied first
        A = _moved_last(api, site, A, kept, axes)
    if keepdims:
        out = tuple(orig[x] if x == 0 or x in kept else 1 for x in range(n))
    else:
        out = (A.partitions,) + sizes
    return Pending(api, site, out, dt, 'sbuf', 'isa.tensor_reduce',
                   (A, alu, 'neg' if negate else '', _engine(engine, 'dve')))


def _moved_last(api, site, A, kept, axes):
    """A copied into a tile of its own with the `axes` last (one copy per run of A)."""
    trace = current(api)
    dims = A.free_dims()
    order = [x - 1 for x in kept] + [x - 1 for x in axes]
    shape = (A.partitions,) + tuple(A.shape[1 + d] for d in order)
    p0, f0 = (A.p0, A.f0) if isinstance(A, TileRuns) else (A.pabs, A.fabs)
    moved = TileRuns(A.root, p0, A.partitions, f0, [dims[d] for d in order], site)
    t = trace.declare(api, site, shape, A.dtype_name, 'sbuf', name='reduce_in')
    emit_into(copy(api, site, moved, A.dtype_name, 'dve'), t, False, site)
    return t


def psum_matmul_dtypes(lim):
    """The dtypes a matmul writes into PSUM: fp32, and bf16 from NeuronCore-v4
    (core.pe.bf16_psum)."""
    return ('float32', 'bfloat16') if lim['bf16_psum'] else ('float32',)


def moving_limit(lim, dst_dtype):
    """The largest moving free size of a matmul into a dst of this dtype: moving_max, or as
    many elements as core.psum.tile_banks PSUM banks hold (NeuronCore-v4: 4096 fp32, 8192 bf16)."""
    whole = lim['psum_tile_banks'] * lim['psum_bank'] // _dtypes.SIZES[dst_dtype]
    return max(lim['moving_max'], whole)


def _from_sbuf(x, other, api, site):
    """A matmul operand: a Tensor-engine result no tile holds yet (a transpose's, in PSUM) is
    copied to SBUF first, which the Tensor engine reads (the compiler's lowering, as for a
    store of a PSUM tile; AWS's flash attention backward so multiplies nc_transpose results),
    in the dtype of what it transposed (the values are exact), else of the other operand."""
    if isinstance(x, Pending) and x.space == 'psum' and not x.placed:
        dtype = x.args[0].dtype_name if x.prim == 'transpose' else \
            getattr(other, 'dtype_name', None)
        return copy(api, site, x, dtype)
    return x


def matmul(api, site, stationary, moving, double_row=False, mask=None, onezero=()):
    """stationary.T @ moving into PSUM; `double_row`: the fp8 double-row mode of NeuronCore-v3
    (twice the rate, core.pe.double_row), with the operands' usual shapes, as the C++ matmul
    driver models it; `mask`: the block of the result it keeps (stationary's columns, moving's
    columns), the matmul of those alone; `onezero`: 'stationary_onezero' and/or
    'moving_onezero', the operands the kernel declares ones and zeros (nc_matmul's hints: an
    fp32 operand so marked takes half the passes)."""
    S = operand(_from_sbuf(stationary, moving, api, site), api, site)
    M = operand(_from_sbuf(moving, S, api, site), api, site)
    if S.partitions != M.partitions:
        raise KernelError(api, f'shape mismatch: the contraction (partition) sizes differ: '
                          f'stationary {S.shape}, moving {M.shape}', site)
    full = (S.elems, M.elems)
    region = mask_region(mask, full, api, site)
    if region is not None:
        if isinstance(S, TileRuns) or isinstance(M, TileRuns) or len(S.shape) != 2 or \
                len(M.shape) != 2:
            raise unsupported(api, 'mask= on operands other than 2-D tiles', site)
        S = S.view((slice(None), region[0]), site, api)
        M = M.view((slice(None), region[1]), site, api)
    # the API's documented limit (NKI's error; the builder would split a wider one)
    lim = current(api).limits
    widest = max(psum_matmul_dtypes(lim), key=lambda d: moving_limit(lim, d))
    if M.elems > moving_limit(lim, widest):
        raise KernelError(api, f'moving free size {M.elems} exceeds the limit of '
                          f'{moving_limit(lim, widest)} (for a {widest} dst)', site)
    # (memories, sizes, dtypes and modes: the model's rules, models/engines/tensor_engine.cpp,
    # checked as the program is built, at this line)
    p = Pending(api, site, (S.elems, M.elems), 'float32', 'psum', 'matmul', (S, M), 'matmul',
                region, full if region is not None else None)
    p.double_row = double_row
    p.onezero = tuple(onezero)
    return p


def double_row_pair(api, site, stationary, moving):
    """Beta 1's nc_matmul(perf_mode='double_row_gen3'): stationary [K, 2, M] and moving
    [K, 2, N], the sum over both rows of each partition (a contraction of 2K) into [M, N]: two
    double-row matmuls (NeuronCore-v3's fp8 mode, each at twice the rate) of row 0 and row 1,
    the second accumulating onto the first; together the time of one ordinary pass."""
    S, M = operand(stationary, api, site), operand(moving, api, site)
    if len(S.shape) != 3 or len(M.shape) != 3 or S.shape[1] != 2 or M.shape[1] != 2:
        raise KernelError(api, f"perf_mode='double_row_gen3' takes [K, 2, M] and [K, 2, N] "
                          f'operands, got {S.shape} and {M.shape}', site)
    rows = [matmul(api, site, S.select(1, r), M.select(1, r), True) for r in (0, 1)]
    rows[0].then = rows[1]
    return rows[0]


def transpose(api, site, a, mask=None):
    """a's [P, F] (or the part a mask keeps) as [F, P] in PSUM, through the Tensor engine."""
    trace = current(api)
    A = operand(a, api, site)
    full, out_region = (A.elems, A.partitions), None
    region = mask_region(mask, A.shape, api, site)
    if region is not None:
        if len(A.shape) != 2:
            raise unsupported(api, 'a mask on a transpose of a tile with several free '
                              'dimensions', site)
        A = _view(A, region, api, site)
        out_region = (region[1], region[0])
    if A.space != 'sbuf':
        raise KernelError(api, 'the operand of a Tensor-engine transpose must be in SBUF', site)
    lim = trace.limits
    side = min(lim['pe_cols'], lim['partitions'])
    if A.elems > side or A.partitions > lim['pe_rows']:
        raise KernelError(api, f'a Tensor-engine transpose takes at most {lim["pe_rows"]} x '
                          f'{side}, got {A.shape}', site)
    return Pending(api, site, (A.elems, A.partitions), 'float32', 'psum', 'transpose', (A,),
                   region=out_region, full_shape=full)


def transpose_by_matmul(api, site, stationary, moving, onezero=()):
    """nc_matmul(stationary, moving, is_transpose=True): stationary [P, F] as [F, P] in PSUM,
    "a matrix multiplication between data as the stationary tensor and an identity matrix as
    the moving tensor" (nki.isa.nc_transpose's reference), in stationary's dtype or fp32. The
    moving operand must be the [P, P] identity: a run that computes values checks it."""
    S, M = operand(stationary, api, site), operand(moving, api, site)
    if M.partitions != S.partitions or M.elems != S.partitions:
        raise KernelError(api, f'is_transpose=True: the moving operand must be the '
                          f'[{S.partitions}, {S.partitions}] identity, got {M.shape}', site)
    if M.dtype_name != S.dtype_name:
        raise KernelError(api, f'is_transpose=True: the stationary ({S.dtype_name}) and moving '
                          f'({M.dtype_name}) operands have different dtypes', site)
    p = transpose(api, site, S)
    p.dtype_name = S.dtype_name if S.dtype_name != 'float32' else 'float32'
    p.identity = M
    p.onezero = tuple(onezero)
    return p


def max8(api, site, a):
    A = operand(a, api, site)
    if A.elems < 8:
        raise KernelError(api, f'max8 needs at least 8 elements per partition, got {A.shape}',
                          site)
    return Pending(api, site, (A.partitions, 8), A.dtype_name, 'sbuf', 'isa.max8', (A, 'dve'))


def topk(api, site, val_dst, idx_dst, src, n):
    """The k largest of each 16-partition snake of src (its first n elements, element e at
    partition e % 16, column e / 16), largest first, into the first ceil(k / 16) columns of
    val_dst (values) and idx_dst (their indices) in the same layout, k = val_dst's free size
    (GpSimd engine, NeuronCore-v3 and newer; nki.isa.topk of SDK 2.33)."""
    S = operand(src, api, site)
    V, I = (operand(t, api, site) for t in (val_dst, idx_dst))
    if any(isinstance(t, TileRuns) or len(t.shape) != 2 for t in (S, V, I)):
        raise unsupported(api, 'operands other than 2-D tiles', site)
    if not _number(n) or int(n) != n or n < 1:
        raise KernelError(api, f'n must be a positive whole number, got {n!r}', site)
    n, k = int(n), V.elems
    if I.shape != V.shape:
        raise KernelError(api, f'shape mismatch: idx_dst {I.shape} and val_dst {V.shape}', site)
    if S.partitions != V.partitions:
        raise KernelError(api, f'shape mismatch: src and val_dst have {S.partitions} and '
                          f'{V.partitions} partitions', site)
    used = -(-n // 16)
    if S.elems < used:
        raise KernelError(api, f'src has {S.elems} columns, fewer than ceil(n / 16) = {used}',
                          site)
    cols = -(-k // 16)
    S = S.view((slice(None), slice(0, used)), site, api)
    V, I = (t.view((slice(None), slice(0, cols)), site, api) for t in (V, I))
    p = Pending(api, site, V.shape, 'bfloat16', 'sbuf', 'isa.topk',
                (I, S, float(n), float(k), 'pool'))
    assign(V, p, site)


def sendrecv(api, site, src, dst, to_rank, from_rank):
    """nisa.sendrecv: this core's src into the dst of core `to_rank`, core `from_rank`'s src
    into this dst, both in SBUF, then the cores meet (NeuronCore-v3)."""
    trace = current(api)  # (NeuronCore-v3: its core_barrier's row)
    S, D = operand(src, api, site), operand(dst, api, site)
    for t, what in ((S, 'src'), (D, 'dst')):
        if isinstance(t, TileRuns) or t.space != 'sbuf':
            raise KernelError(api, f'{what} must be one tile in SBUF', site)
    if S.shape != D.shape or S.dtype_name != D.dtype_name:
        raise KernelError(api, f'src {S.shape} {S.dtype_name} and dst {D.shape} '
                          f'{D.dtype_name} must have one shape and dtype', site)
    for r, what in ((to_rank, 'send_to_rank'), (from_rank, 'recv_from_rank')):
        if r not in (0, 1):
            raise KernelError(api, f'{what} must be 0 or 1 (the cores of an HBM stack), got '
                              f'{r!r}', site)
    trace.emit('sendrecv', api, site, (D, S, int(to_rank), int(from_rank)))


# The engine whose sequencer the register instructions are recorded on: the compiler places
# each register on the engines that use it (the register_alloc reference); a model choice.
REGISTER_ENGINE = 'sp'


def _one_element(api, site, tile):
    """The tile operand of a register instruction (its rules, one element of at most 32 bits:
    the instruction's row, models/isa/control.cpp)."""
    t = operand(tile, api, site)
    if isinstance(t, TileRuns):
        raise unsupported(api, RUNS_ONLY, site)
    return t


def register_load(api, site, number, src):
    """register `number` = src[0, 0] (nisa.register_load)."""
    if isinstance(src, (HbmTensor, HbmAccess)):
        raise unsupported(api, 'a register loaded from HBM (load it from SBUF: nisa.dma_copy '
                          'the element into a [1, 1] tile first)', site)
    current(api).emit('isa.register_load', api, site,
                      (_one_element(api, site, src), float(number), REGISTER_ENGINE))


def register_store(api, site, dst, number):
    """dst[0, 0] = register `number` (nisa.register_store)."""
    if isinstance(dst, (HbmTensor, HbmAccess)):
        raise unsupported(api, 'a register stored to HBM (store it to SBUF)', site)
    current(api).emit('isa.register_store', api, site,
                      (_one_element(api, site, dst), float(number), REGISTER_ENGINE))


def register_move(api, site, number, constant, source):
    """register `number` = register `source`, or `constant` when source is None."""
    current(api).emit('isa.register_move', api, site,
                      (float(number), float(constant), -1.0 if source is None else float(source),
                       REGISTER_ENGINE))


def core_barrier(api, site, data, engine):
    """nisa.core_barrier on `engine` over shared HBM tensor `data`: the cores of the HBM stack
    wait for each other there; this core's accesses of data before it come first, those
    after it after every core's before it (NeuronCore-v3). The reference asks for a tensor in
    shared HBM; AWS's kernels also pass a tile of the core's own (the MoE kernels' block index
    in SBUF, nki-library bwmm_shard_on_I), over which the cores meet alike."""
    trace = current(api)
    if isinstance(data, HbmTensor):
        data = data[...]
    if isinstance(data, HbmAccess):
        trace.emit('barrier', api, site, (engine, data))
        return
    if not isinstance(data, (Tile, TileRuns, Pending)):
        raise KernelError(api, 'data must be a tensor in shared HBM or a tile, got '
                          f'{type(data).__name__}', site)
    psum_read = getattr(getattr(data, 'root', None), 'read_since_write', None)
    tile = operand(data, api, site)
    if psum_read is not None:  # (meeting over a PSUM tile reads no sum)
        tile.root.read_since_write = psum_read
    if isinstance(tile, TileRuns):
        raise KernelError(api, 'data must be one run a partition (a view that several runs a '
                          'partition make is not one operand)', site)
    trace.emit('tile_barrier', api, site, (engine, tile))


def find_index8(api, site, data, vals):
    D, V = operand(data, api, site), operand(vals, api, site)
    if V.partitions != D.partitions or V.elems != 8:
        raise KernelError(api, f'shape mismatch: the values must be of shape '
                          f'({D.partitions}, 8), got {V.shape}', site)
    return Pending(api, site, (D.partitions, 8), 'int32', 'sbuf', 'isa.find_index8',
                   (D, V, 'dve'))


def match_replace8(api, site, dst, data, vals, imm, dst_idx=None):
    """dst = data with the first unmatched occurrence of each of 8 values per partition (the
    last value first) replaced by imm; their indices into dst_idx [P, 8] when given."""
    D, V, O = (operand(t, api, site) for t in (data, vals, dst))
    I = None if dst_idx is None else operand(dst_idx, api, site)
    if any(isinstance(t, TileRuns) or len(t.shape) != 2 for t in (D, V, O, I) if t is not None):
        raise unsupported(api, 'operands other than 2-D tiles', site)
    if V.shape != (D.partitions, 8) or O.shape != D.shape or (I is not None and
                                                                I.shape != V.shape):
        raise KernelError(api, f'shape mismatch: data {D.shape} and dst {O.shape} alike, vals '
                          f'{V.shape} and dst_idx [{D.partitions}, 8]', site)
    if not _number(imm):
        raise KernelError(api, f'imm must be a number, got {imm!r}', site)
    assign(O, Pending(api, site, O.shape, O.dtype_name, 'sbuf', 'isa.match_replace8',
                      (I, D, V, float(imm), 'dve')), site)


def partition_broadcast(api, site, src, shape, dtype=None):
    """A [1, F] tile repeated into every partition of a new [P, F] tile (NKI's broadcast_to
    "broadcast along the partition dimension"; the reference does not say how): on the
    Tensor engine, a matmul of a ones [1, P] stationary by src (PSUM, at most the moving
    limit of columns at a time) copied to SBUF, the ones declared so (the architecture
    guide's broadcast, is_stationary_onezero=True); a model choice (docs/nki.md). The ones are
    set on the GpSimd engine, off the Vector engine's in-order queue."""
    trace = current(api)
    shape = tuple(int(x) for x in shape)
    src = operand(src, api, site)
    if isinstance(src, TileRuns) or src.partitions != 1:
        raise unsupported(api, f'a broadcast of {src.shape} to {shape}', site)
    parts, free = shape[0], math.prod(shape[1:])
    if src.elems not in (1, free):
        raise KernelError(api, f'cannot broadcast a tile of shape {src.shape} to {shape}',
                          site)
    if parts > trace.limits['partitions']:
        raise KernelError(api, f'number of partitions {parts} exceeds the architecture limit '
                          f'of {trace.limits["partitions"]}', site)
    dt = _name(dtype, src.dtype_name)
    flat = src.reshape((1, src.elems)) if len(src.shape) != 2 else src
    ones = trace.declare(api, site, (1, parts), src.dtype_name, 'sbuf', name='ones')
    emit_into(memset(api, site, (1, parts), 1.0, src.dtype_name, 'pool'), ones, False, site)
    out = trace.declare(api, site, (parts, src.elems), dt, 'sbuf', name='broadcast')
    width = trace.limits['moving_max']
    for c0 in range(0, src.elems, width):
        n = min(width, src.elems - c0)
        # (one PSUM tile for every chunk, each chunk another instance of it: the lowering
        # takes no more PSUM than a bank, whatever the width)
        acc = trace.declare(api, site, (parts, n), 'float32', 'psum', name='broadcast_psum',
                            identity=('broadcast_psum', site))
        # (the ones declared so, as the architecture guide's broadcast does:
        # is_stationary_onezero=True)
        emit_into(matmul(api, site, ones, flat[:, c0:c0 + n], onezero=('stationary_onezero',)),
                  acc, False, site)
        emit_into(copy(api, site, acc, dt), out[:, c0:c0 + n], False, site)
    if src.elems == free:
        return out.reshape(shape)
    return out.broadcast_to(shape)  # then along the free axis


class Choices:
    """An operand that differs between the compiler's choices (Op.variant): nl.matmul's x
    transposed once and hoisted ('hoist'), or at this call ('plain')."""

    def __init__(self, hoist, plain):
        self.hoist, self.plain = hoist, plain

    def pick(self, variant):
        return self.hoist if variant == 'hoist' else self.plain


def plain_transpose(api, site, x):
    """x transposed into SBUF at this call (as an isa kernel, or a kernel whose transposes are
    not hoisted, does it)."""
    flipped = transpose(api, site, x)
    flipped.counted = _TRANSPOSES  # (copy materializes it)
    out = copy(api, site, flipped, dtype=x.dtype_name)
    out.counted = _TRANSPOSES
    return out


# The declarations of nl.matmul's transposes are counted apart from the others at their line,
# so that the kernel's own keep their keys whichever way the compiler transposes (Choices).
_TRANSPOSES = 'nl.matmul transposes'



def hoisted_transpose(api, site, x):
    """(x transposed into SBUF for a matmul's stationary operand, its hoisting entry or None),
    as nl.matmul without transpose_x lowers it. In an nl kernel each part of a tile is
    transposed once while it is unchanged, into a tile of its own (the compiler hoists
    loop-invariant work): inside loops opened since x was last written, only in their first
    iteration; an isa kernel transposes at every call, as written. A changed x is transposed
    again into the same tile, or into another one while a matmul of the old transpose is not
    emitted yet (p = nl.matmul(...) kept for later)."""
    trace = current(api)
    root = x.root
    if trace.style != 'nl' or root.decl is None or root.decl.alloc is not None:
        return plain_transpose(api, site, x), None
    # (the part by the values of its indices now)
    key = (root.decl.id, concrete(root.block), concrete(x.pabs), concrete(x.fabs), x.fstep,
           x.shape)
    entry = trace.transposed.get(key)
    if entry is not None and entry['root'] is root and entry['version'] == root.version:
        return entry['tile'], entry
    flipped = transpose(api, site, x)
    flipped.counted = (_TRANSPOSES, 'hoisted')
    row_bytes = flipped.shape[1] * _dtypes.SIZES[x.dtype_name]
    slot = 0 if entry is None else entry['slot']
    if entry is not None and any(r() is not None and not r().placed for r in entry['readers']):
        slot += 1  # the current tile is still to be read: a tile of its own
    if entry is None or slot != entry['slot']:
        # within the share of SBUF, and within what the kernel's own tiles leave (at one
        # buffer each): the compiler hoists only what fits
        if trace.hoisted_bytes + row_bytes > trace.limits['hoist_share'] * \
                trace.limits['sbuf_bytes'] or trace.declared_sbuf + trace.hoisted_bytes + \
                row_bytes > trace.limits['sbuf_bytes']:
            return plain_transpose(api, site, x), None
        trace.hoisted_bytes += row_bytes
    # (inside loops that do not write x: in their first iteration only, as the loops fold)
    with trace.choice('hoist'):
        tile = trace.declare(api, site, flipped.shape, x.dtype_name, 'sbuf',
                             name=f'{root.decl.label}.T', identity=(key, slot))
        emit_into(copy(api, site, flipped, dtype=x.dtype_name), tile, False, site)
    entry = {'root': root, 'version': root.version, 'tile': tile, 'slot': slot, 'readers': []}
    trace.transposed[key] = entry
    return tile, entry


OPERATORS.update(assign=assign, accumulate=accumulate,
                 limits=lambda: current('tile.indirect').limits)

"""The recording of a kernel: its HBM tensors, tile declarations and instructions (the
primitives of _prims), in program order, each with the kernel's file:line.

An NKI loop (affine_range, sequential_range) is recorded once, with its index symbolic: the
body runs twice (two passes) with the same symbolic index, and the two recordings must be the
same text; the builder (C++) then expands the iterations. Whatever makes a body depend on
Python state or on the index's value (an `if` on it, a list indexed by it, a tile carried from
one iteration to the next by a Python variable, a `break`) raises NeedsUnroll, and the kernel is
traced again with that loop unrolled, as eager Python would run it. State the frontend keeps
between operations (PSUM locations written, a zeroing not emitted yet, hoisted transposes) is
tagged with the chain of loop passes it was made in: a body's decisions see what happened in
the current iteration and before its loops began, and say what changes after the first
iteration as a condition on the loop indices (`when`, a matmul's `fresh` loops)."""

import contextlib
import itertools
import os
import weakref

from . import _dtypes
from ._errors import KernelError, unsupported, user_site
from ._index import Affine, LoopIndex, NeedsUnroll, concrete, text
from ._prims import INDIRECT, PRIMS, indirect_group
from ._tensors import (HbmRef, HbmTensor, IndirectRef, IndirectTile, ParDim, Tile, TileBlocks,
                       TileRef)

LAST_PASS = 1  # a loop recorded once runs its body in passes 0 and 1

# The platform's limits (partitions, pe_rows, pe_cols, moving_max, psum_bank, sbuf_bytes,
# isa_version, hoist_share), from the runner: limits_of() gives them as a dict.
limits_of = None


def limits():
    if limits_of is None:
        raise RuntimeError('trnsim.nki: no platform (the runner sets one up)')
    return limits_of()


class Frame:
    """One loop being recorded once: its index, the pass running, whether it is still open."""

    __slots__ = ('loop', 'pass_no', 'open')

    def __init__(self, loop):
        self.loop, self.pass_no, self.open = loop, 0, True


class Decl:
    """A tile declaration (one line of the kernel, in one occurrence): `count` logical tiles
    of partitions x elems; `serial` counts its instances recorded so far."""

    def __init__(self, decl_id, label, space, partitions, elems, dtype, count, blocked, alloc,
                 offsets, phys):
        self.id, self.label, self.space = decl_id, label, space
        self.partitions, self.elems, self.dtype = partitions, elems, dtype
        self.count, self.blocked, self.alloc = count, blocked, alloc
        self.offsets, self.phys = offsets, phys  # direct allocation
        self.bytes = elems * _dtypes.SIZES[dtype]
        self.carried = False
        self.instances = 0  # how many times it runs, over every iteration
        self.loops = []  # trip counts of the NKI loops around it, outermost first
        self.serial = 0

    def line(self):
        lst = lambda xs: ','.join(str(x) for x in xs) if xs else '-'  # noqa: E731
        places = lambda xs: ','.join(f'{p}@{o}' if p else str(o)  # noqa: E731
                                     for p, o in xs) if xs else '-'
        single = int(self.carried or self.instances == 1)
        return (f'decl {self.space} {self.partitions} {self.elems} {self.dtype} {self.count} '
                f'{int(self.blocked)} {single} {lst(self.loops)} {places(self.offsets or [])} '
                f'{lst(self.phys or [])} {_one_line(self.label)}')


class Op:
    """One line of the recording: a primitive (or a loop, its end, a declaration) with its
    operands, the API and kernel line it comes from, and its text."""

    __slots__ = ('kind', 'api', 'site', 'args', 'when', 'line', 'ctx', 'core')

    def __init__(self, kind, api, site, args, when, line, ctx=(), core=None):
        self.kind, self.api, self.site, self.args, self.when = kind, api, site, args, when
        self.line = line
        self.ctx = ctx  # the independent loops around it: (loop number, iteration or index)
        self.core = core  # the physical core of its SPMD instance (None: every core's)


def _number(x):
    return repr(float(x))


def _one_line(text):
    """Text on one line of the recording (a name, a print's prefix)."""
    return ' '.join(text.split()) or '-'



class Trace:
    """One kernel being recorded (one at a time: Trace.current)."""

    current = None

    def __init__(self, limits, style, values, unrolled, once=True):
        self.limits = limits
        self.style = style
        self.values = values  # the caller wants the kernel's values
        self.unrolled = unrolled  # identities of the loops to unroll
        self.once = once  # record loops once (False: unroll every loop, as eager Python)
        self.ops = []
        self._group = 16  # (emit: the engine group of the instruction being recorded)
        self._kind = None  # (emit: its primitive)
        self.notes = {}  # (site, api) -> what the model does not do of a call there
        self.decls = {}  # declaration key -> Decl
        self.decl_list = []
        self.tensors = []  # (HbmTensor, 'input' or 'output', initial values or None)
        self.hbm_names = set()
        self.frames = []  # the loops recorded once that are open, outermost first
        self.loops = []  # every open NKI loop: (kind, id)
        self.open_loops = ()
        self.loop_trips = []
        self.loop_count = 0
        self.next_loop = 0  # the recording's loop ids
        # Per open NKI loop (the kernel's top level first): its identity and how many times
        # each declaration or loop site ran in its current iteration. A site that runs again
        # within one iteration (a Python loop, nl.static_range, a helper called twice)
        # declares another tile or loop, as the NKI tracer would; the next iteration takes the
        # next instance of the same ones.
        self.levels = [[(), {}]]
        # SPMD: the launch grid, the instance being recorded, and the shared HBM tensors of
        # the first instance by allocation order (later instances allocate the same ones)
        # The open loops whose iterations NKI may run in any order (affine_range before NKI
        # 0.7): [loop number, iteration (an int, or the LoopIndex of a loop recorded once)];
        # their sites by number (the interpreter names them in a race warning).
        self.independent = []
        self.loop_sites = {}
        self.grid = ()
        self.program = ()
        self.core = None  # the physical core the current SPMD instance runs on (nl.nc)
        self.shared = []
        self.shared_next = 0
        self.executed = 0  # operations over every iteration
        self.poisoned = None  # a loop recorded once was left by `break` or `return`
        # nl.matmul's transposes of its x, hoisted (_api_language): key -> entry
        self.transposed = {}
        self.loop_reduced = {}  # nl.loop_reduce's accumulators, by call site
        self.hoisted_bytes = 0  # SBUF per partition their declarations take
        self.declared_sbuf = 0  # SBUF per partition of every declaration, one buffer each
        self.first = ()  # loop indices: what is recorded now runs in their first iteration only
        # (weak reference, `first` then) of each tile and result made while a loop recorded
        # once is open: what an iteration makes must not live on into the next one
        self.made = []

    # Loop passes

    def chain(self):
        """Where the recording is: the passes of the open loops recorded once."""
        return tuple((f, f.pass_no) for f in self.frames)

    @staticmethod
    def visible(chain):
        """Whether something made at `chain` happened in the current iteration of every loop
        open now (or before they began): not in an earlier pass of an open loop."""
        return all(not f.open or f.pass_no == p for f, p in chain)

    def opened_since(self, chain):
        """The indices of the loops recorded once opened after `chain`."""
        made = {id(f) for f, _ in chain}
        return tuple(f.loop for f in self.frames if id(f) not in made)

    def multiplicity(self):
        """How many times what is recorded now runs (0 in a repeated pass)."""
        n = 1
        for f in self.frames:
            if f.pass_no:
                return 0
            if not any(f.loop is loop for loop in self.first):
                n *= f.loop.trips
        return n

    @contextlib.contextmanager
    def first_only(self, loops):
        """What is recorded inside runs only in the first iteration of `loops` (each op gets
        them as its `when`)."""
        before = self.first
        self.first = before + tuple(x for x in loops if not any(x is y for y in before))
        try:
            yield
        finally:
            self.first = before

    def track(self, obj):
        """Notes a tile or result made now (see _once)."""
        if self.frames:
            self.made.append((weakref.ref(obj), self.first))

    def occurrence(self, site):
        lid, hits = self.levels[-1]
        nth = hits.get(site, 0)
        hits[site] = nth + 1
        return lid, nth

    def iterate(self, kind, args, independent=False):
        """The iterations of an NKI loop: unrolled (concrete indices) for nl.static_range, a
        loop of one trip or a loop the kernel needs unrolled, else recorded once.
        `independent`: NKI may run its iterations in any order (what they write must differ)."""
        r = range(*(concrete(a) for a in args))
        where = user_site()
        site = ('loop',) + tuple(where)
        self.loop_count += 1
        entry = (kind, self.loop_count)
        mark = None
        if independent and len(r) > 1:
            mark = [self.loop_count, None]
            self.independent.append(mark)
            self.loop_sites[self.loop_count] = where
        self.loops.append(entry)
        self.open_loops += (self.loop_count,)
        self.loop_trips.append(len(r))
        level = None
        if kind != 'static':  # nl.static_range is unrolled by the tracer: no level of its own
            lid, nth = self.occurrence(site)
            level = [lid + ((site, nth),), {}]
            self.levels.append(level)
        try:
            if (kind == 'spmd' or not self.once or level is None or len(r) <= 1 or
                    _sites(level[0]) in self.unrolled):
                for k, i in enumerate(r):
                    if level is not None:
                        level[1] = {}
                    if mark is not None:
                        mark[1] = k
                    yield i
            else:
                yield from self._once(r, level, mark)
        finally:
            if mark is not None:
                _remove(self.independent, mark)
            _remove(self.loops, entry)
            self.open_loops = tuple(x for x in self.open_loops if x != entry[1])
            self.loop_trips.pop()
            if level is not None:
                _remove(self.levels, level)

    def instances(self, grid, core_of=None):
        """The instances of an SPMD launch grid, in row-major order (axis 0 outermost), each
        recorded as an iteration of nested loops around the kernel, unrolled: the compiler
        "translates the SPMD launch grid into nested loops of compute-kernel invocations",
        "executed serially on a single NeuronCore" (docs/nki.md, "SPMD"); `core_of(instance)`:
        the physical core an instance runs on, with nl.nc (each core runs its own serially)."""
        self.grid = tuple(grid)

        def nest(axis, prefix):
            if axis == len(self.grid):
                self.program = prefix
                self.core = core_of(prefix) if core_of else None
                self.shared_next = 0
                yield prefix
                return
            for i in self.iterate('spmd', (self.grid[axis],)):
                yield from nest(axis + 1, prefix + (i,))

        yield from nest(0, ())

    def _once(self, r, level, mark=None):
        loop = LoopIndex(self.next_loop, len(r), None, _sites(level[0]))
        self.next_loop += 1
        if mark is not None:
            mark[1] = loop
        frame = Frame(loop)
        loop.frame = frame
        self._raw('loop', f'loop L{loop.id} {len(r)}', (loop,))
        self.frames.append(frame)
        start = len(self.ops)
        made = len(self.made)
        ids = self.next_loop
        done = False
        try:
            for pass_no in (0, LAST_PASS):
                frame.pass_no = pass_no
                self.next_loop = ids  # the inner loops get the same ids in both passes
                level[1] = {}
                yield Affine.index(loop, r.start, r.step)
                if pass_no == 0:
                    middle = len(self.ops)
                    made_first = self.made[made:]
            # The first pass's tiles and results, once the second pass has rebound the
            # kernel's variables, live on only if the kernel keeps them for a later iteration
            # (a Python list, a variable of the next iteration): not a body recorded once.
            # (Those of the first iteration only are the loop's own.)
            for ref, first in made_first:
                if ref() is not None and not any(x is loop for x in first):
                    raise NeedsUnroll((loop,), 'a tile or result of one iteration is kept for a '
                                      'later one (in a Python list or variable)')
            # What runs in every iteration must record the same; what runs in the first one
            # only (`when` this loop) is the first pass's, whatever the second did.
            first = [op for op in self.ops[start:middle] if not _only_first(op, loop)]
            second = [op for op in self.ops[middle:] if not _only_first(op, loop)]
            if [op.line for op in first] != [op.line for op in second]:
                at = next((i for i, (a, b) in enumerate(zip(first, second)) if a.line != b.line),
                          min(len(first), len(second)))
                op = first[at] if at < len(first) else second[at]
                first = [op.line for op in first]
                second = [op.line for op in second]
                raise NeedsUnroll((loop,), 'its body records differently in the next iteration '
                                  '(state carried between iterations, by the kernel or by what '
                                  'the frontend keeps of it): '
                                  f'{first[at] if at < len(first) else "(nothing)"} then '
                                  f'{second[at] if at < len(second) else "(nothing)"}',
                                  op.site)
            del self.ops[middle:]
            done = True
        finally:
            frame.open = False
            _remove(self.frames, frame)
            if done:
                self._raw('end', f'end L{loop.id}', (loop,))
            elif self.poisoned is None:
                self.poisoned = loop  # left early: by `break` or `return`, or an error

    # HBM tensors and declarations

    def hbm_name(self, wanted):
        name, n = wanted, 1
        while name in self.hbm_names:
            n += 1
            name = f'{wanted}_{n}'
        self.hbm_names.add(name)
        return name

    def new_hbm(self, name, shape, dtype, values=None, is_input=False, shared=False,
                site=None):
        """An HBM tensor: a kernel argument or constant (input) or one the kernel allocates.
        `shared` (nl.shared_hbm, visible to every SPMD instance): the n-th shared tensor an
        instance allocates is the first instance's n-th."""
        if dtype not in _dtypes.SIZES:
            raise unsupported('HBM tensor', f'dtype {dtype} is not supported yet')
        if self.frames:  # one per iteration, not one per pass
            raise NeedsUnroll((self.frames[-1].loop,), 'an HBM tensor allocated in the loop')
        if shared and self.grid:
            n, self.shared_next = self.shared_next, self.shared_next + 1
            if n < len(self.shared):
                t = self.shared[n]
                if t.shape != tuple(shape) or t.dtype_name != dtype:
                    raise KernelError('nl.ndarray', f'SPMD instance {self.program} allocates '
                                      f'shared HBM tensor {n} as {tuple(shape)} {dtype}, '
                                      f'the first instance as {t.shape} {t.dtype_name}')
                return t
            t = self.new_hbm(name, shape, dtype, values, is_input, site=site)
            self.shared.append(t)
            return t
        t = HbmTensor(len(self.tensors), self.hbm_name(name), shape, dtype)
        t.site = site  # where the kernel allocated it (None: an argument, a constant)
        self.tensors.append((t, 'input' if is_input else 'output', values))
        return t

    def declare(self, api, site, shape, dtype, space, alloc=None, name=None, identity=None):
        """A tile (or a tensor of tiles) from an on-chip tensor declaration at `site`: the first
        time a site runs it declares the tile, each run is another instance. `identity` names
        the declaration instead of the site and its occurrence; such a declaration keeps one
        buffer (each instance replaces the previous one)."""
        blocks, p, free = _decl_shape(self, api, shape, site)
        tile_shape = (p,) + tuple(free)
        elems = 1
        for f in free:
            elems *= f
        if dtype not in _dtypes.SIZES:
            raise unsupported(api, f'dtype {dtype} is not supported yet', site)
        size = _dtypes.SIZES[dtype]
        psum_bank, tile_banks = self.limits['psum_bank'], self.limits['psum_tile_banks']
        if space == 'psum' and elems * size > psum_bank * tile_banks:
            raise KernelError(api, f'PSUM tile of {elems * size} bytes per partition exceeds the '
                              + (f'{psum_bank} bytes of a PSUM bank' if tile_banks == 1 else
                                 f'{psum_bank * tile_banks} bytes of {tile_banks} PSUM banks '
                                 '(core.psum.tile_banks)'), site)
        nblocks = 1
        for b in blocks:
            nblocks *= b
        if identity is None and any(f.pass_no and any(f.loop is x for x in self.first)
                                    for f in self.frames):
            # made in the first iteration only of a loop, recorded in its repeated pass: its
            # later iterations do not make it, so it takes no occurrence of its line (a line
            # that declares again in those iterations gets another declaration than in the
            # first, and the passes differ: the loop is unrolled)
            label = name or f'{os.path.basename(site[0])}:{site[1]}'
            key = ('repeated', len(self.decl_list))
        elif identity is None:
            lid, nth = self.occurrence(site)
            label = name or f'{os.path.basename(site[0])}:{site[1]}' + (f'#{nth + 1}' if nth else '')
            key = (lid, site, nth, tuple(blocks), tile_shape, dtype, space,
                   alloc.key() if alloc else None)
        else:
            label, key = name, ('identity', identity, tile_shape, dtype, space)
        decl = self.decls.get(key)
        if decl is None:
            offsets, phys = None, None
            if alloc is not None:
                if space != alloc.space:
                    raise KernelError(api, f'a {alloc.space.upper()} allocation for a tile in '
                                      f'{space}', site)
                offsets, where = alloc.layout(blocks, p, elems * size, api, site)
                cap = self.limits['sbuf_bytes' if space == 'sbuf' else 'psum_bytes']
                bank = self.limits['psum_bank']
                parts = self.limits['partitions']
                for first, off in offsets:
                    if first < 0 or first + p > parts:
                        raise KernelError(api, f'direct allocation at partition {first} of a '
                                          f'tile of {p} partitions: number of partitions '
                                          f'{first + p} exceeds the architecture limit of '
                                          f'{parts}', site)
                    if off < 0 or off + elems * size > cap:
                        raise KernelError(api, f'direct allocation at byte {off} of a tile of '
                                          f'{elems * size} bytes per partition does not fit in '
                                          f'the {cap} bytes of a {space.upper()} partition',
                                          site)
                    if space == 'psum' and ((off + elems * size - 1) // bank - off // bank
                                            >= self.limits['psum_tile_banks']):
                        banks = self.limits['psum_tile_banks']
                        raise KernelError(api, f'direct allocation at byte {off} of a tile of '
                                          f'{elems * size} bytes per partition ' +
                                          ('crosses a PSUM bank' if banks == 1 else
                                           f'spans more than {banks} PSUM banks '
                                           '(core.psum.tile_banks)'), site)
                phys = [where(b) for b in _block_indices(blocks)]
            if space == 'sbuf' and identity is None:
                self.declared_sbuf += elems * size * nblocks
            decl = Decl(len(self.decl_list), label, space, p, elems, dtype, nblocks,
                        bool(blocks), alloc, offsets, phys)
            decl.carried = identity is not None
            decl.loops = list(self.loop_trips)
            self.decls[key] = decl
            self.decl_list.append(decl)
        decl.instances += self.multiplicity()
        decl.serial += 1
        serial = decl.serial
        self.emit('declare', api, site, (decl,))
        chain, born = self.chain(), self.open_loops

        def make(block):
            t = Tile(label + (f'[{text(block)}]' if blocks else ''), tile_shape, dtype, space)
            t.decl, t.serial, t.block, t.chain, t.born = decl, serial, block, chain, born
            return t

        made = make(0) if not blocks else TileBlocks(blocks, make, tile_shape, dtype, space)
        self.track(made)
        return made

    def note(self, site, api, message):
        """Something a call asked for that the model does not do: said once per line."""
        self.notes.setdefault((site, api), message)

    # Recording

    def _raw(self, kind, line, args):
        self.ops.append(Op(kind, None, None, args, (), line, (), self.core))

    def tile_ref(self, t, api, site):
        """The operand for tile part t: its instance counted back from the latest, after
        checking that the recording can say which instance it is."""
        root = t.root
        for f, p in root.chain:
            if (p != f.pass_no) if f.open else (p != LAST_PASS):
                # an instance of another iteration (a tile carried by a Python variable)
                raise NeedsUnroll((f.loop,), 'a tile of another iteration is used')
        decl = root.decl
        if decl is None:
            raise KernelError(api, f'tile {t.name} has no declaration', site)
        ref = TileRef(decl.id, decl.serial - root.serial, root.block, t.pabs, t.partitions,
                      t.fabs, t.elems, t.estride)
        for x in (root.block, t.pabs, t.fabs):
            if x.__class__ is Affine:
                self._check_open(x)
        return ref

    def _check_open(self, x):
        if isinstance(x, Affine):
            for loop, _ in x.terms:
                if not loop.frame.open:  # an index of a loop that has ended
                    raise NeedsUnroll((loop,), 'its index is used after the loop')

    def emit(self, kind, api, site, args, when=()):
        """The one place an instruction (or a declaration) is recorded. `args`: the operands in
        the primitive's order, tiles as Tile parts, HBM operands as HbmAccess or HbmRef, a
        declaration as its Decl; `when`: loop indices, all 0 in the iterations it runs in."""
        if self.poisoned is not None:
            raise NeedsUnroll((self.poisoned,), 'the loop was left early (break, return)')
        layout = _LAYOUT[kind]
        if self.first:
            when = tuple(when) + tuple(x for x in self.first if not any(x is y for y in when))
        words = [kind]
        if when:
            words.append('if=' + ','.join(f'L{loop.id}' for loop in when))
        out = []
        word = self._word
        # the partition group an indirect operand's offsets are laid out in (its engine's)
        self._kind = kind
        # (the matmul is the one indirect instruction on the Tensor engine: _prims.INDIRECT)
        self._group = indirect_group('pe' if kind == 'matmul' else None)
        if kind in _GENERIC:  # ins ENGINE OPCODE field=value ...
            generic = PRIMS[kind]
            words[0] = 'ins'
            words += [args[generic.fields.index('eng')], generic.opcode]
            for field, what, a in zip(generic.fields, layout, args):
                if field != 'eng' and (a or what not in _OPTIONAL):
                    w, a = word(what, a, api, site)
                    words.append(f'{field}={w}')
                out.append(a)
        else:
            for what, a in zip(layout, args):
                w, a = word(what, a, api, site)
                words.append(w)
                out.append(a)
        out.extend(args[len(layout):])  # what only the interpreter reads (print: the shape)
        ctx = tuple((m[0], m[1]) for m in self.independent) if self.independent else ()
        self.ops.append(Op(kind, api, site, tuple(out), when, ' '.join(words), ctx, self.core))
        if kind != 'declare':
            self.executed += self.multiplicity() if self.frames else 1

    def _word(self, what, a, api, site):
        """(the recording's word for operand `a` of kind `what`, the operand as kept)."""
        if what in _TILES:
            if a is None:
                return '-', a
            if a.__class__ is IndirectTile:  # <view>~<offsets>~<columns indexed>
                if self._kind not in INDIRECT:
                    raise KernelError(api, 'an indirect view as an operand here: NKI takes '
                                      'tensor indirection in engine instructions (docs/nki.md)',
                                      site)
                view, view_ref = self._word(what, self.tile_ref(a, api, site), api, site)
                index, index_ref = self._word(what, self.tile_ref(a.index, api, site), api, site)
                return (f'{view}~{index}~{a.extent}',
                        IndirectRef(view_ref, index_ref, a.extent, self._group))
            if a.__class__ is Tile:
                a = self.tile_ref(a, api, site)
            b, p0, f0 = a[2], a[3], a[5]
            return (f'T{a[0]}.{a[1]}.{b if b.__class__ is int else text(b)}:'
                    f'{p0 if p0.__class__ is int else text(p0)}:{a[4]}:'
                    f'{f0 if f0.__class__ is int else text(f0)}:{a[6]}:{a[7]}'), a
        if what == 'H':
            if not isinstance(a, HbmRef):
                a = a.ref()
            self._check_open(a[1])
            return f'H{a[0]}:{text(a[1])}:{a[2]}:{a[3]}:{a[4]}', a
        if what == 'decl':
            return str(a.id), a
        if what == 'f':
            return _number(a), a
        if what == 'acc':
            if isinstance(a, tuple):
                return '!' + ','.join(f'L{loop.id}' for loop in a), a
            return ('1' if a else '0'), a
        if what == 'str':
            return _one_line(str(a)), a
        return str(a), a

    def text(self, core=None):
        """The recording's text form (recording.h, docs/nki.md); with `core`, the part that
        physical core runs (its SPMD instances, and what every core runs)."""
        lines = ['trnsim-nki-recording 1', f'style {self.style}']
        for t, kind, _ in self.tensors:
            elems = 1
            for s in t.shape:
                elems *= s
            lines.append(f'tensor {kind} {t.dtype_name} {elems} {_one_line(t.name)}')
        lines.extend(d.line() for d in self.decl_list)
        # each instruction's kernel line: `place N FILE:LINE`, and ` at=N` on the op
        places = {}
        body = []
        plain = ('declare', 'loop', 'end', 'print')
        for op in self.ops:
            if core is not None and op.core is not None and op.core != core:
                continue
            site = op.site
            if op.kind in plain or not site or not site[1]:
                body.append(op.line)
                continue
            at = places.get(site)
            if at is None:
                at = places[site] = f' at={len(places) + 1}'
                lines.append(f'place {len(places)} {_one_line(f"{site[0]}:{site[1]}")}')
            body.append(op.line + at)
        lines.extend(body)
        return '\n'.join(lines) + '\n'


_LAYOUT = {name: p.layout for name, p in PRIMS.items()}
_GENERIC = frozenset(name for name, p in PRIMS.items() if p.opcode)  # `ins ...` lines
_TILES = frozenset(('T', 'T?', 'O', 'O?'))
_OPTIONAL = frozenset(('T?', 'O?', 'flags'))  # left out of an `ins` line when empty
_LAYOUT['declare'] = ('decl',)


def _only_first(op, loop):
    return any(x is loop for x in op.when)


def _sites(identity):
    """A loop's identity without occurrences: every occurrence of a loop unrolls together."""
    return tuple(site for site, _ in identity)


def _remove(items, item):
    for i in range(len(items) - 1, -1, -1):
        if items[i] is item:
            del items[i]
            return


def _block_indices(blocks):
    return list(itertools.product(*(range(n) for n in blocks)))


def _decl_shape(trace, api, shape, site):
    """(block dims, partitions, free dims) of an on-chip tensor shape."""
    shape = [concrete(s) if not isinstance(s, ParDim) else s for s in shape]
    pos = [i for i, s in enumerate(shape) if isinstance(s, ParDim)]
    if len(pos) > 1:
        raise KernelError(api, 'more than one nl.par_dim in a shape', site)
    k = pos[0] if pos else 0
    blocks = [int(s) for s in shape[:k]]
    p = int(shape[k])
    free = [int(s) for s in shape[k + 1:]]
    partitions = trace.limits['partitions']
    if p > partitions:
        raise KernelError(api, f'number of partitions {p} exceeds the architecture limit of '
                          f'{partitions}', site)
    if p < 1 or any(s < 1 for s in blocks + free):
        raise KernelError(api, f'shape {tuple(int(s) for s in shape)} has an empty dimension',
                          site)
    return blocks, p, free


def current(api):
    """The trace being recorded; an API called outside a kernel is an error."""
    t = Trace.current
    if t is None:
        raise KernelError(api, 'called outside a kernel: call the kernel through nki.jit, '
                          'nki.baremetal, nki.simulate_kernel or nki.benchmark')
    return t

"""The recording of a kernel: its HBM tensors, tile declarations and instructions (the
primitives of _prims), in program order, each with the kernel's file:line.

The kernel's Python runs once per launch, as eager Python: every iteration of every loop runs,
with its index a live loop index (_index.Affine: its value, and how it moves with the loop).
Each operation is recorded with its index expressions in terms of the loops open around it
(Ln), so that the iterations of an NKI loop that record the same text are one loop body: when
its iterations after the first record the same and the first records that and more (what the
frontend does once: a zeroing, a hoisted transpose, a matmul that overwrites where the others
add), the loop is folded into `loop Ln` ... `end Ln` with those differences as conditions on
Ln (`if=Ln`, accumulation `!Ln`); iterations a comparison of the index sets apart (a mask's
cut of a partial last tile, an `if i == 0:`) fold as a part of their own, under a condition
on Ln (`if=Ln@A:B`); otherwise its
iterations stay as they ran (unrolled). The builder expands a folded loop into the same
program as the unrolled one."""

import bisect
import contextlib
import dis
import itertools
import os
import types
import weakref

import numpy as np

from . import _dtypes
from ._errors import KernelError, unsupported, user_site
from ._index import Affine, LoopIndex, Span, concrete, condition_text, frozen, holds, text
from ._prims import INDIRECT, PRIMS, indirect_group
from ._tensors import (HbmRef, HbmTensor, IndirectRef, IndirectTile, ParDim, Tile, TileBlocks,
                       TileRef, TileRuns)

# The platform's limits (partitions, pe_rows, pe_cols, moving_max, psum_bank, sbuf_bytes,
# isa_version, hoist_share), from the runner: limits_of() gives them as a dict.
limits_of = None


def limits():
    if limits_of is None:
        raise RuntimeError('trnsim.nki: no platform (the runner sets one up)')
    return limits_of()


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
        self.variant = None  # the compiler choice it is made in (Op.variant)
        self.instances = 0  # how many times it runs, over every iteration
        self.loops = []  # trip counts of the NKI loops around it, outermost first
        self.serial = 0
        self.rewrite = False  # DMAs rewrite its tiles (Trace.rewrite)
        self.hoisted = None  # the load site of a hoisted load's tiles (_ops.hoisted_load)

    def line(self):
        lst = lambda xs: ','.join(str(x) for x in xs) if xs else '-'  # noqa: E731
        places = lambda xs: ','.join(f'{p}@{o}' if p else str(o)  # noqa: E731
                                     for p, o in xs) if xs else '-'
        # (r after it: DMAs rewrite its tiles whole, into the compiler's copies)
        single = f'{int(self.carried or self.instances == 1)}{"r" if self.rewrite else ""}'
        return (f'decl {self.space} {self.partitions} {self.elems} {self.dtype} {self.count} '
                f'{int(self.blocked)} {single} {lst(self.loops)} {places(self.offsets or [])} '
                f'{lst(self.phys or [])} {_one_line(self.label)}')


class Op:
    """One line of the recording: a primitive (or a loop, its end, a declaration) with its
    operands, the API and kernel line it comes from, and its text."""

    __slots__ = ('kind', 'api', 'site', 'args', 'when', 'line', 'ctx', 'core', 'variant',
                 'suffix')

    def __init__(self, kind, api, site, args, when, line, ctx=(), core=None, variant=None,
                 suffix=''):
        self.kind, self.api, self.site, self.args, self.when = kind, api, site, args, when
        self.line = line
        # the words a split adds after its operands (' part=N', ' cont'), kept when the line
        # is made again
        self.suffix = suffix
        self.ctx = ctx  # the independent loops around it: (loop number, iteration or index)
        self.core = core  # the physical core of its SPMD instance (None: every core's)
        # the compiler's choice it belongs to (None: every one's): 'hoist' (nl.matmul's
        # transposes hoisted out of loops) or 'plain' (transposed at every call)
        self.variant = variant


def _number(x):
    return repr(float(x))


def _one_line(text):
    """Text on one line of the recording (a name, a print's prefix)."""
    return ' '.join(text.split()) or '-'



class Trace:
    """One kernel being recorded (one at a time: Trace.current)."""

    current = None

    def __init__(self, limits, style, values, once=True):
        self.limits = limits
        self.style = style
        self.values = values  # the caller wants the kernel's values
        self.once = once  # fold loops (False: every loop as it ran, unrolled)
        self.ops = []
        self._group = 16  # (emit: the engine group of the instruction being recorded)
        self._kind = None  # (emit: its primitive)
        self.notes = {}  # (site, api) -> what the model does not do of a call there
        self.warnings = []  # (site, api, message): kernel bugs the hardware would punish
        self.decls = {}  # declaration key -> Decl
        self.decl_list = []
        self.tensors = []  # (HbmTensor, 'input' or 'output', initial values or None)
        self.arrays = {}  # tensor id -> the caller's array, values or not (a register's value)
        self.vregs = 0  # the registers nisa.register_alloc gave
        self.hbm_names = set()
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
        # The open loops whose iterations NKI may run in any order (affine_range before NKI
        # 0.7): [loop number, iteration (an int; the LoopIndex in a folded body)]; their
        # sites by number (the interpreter names them in a race warning).
        self.independent = []
        self.loop_sites = {}
        # SPMD: the launch grid, the instance being recorded, and the shared HBM tensors of
        # the first instance by allocation order (later instances allocate the same ones)
        self.grid = ()
        self.program = ()
        self.core = None  # the physical core the current SPMD instance runs on (nl.nc)
        self.shared = []
        self.shared_next = 0
        self.executed = 0  # operations over every iteration
        # nl.matmul's transposes of its x, hoisted (_api_language): key -> entry
        self.transposed = {}
        self.loop_reduced = {}  # nl.loop_reduce's accumulators, by call site
        self.hoisted_bytes = 0  # SBUF per partition their declarations take
        # Loads of input tensors hoisted out of loops their address does not use
        # (_ops.hoisted_load): the load sites and tensor ids the runner keeps where written,
        # each group's declaration by group key, the decision per load site and loop, the
        # SBUF per partition each load site's hoisted tiles take, and the load sites whose
        # tiles something else wrote
        self.no_hoist = frozenset()
        self.load_groups = {}
        self.hoist_decisions = {}
        self.hoisted_sites = {}
        self.hoisted_tensors = set()  # the ids of the tensors some hoisted load reads
        self.hoist_conflicts = set()
        self.hoisting = False  # (a hoisted load being emitted: Trace.emit)
        self.hbm_written = set()  # the HBM tensors some operation writes
        self.live_loops = []  # the open loops with a live index, outermost first
        self.declared_sbuf = 0  # SBUF per partition of every declaration, one buffer each
        self.unfolded = []  # (loop site, why) of each NKI loop left unrolled, in order
        self.loop_notes = {}  # (loop site, what became of it) -> how many times (in order)
        self.making = []  # lists of what the watched first iterations of loops make
        # a compiler-scheduled kernel of NKI beta 1 (the runner sets it): Trace.rewrite
        self.renames = False
        self.pending = []  # the tiles whose last DMA write awaits its decision (Trace.rewrite)
        self.clock = 0  # record-time order of loop iterations' starts and tile writes
        self.compiled = 0  # loops the device runs (nl.fori_loop) open now
        self.traced = 0  # loops NKI's tracer runs the body of once ('traced', 'compiled') open now
        self.first_alloc = {}  # a declaration in such a loop: the allocation its first run gave
        # The compiler's choice being recorded (Op.variant): operations of both choices are
        # recorded, and select() keeps one's
        self.variant = None
        self.variants = False  # some operation is one choice's
        self.all_ops = self.all_decls = None  # (select: every choice's)

    @contextlib.contextmanager
    def choice(self, variant):
        """What is recorded inside is the compiler choice `variant`'s only (Op.variant)."""
        before, self.variant = self.variant, variant
        self.variants = True
        try:
            yield
        finally:
            self.variant = before

    def select(self, variant):
        """Keeps the operations and declarations of every choice and of `variant` (the
        declarations numbered again in order)."""
        if not self.variants:
            return
        if self.all_ops is None:
            self.all_ops, self.all_decls = self.ops, self.decl_list
        # (the numbers of every choice's declarations: their ids before the first select)
        if not hasattr(self, '_first_ids'):
            self._first_ids = {id(d): d.id for d in self.all_decls}
        ops = [op for op in self.all_ops if op.variant in (None, variant)]
        self.decl_list = [d for d in self.all_decls if d.variant in (None, variant)]
        number = {}  # a declaration's number in every choice's list -> in this one's
        for i, d in enumerate(self.decl_list):
            number[self._first_ids[id(d)]] = i
            d.id = i
        self.ops = []
        for op in ops:
            if op.kind not in ('loop', 'end', 'iteration', 'order'):
                op = Op(op.kind, op.api, op.site, tuple(_renumber(a, number) for a in op.args),
                        op.when, '', op.ctx, op.core, op.variant, op.suffix)
                op.line = _render(op)
            self.ops.append(op)
        # each declaration's instances in this choice's operations, over every iteration
        for d in self.decl_list:
            d.instances = 0
        loops = []
        for op in self.ops:
            if op.kind == 'loop':
                loops.append(op.args[0])
            elif op.kind == 'end':
                loops.pop()
            elif op.kind == 'declare':
                n = 1
                for loop in loops:
                    n *= _runs_in(op, loop)
                op.args[0].instances += n

    def occurrence(self, site):
        lid, hits = self.levels[-1]
        nth = hits.get(site, 0)
        hits[site] = nth + 1
        return lid, nth

    def iterate(self, kind, args, independent=False, mode='eager', frame=None):
        """The iterations of an NKI loop: concrete indices for nl.static_range and SPMD
        instances, else live loop indices, and the loop folded when its iterations record one
        body (_eager). `independent`: NKI may run its iterations in any order (what they write
        must differ). `mode`: 'eager' runs every iteration; 'traced' (a loop NKI's tracer
        traces once, before NKI 0.7) stops after two iterations that record one body and need
        nothing of their index's value or of each other; 'python' (a loop whose every
        iteration the kernel's Python runs: Python `range`, and every loop of NKI 0.7) stops
        so too when, besides, iteration 1 changed none of the Python variables of `frame`
        (the frame of its `for` statement) but the frontend's objects: then the iterations
        not run would have recorded what iteration 1 did; 'compiled' (a loop the device runs,
        nl.fori_loop) runs the body once, its index a register."""
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
            if kind == 'spmd' or level is None or len(r) <= 1:
                for k, i in enumerate(r):
                    if level is not None:
                        level[1] = {}
                    if mark is not None:
                        mark[1] = k
                    yield i
            else:
                yield from self._eager(r, level, mark, where, mode, kind, frame)
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

    def _eager(self, r, level, mark, where, mode, kind, frame=None):
        """Runs the loop's iterations with a live index, each recording its operations; then
        folds them (_fold) if they record one body."""
        loop = LoopIndex(self.next_loop, len(r), _sites(level[0]), mode == 'compiled')
        loop.kind = 'compiled' if mode == 'compiled' else kind  # (the recording says it)
        self.live_loops.append(loop)
        self.next_loop += 1
        ids = self.next_loop
        starts = []
        spans = []  # each iteration's LoopIndex.span when it ended
        # (what iterations 0 and 1 made, weakly; the serials and executed count before each)
        made = [] if mode in ('traced', 'compiled', 'python') else None
        watched = {'traced': 2, 'compiled': 1, 'python': 2}.get(mode, 0)
        tracer_once = mode in ('traced', 'compiled')  # (NKI's tracer runs the body once)
        kept = None  # 'python': the frame's Python state where iteration 1 began
        carried = ()  # 'python': the variables iteration 1 changed
        ran = 0
        state = 'running'
        if mode == 'compiled':
            self.compiled += 1
        if tracer_once:
            self.traced += 1
        try:
            for k in range(len(r)):
                if mode == 'compiled' and k == 1:
                    state = 'done'
                    break
                # ('python': reading the frame's variables again also lets go of what iteration
                # 0 left in them, before _stands_for_all asks what it made is still held)
                now = _python_state(frame) if k == 2 and mode == 'python' else None
                same = now is not None and kept is not None and now[0] == kept[0]
                if now is not None and kept is not None and not same:
                    carried = sorted(n for n in set(now[0]) | set(kept[0])
                                     if now[0].get(n) != kept[0].get(n))
                now = kept = None  # (what they held, let go of)
                if k == 2 and (mode == 'traced' or (mode == 'python' and same)) and \
                        self._stands_for_all(loop, starts, mark, made, spans):
                    state = 'folded'
                    break
                if k == 1 and mode == 'python':
                    kept = _python_state(frame)
                loop.cur = k
                loop.span = None
                self.clock += 1
                loop.iteration_clock = self.clock  # (held_before: when this iteration began)
                self.next_loop = ids  # the inner loops get the same ids in every iteration
                level[1] = {}
                if mark is not None:
                    mark[1] = k
                starts.append(len(self.ops))
                if k < watched:
                    made.append(([], {d.id: d.serial for d in self.decl_list}, self.executed))
                    self.making.append(made[k][0])
                try:
                    yield Affine.index(loop, r.start, r.step, k)
                    self.decide_pending()  # (an iteration's lines are final when it ends)
                    spans.append(loop.span)
                finally:
                    if k < watched:
                        _remove(self.making, made[k][0])
                ran = k + 1
            if state == 'running':
                state = 'done'
        finally:
            loop.open = False
            _remove(self.live_loops, loop)
            if mode == 'compiled':
                self.compiled -= 1
            if tracer_once:
                self.traced -= 1
            loop.span = None
            if state != 'folded':
                self._end(loop, starts, mark, where, mode, made, state == 'done', ran, carried,
                          spans)
            else:
                self._said(where, f'{loop.kind} loop of {loop.trips} iterations: folded into '
                           'one body; its Python ran iterations 0 and 1, which stand for all ' +
                           ('(NKI traces its body once)' if mode == 'traced' else
                            '(they need nothing of the index\'s value and change no Python '
                            'variable)'))

    def _said(self, where, text):
        key = (tuple(where), text)
        self.loop_notes[key] = self.loop_notes.get(key, 0) + 1

    def _end(self, loop, starts, mark, where, mode, made, done, ran, carried=(), spans=()):
        """Folds the iterations run, or leaves them unrolled (saying why)."""
        why = 'the loop was left early (break, return)' if not done else \
            'every loop is recorded unrolled (--unroll-loops)' if not self.once and \
            mode != 'compiled' else None
        if why is None:
            why = self._fold(loop, starts, mark, spans, mode == 'compiled')
        if why is None and mode == 'compiled':
            self._repeat(0, loop.trips - 1, made)
            self._said(where, f'compiled loop of {loop.trips} iterations: one copy of its body '
                       '(its Python ran once), each declaration one buffer')
        elif why is None:
            parts = _parts(spans, loop.trips)
            self._said(where, f'{loop.kind} loop of {loop.trips} iterations: folded into one '
                       f'body; its Python ran {ran} of them' +
                       (f' (iteration 1 changed its Python variables {", ".join(carried)})'
                        if carried else '') +
                       (f'; its iterations {_said_parts(parts)} record apart (a comparison of '
                        'the index, a mask\'s or the kernel\'s, sets them apart)'
                        if len(parts) > 1 else ''))
        else:
            if mode == 'compiled' and done:  # (left early: the body's own error goes on)
                raise KernelError('nl.fori_loop', f'its body cannot be one copy: {why}', where)
            self._unroll_iterations(loop, starts)
            self.unfolded.append((where, why))
            self._said(where, f'{loop.kind} loop of {loop.trips} iterations: unrolled: {why}')

    def track(self, obj):
        """Notes a tile or result made now, for the loops watching what their first
        iterations make (_stands_for_all)."""
        for lst in self.making:
            lst.append(weakref.ref(obj))

    def _stands_for_all(self, loop, starts, mark, made, spans):
        """After iterations 0 and 1 of a traced loop: whether they stand for every iteration
        (the loop's Python needs nothing of its index's value, keeps nothing of iteration 0
        but what the frontend keeps, no mask cuts some iteration's tiles otherwise, and the
        two fold into one body); if so, folds them and counts the iterations not run."""
        if loop.consumed or not self.once or any(x is not None for x in spans):
            return False
        for ref in made[0][0]:
            obj = ref()
            if obj is not None and not getattr(obj, 'frontend', False):
                return False  # kept for a later iteration (a Python list or variable)
        if self._fold(loop, starts, mark) is not None:
            return False
        self._repeat(1, loop.trips - 2, made)
        loop.shift = loop.trips - 2  # its index from iteration 1 stands for the last one's
        return True

    def _repeat(self, k, times, made):
        """Counts `times` more runs of iteration k than the Python ran: its declarations'
        instances and serials, and the operations executed; the tiles iteration k made stand
        for the last iteration's."""
        if times <= 0:
            return
        _, before, executed = made[k]
        grew = {}
        for d in self.decl_list:
            delta = d.serial - before.get(d.id, 0)
            if delta:
                grew[d.id] = delta * times
                d.serial += delta * times
                d.instances += delta * times
        self.executed += (self.executed - executed) * times
        for ref in made[k][0]:
            obj = ref()
            if obj is not None:
                _shift_serial(obj, grew)

    def _fold(self, loop, starts, mark, spans=(), compiled=False):
        """Folds the loop's iterations (ops from starts[k]) into one body; None when done,
        else why they are not one body. Iterations a mask cuts alike (`spans`: each one's
        LoopIndex.span) are a part of their own: each part folds apart, and the body holds
        each part's operations under a condition on Ln (a Span), one part after the other."""
        ops = self.ops
        bounds = starts + [len(ops)]
        iters = [ops[a:b] for a, b in zip(bounds, bounds[1:])]
        if len(iters) == 1:  # one copy of the body (a compiled loop)
            iters.append(iters[0])
        parts = _parts(spans, len(starts))
        body = []
        for a, b in parts:
            got = self._part_body(iters[a:b] if b - a > 1 or len(parts) > 1 else iters, loop, a)
            if isinstance(got, str):
                return got
            if len(parts) > 1:
                got = [op if op.kind in ('loop', 'end', 'iteration', 'order') else
                       self._with(op, when=op.when + (Span(loop, a, b),)) for op in got]
            body += got
        # (the cores meet once per iteration: a traced loop records each; a loop the device
        # runs has one copy, whose meetings the interpreter and the builder repeat each time)
        for op in () if compiled else iters[0] + iters[1]:
            if op.kind in _MEETINGS:
                return f'a {op.kind} in its body (each iteration is recorded)'
        if mark is not None:  # the iteration of an independent loop: Ln itself
            for op in body:
                op.ctx = tuple((n, loop) if n == mark[0] else (n, i) for n, i in op.ctx)
        if not any(iters):  # a loop of Python's own work: nothing recorded in it
            return None
        head = Op('loop', None, None, (loop,), (), f'loop L{loop.id} {loop.trips} {loop.kind}',
                  (), self.core)
        tail = Op('end', None, None, (loop,), (), f'end L{loop.id}', (), self.core)
        ops[starts[0]:] = [head] + body + [tail]
        return None

    def _part_body(self, iters, loop, first):
        """The body of the iterations `iters` of a loop, from iteration `first`: its
        operations, or why they are not one body. Iterations after the first record the same;
        the first records that and more (conditioned on its index), or overwrites where they
        add (a matmul's accumulation, from iteration 0 only)."""
        if len(iters) == 1:
            return list(iters[0])
        later = [_key(op) for op in iters[1]]
        for k, it in enumerate(iters[2:], 2):
            keys = [_key(op) for op in it]
            if keys != later:
                return _difference(later, keys, f'iteration {first + k} records differently '
                                   f'from iteration {first + 1}')
        body, m = [], 0
        second = iters[1]
        for op in iters[0]:
            if m < len(second) and _key(op) == later[m]:
                body.append(op)
                m += 1
            elif m < len(second) and _acc_differs(op, second[m]):
                if first:
                    return (f'iteration {first} overwrites an accumulation where iteration '
                            f'{first + 1} adds (a part of the loop a comparison of the index sets apart)')
                body.append(self._with(op, acc=(loop,) + _acc_loops(op)))
                m += 1
            elif op.kind in ('loop', 'end', 'iteration', 'order'):  # (a loop runs; what it does is
                # conditioned)
                body.append(op)
            else:  # what the first iteration does more: only when Ln is `first`
                body.append(self._with(op, when=op.when + (
                    (loop,) if first == 0 else (Span(loop, first, first + 1),))))
        if m < len(second):
            return _difference(later, [_key(op) for op in iters[0]],
                               f'iteration {first + 1} records what iteration {first} does not')
        return body

    def _unroll_iterations(self, loop, starts):
        """The loop's iterations as they ran: Ln replaced by each one's counter, each begun
        by an `iteration TRIPS` line and the loop closed by one (where the compiler's
        scheduling bodies begin: the builder's loop_iteration)."""
        bounds = starts + [len(self.ops)]
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            for i in range(a, b):
                self.ops[i] = self._at(self.ops[i], loop, k)
        for at in reversed(bounds):
            self.ops.insert(at, self._iteration_mark(loop))

    def order_mark(self, keep):
        """nl.no_reorder: from here the compiler keeps program order (keep), or may schedule
        again (the block's end)."""
        self.ops.append(Op('order', None, None, (), (), 'order kept' if keep else 'order free',
                           (), self.core))

    def _iteration_mark(self, loop):
        return Op('iteration', None, None, (loop,), (), f'iteration {loop.trips}', (), self.core)

    def _with(self, op, acc=None, when=None):
        """op with another accumulation or condition (its line made again)."""
        args = op.args
        if acc is not None:
            at = _LAYOUT[op.kind].index('acc')
            args = args[:at] + (acc,) + args[at + 1:]
        new = Op(op.kind, op.api, op.site, args, op.when if when is None else when, '', op.ctx,
                 op.core, op.variant, op.suffix)
        new.line = _render(new)
        return new

    def _at(self, op, loop, k):
        """op of an iteration of `loop` that is not folded: Ln = k in its operands, its
        conditions and its accumulation."""
        if op.kind in ('loop', 'end', 'iteration', 'order'):
            return op
        if not any(_mentions(a, loop) for a in op.args) and \
                not any(_on(x, loop) for x in op.when):
            return op
        when = tuple(x for x in op.when if not _on(x, loop))
        if loop in op.when and k:
            raise RuntimeError('trnsim.nki: a condition on a loop being unrolled')
        args = tuple(_subst(a, loop, k) for a in op.args)
        if op.kind in _HAS_ACC:
            at = _LAYOUT[op.kind].index('acc')
            acc = args[at]
            if isinstance(acc, tuple) and any(x is loop for x in acc):
                rest = tuple(x for x in acc if x is not loop)
                args = args[:at] + ((rest or False) if k == 0 else True,) + args[at + 1:]
        new = Op(op.kind, op.api, op.site, args, when, '', op.ctx, op.core, op.variant,
                 op.suffix)
        new.line = _render(new)
        return new

    def unfold(self, loop_id):
        """Expands every folded loop Ln of the recording into its iterations (what the builder
        asks when one of its phases begins or ends inside the loop's first iteration); returns
        the kernel line of the loop."""
        ops, out, i, where = self.ops, [], 0, None
        while i < len(ops):
            op = ops[i]
            if op.kind == 'loop' and op.args[0].id == loop_id:
                loop = op.args[0]
                where = loop.identity[-1][1:] if loop.identity else None
                depth, j = 0, i
                while True:
                    if ops[j].kind == 'loop':
                        depth += 1
                    elif ops[j].kind == 'end':
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                body = ops[i + 1:j]
                for k in range(loop.trips):
                    out.append(self._iteration_mark(loop))
                    for b in body:
                        if not _runs_at(b, loop, k):
                            continue
                        b2 = self._at(b, loop, k)
                        b2.ctx = tuple((n, k) if it is loop else (n, it) for n, it in b.ctx)
                        out.append(b2)
                out.append(self._iteration_mark(loop))
                i = j + 1
                continue
            out.append(op)
            i += 1
        self.ops = out
        return where

    # HBM tensors and declarations

    def hbm_name(self, wanted):
        name, n = wanted, 1
        while name in self.hbm_names:
            n += 1
            name = f'{wanted}_{n}'
        self.hbm_names.add(name)
        return name

    def new_hbm(self, name, shape, dtype, values=None, is_input=False, shared=False,
                site=None, buffer=None):
        """An HBM tensor: a kernel argument or constant (input) or one the kernel allocates.
        `shared` (nl.shared_hbm, visible to every SPMD instance): the n-th shared tensor an
        instance allocates is the first instance's n-th."""
        if dtype not in _dtypes.SIZES:
            raise unsupported('HBM tensor', f'dtype {dtype} is not supported yet')
        if shared and self.grid:
            n, self.shared_next = self.shared_next, self.shared_next + 1
            if n < len(self.shared):
                t = self.shared[n]
                if t.shape != tuple(shape) or t.dtype_name != dtype:
                    raise KernelError('nl.ndarray', f'SPMD instance {self.program} allocates '
                                      f'shared HBM tensor {n} as {tuple(shape)} {dtype}, '
                                      f'the first instance as {t.shape} {t.dtype_name}')
                return t
            t = self.new_hbm(name, shape, dtype, values, is_input, site=site, buffer=buffer)
            self.shared.append(t)
            return t
        t = HbmTensor(len(self.tensors), self.hbm_name(name), shape, dtype)
        t.site = site  # where the kernel allocated it (None: an argument, a constant)
        # (an argument: nl.hbm, or nl.shared_hbm when SPMD instances share it, as AWS's
        # simulator wraps arguments under LNC=2)
        t.buffer_name = buffer or ('shared_hbm' if is_input and self.grid else 'hbm')
        self.tensors.append((t, 'input' if is_input else 'output', values))
        return t

    def declare(self, api, site, shape, dtype, space, alloc=None, name=None, identity=None,
                counted=None):
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
        if identity is None:
            # (a compiler choice's declarations count apart: the others' keep their keys)
            # (`counted`: a namespace its occurrences at the line are counted in, apart from
            # the others; a compiler choice's declarations count apart too)
            counted = (site, counted) if counted else \
                site if self.variant is None else (site, self.variant)
            lid, nth = self.occurrence(counted)
            label = name or f'{os.path.basename(site[0])}:{site[1]}' + (f'#{nth + 1}' if nth else '')
            base = (lid, counted, nth, tuple(blocks), tile_shape, dtype, space)
            if alloc is not None and self.traced:
                # NKI's tracer runs a loop's body once: what the kernel's Python computed for
                # the allocation there (a running address, cur_addr += ...) holds in every
                # iteration, whatever later runs of the body compute
                alloc = self.first_alloc.setdefault(base, alloc)
            key = base + (alloc.key() if alloc else None,)
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
                self._check_direct(api, site, space, p, elems * size, offsets)
                phys = [where(b) for b in _block_indices(blocks)]
            if space == 'sbuf' and identity is None and self.variant != 'plain':
                self.declared_sbuf += elems * size * nblocks
            decl = Decl(len(self.decl_list), label, space, p, elems, dtype, nblocks,
                        bool(blocks), alloc, offsets, phys)
            # (in a loop the device runs, the one copy of the body has one address per
            # declaration: iteration i + 1 waits for iteration i's readers)
            decl.carried = identity is not None or self.compiled > 0
            decl.variant = self.variant
            decl.loops = list(self.loop_trips)
            self.decls[key] = decl
            self.decl_list.append(decl)
        if decl.variant != self.variant:
            decl.variant = None  # declared by operations of several choices
        decl.instances += 1
        decl.serial += 1
        serial = decl.serial
        self.emit('declare', api, site, (decl,))
        born = self.open_loops
        cell = [serial]  # (moved when the iteration that made it stands for later ones)

        def make(block):
            t = Tile(label + (f'[{text(block)}]' if blocks else ''), tile_shape, dtype, space)
            t.decl, t.serial, t.block, t.born = decl, cell[0], block, born
            t.frontend = identity is not None
            return t

        made = make(0) if not blocks else TileBlocks(blocks, make, tile_shape, dtype, space,
                                                     cell)
        made.frontend = identity is not None  # kept by the frontend (hoisted, loop_reduce)
        if blocks:
            made.decl = decl
        self.track(made)
        return made

    def _check_direct(self, api, site, space, p, nbytes, offsets):
        """A direct allocation of a tile of `p` partitions and `nbytes` per partition at each
        of `offsets` ((first partition, byte) each) lies within the partitions and the memory,
        and a PSUM tile within its banks."""
        cap = self.limits['sbuf_bytes' if space == 'sbuf' else 'psum_bytes']
        bank = self.limits['psum_bank']
        parts = self.limits['partitions']
        for first, off in offsets:
            if first < 0 or first + p > parts:
                raise KernelError(api, f'direct allocation at partition {first} of a '
                                  f'tile of {p} partitions: number of partitions '
                                  f'{first + p} exceeds the architecture limit of '
                                  f'{parts}', site)
            if off < 0 or off + nbytes > cap:
                raise KernelError(api, f'direct allocation at byte {off} of a tile of '
                                  f'{nbytes} bytes per partition does not fit in '
                                  f'the {cap} bytes of a {space.upper()} partition',
                                  site)
            if space == 'psum' and ((off + nbytes - 1) // bank - off // bank
                                    >= self.limits['psum_tile_banks']):
                banks = self.limits['psum_tile_banks']
                raise KernelError(api, f'direct allocation at byte {off} of a tile of '
                                  f'{nbytes} bytes per partition ' +
                                  ('crosses a PSUM bank' if banks == 1 else
                                   f'spans more than {banks} PSUM banks '
                                   '(core.psum.tile_banks)'), site)

    def carries(self, root):
        """Whether a sequential_range of several iterations open now was entered after logical
        tile `root` was made: the loop carries the tile's value across its iterations (a loop of
        one iteration carries nothing)."""
        return any(kind == 'sequential' and trips > 1 and lid not in root.born
                   for (kind, lid), trips in zip(self.loops, self.loop_trips))

    def can_rewrite(self, root):
        """Whether a DMA that writes logical tile `root` may write a new copy of it (rewrite).
        Not where the kernel placed the tile (direct allocation), for the frontend's own
        tiles, in PSUM, in a loop the device runs (one copy of its body), outside a
        compiler-scheduled kernel of NKI beta 1, nor for a tile made outside a sequential_range
        of several iterations open now: that loop "informs Neuron compiler to respect
        inter-loop dependency and perform much more conservative loop-level optimizations"
        (nki.language.sequential_range, NKI beta 1), and its iterations keep the tile's one
        buffer (note_use)."""
        decl = root.decl
        if self.carries(root):
            return False
        return (self.renames and decl is not None and root.space == 'sbuf' and
                decl.alloc is None and not getattr(root, 'frontend', False) and
                not self.compiled and self.variant is None)

    def held_before(self, root):
        """Whether logical tile `root` holds a value a DMA about to write it would replace:
        written before, in the current iterations of the loops its block index moves with (a
        later iteration's block is another tile), or made outside a loop that one recorded
        body stands for (its later iterations find the value of the earlier ones)."""
        block = root.block
        if isinstance(block, Affine) and block.terms:
            began = max(getattr(lp, 'iteration_clock', 0) for lp, _ in block.terms)
            return getattr(root, 'write_clock', -1) >= began
        return root.version > 0 or any(lid not in root.born for kind, lid in self.loops
                                       if kind not in ('static', 'spmd'))

    def wrote(self, root):
        self.clock += 1
        root.write_clock = self.clock

    def rewrite(self, root, op, region, held):
        """DMA operation `op` (the first of its transfers) wrote `region` of logical tile
        `root` (can_rewrite), reading nothing of it; `held`: the tile held a value written
        before. In a compiler-scheduled kernel of NKI beta 1 the compiler allocates the tiles
        ("The compiler analyzes the memory dependency and allocates a physical address to
        each tile", the block dimension migration guide): when what the kernel reads of the
        tile after it lies in the parts written since, the value written is a new one, in the
        tile's next copy, which need not wait for the readers of the value before. Such a
        DMA's line says `new` when the tile held a value (the builder writes the next copy when
        an operation used the tile before), and the tile is marked for
        compiler.nl_rewrite_buffers copies at least (docs/nki.md). Each such DMA starts a copy
        (root.copies: its op and the parts written into it since); a read of a part a copy
        does not hold undoes it, its parts joining the copy before (_pending_read). The copies
        left are decided when one holds all of the tile, the loop iteration ends or the kernel
        does; a region of the loops' indices is not compared (no rewrite)."""
        if region is None or not held:
            return  # (its writes are the copy's they find: _pending_written)
        copies = getattr(root, 'copies', None)
        if copies is None:
            copies = root.copies = []
            self.pending.append(root)
        copies.append((op, [_WrittenRegion(region)]))
        if _whole(region, root):
            self._decide(root)  # (all of the tile: nothing read later can lie outside it)

    def _pending_read(self, t):
        """Tile part t is read: the copies that do not hold all of it are undone, the latest
        first (the copy before then holds what they wrote too)."""
        copies = getattr(t.root, 'copies', None)
        if not copies:
            return
        inner = region_of(t)
        while copies and not _covered(inner, copies[-1][1]):
            _, parts = copies.pop()
            if copies:
                copies[-1][1].extend(parts)

    def _pending_written(self, t):
        """Tile part t is written: it joins the latest copy (a part not known joins nothing: a
        later read outside the parts known undoes the copy); all of the tile decides them."""
        root = t.root
        if not getattr(root, 'copies', None):
            return
        region = region_of(t)
        if region is None:
            return
        root.copies[-1][1].append(_WrittenRegion(region))
        if _whole(region, root):
            self._decide(root)

    def _decide(self, root):
        """Each copy left is a new one: its DMA's line says `new`."""
        for op, _ in root.copies:
            op.line += ' new'
            root.decl.rewrite = True
        root.copies = None

    def decide_pending(self):
        """The decisions on every pending rewrite (a loop iteration, or the kernel, ends)."""
        for root in self.pending:
            if getattr(root, 'copies', None) is not None:
                self._decide(root)
        self.pending = []

    def warn(self, site, api, message):
        """A kernel bug the hardware would punish, at its line (said once per line; an error
        with --strict)."""
        if all(w[0] != site for w in self.warnings):
            self.warnings.append((site, api, message))

    def note(self, site, api, message):
        """Something a call asked for that the model does not do: said once per line."""
        self.notes.setdefault((site, api), message)

    # Recording

    def tile_ref(self, t, api, site):
        """The operand for tile part t: its instance counted back from the latest, its indices
        in terms of the loops open now."""
        root = t.root
        decl = root.decl
        if decl is None:
            raise KernelError(api, f'tile {t.name} has no declaration', site)
        return TileRef(decl.id, decl.serial - root.serial, frozen(root.block), frozen(t.pabs),
                       t.partitions, frozen(t.fabs), t.elems, t.estride)

    def emit(self, kind, api, site, args, when=()):
        """The one place an instruction (or a declaration) is recorded. `args`: the operands in
        the primitive's order, tiles as Tile parts, HBM operands as HbmAccess or HbmRef, a
        declaration as its Decl; `when`: loop indices, all 0 in the iterations it runs in."""
        layout = _LAYOUT[kind]
        # the partition group an indirect operand's offsets are laid out in (its engine's)
        self._kind = kind
        # (the matmul is the one indirect instruction on the Tensor engine: _prims.INDIRECT)
        self._group = indirect_group('pe' if kind == 'matmul' else None)
        kept = self._kept
        if self.pending:  # (the reads, then the writes, of tiles with a pending rewrite)
            written = _WRITTEN.get(kind, ())
            tiles = [(k, a) for k, (what, a) in enumerate(zip(layout, args))
                     if what in _TILES and a is not None and hasattr(a, 'root')]
            for k, a in tiles:
                if k not in written or k == 0 and kind in _READS_DST:
                    self._pending_read(a)
            for k, a in tiles:
                if k in written:
                    self._pending_written(a)
        # (a hoisted load's tile written by anything but its load: _ops.hoisted_load)
        if self.hoisted_tensors and not self.hoisting:
            for k in _WRITTEN.get(kind, ()):
                decl = getattr(getattr(args[k], 'root', None), 'decl', None) \
                    if k < len(args) else None
                if decl is not None and decl.hoisted is not None:
                    self.hoist_conflicts.add(decl.hoisted)
        out = [kept(what, a, api, site) for what, a in zip(layout, args)]
        if layout[:1] == ('H',):  # (an HBM destination: its tensor's loads stay where written)
            self.hbm_written.add(out[0][0])
        out.extend(args[len(layout):])  # what only the interpreter reads (print: the shape)
        ctx = tuple((m[0], m[1]) for m in self.independent) if self.independent else ()
        op = Op(kind, api, site, tuple(out), tuple(when), '', ctx, self.core, self.variant)
        op.line = _render(op)
        self.ops.append(op)
        if kind != 'declare' and self.variant != 'plain':
            self.executed += 1

    def _kept(self, what, a, api, site):
        """Operand `a` of kind `what` as the recording keeps it (tile and HBM operands as
        references, their indices frozen over the loops open now)."""
        if what in _TILES:
            if a is None:
                return None
            if a.__class__ is IndirectTile:
                if self._kind not in INDIRECT:
                    raise KernelError(api, 'an indirect view as an operand here: NKI takes '
                                      'tensor indirection in engine instructions (docs/nki.md)',
                                      site)
                return IndirectRef(self.tile_ref(a, api, site), self.tile_ref(a.index, api, site),
                                   a.extent, self._group)
            if a.__class__ is Tile:
                return self.tile_ref(a, api, site)
            return a
        if what == 'H':
            if not isinstance(a, HbmRef):
                a = a.ref()
            return HbmRef(a[0], frozen(a[1]), a[2], a[3], a[4])
        return a

    def text(self, core=None):
        """The recording's text form (recording.h, docs/nki.md); with `core`, the part that
        physical core runs (its SPMD instances, and what every core runs)."""
        self.decide_pending()
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
        plain = ('declare', 'loop', 'end', 'iteration', 'order', 'print')
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
_HAS_ACC = frozenset(k for k, layout in _LAYOUT.items() if 'acc' in layout)
# the operands each operation writes (by position): a first tile operand, and second outputs
# ('O'); a matmul's dst with its accumulation (it reads it too) counts as written
_WRITTEN = {k: frozenset(i for i, what in enumerate(layout)
                         if (i == 0 and what in ('T', 'T?')) or what in ('O', 'O?'))
            for k, layout in _LAYOUT.items()}
# the operations that read their dst as well (an accumulation, a DMA read-add-write)
_READS_DST = _HAS_ACC | {'load_add'}


def region_of(t):
    """The elements of its root a tile part is: (first partition, partitions, the free elements:
    a range, or a sorted tuple), None when its indices are the loops' (not compared)."""
    if isinstance(t, TileRuns):
        if isinstance(t.p0, Affine) or isinstance(t.f0, Affine):
            return None
        elems = [t.f0]
        for size, stride in t.dims:
            elems = [e + k * stride for e in elems for k in range(size)]
        return t.p0, t.partitions, tuple(sorted(set(elems)))
    if isinstance(getattr(t, 'pabs', None), Affine) or isinstance(getattr(t, 'fabs', None),
                                                                  Affine):
        return None
    if not hasattr(t, 'pabs'):
        return None
    step = t.fstep if t.elems > 1 else 1
    if step > 0:
        return t.pabs, t.partitions, range(t.fabs, t.fabs + t.elems * step, step)
    return t.pabs, t.partitions, tuple(sorted(t.fabs + k * step for k in range(t.elems)))


class _WrittenRegion:
    """A region a DMA wrote, for the reads checked against it (_within)."""
    __slots__ = ('p', 'pc', 'elems', 'lo', 'hi', 'dense', 'set')

    def __init__(self, region):
        self.p, self.pc, elems = region
        self.elems = elems
        self.lo, self.hi = (elems[0], elems[-1]) if len(elems) else (0, -1)
        self.dense = self.hi - self.lo + 1 == len(elems)
        self.set = None  # (made at the first read that needs it)


def _within(inner, outer):
    """Whether region `inner` lies in the written region `outer` (None: not known, no)."""
    if inner is None or outer is None:
        return False
    p, pc, elems = inner
    if not (outer.p <= p and p + pc <= outer.p + outer.pc):
        return False
    if not len(elems):
        return True
    if elems[0] < outer.lo or elems[-1] > outer.hi:
        return False
    if outer.dense:  # (all between its ends)
        return True
    written = _elements(outer)
    return all(e in written for e in elems)


def _elements(region):
    """A written region's elements as a set (made once, at the first read that needs it)."""
    if region.set is None:
        region.set = frozenset(region.elems)
    return region.set


def _whole(region, root):
    """Whether a region is all of logical tile `root`."""
    return region[0] == 0 and region[1] == root.partitions and len(region[2]) == root.elems


def _covered(inner, regions):
    """Whether region `inner` lies in the union of the written regions `regions`."""
    if inner is None:
        return False
    if any(_within(inner, r) for r in regions):
        return True
    if len(regions) == 1:
        return False
    p, pc, elems = inner
    cuts = sorted({p, p + pc} | {x for r in regions for x in (r.p, r.p + r.pc)
                                 if p < x < p + pc})
    for a, b in zip(cuts, cuts[1:]):  # partitions [a, b): the same regions over each
        over = [r for r in regions if r.p <= a and b <= r.p + r.pc]
        if not over:
            return False
        spans = sorted((r.lo, r.hi) for r in over if r.dense)
        los = [lo for lo, _ in spans]
        reach = list(itertools.accumulate((hi for _, hi in spans), max))  # (the spans so far)
        sets = [_elements(r) for r in over if not r.dense]
        for e in elems:
            k = bisect.bisect_right(los, e) - 1
            if (k < 0 or reach[k] < e) and not any(e in s for s in sets):
                return False
    return True


_MEETINGS = frozenset(('sendrecv', 'barrier', 'tile_barrier'))  # the cores meet there


def _render(op):
    """The recording's line of an operation (from its kept operands)."""
    kind, args = op.kind, op.args
    if kind in ('loop', 'end', 'iteration', 'order'):
        return op.line
    layout = _LAYOUT[kind]
    words = [kind]
    if op.when:
        words.append('if=' + ','.join(condition_text(x) for x in op.when))
    if kind in _GENERIC:  # ins ENGINE OPCODE field=value ...
        generic = PRIMS[kind]
        words[0] = 'ins'
        words += [args[generic.fields.index('eng')], generic.opcode]
        for field, what, a in zip(generic.fields, layout, args):
            if field != 'eng' and (a or what not in _OPTIONAL):
                words.append(f'{field}={_word(what, a)}')
    else:  # (an optional word left empty: none)
        words += [w for w in (_word(what, a) for what, a in zip(layout, args)) if w != '']
    return ' '.join(words) + op.suffix


def _word(what, a):
    """The recording's word for kept operand `a` of kind `what`."""
    if what in _TILES:
        if a is None:
            return '-'
        if a.__class__ is IndirectRef:  # <view>~<offsets>~<columns indexed>
            return f'{_word(what, a[0])}~{_word(what, a[1])}~{a[2]}'
        b, p0, f0 = a[2], a[3], a[5]
        return (f'T{a[0]}.{a[1]}.{b if b.__class__ is int else text(b)}:'
                f'{p0 if p0.__class__ is int else text(p0)}:{a[4]}:'
                f'{f0 if f0.__class__ is int else text(f0)}:{a[6]}:{a[7]}')
    if what == 'H':
        return f'H{a[0]}:{text(a[1])}:{a[2]}:{a[3]}:{a[4]}'
    if what == 'decl':
        return str(a.id)
    if what == 'f':
        return _number(a)
    if what == 'acc':
        if isinstance(a, tuple):
            return '!' + ','.join(f'L{loop.id}' for loop in a)
        return '1' if a else '0'
    if what == 'str':
        return _one_line(str(a))
    return '' if a is None else str(a)


def _key(op):
    """What must be the same of an operation in two iterations for them to be one body."""
    return (op.line, op.site, op.core, op.variant)


def _difference(a, b, why):
    """why, with the first operation where the key lists a and b differ."""
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    first = a[at][0] if at < len(a) else '(nothing)'
    second = b[at][0] if at < len(b) else '(nothing)'
    return f'{why}: {first} then {second}'


def _acc_loops(op):
    """The loops of an accumulation `!Ln,...` (none for 0)."""
    acc = op.args[_LAYOUT[op.kind].index('acc')]
    return acc if isinstance(acc, tuple) else ()


def _acc_differs(first, later):
    """first and later are one matmul but for its accumulation: first overwrites (in the
    first iteration of some loops) where later adds."""
    if first.kind not in _HAS_ACC or later.kind != first.kind or first.site != later.site or \
            [condition_text(x) for x in first.when] != [condition_text(x) for x in later.when]:
        return False  # (conditions compared as the recording says them: loops by their ids)
    at = _LAYOUT[first.kind].index('acc')
    if first.args[at] is True or later.args[at] is not True:
        return False
    return _render_acc(first) == later.line


def _render_acc(op):
    at = _LAYOUT[op.kind].index('acc')
    new = Op(op.kind, op.api, op.site, op.args[:at] + (True,) + op.args[at + 1:], op.when, '',
             op.ctx, op.core, op.variant, op.suffix)
    return _render(new)


def _renumber(x, number):
    """Kept operand x with its declarations' numbers in another list (`number`)."""
    if x.__class__ is TileRef:
        return TileRef(number[x[0]], *x[1:])
    if x.__class__ is IndirectRef:
        return IndirectRef(_renumber(x[0], number), _renumber(x[1], number), x[2], x[3])
    return x


def _on(condition, loop):
    """Whether a recorded operation's condition is on `loop`."""
    return condition is loop or (condition.__class__ is Span and condition.loop is loop)


def _runs_at(op, loop, k):
    """Whether op runs at counter k of `loop` (as its conditions on that loop say)."""
    return all(holds(x, {loop.id: k}) for x in op.when if _on(x, loop))


def _runs_in(op, loop):
    """How many iterations of `loop` op runs in."""
    return sum(1 for k in range(loop.trips) if _runs_at(op, loop, k)) \
        if any(_on(x, loop) for x in op.when) else loop.trips


def _parts(spans, n):
    """The iterations 0 .. n - 1 of a loop in parts of consecutive ones whose recordings
    hold for the same counters (spans: LoopIndex.span of each; none: one part)."""
    if not any(x is not None for x in spans):
        return [(0, n)]
    parts, a = [], 0
    for k in range(1, n + 1):
        if k == n or spans[k] != spans[a]:
            parts.append((a, k))
            a = k
    return parts


def _said_parts(parts):
    return ', '.join(f'{a}' if b == a + 1 else f'{a}..{b - 1}' for a, b in parts)


def _mentions(x, loop):
    """Whether the (frozen) index expressions in kept operand x use `loop`."""
    if x.__class__ is Affine:
        for lp, _ in x.terms:
            if lp is loop:
                return True
        return False
    if isinstance(x, tuple):
        for e in x:
            if _mentions(e, loop):
                return True
    return False


def _subst(x, loop, k):
    """Kept operand x with loop counter Ln = k."""
    if x.__class__ is Affine:
        if not any(lp is loop for lp, _ in x.terms):
            return x
        c = x.c + sum(coef * k for lp, coef in x.terms if lp is loop)
        terms = tuple((lp, coef) for lp, coef in x.terms if lp is not loop)
        return Affine(c, terms) if terms else c
    if x.__class__ in (TileRef, HbmRef, IndirectRef):
        return x.__class__(*(_subst(e, loop, k) for e in x))
    if x.__class__ is tuple:
        return tuple(_subst(e, loop, k) for e in x)
    return x


def _shift_serial(obj, grew):
    """A tile (or tensor of tiles) an iteration made, standing for a later one's: its serial
    moved past the instances of the iterations not run."""
    if isinstance(obj, TileBlocks):
        obj.serial_shift(grew)
    elif isinstance(obj, Tile) and obj.decl is not None and obj.decl.id in grew:
        obj.serial += grew[obj.decl.id]


def _sites(identity):
    """A loop's identity without occurrences: every occurrence of a loop unrolls together."""
    return tuple(site for site, _ in identity)


_SCALARS = (int, float, complex, str, bytes, bool, type(None))
_WRITES_OUTSIDE = {}  # code object -> the globals it assigns, or None when it assigns nonlocals


def _writes_outside(code):
    """The module globals `code` assigns (STORE_GLOBAL), or None when it assigns a variable of
    an enclosing function (STORE_DEREF of a free variable)."""
    if code not in _WRITES_OUTSIDE:
        names = set()
        for ins in dis.get_instructions(code):
            if ins.opname == 'STORE_GLOBAL':
                names.add(ins.argval)
            elif ins.opname == 'STORE_DEREF' and ins.argval in code.co_freevars:
                names = None
                break
        _WRITES_OUTSIDE[code] = names
    return _WRITES_OUTSIDE[code]


def _fingerprint(v, held, depth=2):
    """v as compared across iterations: a scalar by value; an array by its bytes; a list,
    tuple, set or dict by its elements (to `depth`), an object by its attributes, both with
    their identity; an iterator never equal to anything (its next value is unknown); anything
    else by identity. `held` keeps what is compared by identity alive meanwhile."""
    t = type(v)
    if t in _SCALARS:
        return (t, v)
    held.append(v)
    if t.__module__.startswith('trnsim.') or isinstance(
            v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.ModuleType, type)):
        return ('is', id(v))
    if hasattr(v, '__next__'):
        return ('iterator', object())
    if isinstance(v, np.ndarray):
        return ('array', id(v), v.shape, str(v.dtype),
                hash(v.tobytes()) if v.nbytes <= 1 << 20 else object())
    if depth == 0:
        return ('is', id(v))
    if isinstance(v, (list, tuple, set, frozenset, dict)):
        if len(v) > 256:
            return ('many', id(v), object())
        items = v.items() if isinstance(v, dict) else ((None, x) for x in v)
        return (t, id(v), tuple((_fingerprint(k, held, 0), _fingerprint(x, held, depth - 1))
                                for k, x in items))
    attrs = getattr(v, '__dict__', None)
    if isinstance(attrs, dict):
        return ('object', id(v), tuple((k, _fingerprint(x, held, depth - 1))
                                       for k, x in attrs.items()))
    return ('is', id(v))


def _python_state(frame):
    """What of the kernel's Python a loop's body could carry from one iteration to the next,
    comparable across iterations (_fingerprint): the variables of `frame` (the function running
    the loop) and the module globals its code assigns, the frontend's own objects (tiles,
    indices, tensors), which the recording follows itself, left out; with the objects compared
    by identity, kept alive until the comparison. None (no early stop) without a frame, or when
    the code assigns a variable of an enclosing function."""
    if frame is None:
        return None
    outside = _writes_outside(frame.f_code)
    if outside is None:
        return None
    held = []
    state = {}
    for name, v in frame.f_locals.items():
        if not type(v).__module__.startswith('trnsim.'):
            state[name] = _fingerprint(v, held)
    for name in outside:
        state['global ' + name] = _fingerprint(frame.f_globals.get(name), held)
    return state, held


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

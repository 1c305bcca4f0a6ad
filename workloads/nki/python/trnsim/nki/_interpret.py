"""A kernel's values: its recording replayed with numpy, iteration by iteration, each
primitive computed as _prims declares it and rounded to its destination's dtype (bfloat16 as the
device rounds, _dtypes.round_bf16). Tiles allocated by the builder hold the values of their own
instance; directly allocated ones (nki.compiler.sbuf) live in a byte image of SBUF, so tiles
that share bytes share values, in program order, as on the device."""

import collections

import numpy as np

from . import _dtypes, _prims
from ._errors import KernelError, unsupported
from ._index import Affine, holds
from ._prims import PRIMS, REGISTER_OPS, indirect_position, reduce_rows
from ._prims import alu as alu_op
from ._tensors import IndirectRef, TileRef

def read_values(arr, dtype):
    """A copy of tile or tensor values, held as _dtypes.holder(dtype)."""
    return np.array(arr, dtype=_dtypes.holder(dtype))


def write_values(arr, dtype, values):
    """Stores values into arr (held values, or the SBUF image in the dtype itself), rounded to
    dtype."""
    arr[...] = np.broadcast_to(_dtypes.round_to(values, dtype), arr.shape)


def fill_value(dtype):
    """What a tile holds before anything writes it: NaN for floats, 4 for integers, as AWS's
    simulator fills new allocations (NKI simulator guide, SDK 2.30)."""
    return 4 if dtype in _dtypes.INTEGERS or dtype in _dtypes.BITS else np.nan


# The primitives each of whose result elements depends on the same element of each operand
# (a [P, 1] operand: on its partition's element).
_ELEMENTWISE = ('load', 'load_add', 'copy', 'dma')  # and the instructions declared elementwise


def _validity(kind, valids, shape):
    """Which result elements of a primitive are computed only from valid operand elements."""
    if not valids:  # memset, iota: nothing read
        return np.ones(shape, dtype=bool)
    if kind in _ELEMENTWISE or PRIMS[kind].elementwise:
        out = np.ones(shape, dtype=bool)
        for v in valids:
            out &= v if v.shape == shape else v.reshape(shape[0], -1)[:, :1]
        return out
    if kind in ('transpose', 'isa.transpose'):
        return valids[0].T.reshape(shape)
    if kind == 'isa.topk':  # a 16-partition group's results depend on all of its snake
        groups = valids[0].reshape(-1, 16, valids[0].shape[1]).all(axis=(1, 2))
        return np.broadcast_to(np.repeat(groups, 16)[:, None], shape).copy()
    if kind == 'isa.tensor_tensor_scan':  # each element depends on the ones before it
        both = valids[0] & valids[1].reshape(valids[0].shape)
        if len(valids) > 2:  # (and on the initial value of its partition)
            both = both & valids[2].reshape(-1, 1)
        return np.logical_and.accumulate(both, axis=1).reshape(shape)
    # reductions, max8, find_index8: a row's results depend on the whole row
    rows = np.ones(shape[0], dtype=bool)
    for v in valids:
        rows &= v.reshape(v.shape[0], -1).all(axis=1)[:shape[0]]
    return np.broadcast_to(rows[:, None], shape).copy()


_MEETINGS = ('barrier', 'tile_barrier', 'sendrecv')  # where the cores of a stack meet


def _loop_ends(ops):
    """The index of each `loop` op's matching `end`."""
    ends, stack = {}, []
    for i, op in enumerate(ops):
        if op.kind == 'loop':
            stack.append(i)
        elif op.kind == 'end':
            ends[stack.pop()] = i
    return ends


class Interpreter:
    """Runs a recording (_trace.Trace) on numpy arrays. What it notes on the way (`warnings`:
    (site, api, message)): reads of tile elements nothing wrote, and writes of the same HBM
    bytes by two iterations of a loop NKI may run in any order."""

    def __init__(self, trace, tensors=None, ops=None):
        """`tensors` ((tensor, kind, values) each: trace.tensors by default) and `ops` (the
        trace's by default): what a run before the trace ends reads (register_values)."""
        self.trace = trace
        self.ops = trace.ops if ops is None else ops
        self.partial = ops is not None  # (other cores' operations may be missing)
        self.warnings = []
        self._warned = set()
        self.images = {}  # space -> (byte image, its written bytes) of directly allocated tiles
        self.writers = {}  # HBM tensor -> index of each element's last writer (-1: none)
        self.writer_list = []  # (op, its independent loops' iterations)
        self.writer_ids = {}
        self.index = {}  # loop id -> current index
        self.vregs = {}  # register number -> its value (the register instructions')
        self.hbm = []  # flat values of each HBM tensor
        self.written = []
        # the reduce registers of the Scalar engine (activation_reduce) and of the Vector engine
        # (exponential), and which hold valid values
        parts = trace.limits['partitions']
        self.registers = {op: (np.zeros((parts, 1), np.float32), np.ones((parts, 1), bool))
                          for op in ('activation_reduce', 'exponential')}
        for t, kind, values in (trace.tensors if tensors is None else tensors):
            n = int(np.prod(t.shape))
            dt = _dtypes.holder(t.dtype_name)
            self.hbm.append(np.array(values, dtype=dt).reshape(n) if values is not None
                            else np.zeros(n, dtype=dt))
            self.written.append(False)
        keep = collections.Counter()
        for op in self.ops:
            for a in op.args:
                for r in (a[:2] if a.__class__ is IndirectRef else (a,)):
                    if r.__class__ is TileRef:
                        keep[r[0]] = max(keep[r[0]], r[1] + 1)
        self.instances = {d.id: collections.deque(maxlen=max(1, keep[d.id]))
                          for d in trace.decl_list}

    def value(self, x):
        if isinstance(x, Affine):
            return x.c + sum(coef * self.index[loop.id] for loop, coef in x.terms)
        return x

    def run(self):
        ops = self.ops
        if any(op.kind in _MEETINGS for op in ops):
            return self._run_cores(ops)
        self._range(ops, _loop_ends(ops), 0, len(ops))
        return self

    def _run_cores(self, ops):
        """Runs each core's operations up to its next core_barrier or sendrecv in turn, so that
        what a core reads after one is what every core wrote before it; at a sendrecv, each
        core's dst then gets its sender's src. A meeting inside a loop (a loop the device runs,
        recorded once) is met once per iteration. Each core has its own tiles, SBUF and PSUM
        images, reduce registers and loop indices; HBM is shared."""
        cores = sorted({op.core for op in ops if op.core is not None}) or [None]
        state = {c: self._fresh_state() for c in cores}
        runs = {}
        for c in cores:
            core_ops = [op for op in ops if op.core in (c, None)]
            runs[c] = self._steps(core_ops, _loop_ends(core_ops), 0, len(core_ops))
        running = list(cores)
        while running:
            met = {}
            for c in list(running):
                self._use_state(state[c])
                op = next(runs[c], None)
                state[c] = self._current_state()
                if op is None:
                    running.remove(c)
                else:
                    met[c] = op
            self._exchange(cores, met, state)
        self.core_states = state
        return self

    def _steps(self, ops, ends, begin, end):
        """Runs ops[begin:end] (the loops' iterations in turn), stopping at each meeting of the
        cores: it yields that operation, which the caller handles (_run_cores)."""
        i = begin
        while i < end:
            op = ops[i]
            if op.kind == 'loop':
                loop = op.args[0]
                for k in range(loop.trips):
                    self.index[loop.id] = k
                    yield from self._steps(ops, ends, i + 1, ends[i])
                i = ends[i] + 1
                continue
            if op.kind not in ('end', 'iteration', 'order') and \
                    all(holds(x, self.index) for x in op.when):
                if op.kind in _MEETINGS:
                    yield op
                else:
                    self._exec(op)
            i += 1

    def _exchange(self, cores, met, state):
        """The sendrecv each core stopped at (`met`: the meeting of each core still running):
        dst gets the sender's src (every src read before any dst is written)."""
        ends = {c: op for c, op in met.items() if op.kind == 'sendrecv'}
        sent = {}
        for c, op in ends.items():
            self._use_state(state[c])
            sent[c] = self._read_tile(op.args[1], op)
        for c, op in ends.items():
            sender = cores[op.args[3]] if cores != [None] and op.args[3] < len(cores) else None
            if self.partial and cores != [None] and (
                    op.args[3] >= len(cores) or
                    (sender not in met and sender == self.trace.core)):
                # (a run before the trace ends: the sender's operations are not recorded yet,
                # or, the core being traced, not as far as this one; dst holds nothing valid,
                # and what is computed from it neither)
                self._use_state(state[c])
                view, _, _ = self._tile(op.args[0], True)
                self._write_tile(op.args[0], np.full(view.shape, np.nan, np.float32),
                                 np.zeros(view.shape, bool), op)
                state[c] = self._current_state()
                continue
            if sender not in sent:
                raise KernelError(op.api, f'core {op.args[3]} sends nothing at this sendrecv',
                                  op.site)
            self._use_state(state[c])
            self._write_tile(op.args[0], *sent[sender])
            state[c] = self._current_state()

    def _fresh_state(self):
        """A core's own interpreter state before it runs: no tiles, images, reductions or
        register values."""
        parts = self.trace.limits['partitions']
        return ({d: collections.deque(maxlen=q.maxlen) for d, q in self.instances.items()}, {},
                {op: (np.zeros((parts, 1), np.float32), np.ones((parts, 1), bool))
                 for op in self.registers}, {}, {})

    def _current_state(self):
        return (self.instances, self.images, self.registers, self.vregs, self.index)

    def _use_state(self, s):
        self.instances, self.images, self.registers, self.vregs, self.index = s

    def _range(self, ops, ends, begin, end):
        """Runs ops[begin:end] (a kernel without meetings of the cores)."""
        for _ in self._steps(ops, ends, begin, end):
            pass

    def _offsets(self, ref, op):
        """The columns an indirect operand reads or writes: offset i at
        index[(i // (G K)) G + i % G, (i // G) % K] (program/program.h's indirection)."""
        view, index, extent, group = ref
        values, valid = self._read_tile(index, op)
        rows, cols = indirect_position(np.arange(view[6]), group, values.shape[1])
        if not valid[rows, cols].all():
            raise KernelError(op.api, 'an indirect view reads offsets nothing wrote', op.site)
        offsets = values[rows, cols].astype(np.int64)
        bad = (offsets < 0) | (offsets >= extent)
        if bad.any():
            raise KernelError(op.api, f'offset {offsets[bad][0]} of an indirect view (element '
                              f'{int(np.flatnonzero(bad)[0])}) is outside its {extent} columns',
                              op.site)
        return offsets

    @staticmethod
    def _indexed(ref):
        """The TileRef of the columns an indirect operand indexes."""
        view, _, extent, _ = ref
        return TileRef(*view[:6], extent, view[7])

    def _tile(self, ref, mask=False):
        """The numpy view of a tile operand, and its dtype (and, with `mask`, the view of which
        of its elements were written, writable); of an indirect operand, its dtype and a
        placeholder of its shape (_read_tile and _write_tile gather and scatter)."""
        if ref.__class__ is IndirectRef:
            _, dtype = self._tile(self._indexed(ref))
            return np.zeros((ref[0][4], ref[0][6]), dtype=_dtypes.holder(dtype)), dtype
        decl_id, back, block, p0, pc, f0, fc, es = ref
        decl = self.trace.decl_list[decl_id]
        block, p0, f0 = self.value(block), self.value(p0), self.value(f0)
        step = es if fc > 1 else 1
        part = (slice(p0, p0 + pc), slice(f0, f0 + step * (fc - 1) + 1, step))
        if decl.offsets is not None:  # directly allocated: the SBUF (PSUM) image
            if decl.space not in self.images:
                # all ones: NaN in every float format, -1 in the integers
                shape = (self.trace.limits['partitions'],
                         self.trace.limits['sbuf_bytes' if decl.space == 'sbuf' else
                                           'psum_bytes'])
                self.images[decl.space] = (np.full(shape, 0xFF, dtype=np.uint8),
                                           np.zeros(shape, dtype=bool))
            image, image_mask = self.images[decl.space]
            first, off = decl.offsets[decl.phys[block]]
            rows = slice(first, first + decl.partitions)
            raw = image[rows, off:off + decl.bytes]
            arr = raw.view(np.dtype(decl.dtype)).reshape(decl.partitions, decl.elems)
            if not mask:
                return arr[part], decl.dtype
            size = _dtypes.SIZES[decl.dtype]
            written = image_mask[rows, off:off + decl.bytes].reshape(
                decl.partitions, decl.elems, size)[part]
            return arr[part], decl.dtype, written
        inst = self.instances[decl_id][back]
        held = inst.get(block)
        if held is None:  # (values, which of them were written)
            held = inst[block] = (np.full((decl.partitions, decl.elems), fill_value(decl.dtype),
                                          dtype=_dtypes.holder(decl.dtype)),
                                  np.zeros((decl.partitions, decl.elems), dtype=bool))
        if not mask:
            return held[0][part], decl.dtype
        return held[0][part], decl.dtype, held[1][part]

    def _first_partition(self, ref):
        """The SBUF partition a tile operand starts at (a direct allocation's own offset
        added): the registers of partition-indexed engine state are the absolute ones."""
        if ref.__class__ is IndirectRef:
            ref = ref[0]
        decl = self.trace.decl_list[ref[0]]
        p0 = self.value(ref[3])
        if decl.offsets is not None:
            p0 += decl.offsets[decl.phys[self.value(ref[2])]][0]
        return p0

    def _read_tile(self, ref, op):
        """A tile operand's values and which of them are valid: computed only from elements
        something wrote (the others hold NaN, or 4 for integers, as AWS's simulator fills new
        allocations, and what was computed from them)."""
        if ref.__class__ is IndirectRef:  # a gather of columns
            offsets = self._offsets(ref, op)
            values, valid = self._read_tile(self._indexed(ref), op)
            return values[:, offsets], valid[:, offsets]
        view, dtype, valid = self._tile(ref, True)
        if valid.ndim == 3:  # the SBUF image: an element is valid when all its bytes are
            valid = valid.all(-1)
        return read_values(view, dtype), np.array(valid)

    def _write_tile(self, ref, values, valid, op=None):
        if ref.__class__ is IndirectRef:  # a scatter of columns, in order (the last one kept)
            offsets = self._offsets(ref, op)
            indexed = self._indexed(ref)
            values = np.broadcast_to(np.asarray(values), (ref[0][4], ref[0][6]))
            valid = np.broadcast_to(np.asarray(valid), values.shape)
            for i, c in enumerate(offsets):
                column = TileRef(*indexed[:5], self.value(indexed[5]) + c * indexed[7], 1, 1)
                self._write_tile(column, values[:, i:i + 1], valid[:, i:i + 1])
            return
        view, dtype, mask = self._tile(ref, True)
        write_values(view, dtype, values)
        if mask.ndim == 3:
            mask[...] = np.asarray(valid).reshape(mask.shape[:2])[..., None]
        else:
            mask[...] = valid

    def _note_invalid(self, op, ref, valid, what):
        """A store (or print) of values computed from elements nothing wrote: named."""
        if valid.all():
            return
        decl = self.trace.decl_list[ref[0]]
        fill = '4' if decl.dtype in _dtypes.INTEGERS else 'NaN'
        self._warn(op, ('unwritten', ref[0]), f'{what} {int(valid.size - np.count_nonzero(valid))} '
                   f'elements of the tile of {decl.label} computed from tile elements nothing '
                   f"wrote ({fill}, as AWS's simulator fills them)")

    def _warn(self, op, key, message):
        key = (op.site, op.api) + key
        if key in self._warned:
            return
        self._warned.add(key)
        self.warnings.append((op.site, op.api, message))

    def _note_hbm_write(self, op, ref):
        """Which op (in which iterations of the independent loops around it) wrote each
        element last: a write of the same bytes by another iteration of such a loop, with no
        order between the two, is noted (a race on the device)."""
        if not self.trace.loop_sites:  # no independent loop in the kernel: nothing to race
            return
        tensor, first, rows, elems, row_stride = ref
        n = self.hbm[tensor].size
        idx = (self.value(first) + np.arange(rows, dtype=np.int64)[:, None] * row_stride +
               np.arange(elems, dtype=np.int64)[None, :])
        ctx = tuple((num, self.index[v.id] if not isinstance(v, int) else v)
                    for num, v in op.ctx)
        key = (id(op), ctx)
        me = self.writer_ids.get(key)
        if me is None:
            me = self.writer_ids[key] = len(self.writer_list)
            self.writer_list.append((op, ctx))
        last = self.writers.get(tensor)
        if last is None:
            last = self.writers[tensor] = np.full(n, -1, dtype=np.int64)
        if ctx:
            for prev in np.unique(last[idx]):
                if prev < 0 or prev == me:
                    continue
                pop, pctx = self.writer_list[prev]
                mine = dict(ctx)
                for num, it in pctx:
                    if num in mine and mine[num] != it:
                        loop = self.trace.loop_sites.get(num, ('?', 0))
                        t = self.trace.tensors[tensor][0]
                        name = (t.name if t.site is None else
                                f'{t.name} (allocated at {t.site[0]}:{t.site[1]})')
                        where = ('here' if pop.site == op.site else
                                 f'here and at {pop.site[0]}:{pop.site[1]}')
                        self._warn(op, ('race', id(pop)), f'iterations {it} and {mine[num]} of '
                                   f'the nl.affine_range loop at {loop[0]}:{loop[1]} write the '
                                   f'same bytes of HBM tensor {name} ({where}): NKI may run '
                                   'those iterations in any order (use nl.sequential_range, or '
                                   'write different bytes)')
                        break
        last[idx] = me

    def _hbm(self, ref):
        tensor, first, rows, elems, row_stride = ref
        flat = self.hbm[tensor]
        first = self.value(first)
        size = flat.itemsize
        view = np.lib.stride_tricks.as_strided(flat[first:], shape=(rows, elems),
                                               strides=(row_stride * size, size),
                                               writeable=row_stride != 0)
        return view, self.trace.tensors[tensor][0].dtype_name

    def _load_bits(self, op):
        """A load of an HBM tensor's bytes as the tile's dtype (NkiTensor.view): the rows'
        bytes, as the tensor holds them, read as the tile's dtype."""
        dst, (tensor, first, rows, elems, row_stride) = op.args[0], op.args[1]
        _, ddt = self._tile(dst)
        sdt = self.trace.tensors[tensor][0].dtype_name
        flat = self.hbm[tensor]
        first = self.value(first)
        at = first + np.arange(rows)[:, None] * row_stride + np.arange(elems)[None, :]
        raw = np.ascontiguousarray(flat[at].astype(_dtypes.storage(sdt)))
        values = raw.view(_dtypes.storage(ddt)).reshape(rows, -1)
        self._write_tile(dst, values.astype(_dtypes.holder(ddt)),
                         np.ones(values.shape, dtype=bool), op)

    def _gather(self, op):
        """An indirect load: row p of dst is the HBM row element p of the index names (as
        nisa.dma_copy's default oob_mode, an index out of the dimension is an error)."""
        dst, (tensor, first, rows, elems, _), index, stride, size, oob = op.args
        values, valid = self._read_tile(index, op)
        self._note_invalid(op, index, valid, 'reads as indices')
        rows_at = values[:rows, 0].astype(np.int64)
        bad = (rows_at < 0) | (rows_at >= size)
        if bad.any() and oob == 'skip':  # those rows are not transferred
            keep = ~bad
            flat = self.hbm[tensor]
            at = self.value(first) + np.where(keep, rows_at, 0)[:, None] * stride + \
                np.arange(elems)[None, :]
            old, _ = self._read_tile(dst, op)
            got = np.where(keep[:, None], read_values(flat[at], self.trace.tensors[tensor][0]
                                                      .dtype_name), old[:rows, :elems])
            self._write_tile(dst, got, np.broadcast_to(valid[:rows, :1], (rows, elems)), op)
            return
        if bad.any():
            raise KernelError(op.api, f'index {int(rows_at[bad][0])} of an indirect access (row '
                              f'{int(np.flatnonzero(bad)[0])}) is out of bounds for a '
                              f'dimension of size {size}', op.site)
        flat = self.hbm[tensor]
        at = self.value(first) + rows_at[:, None] * stride + np.arange(elems)[None, :]
        self._write_tile(dst, read_values(flat[at], self.trace.tensors[tensor][0].dtype_name),
                         np.broadcast_to(valid[:rows, :1], (rows, elems)), op)

    def _scatter(self, op):
        """An indirect store: row p of src into the HBM row element p of the index names, in
        order (a later row wins); oob_mode skip leaves out the rows whose index is out of the
        dimension, else that is an error."""
        (tensor, first, rows, elems, _), src, index, stride, size, oob = op.args
        values, valid = self._read_tile(index, op)
        self._note_invalid(op, index, valid, 'reads as indices')
        data, data_valid = self._read_tile(src, op)
        self._note_invalid(op, src, data_valid, 'stores')
        rows_at = values[:rows, 0].astype(np.int64)
        bad = (rows_at < 0) | (rows_at >= size)
        if bad.any() and oob != 'skip':
            raise KernelError(op.api, f'index {int(rows_at[bad][0])} of an indirect access (row '
                              f'{int(np.flatnonzero(bad)[0])}) is out of bounds for a '
                              f'dimension of size {size}', op.site)
        flat = self.hbm[tensor]
        dtype = self.trace.tensors[tensor][0].dtype_name
        base = self.value(first)
        for p in np.flatnonzero(~bad):
            at = base + rows_at[p] * stride
            write_values(flat[at:at + elems], dtype, data[p, :elems])
        self.written[tensor] = True

    def _dma_at(self, op):
        """A DMA between a tile and an HBM access moved at run time by the value of a [1, 1]
        tile times the stride: out of the tensor it is an error, or (oob_mode skip) no
        transfer."""
        load = op.kind == 'load_at'
        tile, ref = (op.args[0], op.args[1]) if load else (op.args[1], op.args[0])
        offset, stride, size, oob = op.args[2:6]
        tensor, first, rows, elems, row_stride = ref
        values, valid = self._read_tile(offset, op)
        self._note_invalid(op, offset, valid, 'reads as an offset')
        shift = int(np.asarray(values).reshape(-1)[0]) * stride
        at = self.value(first) + shift + np.arange(rows)[:, None] * row_stride + \
            np.arange(elems)[None, :]
        if at.size and (at.min() < 0 or at.max() >= size):
            if oob == 'skip':
                return
            raise KernelError(op.api, f'a run-time offset of {shift} elements takes the access '
                              f'to elements {int(at.min())}..{int(at.max())} of a tensor of '
                              f'{size}', op.site)
        flat = self.hbm[tensor]
        dtype = self.trace.tensors[tensor][0].dtype_name
        if load:
            self._write_tile(tile, read_values(flat[at], dtype),
                             np.ones((rows, elems), dtype=bool), op)
            return
        values, valid = self._read_tile(tile, op)
        self._note_invalid(op, tile, valid, 'stores')
        view = np.empty((rows, elems), dtype=flat.dtype)
        write_values(view, dtype, values)
        flat[at] = view
        self.written[tensor] = True

    def _register(self, op):
        """A register instruction: its register's value (an int32), read from or written to a
        one-element tile, or moved."""
        if op.kind == 'isa.register_move':
            number, constant, source = (int(x) for x in op.args[:3])
            self.vregs[number] = self.vregs[source] if source >= 0 else constant
            return
        if op.kind == 'isa.register_load':
            values, valid = self._read_tile(op.args[0], op)
            value = np.asarray(values, dtype=np.float64).reshape(-1)[0]
            if not valid.reshape(-1)[0] or not np.isfinite(value):
                raise KernelError(op.api, 'the element loaded into the register was never '
                                  'written (or comes from a core whose operations are not '
                                  'recorded yet: a loop bound from another core\'s data is not '
                                  'supported)', op.site)
            self.vregs[int(op.args[1])] = int(value)
            return
        number = int(op.args[1])
        if number not in self.vregs:
            raise KernelError(op.api, 'a register stored before anything was loaded or moved '
                              'into it', op.site)
        self._write_tile(op.args[0], np.array([[self.vregs[number]]], np.float64),
                         np.ones((1, 1), bool), op)

    def _exec(self, op):
        if op.kind == 'declare':
            self.instances[op.args[0].id].appendleft({})
            return
        if op.kind in REGISTER_OPS:
            self._register(op)
            return
        prim = PRIMS[op.kind]
        if self._move(op, prim):
            return
        if op.kind == 'transpose' and len(op.args) > 3:  # is_transpose's moving operand
            ident, _ = self._read_tile(op.args[3], op)
            if not np.array_equal(ident, np.eye(ident.shape[0], dtype=ident.dtype)):
                raise KernelError(op.api, 'is_transpose=True with a moving operand that is not '
                                  'the identity (the Tensor engine transposes by multiplying by '
                                  'it)', op.site)
        dst, ddt, vals, valids, second = self._operands(op, prim)
        if op.kind in ('matmul', 'matmul_mx'):
            out, valid = self._matmul(op, prim, vals, valids)
        else:
            out, valid = self._compute(op, prim, dst, ddt, vals, valids, second)
        self._write_tile(op.args[0], np.asarray(out).reshape(dst.shape) if np.ndim(out) else
                         out, valid, op)
        self._reduce(op, prim, dst, ddt, out, valid, second)

    def _move(self, op, prim):
        """Runs the operations that move data without computing (stores, gathers, scatters,
        HBM-to-HBM DMAs, DMAs at an offset, loads of bits, prints); False for any other."""
        if op.kind == 'store':
            view, dtype = self._hbm(op.args[0])
            values, valid = self._read_tile(op.args[1], op)
            self._note_invalid(op, op.args[1], valid, 'stores')
            write_values(view, dtype, values)
            self.written[op.args[0][0]] = True
            self._note_hbm_write(op, op.args[0])
            return True
        if op.kind == 'gather':
            self._gather(op)
            return True
        if op.kind == 'scatter':
            self._scatter(op)
            return True
        if op.kind == 'hbm_dma':  # (src read whole before dst is written: they may overlap)
            src, src_dtype = self._hbm(op.args[1])
            values = read_values(src, src_dtype)
            view, dtype = self._hbm(op.args[0])
            write_values(view, dtype, values)
            self.written[op.args[0][0]] = True
            self._note_hbm_write(op, op.args[0])
            return True
        if op.kind in ('load_at', 'store_at'):
            self._dma_at(op)
            return True
        if op.kind == 'load' and 'bits' in op.args[2:]:
            self._load_bits(op)
            return True
        if op.kind == 'print':
            values, valid = self._read_tile(op.args[0], op)
            self._note_invalid(op, op.args[0], valid, 'prints')
            prim.impl(values.reshape(op.args[2]), op.args[1])
            return True
        return False

    def _operands(self, op, prim):
        """dst, its dtype, the values of the inputs (the engines' float32 of integers) and
        their validity, and the second output (None: none)."""
        dst, ddt = self._tile(op.args[0])
        vals, valids = [], []
        second = None  # the second output (O) of an instruction that has one
        for what, a in zip(prim.layout[1:], op.args[1:]):
            if what in ('O', 'O?'):
                second = a
            elif what in ('T', 'T?') and a is not None:
                v, ok = self._read_tile(a, op)
                vals.append(v)
                valids.append(ok)
            elif what == 'H':
                v, dt = self._hbm(a)
                v = read_values(v, dt)
                # (a DMA transpose: the recorded access is its source)
                vals.append(v.T if op.kind == 'load' and 'transpose' in op.args[2:] else v)
            else:
                vals.append(a)
        if op.kind not in ('load', 'dma', 'matmul_mx'):
            # the engines compute in float32, integers too (as nl.copy's reference says: "casts
            # through FP32"); a DMA moves the bits, and an MX matmul reads its operands' bits
            vals = [v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype.kind in 'iu'
                    else v for v in vals]
        vals += op.args[len(prim.layout):len(prim.layout) + prim.values_only]
        if prim.shaped:
            vals.append(dst.shape)
        return dst, ddt, vals, valids, second

    def _matmul(self, op, prim, vals, valids):
        """A matmul's (or MX matmul's) result, accumulated into dst's when it accumulates, and
        its validity."""
        if op.kind == 'matmul_mx':  # with its operands' MX types
            acc = vals[4]
            out = _prims.mx_matmul_values(vals[0], self._tile(op.args[1])[1], vals[1],
                                          self._tile(op.args[2])[1], vals[2], vals[3])
        else:
            acc = vals[2]
            out = prim.impl(vals[0], vals[1], acc)
        # out[m, n] is valid when stationary column m and moving column n are (and, of an
        # MX matmul, their scales, 4 partitions of each 32)
        valid = valids[0].all(axis=0)[:, None] & valids[1].all(axis=0)[None, :]
        if op.kind == 'matmul_mx':
            g = np.arange(np.shape(vals[0])[0] // 8)
            rows = 32 * (g // 4) + g % 4
            for k, axis in ((2, 0), (3, 1)):
                cols = valids[k][rows, :np.shape(vals[k - 2])[1]].all(axis=0)
                valid = valid & (cols[:, None] if axis == 0 else cols[None, :])
        if isinstance(acc, tuple):
            acc = not all(self.index[loop.id] == 0 for loop in acc)
        if acc:
            before, ok = self._read_tile(op.args[0], op)
            out = before + out
            valid = valid & ok
        return out, valid

    def _compute(self, op, prim, dst, ddt, vals, valids, second):
        """The result of any other operation, and its validity (a second output written)."""
        if prim.opcode == 'quantize_mx':  # into dst's MX type; the scale's other rows kept
            before, ok = self._read_tile(second, op)
            out, scales = _prims.quantize_mx_values(vals[0], ddt, before)
            valid = _validity(op.kind, valids, dst.shape)
            rows = np.zeros(ok.shape[0], dtype=bool)
            g = np.arange(dst.shape[0] // 8)
            rows[32 * (g // 4) + g % 4] = True
            scale_valid = np.array(ok, dtype=bool).reshape(scales.shape)
            scale_valid[rows, :dst.shape[1]] = bool(np.all(valid))
            self._write_tile(second, scales, scale_valid)
        elif op.kind == 'load_add':  # dst + src in fp32 (a DMA read-add-write)
            before, ok = self._read_tile(op.args[0], op)
            out = before.astype(np.float32) + np.asarray(
                prim.impl(*vals), np.float32).reshape(before.shape)
            valid = _validity(op.kind, valids, dst.shape) & ok
        elif op.kind == 'isa.stream_shuffle':  # its elements' validity moves with them
            out = prim.impl(*vals)
            kept = vals[1] is not None
            valid = np.asarray(prim.impl(valids[0], valids[1] if kept else None, *vals[2:]),
                               dtype=bool)
        else:
            out = prim.impl(*vals)
            valid = _validity(op.kind, valids, dst.shape)
            if prim.reduce is None and ('O' in prim.layout or 'O?' in prim.layout):
                out, values = out  # a second result of its own (written when it is given)
                if second is not None:
                    values = np.asarray(values)
                    # of another shape than dst's ([P, 8] indices of a [P, N] result): a row
                    # valid where dst's row is
                    ok = valid if values.shape == valid.shape else np.broadcast_to(
                        valid.all(axis=1, keepdims=True), values.shape)
                    self._write_tile(second, values, ok)
        return out, valid

    def _reduce(self, op, prim, dst, ddt, out, valid, second):
        """The reduction of each row of dst as stored, into the second output (through the
        engine's reduce registers where it has them)."""
        reduces = prim.reduce is not None and not (
            prim.opcode == 'exponential' and second is None and
            not op.args[prim.fields.index('flags')])  # (an exponential without its sum)
        if reduces:  # the reduction of each row of dst as stored
            if op.args[0].__class__ is IndirectRef:  # (as computed: a scatter may repeat columns)
                stored = np.zeros(dst.shape, dtype=dst.dtype)
                write_values(stored, ddt, np.asarray(out).reshape(dst.shape))
                stored, ok = read_values(stored, ddt), np.broadcast_to(valid, dst.shape)
            else:
                stored, ok = self._read_tile(op.args[0], op)
            rows = stored.reshape(stored.shape[0], -1).astype(np.float32)
            alu = prim.reduce[1:] if prim.reduce.startswith('=') else \
                op.args[prim.fields.index(prim.reduce)]
            r, r_ok = reduce_rows(alu, rows), ok.reshape(ok.shape[0], -1).all(axis=1)[:, None]
            if prim.opcode in self.registers:  # through the engine's reduce registers
                regs, regs_ok = self.registers[prim.opcode]
                flags = op.args[prim.fields.index('flags')]
                p0 = self._first_partition(op.args[0])
                rows_at = slice(p0, p0 + r.shape[0])
                if 'rzero' in flags:
                    regs[rows_at] = 0
                    regs_ok[rows_at] = True
                elif 'racc' in flags:
                    regs[rows_at] = alu_op(alu, regs[rows_at], r)
                    regs_ok[rows_at] &= r_ok
                else:
                    regs[rows_at] = r
                    regs_ok[rows_at] = r_ok
                r, r_ok = regs[rows_at].copy(), regs_ok[rows_at].copy()
            if second is not None:
                self._write_tile(second, r, r_ok)

    def output(self, tensor):
        """The values of an HBM tensor, in its shape."""
        return self.hbm[tensor.id].reshape(tensor.shape)


def register_values(trace, registers, api, site):
    """The values registers hold at this point of the kernel's recording (a loop the device
    runs reads its bounds there, nl.dynamic_range): the operations recorded so far run on the
    caller's arrays. Only outside the kernel's other loops, whose operations are not yet one
    body."""
    if any(kind not in ('spmd', 'static') for kind, _ in trace.loops):
        raise unsupported(api, 'a loop bound read from a register inside another loop', site)
    tensors = []
    for t, kind, values in trace.tensors:
        if values is None and kind == 'input':
            arr = trace.arrays.get(t.id)
            if arr is None:
                raise KernelError(api, 'a loop bound read from a register needs the kernel\'s '
                                  f'input values ({t.name} is a placeholder)', site)
            values = _dtypes.round_to(np.asarray(arr), t.dtype_name)
        tensors.append((t, kind, values))
    ops = [op for op in trace.ops if op.variant in (None, 'hoist')]
    run = Interpreter(trace, tensors, ops).run()
    states = getattr(run, 'core_states', {})
    vregs = states[trace.core][3] if trace.core in states else run.vregs
    out = []
    for r in registers:
        if r.number not in vregs:
            raise KernelError(api, f'register {r.number} is read before anything was loaded or '
                              'moved into it', site)
        out.append(vregs[r.number])
    return out

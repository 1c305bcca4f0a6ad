"""A kernel's values: its recording replayed with numpy, iteration by iteration, each
primitive computed as _prims declares it and rounded to its destination's dtype (bfloat16 as the
device rounds, _dtypes.round_bf16). Tiles allocated by the builder hold the values of their own
instance; directly allocated ones (nki.compiler.sbuf) live in a byte image of SBUF, so tiles
that share bytes share values, in program order, as on the device."""

import collections

import numpy as np

from . import _dtypes
from ._index import Affine
from ._prims import PRIMS
from ._tensors import TileRef

def read_values(arr, dtype):
    """A copy of tile or tensor values, held as _dtypes.holder(dtype)."""
    return np.array(arr, dtype=_dtypes.holder(dtype))


def write_values(arr, dtype, values):
    """Stores values into arr (held values, or the SBUF image in the dtype itself), rounded to
    dtype."""
    arr[...] = np.broadcast_to(_dtypes.round_to(values, dtype), arr.shape)


class Interpreter:
    """Runs a recording (_trace.Trace) on numpy arrays."""

    def __init__(self, trace):
        self.trace = trace
        self.index = {}  # loop id -> current index
        self.hbm = []  # flat values of each HBM tensor
        self.written = []
        for t, kind, values in trace.tensors:
            n = int(np.prod(t.shape))
            dt = _dtypes.holder(t.dtype_name)
            self.hbm.append(np.array(values, dtype=dt).reshape(n) if values is not None
                            else np.zeros(n, dtype=dt))
            self.written.append(False)
        keep = collections.Counter()
        for op in trace.ops:
            for a in op.args:
                if a.__class__ is TileRef:
                    keep[a[0]] = max(keep[a[0]], a[1] + 1)
        self.instances = {d.id: collections.deque(maxlen=max(1, keep[d.id]))
                          for d in trace.decl_list}
        self.sbuf = None

    def value(self, x):
        if isinstance(x, Affine):
            return x.c + sum(coef * self.index[loop.id] for loop, coef in x.terms)
        return x

    def run(self):
        ops = self.trace.ops
        ends, stack = {}, []
        for i, op in enumerate(ops):
            if op.kind == 'loop':
                stack.append(i)
            elif op.kind == 'end':
                ends[stack.pop()] = i
        self._range(ops, ends, 0, len(ops))
        return self

    def _range(self, ops, ends, begin, end):
        i = begin
        while i < end:
            op = ops[i]
            if op.kind == 'loop':
                loop = op.args[0]
                for k in range(loop.trips):
                    self.index[loop.id] = k
                    self._range(ops, ends, i + 1, ends[i])
                i = ends[i] + 1
                continue
            if op.kind != 'end' and all(self.index[loop.id] == 0 for loop in op.when):
                self._exec(op)
            i += 1

    def _tile(self, ref):
        """The numpy view of a tile operand, and its dtype."""
        decl_id, back, block, p0, pc, f0, fc, es = ref
        decl = self.trace.decl_list[decl_id]
        block, p0, f0 = self.value(block), self.value(p0), self.value(f0)
        if decl.offsets is not None:  # directly allocated: the SBUF image
            if self.sbuf is None:
                self.sbuf = np.zeros((self.trace.limits['partitions'],
                                      self.trace.limits['sbuf_bytes']), dtype=np.uint8)
            off = decl.offsets[decl.phys[block]]
            raw = self.sbuf[:decl.partitions, off:off + decl.bytes]
            arr = raw.view(np.dtype(decl.dtype)).reshape(decl.partitions, decl.elems)
        else:
            inst = self.instances[decl_id][back]
            arr = inst.get(block)
            if arr is None:
                arr = np.zeros((decl.partitions, decl.elems),
                               dtype=_dtypes.holder(decl.dtype))
                inst[block] = arr
        step = es if fc > 1 else 1
        return arr[p0:p0 + pc, f0:f0 + step * (fc - 1) + 1:step], decl.dtype

    def _hbm(self, ref):
        tensor, first, rows, elems, row_stride = ref
        flat = self.hbm[tensor]
        first = self.value(first)
        size = flat.itemsize
        view = np.lib.stride_tricks.as_strided(flat[first:], shape=(rows, elems),
                                               strides=(row_stride * size, size),
                                               writeable=row_stride != 0)
        return view, self.trace.tensors[tensor][0].dtype_name

    def _exec(self, op):
        if op.kind == 'declare':
            self.instances[op.args[0].id].appendleft({})
            return
        prim = PRIMS[op.kind]
        if op.kind == 'store':
            view, dtype = self._hbm(op.args[0])
            src, sdt = self._tile(op.args[1])
            write_values(view, dtype, read_values(src, sdt))
            self.written[op.args[0][0]] = True
            return
        if op.kind == 'print':
            src, sdt = self._tile(op.args[0])
            prim.impl(read_values(src, sdt).reshape(op.args[2]), op.args[1])
            return
        dst, ddt = self._tile(op.args[0])
        vals = []
        for what, a in zip(prim.layout[1:], op.args[1:]):
            if what in ('T', 'T?') and a is not None:
                v, dt = self._tile(a)
                vals.append(read_values(v, dt))
            elif what == 'H':
                v, dt = self._hbm(a)
                vals.append(read_values(v, dt))
            else:
                vals.append(a)
        if prim.shaped:
            vals.append(dst.shape)
        if op.kind == 'matmul':
            acc = vals.pop()
            out = prim.impl(*vals, acc)
            if isinstance(acc, tuple):
                acc = not all(self.index[loop.id] == 0 for loop in acc)
            if acc:
                out = read_values(dst, ddt) + out
        else:
            out = prim.impl(*vals)
        write_values(dst, ddt, np.asarray(out).reshape(dst.shape) if np.ndim(out) else out)

    def output(self, tensor):
        """The values of an HBM tensor, in its shape."""
        return self.hbm[tensor.id].reshape(tensor.shape)

"""nki.compiler: kernel decorators and direct allocation, each declared once."""

import inspect
import itertools
import math

from . import _trace
from ._errors import KernelError
from ._registry import api, value


@api('compiler.skip_middle_end_transformations', signature='kernel')
def skip_middle_end_transformations(kernel):
    """Marks an ISA-style kernel: program order, one buffer per declared tile."""
    target = getattr(kernel, 'func', kernel)
    target._trnsim_isa = True
    if target is not kernel:
        kernel._trnsim_isa = True
    return kernel


@api('compiler.enable_stack_allocator', signature='kernel=None, log_level=None')
def enable_stack_allocator(kernel=None, log_level=None):
    """Accepted and ignored: trnsim's builder allocates the same way either way."""
    return kernel if kernel is not None else (lambda k: k)


class NoReorder:
    """What nki.compiler.no_reorder() (beta 1) and nl.no_reorder() (NKI 0.7) return: a
    directive that the compiler keep the operations of a loop (directives=) or a `with` block
    in program order. Both are recorded (`order kept` ... `order free` around the block or the
    loop): the compiler's scheduler leaves their instructions in program order."""

    def __enter__(self):
        t = _trace.Trace.current
        if t is not None:
            t.order_mark(True)
        return self

    def __exit__(self, *exc):
        t = _trace.Trace.current
        if t is not None:
            t.order_mark(False)
        return False

    def __repr__(self):
        return 'no_reorder()'


@api('compiler.no_reorder', 'beta1', signature='')
def no_reorder():
    return NoReorder()


@api('language.no_reorder', '0.7', signature='')
def no_reorder_0():
    return NoReorder()


@api('compiler.force_auto_alloc', signature='kernel=None')
def force_auto_alloc(kernel=None):
    """Accepted and ignored (tiles without direct allocation are allocated by the builder)."""
    return kernel if kernel is not None else (lambda k: k)


class DirectAlloc:
    """A direct allocation: the byte address of every logical tile of a tensor, in SBUF, or
    (`psum`) in PSUM, where func gives (bank, partition, address in the bank)."""

    def __init__(self, func, key, psum=False):
        self.func = func
        self._key = key
        self.space = 'psum' if psum else 'sbuf'

    def key(self):
        return self._key

    def layout(self, blocks, partitions, tile_bytes, api_name, site):
        """(distinct (first partition, byte offset) places, block index -> position in
        them)."""
        offsets, where = [], {}
        for b in itertools.product(*(range(n) for n in blocks)):
            got = self._call(b, partitions, tile_bytes, api_name, site)
            if self.space == 'psum':  # (bank, partition, address in the bank)
                bank, part, addr = got if len(got) == 3 else (got[0], 0, got[1])
                addr = int(bank) * PSUM_BANK + int(addr)
            else:
                part, addr = got if isinstance(got, tuple) else (0, got)
            place = (int(part), int(addr))
            if place not in offsets:
                offsets.append(place)
            where[b] = offsets.index(place)
        return offsets, where.__getitem__

    def _call(self, idx, pdim_size, fdim_size, api_name, site):
        """func called as the compiler calls it, by the reference's parameter names (a
        functools.partial binding other parameters works; other names are an error)."""
        try:
            inspect.signature(self.func).bind(idx=idx, pdim_size=pdim_size,
                                              fdim_size=fdim_size)
        except TypeError as e:
            raise KernelError(api_name, f'the {self.space} allocation function is called as '
                              'func(idx=, pdim_size=, fdim_size=) (nki.compiler.'
                              f'{self.space}.alloc): {e}', site) from None
        except ValueError:  # a builtin without a signature: called the same way
            pass
        return self.func(idx=idx, pdim_size=pdim_size, fdim_size=fdim_size)


def _modulo(base, shape, scale):
    def func(indices):
        s = shape if shape else (1,) * len(indices)
        mod = tuple(i % n for i, n in zip(indices, s))
        return sum(i * math.prod(s[d + 1:]) for d, i in enumerate(mod)) * scale + base
    return func


class Sbuf:
    """nki.compiler.sbuf: direct allocation in SBUF."""

    @staticmethod
    def mod_alloc(*, base_addr, base_partition=0, num_par_tiles=(), num_free_tiles=()):
        """Logical tile idx at partition base_partition + (idx mod num_par_tiles, linearised) x
        its partitions, byte base_addr + (idx mod num_free_tiles, linearised) x tile bytes."""
        def func(idx, pdim_size, fdim_size):
            return (_modulo(base_partition, tuple(num_par_tiles), pdim_size)(idx),
                    _modulo(base_addr, tuple(num_free_tiles), fdim_size)(idx))
        return DirectAlloc(func, ('mod', base_addr, base_partition, tuple(num_par_tiles),
                                  tuple(num_free_tiles)))

    @staticmethod
    def alloc(func):
        """Logical tile idx where func(idx=, pdim_size=, fdim_size=) puts it (called by
        those names, as the compiler calls it: the reference's names). Functions of the same
        code with the same captured values (a lambda written in a loop, made again in each
        iteration) are one allocation."""
        try:
            cells = tuple(c.cell_contents for c in (func.__closure__ or ()))
            key = ('func', func.__code__, cells, func.__defaults__)
            hash(key)
        except (AttributeError, TypeError, ValueError):
            key = ('func', id(func))
        return DirectAlloc(func, key)

    @staticmethod
    def auto_alloc():
        return None


PSUM_BANK = 2048  # bytes of a PSUM bank per partition (core.psum.bank_size)


class Psum:
    """nki.compiler.psum: direct allocation in PSUM, in banks of 2 KiB per partition."""

    @staticmethod
    def mod_alloc(*, base_bank=0, base_addr=0, base_partition=0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()):
        """Logical tile idx in bank base_bank + (idx mod num_bank_tiles, linearised), at
        base_addr + (idx mod num_free_tiles, linearised) x tile bytes in it."""
        def func(idx, pdim_size, fdim_size):
            return (_modulo(base_bank, tuple(num_bank_tiles), 1)(idx),
                    _modulo(base_partition, tuple(num_par_tiles), pdim_size)(idx),
                    _modulo(base_addr, tuple(num_free_tiles), fdim_size)(idx))
        return DirectAlloc(func, ('psum mod', base_bank, base_addr, base_partition,
                                  tuple(num_bank_tiles), tuple(num_par_tiles),
                                  tuple(num_free_tiles)), psum=True)

    @staticmethod
    def alloc(func):
        """Logical tile idx where func(idx=, pdim_size=, fdim_size=) puts it: (bank,
        partition, address in the bank)."""
        a = Sbuf.alloc(func)
        return DirectAlloc(func, ('psum',) + a.key(), psum=True)

    @staticmethod
    def auto_alloc():
        return None


value('compiler.sbuf', Sbuf)
value('compiler.psum', Psum)

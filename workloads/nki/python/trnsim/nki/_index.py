"""Index expressions: live loop indices (a value, and how it moves with its loop), nl.arange
ranges, masks, and the normalisation of a subscript into one component per dimension."""

import numpy as np

from ._errors import KernelError, UserFacing, unsupported, user_site

INTEGER = (int, np.integer)


class LoopIndex:
    """The counter of an NKI loop, 0 .. trips - 1 (the kernel sees start + step * it): while
    the kernel runs the loop, `cur` is the iteration running and `open` is true; in the
    recording it is the loop variable Ln (`id`)."""

    __slots__ = ('id', 'trips', 'cur', 'open', 'identity', 'consumed', 'register', 'shift',
                 'kind', 'iteration_clock', 'span')

    def __init__(self, loop_id, trips, identity=None, register=False):
        self.id, self.trips = loop_id, trips
        self.cur, self.open = 0, True
        self.identity = identity  # which loop of the kernel (its sites)
        self.consumed = False  # the kernel's Python asked for its index's value
        # a compiled loop's (nl.fori_loop): its index is a register, with no value when the
        # kernel is traced
        self.register = register
        # iterations not run after its last one ran (a traced loop whose first two iterations
        # stand for all): its index from that iteration stands for the last one's
        self.shift = 0
        self.kind = 'range'  # the construct the kernel wrote (the recording says it)
        self.iteration_clock = 0  # Trace.clock when its current iteration began
        # The counters (lo, hi) the current iteration's recording holds for, where each
        # comparison of the index (a mask's cut, IndexRange._bound, or the kernel's own,
        # _on_comparison) comes out alike (None: all of them), instead of taking its value
        self.span = None

    def narrow(self, lo, hi):
        """What the current iteration records holds for counters lo .. hi - 1 only."""
        if (lo, hi) == (0, self.trips):
            return
        a, b = self.span or (0, self.trips)
        self.span = (max(a, lo), min(b, hi))

    def counters(self):
        """The counters its open iteration's recording stands for: (lo, hi)."""
        return self.span if self.open and self.span else (0, self.trips)


class Span:
    """A condition of a recorded operation: it runs in iterations lo .. hi - 1 of `loop`
    (the part of a folded loop whose iterations recorded it: docs/nki.md, "The recording")."""

    __slots__ = ('loop', 'lo', 'hi')

    def __init__(self, loop, lo, hi):
        self.loop, self.lo, self.hi = loop, lo, hi

    # (by the loop's id: an inner loop is a LoopIndex of its own in each outer iteration, and
    # the recordings of two iterations compare their conditions)
    def __eq__(self, other):
        return isinstance(other, Span) and (self.loop.id, self.lo, self.hi) == \
            (other.loop.id, other.lo, other.hi)

    def __hash__(self):
        return hash((self.loop.id, self.lo, self.hi))

    def text(self):
        return f'L{self.loop.id}@{self.lo}:{self.hi}'


def holds(condition, index):
    """Whether a recorded operation's condition (a loop: its index is 0; a Span) holds at
    the loops' indices `index` (by loop id)."""
    if condition.__class__ is Span:
        return condition.lo <= index[condition.loop.id] < condition.hi
    return index[condition.id] == 0


def condition_text(condition):
    return condition.text() if condition.__class__ is Span else f'L{condition.id}'


class Affine(UserFacing):
    """A loop index or an integer expression of loop indices, in two forms. Live (what the
    kernel holds while it runs): its value in the iteration it was made in, `v`, and how it
    changes with the counters of the loops still open (`_terms`: loop, coef, the iteration it
    was made in): +, - and * by integers keep that; a comparison with an integer is its result
    now, noted on the loop (_on_comparison); anything else (//, %, int(), a float) is its
    value, as Python's own int would be. Frozen (in the recording, `v` None):
    c + sum of coef * Ln, the same in every iteration of its loops."""

    __slots__ = ('_c', '_terms', 'v')
    _kind = 'a loop index'

    def __init__(self, c, terms, v=None):
        self._c = c
        self._terms = terms  # live: (LoopIndex, coef, at); frozen: (LoopIndex, coef)
        self.v = v

    @staticmethod
    def index(loop, start, step, k):
        """The index start + step * counter of `loop` in its iteration k (live)."""
        return Affine(None, ((loop, int(step), k),), int(start) + int(step) * k) if step \
            else int(start)

    @property
    def terms(self):
        """(loop, coef) of its open loops, ordered by loop id."""
        if self.v is None:
            return self._terms
        coefs = {}
        for lp, k, _ in self._terms:
            if lp.open:
                got = coefs.get(id(lp))
                coefs[id(lp)] = (lp, k + (got[1] if got else 0))
        return tuple(sorted((t for t in coefs.values() if t[1]), key=lambda t: t[0].id))

    @property
    def now(self):
        """Its value now (an index of an iteration that stands for later ones: the last's)."""
        v = self.v
        for lp, k, at in self._terms:
            if lp.shift and at == lp.cur:
                v += k * lp.shift
        return v

    @property
    def c(self):
        """Its value when every open loop's counter is 0."""
        if self.v is None:
            return self._c
        return self.now - sum(k * lp.cur for lp, k, _ in self._terms if lp.open)

    def loops(self):
        return tuple(loop for loop, _ in self.terms)

    def frozen(self):
        """Its recording form now: c + coef * Ln over the loops open now (an int when none)."""
        if self.v is None:
            return self
        terms = self.terms
        return Affine(self.c, terms) if terms else self.now

    def fixed_where_consumed(self):
        """It with the loops whose value the kernel's Python asked for fixed at their counters
        now (each of their iterations records its own), the others still live."""
        if self.v is None:
            return self
        keep = tuple(t for t in self._terms if not (t[0].open and t[0].consumed))
        if len(keep) == len(self._terms):
            return self
        return Affine(self._c, keep, self.v) if keep else self.now

    def _value(self):
        """Its value, asked for by the kernel's Python (noted on its loops)."""
        if self.v is None:
            raise RuntimeError('trnsim.nki: the value of a recorded index expression')
        for loop, _, _ in self._terms:
            if loop.open:
                if loop.register:
                    raise KernelError('nl.fori_loop', 'the index of a compiled loop is a '
                                      'register: it has no value when the kernel is traced '
                                      '(index tensors with it; branch with a static Python '
                                      'loop instead)', user_site())
                loop.consumed = True
        return self.now

    def __index__(self):
        return self._value()

    __int__ = __index__

    def __bool__(self):
        return self != 0

    def __float__(self):
        return float(self._value())

    def __complex__(self):
        return complex(self._value())

    def __hash__(self):
        return hash(self._value())

    def __str__(self):
        return str(self._value())

    def __format__(self, spec):
        return format(self._value(), spec)

    def __round__(self, n=None):
        return round(self._value(), n)

    def __trunc__(self):
        return self._value()

    __floor__ = __ceil__ = __trunc__

    def __abs__(self):
        return abs(self._value())

    def __invert__(self):
        return ~self._value()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy with a loop index: integer +, -, * stay affine; anything else is on its
        value."""
        if method == '__call__' and not kwargs and len(inputs) == 2 and \
                all(isinstance(x, (INTEGER, Affine)) for x in inputs):
            a, b = inputs
            op = {np.add: '__add__', np.subtract: '__sub__', np.multiply: '__mul__'}.get(ufunc)
            if op is not None:
                if isinstance(a, Affine):
                    return getattr(a, op)(b)
                return getattr(b, {'__add__': '__radd__', '__sub__': '__rsub__',
                                   '__mul__': '__rmul__'}[op])(a)
        values = [x._value() if isinstance(x, Affine) else x for x in inputs]
        return getattr(ufunc, method)(*values, **kwargs)

    def __repr__(self):
        return f'<loop index {text(self)}>' if self.v is None else repr(self.now)

    def __add__(self, other):
        if isinstance(other, INTEGER):
            return Affine(None, self._terms, self.v + int(other))
        if isinstance(other, Affine):
            coefs = {}
            for loop, coef, at in self._terms + other._terms:
                got = coefs.get((id(loop), at))
                coefs[(id(loop), at)] = (loop, coef + (got[1] if got else 0), at)
            terms = tuple(t for t in coefs.values() if t[1])
            v = self.v + other.v
            return Affine(None, terms, v) if terms else v
        if isinstance(other, (float, complex, np.number)):
            return self._value() + other
        return NotImplemented

    __radd__ = __add__

    def __neg__(self):
        return self * -1

    def __pos__(self):
        return self

    def __sub__(self, other):
        if isinstance(other, (INTEGER, Affine)):
            return self + (-other)
        if isinstance(other, (float, complex, np.number)):
            return self._value() - other
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, INTEGER):
            return (-self) + int(other)
        if isinstance(other, (float, complex, np.number)):
            return other - self._value()
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, INTEGER):
            k = int(other)
            if k == 0:
                return 0
            return Affine(None, tuple((loop, coef * k, at) for loop, coef, at in self._terms),
                          self.v * k)
        if isinstance(other, Affine):
            return self._value() * other._value()
        if isinstance(other, (float, complex, np.number)):
            return self._value() * other
        return NotImplemented

    __rmul__ = __mul__


def _value_of(x):
    return x._value() if isinstance(x, Affine) else x


def _on_value(name):
    def method(self, *args):
        return getattr(self._value(), name)(*(_value_of(a) for a in args))
    method.__name__ = name
    return method


def _on_comparison(name):
    """A comparison of a live index with an integer or an index of the same one loop: its
    result now, the iterations where it is the same noted as the ones this iteration's
    recording holds for (LoopIndex.narrow) instead of the index's value taken."""
    def method(self, other):
        loop = _moving_loop((self, other)) if isinstance(other, (INTEGER, Affine)) else None
        if loop is None or other.__class__ is bool:
            return getattr(self._value(), name)(_value_of(other))

        def result(k):
            return getattr(int(_at_counter(self, loop, k)), name)(int(_at_counter(other, loop, k)))
        if name in ('__eq__', '__ne__'):  # (not monotone: the side of the equality it is on)
            a = _at_counter(self, loop, 0) - _at_counter(other, loop, 0)
            b = _at_counter(self, loop, 1) - _at_counter(other, loop, 1) - a
            at = -a // b if b and a % b == 0 else None
            cur = loop.cur
            if at is None or not 0 <= at < loop.trips:
                span = (0, loop.trips)
            else:
                span = (at, at + 1) if cur == at else (0, at) if cur < at else (at + 1, loop.trips)
        else:
            span = _level_span(result, loop)
        loop.narrow(*span)
        return result(loop.cur)
    method.__name__ = name
    return method


for _name in ('__floordiv__',
              '__rfloordiv__', '__mod__', '__rmod__', '__truediv__', '__rtruediv__',
              '__divmod__', '__rdivmod__', '__pow__', '__rpow__', '__and__', '__rand__',
              '__or__', '__ror__', '__xor__', '__rxor__', '__lshift__', '__rlshift__',
              '__rshift__', '__rrshift__'):
    setattr(Affine, _name, _on_value(_name))
for _name in ('__eq__', '__ne__', '__lt__', '__le__', '__gt__', '__ge__'):
    setattr(Affine, _name, _on_comparison(_name))


def frozen(x):
    """x in the recording's form (a live loop index frozen over the loops open now)."""
    return x.frozen() if x.__class__ is Affine else x


def concrete(x):
    """x as an int: a loop index's value now (what is recorded then depends on it: noted on
    its loops, as the kernel's own use of the value is)."""
    if isinstance(x, Affine):
        return x._value()
    return int(x)


def settled(x, fits):
    """x, a loop index expression, as it stands in this iteration where its values over
    every iteration do not fit: first with the loops the kernel's Python asked the value of
    fixed at their counters now, then with every loop fixed (the loops then record each
    iteration's own: a bound the kernel checked in Python, as min(start + size, n) or
    `if i < n:`, keeps the iterations it ran in bounds)."""
    if not isinstance(x, Affine) or fits(x):
        return x
    y = x.fixed_where_consumed()
    return y if fits(y) else concrete(x)


def low(x):
    """The smallest value x takes over its open loops' iterations (those the current
    iteration's recording stands for: LoopIndex.counters)."""
    if not isinstance(x, Affine):
        return int(x)
    return x.c + sum(min(coef * a, coef * (b - 1))
                     for loop, coef in x.terms for a, b in (loop.counters(),))


def high(x):
    """The largest value x takes over its open loops' iterations (as low)."""
    if not isinstance(x, Affine):
        return int(x)
    return x.c + sum(max(coef * a, coef * (b - 1))
                     for loop, coef in x.terms for a, b in (loop.counters(),))


def _moving_loop(xs):
    """The one open loop the live index expressions xs move with, when it is one whose
    iterations the kernel's Python runs (None: no loop, several, or a compiled loop's)."""
    loops = {}
    for x in xs:
        if isinstance(x, Affine) and x.v is not None:
            for loop, _ in x.terms:
                loops[id(loop)] = loop
    if len(loops) != 1:
        return None
    loop = next(iter(loops.values()))
    return None if loop.register or loop.shift else loop


def _at_counter(x, loop, k):
    """The value live expression x takes at counter k of `loop` (its only loop)."""
    if not isinstance(x, Affine):
        return x
    return x.c + sum(c for lp, c in x.terms if lp is loop) * k


def _level_span(f, loop):
    """The counters (lo, hi) around the current one where f (monotone in the counter, or a
    tuple of such) takes its current value: an interval, found by bisection."""
    want, cur = f(loop.cur), loop.cur
    lo, hi = 0, cur
    while lo < hi:
        mid = (lo + hi) // 2
        if f(mid) == want:
            hi = mid
        else:
            lo = mid + 1
    first = lo
    lo, hi = cur, loop.trips - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f(mid) == want:
            lo = mid
        else:
            hi = mid - 1
    return first, lo + 1


def text(x):
    """x in the recording's text form: 3, 512*L2+3, -1*L0+7."""
    if not isinstance(x, Affine):
        return str(int(x))
    parts = [f'{coef}*L{loop.id}' for loop, coef in x.terms]
    if x.c or not parts:
        parts.append(str(x.c))
    return '+'.join(parts)


def same(a, b):
    """a and b are the same value for every loop index (ints or affine expressions)."""
    if isinstance(a, Affine) or isinstance(b, Affine):
        d = a - b
        return not isinstance(d, Affine) and d == 0
    return int(a) == int(b)


class IndexRange(UserFacing):
    """An affine index start + step * i, i < size, on tile axis `axis` (None: in order); start
    may depend on loop indices. `grid`: the sizes of the nl.mgrid it is an axis of (None: an
    nl.arange)."""
    _kind = 'an index'

    __slots__ = ('start', 'size', 'step', 'axis', 'grid')

    def __init__(self, start, size, step=1, axis=None, grid=None):
        self.start, self.size, self.step, self.axis = start, size, step, axis
        self.grid = grid

    def _with(self, start=None, step=None, axis=None):
        return IndexRange(self.start if start is None else start, self.size,
                          self.step if step is None else step,
                          self.axis if axis is None else axis, self.grid)

    def __add__(self, other):
        if isinstance(other, (INTEGER, Affine)):
            return self._with(start=self.start + other)
        if isinstance(other, (IndexRange, IndexExpr)):
            return IndexExpr.of(self) + other
        raise unsupported('index expression', 'only index + integer is supported in an index')

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, (INTEGER, Affine)):
            return self.__add__(-other)
        if isinstance(other, (IndexRange, IndexExpr)):
            return IndexExpr.of(self) - other
        raise unsupported('index expression', 'only index - integer is supported in an index')

    def __mul__(self, other):
        if isinstance(other, INTEGER):
            return IndexRange(self.start * int(other), self.size, self.step * int(other),
                              self.axis, self.grid)
        raise unsupported('index expression', 'only index * integer is supported in an index')

    __rmul__ = __mul__

    def _split(self, c, op):
        """The index as (quotient, remainder) sub-axes of its tile axis, for // and % by c:
        only a range of whole groups of c (start a multiple of c, step 1, size a multiple of
        c), as the tile's own index split in two."""
        if not isinstance(c, INTEGER) or int(c) < 1:
            raise unsupported('index expression', f'index {op} {c!r} (only by a positive '
                              'integer)', user_site())
        c = int(c)
        if self.axis is None or isinstance(self.start, Affine) or self.step != 1 or \
                self.start % c or self.size % c:
            raise unsupported('index expression', f'index {op} {c}: only of an nl.arange '
                              f'index in whole groups of {c} (start a multiple, step 1)',
                              user_site())
        return c, (self.axis, 0, c), (self.axis, 1, c)

    def __floordiv__(self, c):
        c, q, r = self._split(c, '//')
        return IndexExpr(self.start // c, {q: (self.size // c, 1), r: (c, 0)})

    def __mod__(self, c):
        c, q, r = self._split(c, '%')
        return IndexExpr(0, {q: (self.size // c, 0), r: (c, 1)})

    def _unsupported(self, *args):
        raise unsupported('index expression', 'only +, -, * by integers, and // or % by a '
                          'positive integer, in an index', user_site())

    __truediv__ = __rtruediv__ = __rsub__ = __neg__ = __pow__ = __rfloordiv__ = __rmod__ = \
        _unsupported

    def _compare(self, n, op, **bound):
        """A mask for a comparison with an integer; an affine predicate with another index."""
        if isinstance(n, (IndexRange, IndexExpr)):
            return AffinePredicate(IndexExpr.of(self) - n, op)
        return self._bound(**bound)

    def _bound(self, lo=None, hi=None):
        """The mask keeping the tile indices i whose value start + step * i is in [lo, hi)
        (lo, hi: integers, or loop index expressions). When they move with one loop, its
        index's value is not taken: the iterations that cut the tile alike are noted as the
        ones this iteration's recording holds for (LoopIndex.narrow), so that a loop whose
        last tile alone is partial folds into one body with that iteration apart."""
        if self.axis is None:
            raise unsupported('mask', 'a mask on an index without a tile axis (use '
                              'nl.arange(n)[:, None], [None, :] or nl.mgrid)')
        loop = _moving_loop((self.start, lo, hi)) if self.step else None
        if loop is not None:
            def kept(k):
                return self._kept(_at_counter(self.start, loop, k),
                                  None if lo is None else _at_counter(lo, loop, k),
                                  None if hi is None else _at_counter(hi, loop, k))
            loop.narrow(*_level_span(kept, loop))
            return Mask({self.axis: kept(loop.cur)})
        return Mask({self.axis: self._kept(concrete(self.start),
                                           None if lo is None else concrete(lo),
                                           None if hi is None else concrete(hi))})

    def _kept(self, start, lo, hi):
        """The tile indices [i_lo, i_hi) whose values start + step * i are in [lo, hi)."""
        step = self.step
        if step > 0:
            i_lo = 0 if lo is None else -(-(lo - start) // step)
            i_hi = self.size if hi is None else -(-(hi - start) // step)
        elif step < 0:  # (the values fall: lo bounds the last index, hi the first)
            i_lo = 0 if hi is None else (start - hi) // -step + 1
            i_hi = self.size if lo is None else (start - lo) // -step + 1
        else:
            keep = (lo is None or start >= lo) and (hi is None or start < hi)
            i_lo, i_hi = 0, self.size if keep else 0
        return max(0, i_lo), min(self.size, i_hi)

    def __lt__(self, n):
        if isinstance(n, (IndexRange, IndexExpr)):
            return self._compare(n, 'is_lt')
        return self._bound(hi=_limit(n))

    def __le__(self, n):
        if isinstance(n, (IndexRange, IndexExpr)):
            return self._compare(n, 'is_le')
        return self._bound(hi=_limit(n) + 1)

    def __ge__(self, n):
        if isinstance(n, (IndexRange, IndexExpr)):
            return self._compare(n, 'is_ge')
        return self._bound(lo=_limit(n))

    def __gt__(self, n):
        if isinstance(n, (IndexRange, IndexExpr)):
            return self._compare(n, 'is_gt')
        return self._bound(lo=_limit(n) + 1)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axes = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(axes) != 1 or any(k is not None for k in key if not isinstance(k, slice)):
            raise unsupported('nl.arange indexing', 'use nl.arange(n)[:, None] or [None, :]')
        return self._with(axis=axes[0])


def _limit(n):
    """A mask comparison's other side: a loop index expression kept live, else an int."""
    return n if isinstance(n, Affine) else concrete(n)


class IndexExpr(UserFacing):
    """An affine expression of indices on several tile axes, const + sum of coef * k_axis with
    k_axis < size: what nisa.iota takes (`i_p * 512 + i_f`). Not an index of a tensor."""
    _kind = 'an index expression'

    def __init__(self, const, terms, grid=None):
        self.const = const
        self.terms = terms  # axis -> (size, coef)
        self.grid = grid  # the sizes of the nl.mgrid its indices are axes of (None: unknown)

    @staticmethod
    def of(x):
        if isinstance(x, IndexExpr):
            return x
        if x.axis is None:
            raise unsupported('index expression', 'an index without a tile axis (use '
                              'nl.arange(n)[:, None] or [None, :])')
        return IndexExpr(x.start, {x.axis: (x.size, x.step)}, x.grid)

    def __add__(self, other):
        if isinstance(other, (INTEGER, Affine)):
            return IndexExpr(self.const + other, dict(self.terms), self.grid)
        other = IndexExpr.of(other)
        terms = dict(self.terms)
        for a, (n, k) in other.terms.items():
            if a in terms:
                if terms[a][0] != n:
                    raise unsupported('index expression', f'tile axis {a} with sizes '
                                      f'{terms[a][0]} and {n}')
                terms[a] = (n, terms[a][1] + k)
            else:
                terms[a] = (n, k)
        return IndexExpr(self.const + other.const, terms,
                         self.grid if self.grid == other.grid else None)

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, IndexRange):
            other = IndexExpr.of(other)
        return self.__add__(-other)

    def __mul__(self, other):
        if not isinstance(other, INTEGER):
            raise unsupported('index expression', 'only expression * integer')
        k = int(other)
        return IndexExpr(self.const * k, {a: (n, c * k) for a, (n, c) in self.terms.items()},
                         self.grid)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    # a comparison of the expression with an integer or another expression: the predicate
    # nisa.affine_select evaluates (expression - other <op> 0)
    def __ge__(self, n):
        return AffinePredicate(self - n, 'is_ge')

    def __gt__(self, n):
        return AffinePredicate(self - n, 'is_gt')

    def __le__(self, n):
        return AffinePredicate(self - n, 'is_le')

    def __lt__(self, n):
        return AffinePredicate(self - n, 'is_lt')


class AffinePredicate(UserFacing):
    """`expr <op> 0` over the tile's indices (op is_ge, is_gt, is_le, is_lt): the predicate of
    nisa.affine_select (beta 1), computed element by element by the GpSimd engine."""
    _kind = 'an affine predicate'

    def __init__(self, expr, op):
        self.expr, self.op = expr, op

    def _combined(self, other):
        raise unsupported('affine predicate', 'comparisons of indices with other indices '
                          'combined with & or | (nisa.affine_select takes one: the reference '
                          'suggests nl.where for more)', user_site())

    __and__ = __rand__ = __or__ = __ror__ = _combined


class Mask:
    """A rectangular mask (comparisons of tile indices, combined with &): on each tile axis,
    the indices [lo, hi) an operation keeps."""

    def __init__(self, bounds):
        self.bounds = dict(bounds)

    def __and__(self, other):
        if isinstance(other, (bool, np.bool_)):  # a comparison of loop indices alone
            return self if other else Mask({**self.bounds, 0: (0, 0)})
        if not isinstance(other, Mask):
            raise unsupported('mask', 'only comparisons of indices combined with & are '
                              'supported in a mask')
        out = dict(self.bounds)
        for axis, (lo, hi) in other.bounds.items():
            a, b = out.get(axis, (lo, hi))
            out[axis] = (max(a, lo), min(b, hi))
        return Mask(out)

    __rand__ = __and__

    def empty(self):
        return any(hi <= lo for lo, hi in self.bounds.values())


def whole_mask(mask, api, site):
    """The mask of an operation that takes none but a mask of loop indices alone (`(2 * i + g)
    * 128 < n`: True or False now): False drops the operation (NothingKept); a mask of tile
    indices is unsupported there."""
    if mask is False:
        raise NothingKept(api)
    if mask is not None and mask is not True:
        raise unsupported(api, 'mask= (other than one of loop indices alone)', site)


def mask_region(mask, shape, api, site):
    """The part of a tile of `shape` a mask keeps, as an index (None: all of it)."""
    if mask is None or mask is True:
        return None
    if mask is False:  # (a mask of loop indices alone, false in this iteration)
        raise NothingKept(api)
    if not isinstance(mask, Mask):
        raise unsupported(api, f'a mask of type {type(mask).__name__}', site)
    idx = [slice(None)] * len(shape)
    for axis, (lo, hi) in mask.bounds.items():
        if axis >= len(shape):
            raise unsupported(api, f'a mask on axis {axis} of a tile of shape {shape}', site)
        lo, hi = max(0, lo), min(shape[axis], hi)
        if hi <= lo:
            raise NothingKept(api)
        idx[axis] = slice(lo, hi)
    return tuple(idx)


class NothingKept(Exception):
    """A mask keeps no element: the operation is not recorded (no instruction), as the NKI
    compiler drops it; the API returns NOTHING."""


class Nothing(UserFacing):
    """What an operation whose mask keeps nothing returns: storing or assigning it does
    nothing; reading it is an error."""
    _kind = 'the result of an operation whose mask keeps nothing'


NOTHING = Nothing()


class DynSlice:
    """nl.ds(start, size): `size` elements from `start` (which may be a loop index)."""

    def __init__(self, start, size):
        self.start = start if isinstance(start, Affine) else int(start)
        self.size = concrete(size)


def _slice(c, n, d, api, site, lenient=False):
    """A slice of a dimension of size n as an IndexRange (`lenient`: past the end too, for an
    HBM access a mask may keep in bounds; the access checks it)."""
    step = 1 if c.step is None else concrete(c.step)
    if not isinstance(c.start, Affine) and not isinstance(c.stop, Affine):
        start, stop, step = c.indices(n)
        if step < 1:
            raise unsupported(api, f'access pattern not supported yet (slice step {step})',
                              site)
        beyond = c.start is not None and c.start > n or c.stop is not None and c.stop > n
        if beyond and not lenient:
            raise KernelError(api, f'slice {c.start}:{c.stop} is out of bounds for '
                              f'dimension {d} of size {n}', site)
        if beyond and step == 1 and (c.start is None or c.start >= 0) and c.stop is not None:
            start, stop = (0 if c.start is None else int(c.start)), int(c.stop)
        size = len(range(start, stop, step))
    else:
        if step < 1:
            raise unsupported(api, f'access pattern not supported yet (slice step {step})',
                              site)
        start = 0 if c.start is None else c.start
        stop = n if c.stop is None else c.stop
        span = stop - start
        if isinstance(span, Affine) or low(start) < 0 or low(stop) < 0:
            # a size that changes with the loop indices, or Python's negative indices: the
            # slice of this iteration's values
            return _slice(slice(concrete(start), concrete(stop), c.step), n, d, api, site,
                          lenient)
        if high(stop) > n and not lenient:  # (past the end in some other iteration)
            start = settled(start, lambda x: high(x + span) <= n)
            stop = start + span
        if (high(start) > n or high(stop) > n) and not lenient:
            raise KernelError(api, f'slice {high(start)}:{high(stop)} is out of bounds for '
                              f'dimension {d} of size {n}', site)
        size = max(0, -(-span // step))
    if size == 0:
        raise EmptySlice(api, f'empty slice on dimension {d}', site)
    return IndexRange(start, size, step)


class EmptySlice(KernelError):
    """A slice of no elements (an HBM tensor's indexing makes an empty view of it instead)."""


class DynamicIndex:
    """A tile of indices as an index component (`t[b, idx_tile, i_f]`): the values it holds at
    run time choose the rows of an HBM tensor (an indirect DMA)."""

    def __init__(self, tile):
        self.tile = tile


def normalise(shape, idx, api, site, lenient=False, dynamic=False):
    """Index components, one per dimension: an integer (or loop index) or an IndexRange.
    `lenient`: an index range may run out of bounds (an HBM access a mask will keep in bounds;
    the access checks it). `dynamic`: a tile of indices may index a dimension (DynamicIndex)."""
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
        cls = c.__class__
        if cls is slice and c.step is None and c.start.__class__ is not Affine and \
                c.stop.__class__ is not Affine:  # the common case, quickly
            start = 0 if c.start is None else c.start
            stop = n if c.stop is None else c.stop
            if 0 <= start < stop <= n:
                out.append(IndexRange(start, stop - start))
                continue
        elif cls is int and 0 <= c < n:
            out.append(c)
            continue
        if isinstance(c, DynSlice):
            c = slice(c.start, c.start + c.size)
        if isinstance(c, (INTEGER, Affine)):
            if not isinstance(c, Affine):
                c = int(c)
            c = settled(c, lambda x: 0 <= low(x) and high(x) < n)
            if low(c) < 0 or high(c) >= n:
                raise KernelError(api, f'index {high(c) if high(c) >= n else low(c)} is out of '
                                  f'bounds for dimension {d} of size {n}', site)
            out.append(c)
        elif isinstance(c, slice):
            out.append(_slice(c, n, d, api, site, lenient))
        elif isinstance(c, IndexRange):
            if c.step < 1:
                raise unsupported(api, 'access pattern not supported yet (index step '
                                  f'{c.step})', site)
            if not lenient:
                c = IndexRange(settled(c.start, lambda x: 0 <= low(x) and high(x) + c.step *
                                       (c.size - 1) < n), c.size, c.step, c.axis, c.grid)
            first, last = low(c.start), high(c.start) + c.step * (c.size - 1)
            if not lenient and (first < 0 or last >= n):
                raise KernelError(api, f'index range {first}..{last} is out of bounds for '
                                  f'dimension {d} of size {n}', site)
            out.append(c)
        elif isinstance(c, IndexExpr):
            if any(coef < 0 for _, coef in c.terms.values()):
                raise unsupported(api, 'access pattern not supported yet (a negative or zero '
                                  'coefficient in an index expression)', site)
            first = low(c.const)
            last = high(c.const) + sum(coef * (size - 1) for size, coef in c.terms.values())
            if not lenient and (first < 0 or last >= n):
                raise KernelError(api, f'index expression {first}..{last} is out of bounds '
                                  f'for dimension {d} of size {n}', site)
            out.append(c)
        elif dynamic and getattr(c, 'space', None) in ('sbuf', 'psum') and \
                hasattr(c, 'shape'):
            out.append(DynamicIndex(c))
        else:
            raise unsupported(api, f'index of type {type(c).__name__}', site)
    ranges = [c for c in out if c.__class__ is IndexRange]
    exprs = [c for c in out if c.__class__ is IndexExpr]
    tagged = [c.axis for c in ranges if c.axis is not None]
    if (tagged or exprs) and len(tagged) != len(ranges):
        raise unsupported(api, 'access pattern not supported yet (nl.arange indices mixed with '
                          'slices)', site)
    return out


def in_order(comps):
    """Whether the components are plain (integers and ranges) with their tile axes, if any, in
    the tensor's dimension order: what the single-run fast paths take."""
    tagged = []
    for c in comps:
        if c.__class__ is IndexExpr:
            return False
        if c.__class__ is IndexRange and c.axis is not None:
            tagged.append(c.axis)
    return tagged == sorted(tagged) and len(set(tagged)) == len(tagged)


def layout(comps, strides, offset=0):
    """An access of the components over dimensions of those element strides: (its first
    element, [(size, stride)] per logical axis in order). Logical axes: the tile axes of
    nl.arange / nl.mgrid indices (by axis number), or the ranges in dimension order."""
    dims = {}
    for d, c in enumerate(comps):
        s = strides[d]
        if c.__class__ is IndexRange:
            key = (0, c.axis) if c.axis is not None else (1, d)
            _add_axis(dims, key, c.size, c.step * s)
            offset = offset + c.start * s
        elif c.__class__ is IndexExpr:
            for axis, (size, coef) in c.terms.items():
                _add_axis(dims, (0, axis), size, coef * s)
            offset = offset + c.const * s
        else:
            offset = offset + c * s
    keys = sorted(dims, key=_axis_order)
    whole = {k[1] for k in keys if k[0] == 0 and not isinstance(k[1], tuple)}
    if any(isinstance(k[1], tuple) and k[1][0] in whole for k in keys):
        raise unsupported('index expression', 'a tile axis used both whole and split by // or '
                          '% in one index')
    return offset, [tuple(dims[k]) for k in keys]


def _axis_order(key):
    """Logical axes in order: tile axes by number (a sub-axis of // and %: the quotient, then
    the remainder, in its axis's place), then ranges by dimension."""
    kind, a = key
    if kind == 0 and isinstance(a, tuple):
        return (0, a[0], a[1], a[2])
    return (kind, a, -1, 0)


def _add_axis(dims, key, size, stride):
    if key in dims:
        if dims[key][0] != size:
            raise unsupported('index expression', f'tile axis {key[1]} with sizes '
                              f'{dims[key][0]} and {size}')
        dims[key][1] += stride
    else:
        dims[key] = [size, stride]


def merge(dims):
    """(count, step) when the dims [(size, stride)], outermost first, are one run of evenly
    spaced elements; else None."""
    step, count = 1, 1
    for size, stride in reversed(dims):
        if size == 1:
            continue
        if stride == 0:  # repeated elements (a // index): never one run
            return None
        if count == 1:
            step, count = stride, size
        elif stride == step * count:
            count *= size
        else:
            return None
    return count, (step if count > 1 else 1)

"""Declaring the NKI API: each API once (api() / value()), with the editions that have it and
its signature in each. The namespaces of an edition (_namespaces) are read from here.

Editions: 'beta1' is the `neuronxcc.nki` of SDK 2.21-2.26 (the 2024 and 2025 kernels); '0.2'
to '0.7' are standalone `nki` of SDK 2.27-2.33 (beta 2 onwards). A spec names editions:
'all', 'beta1', '0.x' (every 0.x), '0.3+', '0.2-0.5', or several of them separated by spaces."""

import contextvars
import functools
import inspect
import itertools
import re
from typing import NamedTuple

from . import _reference
from ._errors import KernelError, user_site
from ._index import NOTHING, Mask, NothingKept

BETA1 = 'beta1'
NKI0 = ('0.2', '0.3', '0.4', '0.5', '0.6', '0.7')
EDITIONS = (BETA1,) + NKI0
LATEST = '0.7'
SDK = {BETA1: '2.21-2.26', '0.2': '2.27-2.28', '0.3': '2.29', '0.4': '2.30', '0.5': '2.31',
       '0.6': '2.32', '0.7': '2.33'}


def nki0_version():
    """The NKI 0.x version `import nki` gives: TRNSIM_NKI_VERSION, default LATEST (ImportError
    naming the variable when it is not a 0.x version)."""
    import os
    version = os.environ.get('TRNSIM_NKI_VERSION', '') or LATEST
    if version not in NKI0:
        raise ImportError(f'TRNSIM_NKI_VERSION={version}: not an NKI 0.x version (one of '
                          f'{", ".join(NKI0)})')
    return version


def editions(spec):
    """The editions a spec names, in order."""
    out = set()
    for token in spec.split():
        if token == 'all':
            out.update(EDITIONS)
        elif token == '0.x':
            out.update(NKI0)
        elif token.endswith('+'):
            out.update(NKI0[NKI0.index(token[:-1]):])
        elif '-' in token:
            lo, hi = token.split('-')
            out.update(NKI0[NKI0.index(lo):NKI0.index(hi) + 1])
        elif token in EDITIONS:
            out.add(token)
        else:
            raise ValueError(f'unknown edition {token!r} in {spec!r}')
    return tuple(e for e in EDITIONS if e in out)


def describe(eds):
    """'beta 1 and NKI 0.3-0.7' for a tuple of editions."""
    parts = []
    if BETA1 in eds:
        parts.append('beta 1 (neuronxcc.nki)')
    versions = [e for e in NKI0 if e in eds]
    if versions:
        parts.append(f'NKI {versions[0]}' if len(versions) == 1 else
                     f'NKI {versions[0]}-{versions[-1]}')
    return ' and '.join(parts) or 'no edition'


class Api:
    """One API: its name (`language.add`), what the call does (impl, whose keyword parameters
    cover every edition's), and per edition the signature a kernel calls it with; or a value
    (a dtype, a buffer, an enum) when `value` is set."""

    def __init__(self, qualname, impl, signatures, value=None, note=None):
        self.qualname = qualname
        self.namespace, _, self.name = qualname.rpartition('.')
        self.impl = impl
        self.signatures = signatures  # edition -> signature text (None: impl's own)
        self.value = value
        self.note = note  # said when a kernel of another edition calls it
        self._made = {}

    @property
    def editions(self):
        return tuple(self.signatures)

    def public_name(self):
        short = {'language': 'nl', 'isa': 'nisa'}.get(self.namespace, 'nki.' + self.namespace)
        return f'{short}.{self.name}' if self.namespace else f'nki.{self.name}'

    def for_edition(self, edition):
        """What the edition's namespace holds: the value, or a function with the edition's
        signature (the same object for editions that share it)."""
        if self.value is not None or self.impl is None:
            return self.value
        sig = self.signatures[edition]
        # an impl that takes `edition` is told which one called it (what differs by edition
        # within one declaration)
        key = (sig, edition if 'edition' in inspect.signature(self.impl).parameters else None)
        if key not in self._made:
            self._made[key] = _checked(self, sig, key[1])
        return self._made[key]


REGISTRY = {}  # (namespace, name) -> Api


def _add(a):
    key = (a.namespace, a.name)
    old = REGISTRY.get(key)
    if old is not None:
        raise ValueError(f'{a.qualname} declared twice')
    REGISTRY[key] = a
    return a


class Called(NamedTuple):
    """The API call under way: its public name (nisa.topk) and the kernel's line."""
    api: str
    site: tuple


_CALLED = contextvars.ContextVar('trnsim_nki_api', default=None)


def called():
    """(the public name of the API under way, the kernel's (file, line)): what an API's errors
    name, handed to it by its declaration (api()), so that it writes neither."""
    name = _CALLED.get()
    if name is None:
        raise RuntimeError('trnsim.nki: called() outside an API declared with api()')
    return Called(name, user_site())


def api(qualname, editions_spec='all', signature=None, note=None, **by_edition):
    """Declares a function API. `signature`: its parameters as text in every edition (default:
    impl's own); `by_edition`: editions spec (with '_' for '.' and ' ', e.g. beta1=..., v0=...
    for 0.x, v0_3_plus=...) -> the signature there. `name=` is accepted by every API (the name
    NKI gives a tile or an instruction: it changes nothing in the model). While impl runs,
    called() gives its public name and the kernel's line."""
    def declare(impl):
        sigs = {}
        for e in editions(editions_spec):
            sigs[e] = signature
        for key, sig in by_edition.items():
            for e in editions(_spec_of(key)):
                sigs[e] = sig
        a = Api(qualname, None, sigs, note=note)
        public = a.public_name()

        @functools.wraps(impl)
        def with_name(*args, **kwargs):
            token = _CALLED.set(public)
            try:
                return impl(*args, **kwargs)
            finally:
                _CALLED.reset(token)
        a.impl = with_name
        _add(a)
        return with_name
    return declare


def value(qualname, obj, editions_spec='all', note=None):
    """Declares a value API (a dtype, a buffer, a constant, a class)."""
    _add(Api(qualname, None, {e: None for e in editions(editions_spec)}, value=obj, note=note))
    return obj


def alias(qualname, of):
    """Declares qualname as a second name of the value API `of`, in the 0.x editions that have
    it (NKI 0.x's nki.isa.constants, nki.language.dtypes)."""
    a = REGISTRY[tuple(of.rpartition('.')[::2])]
    value(qualname, a.value, ' '.join(e for e in NKI0 if e in a.signatures))


def _spec_of(key):
    if key == 'beta1':
        return 'beta1'
    if key == 'v0':
        return '0.x'
    rest = key[1:].replace('_plus', '+').replace('_to_', '-').replace('_', '.')
    return rest


_CALL_PREFIX = re.compile(r'^[\w.<>]+\(\) ')


def _checked(a, sig, edition=None):
    """impl called with the edition's signature: a call the signature does not take (a keyword
    it does not know, a missing argument) is a KernelError at the kernel's line; a TypeError
    raised inside impl is left alone."""
    impl = a.impl
    params = inspect.signature(impl).parameters
    if sig is None:
        sig = ', '.join(str(p) for p in params.values() if p.name not in ('name', 'edition'))
    parts = [p.split('=')[0].strip() for p in _split_params(sig)]
    names = [p.lstrip('*') for p in parts if p.lstrip('*')]
    unknown = [n for n in names if n not in params and n != 'name']
    if unknown:
        raise ValueError(f'{a.qualname}: signature {sig!r} names {unknown}, which '
                         f'{impl.__name__} does not take')
    if 'name' not in names:
        extra = 'name=None'
        if any(p.startswith('**') for p in parts):  # before **kwargs
            sig = ', '.join(x for x in _split_params(sig) if not x.strip().startswith('**'))
            extra += ', ' + next(p for p in parts if p.startswith('**'))
        sig = f'{sig}, {extra}' if sig.strip() else extra
    # Passed by keyword; those before a *args by position (impl has them in the same order).
    varargs = any(p.startswith('*') and not p.startswith('**') and p != '*' for p in parts)
    passed, after_star = [], False
    for p in parts:
        n = p.lstrip('*')
        if p.startswith('**'):
            passed.append(f'**{n}')
        elif p.startswith('*'):
            after_star = True
            if n:
                passed.append(f'*{n}')
        elif n != 'name' or 'name' in params:
            passed.append(n if varargs and not after_star else f'{n}={n}')
    if edition is not None:
        passed.append(f'edition={edition!r}')
    source = f'def {a.name}({sig}):\n    return __impl({", ".join(passed)})\n'
    scope = {'__impl': impl}
    exec(compile(source, f'<trnsim api {a.public_name()}>', 'exec'), scope)  # noqa: S102
    bind = scope[a.name]
    api_name = a.public_name()
    propagates = a.qualname not in ('language.store', 'isa.dma_copy', 'language.device_print')

    @functools.wraps(impl)
    def call(*args, **kwargs):
        mask = kwargs.get('mask')
        if isinstance(mask, Mask) and mask.empty():  # before its operands are read
            return NOTHING
        # an operation on what a mask kept nothing of computes nothing the kernel keeps (the
        # masked-out tail of a loop): no instruction; a store of it is an error (_ops.store)
        if propagates and kwargs.get('dst') is None and \
                any(x is NOTHING for x in itertools.chain(args, kwargs.values())):
            return NOTHING
        try:
            return bind(*args, **kwargs)
        except NothingKept:  # a mask that keeps nothing: no instruction
            return NOTHING
        except TypeError as e:
            if e.__traceback__.tb_next is not None:  # raised inside, not by the call
                raise
            raise KernelError(api_name, _CALL_PREFIX.sub('', str(e)) + ' (docs/nki.md lists '
                              'what is supported)') from None
    call.__name__ = call.__qualname__ = a.name
    call.__wrapped__ = bind
    call._nki_api = a.qualname
    return call


def _split_params(sig):
    depth, part, out = 0, '', []
    for ch in sig:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(part)
            part = ''
        else:
            part += ch
    if part.strip():
        out.append(part)
    return out


def lookup(namespace, name, edition):
    """(the API's object in `edition`, None), or (None, (its public name, why it is absent))."""
    a = REGISTRY.get((namespace, name))
    if a is not None and edition in a.signatures:
        return a.for_edition(edition), None
    module = f'nki.{namespace}' if namespace else 'nki'
    if a is None:
        if _reference.is_real(namespace, name, edition):
            return None, (f'{module}.{name}', 'not supported by trnsim yet (docs/nki.md lists '
                          'what is supported)')
        hint = _reference.suggestion(namespace, name, edition, names(namespace, edition))
        short = {'language': 'nl', 'isa': 'nisa'}.get(namespace, module)
        did = f'; did you mean {short}.{hint}?' if hint else ''
        return None, (f'{module}.{name}', f'no such API in {module} (the NKI API reference, '
                      f'SDK {_reference.sdk(edition, namespace)}{did})')
    why = f'; {a.note}' if a.note else ''
    return None, (f'{module}.{name}', f'not in {describe((edition,))} (it is in '
                  f'{describe(a.editions)}{why})')


def names(namespace, edition):
    return sorted(n for (ns, n), a in REGISTRY.items() if ns == namespace and
                  edition in a.signatures)


def all_apis():
    return list(REGISTRY.values())

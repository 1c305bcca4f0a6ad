"""The NKI namespaces of each edition (nki, nki.language, nki.isa, nki.compiler, nki.typing,
nki.simulator; in NKI 0.x also nki.isa.constants, nki.language.dtypes (= nki.dtype),
nki.compiler.ncc_driver, nki.tensor, nki.builtin and nki.collectives (whose APIs are not
supported yet: a kernel that calls one stops there), the modules the NKI Library's simulation
harness and nki-autotune import), read from the API registry: what an edition lacks is a
one-line kernel error naming the API, and saying which editions have it."""

import sys
import types

from . import _api_compiler, _api_isa, _api_language, _api_typing  # noqa: F401 (declarations)
from ._errors import UnsupportedAttribute
from ._registry import BETA1, EDITIONS, lookup, names

SUBMODULES = ('language', 'isa', 'compiler', 'typing', 'simulator')
# NKI 0.x's further modules (parents before their children). nki.dtype is nki.language.dtypes
# under a second name; nki.builtin holds the language and isa namespaces (a model choice: the
# library's harness only imports it).
SUBMODULES_0X = ('isa.constants', 'language.dtypes', 'compiler.ncc_driver', 'tensor', 'builtin',
                 'collectives')
SECOND_NAMES = {'dtype': 'language.dtypes'}
# The import name of each edition's top module.
MODULE = {e: 'neuronxcc.nki' if e == 'beta1' else 'nki' for e in EDITIONS}


def submodules(edition):
    """The dotted names (below the top module) of the edition's namespaces."""
    return SUBMODULES + (() if edition == BETA1 else SUBMODULES_0X)


class Namespace(types.ModuleType):
    """One namespace of one edition: its attributes are the registry's APIs of that edition."""

    def __init__(self, module_name, namespace, edition, doc):
        super().__init__(module_name, doc)
        self._namespace = namespace
        self._edition = edition

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        obj, why = lookup(self._namespace, name, self._edition)
        if why is not None:
            api_name, detail = why
            raise UnsupportedAttribute(api_name, detail)
        setattr(self, name, obj)
        return obj

    def __dir__(self):
        return names(self._namespace, self._edition)


_MADE = {}


def namespaces(edition):
    """The edition's top module, its submodules by dotted name (second names included)."""
    if edition not in EDITIONS:
        raise ValueError(f'unknown NKI edition {edition!r} (one of {", ".join(EDITIONS)})')
    if edition not in _MADE:
        name = MODULE[edition]
        top = Namespace(name, '', edition, f'NKI ({edition}) on trnsim\'s model (docs/nki.md)')
        top.__path__ = []  # a package: `import nki.language` finds the submodule
        subs = {}
        for sub in submodules(edition):
            parent_name, _, short = sub.rpartition('.')
            mod = Namespace(f'{name}.{sub}', sub, edition, f'{name}.{sub} on trnsim')
            mod.__path__ = []
            setattr(subs[parent_name] if parent_name else top, short, mod)
            subs[sub] = mod
        for second, sub in SECOND_NAMES.items():
            if sub in subs:
                setattr(top, second, subs[sub])
                subs[second] = subs[sub]
        if 'builtin' in subs:
            subs['builtin'].language, subs['builtin'].isa = subs['language'], subs['isa']
        _MADE[edition] = (top, subs)
    return _MADE[edition]


def install(module_name, edition):
    """Makes `module_name` (and its submodules) the edition's namespaces in sys.modules: what
    the import aliases of scripts/nki do."""
    top, subs = namespaces(edition)
    sys.modules[module_name] = top
    for sub, mod in subs.items():
        sys.modules[f'{module_name}.{sub}'] = mod
    return top

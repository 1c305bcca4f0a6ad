"""The NKI namespaces of each edition (nki, nki.language, nki.isa, nki.compiler, nki.typing,
nki.simulator),
read from the API registry: what an edition lacks is a one-line kernel error naming the API,
and saying which editions have it."""

import sys
import types

from . import _api_compiler, _api_isa, _api_language, _api_typing  # noqa: F401 (declarations)
from ._errors import UnsupportedAttribute
from ._registry import EDITIONS, lookup, names

SUBMODULES = ('language', 'isa', 'compiler', 'typing', 'simulator')
# The import name of each edition's top module.
MODULE = {e: 'neuronxcc.nki' if e == 'beta1' else 'nki' for e in EDITIONS}


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
    """The edition's top module, its submodules by name."""
    if edition not in EDITIONS:
        raise ValueError(f'unknown NKI edition {edition!r} (one of {", ".join(EDITIONS)})')
    if edition not in _MADE:
        name = MODULE[edition]
        top = Namespace(name, '', edition, f'NKI ({edition}) on trnsim\'s model (docs/nki.md)')
        subs = {}
        for sub in SUBMODULES:
            subs[sub] = Namespace(f'{name}.{sub}', sub, edition, f'{name}.{sub} on trnsim')
            setattr(top, sub, subs[sub])
        top.__path__ = []  # a package: `import nki.language` finds the submodule
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

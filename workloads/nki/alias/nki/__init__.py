"""nki (NKI beta 2 spelling) -> trnsim.nki (only under scripts/nki)."""

import sys

import trnsim.nki as _nki

for _name in ('language', 'isa', 'compiler', 'typing'):
    sys.modules[f'{__name__}.{_name}'] = getattr(_nki, _name)
sys.modules[__name__] = _nki

"""nki (NKI 0.x, beta 2 onwards) -> trnsim.nki's edition of that version (only where
trnsim's aliases are installed: scripts/nki, trnsim.nki.install_aliases()): TRNSIM_NKI_VERSION,
0.2 to 0.7, default 0.7."""

import os

from trnsim.nki import _namespaces, _registry

_version = os.environ.get('TRNSIM_NKI_VERSION', '') or _registry.LATEST
if _version not in _registry.NKI0:
    raise ImportError(f'TRNSIM_NKI_VERSION={_version}: not an NKI 0.x version (one of '
                      f'{", ".join(_registry.NKI0)})')
_namespaces.install(__name__, _version)

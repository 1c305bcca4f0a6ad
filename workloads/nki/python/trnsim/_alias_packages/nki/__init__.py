"""nki (NKI 0.x, beta 2 onwards) -> trnsim.nki's edition of that version (only where
trnsim's aliases are installed: scripts/nki, trnsim.nki.install_aliases()): TRNSIM_NKI_VERSION,
0.2 to 0.7, default 0.7."""

from trnsim.nki import _namespaces, _registry

_namespaces.install(__name__, _registry.nki0_version())

"""neuronxcc.nki -> trnsim.nki's beta 1 edition (only where trnsim's aliases are installed:
scripts/nki, trnsim.nki.install_aliases())."""

from trnsim.nki import _namespaces

_namespaces.install(__name__, 'beta1')

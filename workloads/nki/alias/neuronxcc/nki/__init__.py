"""neuronxcc.nki -> trnsim.nki's beta 1 edition (only under scripts/nki)."""

from trnsim.nki import _namespaces

_namespaces.install(__name__, 'beta1')

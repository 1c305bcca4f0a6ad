"""torch_xla (only where trnsim's aliases are installed: scripts/nki, install_aliases()): the
real package when the machine has one, else a stand-in whose XLA device is the CPU, for the
NKI tutorials' torch harnesses (`xm.xla_device()`, `torch_xla.device()`, `.to(device)`,
`xm.mark_step()`): a kernel called on such tensors runs on trnsim's model, its values numpy's."""

from trnsim import _aliases

if not _aliases.load_real(__name__):
    import torch

    from . import core  # noqa: F401  (torch_xla.core.xla_model)
    from .core import xla_model  # noqa: F401

    __version__ = 'trnsim stand-in'

    def device(index=None):
        """The stand-in's XLA device: the CPU."""
        return torch.device('cpu')

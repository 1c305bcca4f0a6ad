"""torch_neuronx (only where trnsim's aliases are installed): the real package when the machine
has one, else a stand-in for the NKI tutorials' and documentation's torch harnesses, which import
it (torch_xla's stand-in gives their device) and, in the older documentation's examples, take
`torch_neuronx.nki_jit`, the decorator of NKI kernels called on torch tensors: NKI beta 1's
`nki.jit` here."""

from trnsim import _aliases

if not _aliases.load_real(__name__):
    __version__ = 'trnsim stand-in'

    def nki_jit(func=None, **kwargs):
        """torch_neuronx.nki_jit: the kernel as `neuronxcc.nki.jit` makes it."""
        from trnsim.nki import jit
        return jit(func, **kwargs) if func is not None else (lambda f: jit(f, **kwargs))

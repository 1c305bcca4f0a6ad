"""torch_neuronx (only where trnsim's aliases are installed): the real package when the machine
has one, else an empty stand-in, for the NKI tutorials' torch harnesses, which import it and call
none of it (torch_xla's stand-in gives their device)."""

from trnsim import _aliases

if not _aliases.load_real(__name__):
    __version__ = 'trnsim stand-in'

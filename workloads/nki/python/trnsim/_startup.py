"""Run at every interpreter start of an environment trnsim is installed in (trnsim_aliases.pth):
the NKI import aliases when TRNSIM_NKI_ALIASES=1 (trnsim/_aliases.py); nothing otherwise."""

from trnsim._aliases import _startup

_startup()

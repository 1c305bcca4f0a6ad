"""Alias of the Neuron SDK's package name for trnsim's NKI frontend (only where trnsim's
aliases are installed: scripts/nki, trnsim.nki.install_aliases())."""

import logging

if not hasattr(logging, 'OFF'):  # the SDK's import provides it; some course files use it
    logging.OFF = logging.CRITICAL + 10

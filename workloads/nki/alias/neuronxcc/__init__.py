"""Alias of the Neuron SDK's package name for trnsim's NKI frontend (only under scripts/nki)."""

import logging

if not hasattr(logging, 'OFF'):  # the SDK's import provides it; some course files use it
    logging.OFF = logging.CRITICAL + 10

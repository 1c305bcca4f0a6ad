"""torch_xla.core.xla_model of trnsim's stand-in: the XLA device is the CPU, and a step has
nothing to flush (the kernels ran when they were called)."""

import torch


def xla_device(n=None, devkind=None):
    """The stand-in's XLA device: the CPU."""
    return torch.device('cpu')


def mark_step(wait=False):
    """Nothing to run: tensors on the CPU are computed when made."""

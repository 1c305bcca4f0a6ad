"""vLLM Neuron's CPU mode (VLLM_NEURON_CPU_MODE=1 NKI_SIMULATOR=1) calls a kernel's raw function
through nki.simulator.simulate_kernel(func, args, kwargs, lnc) with numpy views of the caller's
tensors: this script calls it so, on LNC 1 and 2, and checks that the output comes back and that
the argument the kernel writes lands in the caller's array. Run: scripts/nki --config trn2
workloads/nki/examples/clients/vllm_cpu_mode.py"""

import os
import sys

import numpy as np
from nki.simulator import simulate_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import scaled_add  # noqa: E402

rng = np.random.default_rng(7)
a = rng.random((256, 64), dtype=np.float32)
b = rng.random((256, 64), dtype=np.float32)
for lnc in (1, 2):
    out = np.zeros_like(a)   # (vLLM passes tensor.numpy(): views of torch's storage)
    view = out[:]
    twice = simulate_kernel(scaled_add, (), {'a': a, 'b': b, 'out': view}, lnc)
    assert isinstance(twice, np.ndarray), type(twice)
    np.testing.assert_allclose(twice, 2 * a, rtol=1e-6)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    print(f'vllm_cpu_mode: LNC={lnc}: values right')

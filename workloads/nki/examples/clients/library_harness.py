"""The NKI Library's simulation harness (test/utils/simulation_setup.py), both of its
conventions: the older one imports a simulator package (nki_cpu_simulator.nki and its
submodules), aliases sys.modules["nki", "nki.language", ...] and builtins.builtin to it, sets
NKI_NC_VERSION from the test's platform and calls nki.cpu_simulate(kernel)[lnc](**kwargs); the
current one calls nki.simulate(kernel)[lnc](**kwargs). Outputs come back as a list. Run:
scripts/nki workloads/nki/examples/clients/library_harness.py [gen3]"""

import builtins
import os
import sys

import numpy as np

import nki_cpu_simulator.nki.builtin as sim_builtin
import nki_cpu_simulator.nki.compiler as sim_ncc
import nki_cpu_simulator.nki.isa as sim_nisa
import nki_cpu_simulator.nki.isa.constants as sim_nisa_constants
import nki_cpu_simulator.nki.language as sim_nl
import nki_cpu_simulator.nki.language.dtypes as sim_dtypes
import nki_cpu_simulator.nki.tensor as sim_ntensor
import nki_cpu_simulator.nki.typing as sim_nt
from nki_cpu_simulator import nki as sim_nki

builtins.builtin = sim_builtin
for name, module in (('nki', sim_nki), ('nki.language', sim_nl), ('nki.isa', sim_nisa),
                     ('nki.isa.constants', sim_nisa_constants), ('nki.typing', sim_nt),
                     ('nki.compiler', sim_ncc), ('nki.dtype', sim_dtypes),
                     ('nki.tensor', sim_ntensor)):
    sys.modules[name] = module

import nki  # noqa: E402  (after the aliasing, as the library's kernels import it)
from nki.isa.constants import oob_mode  # noqa: E402,F401  (a name the library's kernels take)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import scaled_add  # noqa: E402


def run(launch, **kwargs):
    """The harness's result: the kernel's outputs as a list."""
    result = launch(**kwargs)
    if result is None:
        return []
    return list(result) if isinstance(result, (list, tuple)) else [result]


os.environ['NKI_NC_VERSION'] = sys.argv[1] if len(sys.argv) > 1 else 'gen3'
rng = np.random.default_rng(11)
a = rng.random((256, 64), dtype=np.float32)
b = rng.random((256, 64), dtype=np.float32)
for how, simulate in (('cpu_simulate', nki.cpu_simulate), ('simulate', nki.simulate)):
    for lnc in (1, 2):
        out = np.zeros_like(a)
        sim = simulate(nki.jit(scaled_add))[lnc]
        [twice] = run(sim, a=a, b=b, out=out)
        np.testing.assert_allclose(twice, 2 * a, rtol=1e-6)
        np.testing.assert_allclose(out, a + b, rtol=1e-6)
        print(f'library_harness: nki.{how}(kernel)[{lnc}]: values right, '
              f'{sim.latency_us:.2f} us (model)')

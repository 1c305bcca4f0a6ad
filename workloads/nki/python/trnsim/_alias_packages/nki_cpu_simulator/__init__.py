"""nki_cpu_simulator (the simulator package the NKI Library's older simulation harness imports:
nki_cpu_simulator.nki and its submodules, nki.cpu_simulate(kernel)[lnc]) -> trnsim.nki's NKI
0.x edition, as `import nki` gives it (only where trnsim's aliases are installed: scripts/nki,
trnsim.nki.install_aliases()): TRNSIM_NKI_VERSION, default 0.7."""

from trnsim.nki import _namespaces, _registry

nki = _namespaces.install(__name__ + '.nki', _registry.nki0_version())

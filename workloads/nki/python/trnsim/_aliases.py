"""trnsim's import aliases of the Neuron SDK's names: `neuronxcc.nki` (NKI beta 1), `nki`
(NKI 0.x) and `nki_cpu_simulator.nki` (the NKI Library's simulator package) resolving to
trnsim.nki in this process, and `ml_dtypes` (the real one when there is,
else trnsim's dtypes). Opt-in: scripts/nki installs them for the script it runs; elsewhere
install_aliases(), or TRNSIM_NKI_ALIASES=1 in the environment of an installed trnsim (a startup
hook, trnsim_aliases.pth). Never over a real Neuron SDK: that is an error, not a silent shadow.
Only the standard library is imported here (the hook runs at every interpreter start)."""

import importlib.machinery
import os
import sys

PACKAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '_alias_packages')
NAMES = ('neuronxcc', 'nki', 'nki_cpu_simulator')


def real_sdk():
    """[(name, where)] of the Neuron SDK's packages importable in this process other than
    trnsim's aliases."""
    found = []
    for name in NAMES:
        module = sys.modules.get(name)
        if module is not None:
            where = getattr(module, '__file__', None) or ''
            if not os.path.abspath(where).startswith(PACKAGES + os.sep):
                found.append((name, where or 'already imported'))
            continue
        path = [p for p in sys.path if os.path.abspath(p or os.curdir) != PACKAGES]
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            found.append((name, spec.origin or ', '.join(spec.submodule_search_locations or [])))
    return found


def real_spec(name):
    """The module spec of `name` found on sys.path outside trnsim's aliases (a real package
    wins over a stand-in), or None."""
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == PACKAGES:
            continue
        spec = importlib.machinery.PathFinder.find_spec(name, [entry])
        if spec is not None:
            return spec
    return None


def load_real(name):
    """Imports the real package `name` in place of the stand-in being imported, when there is
    one: True if it did."""
    import importlib.util
    spec = real_spec(name)
    if spec is None:
        return False
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return True


def installed():
    return PACKAGES in (os.path.abspath(p or os.curdir) for p in sys.path)


def install_aliases():
    """Makes `import neuronxcc.nki` and `import nki` give trnsim's NKI frontend in this process
    (from now on). Raises RuntimeError, naming it, when a real Neuron SDK provides either name:
    trnsim never shadows it (import trnsim.nki directly there, or use an environment without
    the SDK). Calling it again does nothing."""
    if installed():
        return
    real = real_sdk()
    if real:
        raise RuntimeError(
            "trnsim: not installing the import aliases neuronxcc.nki / nki: a real Neuron SDK "
            "provides " + "; ".join(f"{n} ({w})" for n, w in real) + ". Import trnsim.nki "
            "instead, or use an environment without the SDK")
    sys.path.insert(0, PACKAGES)


def _startup():
    """The startup hook's work (trnsim_aliases.pth): the aliases when TRNSIM_NKI_ALIASES=1."""
    if os.environ.get('TRNSIM_NKI_ALIASES', '') != '1':
        return
    try:
        install_aliases()
    except RuntimeError as e:
        print(f'{e} (TRNSIM_NKI_ALIASES=1 ignored)', file=sys.stderr)

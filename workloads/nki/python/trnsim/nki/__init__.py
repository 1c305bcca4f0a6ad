"""trnsim.nki: NKI kernels on trnsim's NeuronCore model (docs/nki.md).

`import trnsim.nki as nki` gives the beta 1 edition's namespaces (nki.jit, nki.baremetal,
nki.simulate_kernel, nki.benchmark, nki.language, nki.isa, nki.compiler, nki.typing) and the
runner's own calls (configure, trace_kernel, as_bfloat16, KernelError, install_aliases). Under
scripts/nki, or after install_aliases(), `import neuronxcc.nki` is the beta 1 edition and
`import nki` NKI 0.x (0.7, or the version in TRNSIM_NKI_VERSION).
"""

import sys as _sys

from .._aliases import install_aliases
from ._dtypes import as_bfloat16
from ._errors import KernelError
from . import _namespaces
from ._runner import BenchmarkKernel, JitKernel, configure, platform, trace_kernel

_top, _subs = _namespaces.namespaces('beta1')
language, isa, compiler, typing = (_subs[n] for n in ('language', 'isa', 'compiler', 'typing'))
for _name, _module in _subs.items():
    _sys.modules.setdefault(f'{__name__}.{_name}', _module)

__all__ = ['BenchmarkKernel', 'JitKernel', 'KernelError', 'as_bfloat16', 'compiler',
           'configure', 'install_aliases', 'isa', 'language', 'platform', 'trace_kernel',
           'typing']


def __getattr__(name):
    return getattr(_top, name)

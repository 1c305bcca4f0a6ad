"""trnsim.nki: NKI kernels on trnsim's NeuronCore model.

`import trnsim.nki as nki` (or, under scripts/nki, `import neuronxcc.nki as nki` and `import nki`)
gives nki.jit, nki.baremetal and nki.simulate_kernel (the kernel's output values, computed with
numpy) and nki.benchmark (the model's latency), with nki.language, nki.isa, nki.compiler and
nki.typing. See docs/nki.md.
"""

from . import compiler, isa, language, typing
from ._core import KernelError
from ._dtypes import as_bfloat16
from ._runner import BenchmarkKernel, JitKernel, configure, trace_kernel

__all__ = ['BenchmarkKernel', 'JitKernel', 'KernelError', 'as_bfloat16', 'baremetal',
           'benchmark', 'compiler', 'configure', 'isa', 'jit', 'language', 'simulate_kernel',
           'trace', 'trace_kernel', 'typing']


def jit(func=None, mode=None, **options):
    """@nki.jit: the kernel, called on numpy arrays, returns its outputs."""
    if func is None:
        return lambda f: JitKernel(f, **options)
    return JitKernel(func, **options)


trace = jit


def baremetal(kernel=None, **options):
    """nki.baremetal(kernel)(*arrays): the kernel's outputs (outputs passed as arguments are
    written in place)."""
    if kernel is None:
        return lambda k: JitKernel(getattr(k, 'func', k), **options)
    return JitKernel(getattr(kernel, 'func', kernel), **options)


def simulate_kernel(kernel, *args, **kwargs):
    """The kernel's output values for numpy inputs."""
    return trace_kernel(kernel, args, kwargs, True).outputs


def benchmark(kernel=None, **options):
    """nki.benchmark(kernel, ...), @nki.benchmark(...) or nki.benchmark(...)(kernel): calling
    the result runs the model; its benchmark_result.nc_latency answers latency percentiles."""
    if kernel is None:
        return lambda k: BenchmarkKernel(k, **options)
    return BenchmarkKernel(kernel, **options)


def __getattr__(name):
    from . import _core
    _core.missing('', name)

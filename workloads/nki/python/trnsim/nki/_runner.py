"""Running kernels: the platform of this process, nki.jit / baremetal / simulate_kernel (values)
and nki.benchmark (the model's latency)."""

import gc
import inspect
import json
import os
import sys
import time

import numpy as np

from . import _core, _dtypes
from .typing import Placeholder

# Set by scripts/nki through the environment, or by configure().
_settings = {
    'config': os.environ.get('TRNSIM_NKI_CONFIG', 'trn2'),
    'sets': [s for s in os.environ.get('TRNSIM_NKI_SETS', '').split('\n') if s],
    'stats_out': os.environ.get('TRNSIM_NKI_STATS_OUT', ''),
    'timeline': os.environ.get('TRNSIM_NKI_TIMELINE', ''),
    'quiet': os.environ.get('TRNSIM_NKI_QUIET', '') == '1',
    'functional': False,
}
_platform = None
_benchmarks = 0


def configure(config=None, sets=None, stats_out=None, timeline=None, quiet=None,
              functional=None):
    """Chooses the platform (a config name or file, KEY=VALUE overrides; functional: its
    memories hold values, for comparisons with the C++ drivers' functional runs) before the
    first kernel runs, and where nki.benchmark writes its stats and timeline."""
    if _platform is not None and (config is not None or sets is not None or
                                  functional is not None):
        raise RuntimeError('trnsim.nki.configure: the platform is already built (SystemC '
                           'elaborates once per process); configure before the first kernel')
    for k, v in (('config', config), ('sets', sets), ('stats_out', stats_out),
                 ('timeline', timeline), ('quiet', quiet), ('functional', functional)):
        if v is not None:
            _settings[k] = list(v) if k == 'sets' else v


def platform():
    global _platform
    if _platform is None:
        _platform = _core.native.Platform(_settings['config'], _settings['sets'],
                                          _settings['functional'])
    return _platform


def _is_isa(kernel):
    return bool(getattr(kernel, '_trnsim_isa', False) or
                getattr(getattr(kernel, 'func', None), '_trnsim_isa', False))


def _function(kernel):
    return getattr(kernel, 'func', kernel)


def def_site(fn):
    """(file, line) of a kernel function's `def` (after its decorators)."""
    code = getattr(fn, '__code__', None)
    if code is None:
        return ('<kernel>', 0)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return (code.co_filename, code.co_firstlineno)
    for i, text in enumerate(lines):
        if text.lstrip().startswith(('def ', 'async def ')):
            return (code.co_filename, start + i)
    return (code.co_filename, code.co_firstlineno)


class Trace:
    """A traced kernel: its outputs and its program."""

    def __init__(self, outputs, program, description, ops, flops):
        self.outputs, self.program, self.description = outputs, program, description
        self.ops, self.flops = ops, flops


def trace_kernel(kernel, args, kwargs, values):
    """Runs `kernel` on numpy arrays, recording its program; values computed when asked."""
    fn = _function(kernel)
    style = 'isa' if _is_isa(kernel) else 'nl'
    if _core._State.current is not None:
        raise _core.KernelError('nki kernel', 'kernels calling kernels are not supported yet')
    ctx = _core.Context(platform(), style, values)
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    where = def_site(fn)
    _core._State.current = ctx
    # A traced kernel holds every tile and recorded call until the end: the cyclic collector's
    # passes over them would cost more than the tracing (quadratic in the kernel's length).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        bound = []

        def wrap(value, name):
            if isinstance(value, Placeholder):
                dt = _dtypes.dtype_name(value.dtype)
                return _core.new_hbm(ctx, ctx.hbm_name(name), value.shape, dt, None, True), None
            if isinstance(value, np.ndarray) or type(value).__module__.startswith('numpy'):
                arr = np.asarray(value)
                dt = _dtypes.array_dtype_name(value)
                if dt not in _core._DT:
                    raise _core.unsupported(f'kernel argument {name}',
                                            f'dtype {dt} is not supported yet', where)
                vals = None
                if values:
                    vals = _dtypes.round_to(np.array(arr, dtype=np.int32 if dt == 'int32'
                                                     else np.float32), dt)
                t = _core.new_hbm(ctx, ctx.hbm_name(name), arr.shape, dt, vals, True)
                return t, value
            return value, None

        wargs = []
        for i, a in enumerate(args):
            t, orig = wrap(a, names[i] if i < len(names) else f'arg{i}')
            wargs.append(t)
            if orig is not None:
                bound.append((t, orig))
        wkwargs = {}
        for k, a in kwargs.items():
            t, orig = wrap(a, k)
            wkwargs[k] = t
            if orig is not None:
                bound.append((t, orig))
        ret = fn(*wargs, **wkwargs)
        try:
            program = _core.build(ctx)
            # What nki.benchmark checks before it simulates, checked in every call.
            ctx.platform.check(program)
        except (_core.native.UserError, RuntimeError) as e:
            raise _core.KernelError('kernel end', str(e), where)
        # Tiles the kernel placed itself may share bytes with no order between their
        # accesses (core/race_check): said, as sim says it of the drivers.
        if not _settings['quiet']:
            for race in ctx.kb.races():
                print(f'trnsim: warning: {where[0]}:{where[1]}: {race}', file=sys.stderr)
    finally:
        _core._State.current = None
        if gc_was_enabled:
            gc.enable()

    def out(r):
        if isinstance(r, _core.HbmTensor):
            return _dtypes.to_user(r.values, r.dtype_name) if values else None
        if isinstance(r, (tuple, list)):
            return type(r)(out(x) for x in r)
        if r is None:
            return None
        what = ('an on-chip tile (store it to an HBM tensor with nl.store)'
                if isinstance(r, (_core.Tile, _core.TileBlocks)) or hasattr(r, 'materialize')
                else type(r).__name__)
        raise _core.KernelError('kernel return', f'a kernel returns HBM tensors, not {what}',
                                where)

    outputs = out(ret)
    if values:  # outputs passed as arguments (2024 kernels) are written in place
        for t, orig in bound:
            if t.written and isinstance(orig, np.ndarray) and orig.flags.writeable:
                orig[...] = _dtypes.to_user(t.values, t.dtype_name).reshape(orig.shape)
    desc = f'nki {fn.__name__} ({style})'
    return Trace(outputs, program, desc, ctx.ops, ctx.kb.matmul_flops())


class JitKernel:
    """@nki.jit: called on numpy arrays, runs the kernel and returns its outputs."""

    def __init__(self, func, **options):
        self.func = func
        self.options = options
        self.__name__ = getattr(func, '__name__', 'kernel')
        self.__doc__ = getattr(func, '__doc__', None)

    def __call__(self, *args, **kwargs):
        return trace_kernel(self, args, kwargs, True).outputs

    def __getitem__(self, grid):
        raise _core.unsupported('kernel[grid]', 'SPMD launch grids are not supported yet',
                                def_site(self.func))


class Latency:
    """benchmark_result.nc_latency: the model is deterministic, so every percentile is the
    kernel time."""

    def __init__(self, us):
        self.us = us

    def get_latency_percentile(self, percentile):
        return self.us


class BenchmarkResult:
    def __init__(self, us, stats):
        self.nc_latency = Latency(us)
        self.stats = stats


def _stat(stats, path, default=0.0):
    node = stats
    for part in path.split('.'):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    if isinstance(node, dict):
        node = node.get('value', default)
    return node


def _placeholder(template):
    global _benchmarks
    if not template:
        return ''
    return template.replace('{n}', str(_benchmarks))


class BenchmarkKernel:
    """nki.benchmark: runs the kernel's program on the model and keeps its latency."""

    def __init__(self, kernel, warmup=None, iters=None, save_neff_name=None,
                 save_trace_name=None, additional_compile_opt=None, **options):
        self.kernel = kernel
        self.func = _function(kernel)
        self.options = dict(options, warmup=warmup, iters=iters,
                            additional_compile_opt=additional_compile_opt)
        self.benchmark_result = None
        self.stats = None
        self.__name__ = getattr(self.func, '__name__', 'kernel')

    @property
    def _trnsim_isa(self):
        return _is_isa(self.kernel)

    def __call__(self, *args, **kwargs):
        global _benchmarks
        t0 = time.perf_counter()
        tr = trace_kernel(self.kernel, args, kwargs, False)
        t1 = time.perf_counter()
        _benchmarks += 1
        stats_out = _placeholder(_settings['stats_out'])
        timeline = _placeholder(_settings['timeline'])
        try:
            text = platform().run(tr.program, tr.description, timeline, '')
        except _core.native.UserError as e:
            raise _core.KernelError('nki.benchmark', str(e), def_site(self.func)) from None
        t2 = time.perf_counter()
        self.stats = json.loads(text)
        if stats_out:
            with open(stats_out, 'w') as f:
                f.write(text + '\n')
        us = _stat(self.stats, 'total_time_ns') / 1e3
        self.benchmark_result = BenchmarkResult(us, self.stats)
        self.record_seconds, self.simulate_seconds = t1 - t0, t2 - t1
        if not _settings['quiet']:
            self._print(us, tr)
        return None

    def _print(self, us, tr):
        p = platform()
        print(f'trnsim nki.benchmark: {self.__name__} on {p.name} (model, deterministic: every '
              'percentile is the same)')
        cols = ['p0', 'p1', 'p10', 'p25', 'p50', 'p90', 'p99', 'p100']
        print('latency (us) ' + ' '.join(f'{c:>10}' for c in cols))
        print(' ' * 13 + ' '.join(f'{us:10.2f}' for _ in cols))
        p.print_summary(tr.description)
        print(f'(recorded {tr.ops} operations in {self.record_seconds:.2f} s, simulated in '
              f'{self.simulate_seconds:.2f} s)')
        sys.stdout.flush()

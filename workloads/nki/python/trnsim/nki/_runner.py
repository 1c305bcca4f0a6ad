"""Running kernels: the platform of this process, tracing a kernel into its recording, the
builder (C++) expanding it into a program, the interpreter computing its values; and the
harness APIs: nki.jit / baremetal / simulate_kernel / simulate (values) and nki.benchmark (the
model's latency)."""

import gc
import inspect
import json
import os
import re
import shutil
import sys
import time

import numpy as np

from . import _dtypes, _flags, _trace
from ._api_typing import Placeholder, check_argument
from ._api_language import GridDim, _count, python_range
from ._errors import KernelError, unsupported, user_site
from ._interpret import Interpreter
from ._registry import api
from ._tensors import HbmTensor, Tile, TileBlocks

try:
    import _trnsim as native
except ImportError as _e:  # pragma: no cover - explained to the user
    raise ImportError(
        'trnsim.nki needs the _trnsim module built by CMake (build/python): run the kernel '
        'through scripts/nki, or install trnsim (pip install --no-build-isolation . in the '
        'checkout, docs/nki.md "Your own Python")') from _e

from .. import replay as _replay  # noqa: E402 (after the native module's check)

# An installed trnsim carries the configs it was built with (scripts/packaging/
# trnsim_backend.py): config names resolve there unless TRNSIM_CONFIG_DIR says otherwise; a
# checkout's build reads the checkout's.
_PACKAGED_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 'configs')
if os.path.isdir(_PACKAGED_CONFIGS):
    os.environ.setdefault('TRNSIM_CONFIG_DIR', _PACKAGED_CONFIGS)

# NEURON_PLATFORM_TARGET_OVERRIDE, as AWS's simulator reads it -> trnsim's config.
TARGETS = {'trn1': 'trn1', 'gen2': 'trn1', 'trn2': 'trn2', 'gen3': 'trn2', 'trn3': 'trn3',
           'gen4': 'trn3'}
# Without a target: AWS's simulator takes the chip of the machine it runs on, else trn3;
# trnsim takes trn2, the newest NeuronCore it models calibrated against hardware (trn3 is
# uncalibrated: docs/nki.md, "Running").
DEFAULT_CONFIG = 'trn2'


# NKI_NC_VERSION, as the NKI Library's harness sets it (nisa.nc_version's names) -> the config.
NC_VERSIONS = {'gen2': 'trn1', 'gen3': 'trn2', 'gen4': 'trn3'}


def _target_from_environment():
    """(the config the environment names, the variable that names it), or (None, None):
    NEURON_PLATFORM_TARGET_OVERRIDE, else NKI_NC_VERSION (KernelError naming the variable when
    its value is not a target)."""
    for var, table in (('NEURON_PLATFORM_TARGET_OVERRIDE', TARGETS),
                       ('NKI_NC_VERSION', NC_VERSIONS)):
        target = os.environ.get(var, '').strip()
        if target:
            if target not in table:
                raise KernelError(var, f'{target!r} is not a target (one of '
                                  f'{", ".join(table)})')
            return table[target], var
    return None, None


def _default_config():
    """The platform when no --config names one: the environment's target
    (NEURON_PLATFORM_TARGET_OVERRIDE, then NKI_NC_VERSION), else DEFAULT_CONFIG."""
    return _target_from_environment()[0] or DEFAULT_CONFIG


def _check_environment_target(site):
    """A launch after the platform is built, with the environment naming another target (the
    NKI Library's harness sets NKI_NC_VERSION per test): an error, SystemC building one
    platform per process; --config wins over the environment."""
    if _platform is None or _settings['config']:
        return
    target, var = _target_from_environment()
    if target is not None and target != _platform_config:
        raise KernelError(var, f'{os.environ[var].strip()} is {target}, but the platform is '
                          f'already {_platform_config}, built for an earlier kernel (SystemC '
                          'builds one platform per process): run the kernels of each target in '
                          'a process of their own', site)


# Set by scripts/nki through the environment, or by configure().
_settings = {
    'config': os.environ.get('TRNSIM_NKI_CONFIG', ''),
    'sets': [s for s in os.environ.get('TRNSIM_NKI_SETS', '').split('\n') if s],
    'sets_how': '--set',  # (scripts/nki's --set; configure(sets=) says so)
    'stats_out': os.environ.get('TRNSIM_NKI_STATS_OUT', ''),
    'timeline': os.environ.get('TRNSIM_NKI_TIMELINE', ''),
    'recording_out': os.environ.get('TRNSIM_NKI_RECORDING_OUT', ''),
    # A file that gets the builds of the last kernel nki.benchmark or nki.simulate ran
    # (scripts/nki --builds-out): what `scripts/nki --replay` builds and runs again under
    # another config.
    'builds_out': os.environ.get('TRNSIM_NKI_BUILDS_OUT', ''),
    'quiet': os.environ.get('TRNSIM_NKI_QUIET', '') == '1',
    'functional': False,
    # Fold a loop whose iterations record one body (False: every loop as it ran, unrolled; the
    # same program, built from a longer recording: what the tests compare the two with).
    'loops_once': os.environ.get('TRNSIM_NKI_UNROLL', '') != '1',
    # Say which loops are unrolled, and why (scripts/nki --explain-loops).
    'explain': os.environ.get('TRNSIM_NKI_EXPLAIN', '') == '1',
    # A file that gets a JSON line per kernel run (scripts/nki-survey).
    'survey': os.environ.get('TRNSIM_NKI_SURVEY', ''),
    # Kernel bugs the hardware would punish (reads of what nothing wrote, races between
    # independent iterations) are errors, not warnings (scripts/nki --strict).
    'strict': os.environ.get('TRNSIM_STRICT', '') == '1',
    # Print each benchmarked kernel's source with its lines' figures (scripts/nki --annotate).
    'annotate': os.environ.get('TRNSIM_NKI_ANNOTATE', '') == '1',
}


def survey(event):
    """Notes what a kernel run did, for scripts/nki-survey (when it asks)."""
    if _settings['survey']:
        with open(_settings['survey'], 'a') as f:
            f.write(json.dumps(event) + '\n')


class _SurveyedOutput(np.ndarray):
    """A kernel's output under scripts/nki-survey: `out == want` (either side) reduced by
    .all() or np.all() is a value check, as np.allclose is."""

    def __eq__(self, other):
        result = np.equal(np.asarray(self), np.asarray(other))
        return result.view(_Comparison) if isinstance(result, np.ndarray) else result

    __hash__ = None


class _Comparison(np.ndarray):
    """An elementwise comparison with a kernel's output: its .all() is noted."""

    def all(self, *args, **kwargs):
        result = np.asarray(self).all(*args, **kwargs)
        survey({'check': '(out == want).all()', 'ok': bool(np.all(result))})
        return result


def _surveyed(arr):
    """arr as a _SurveyedOutput when scripts/nki-survey asks (else arr itself)."""
    return arr.view(_SurveyedOutput) if _settings['survey'] and isinstance(arr, np.ndarray) \
        else arr
_platform = None
_platform_config = None  # the config the platform was built from
_limits = None
_benchmarks = 0


def configure(config=None, sets=None, stats_out=None, timeline=None, quiet=None,
              functional=None, recording_out=None, loops_once=None, strict=None):
    """Chooses the platform (a config name or file, KEY=VALUE overrides; functional: its
    memories hold values, for comparisons with the C++ drivers' functional runs) before the
    first kernel runs, and where nki.benchmark writes its stats, timeline and recording."""
    if _platform is not None and (config is not None or sets is not None or
                                  functional is not None):
        raise RuntimeError('trnsim.nki.configure: the platform is already built (SystemC '
                           'elaborates once per process); configure before the first kernel')
    if sets is not None:  # (the overrides' origin in the stats and the run's header; their
        # errors read as the CLI's)
        _settings['sets_how'] = 'configure(sets=)'
    if config is not None or sets is not None:  # said at once, as sim says it (UserError)
        native.check_config(config if config is not None else
                            (_settings['config'] or _default_config()),
                            list(sets) if sets is not None else _settings['sets'])
    for k, v in (('config', config), ('sets', sets), ('stats_out', stats_out),
                 ('timeline', timeline), ('quiet', quiet), ('functional', functional),
                 ('recording_out', recording_out), ('loops_once', loops_once),
                 ('strict', strict)):
        if v is not None:
            _settings[k] = list(v) if k == 'sets' else v


def platform():
    global _platform, _platform_config
    if _platform is None:
        _platform_config = _settings['config'] or _default_config()
        _platform = native.Platform(_platform_config, _settings['sets'], _settings['functional'],
                                    _settings['sets_how'])
    return _platform


def _explicit_keys():
    """The config keys the user set (--set, configure(sets=)): a compiler flag does not
    override them."""
    return {s.partition('=')[0].strip() for s in _settings['sets']}


def launch_flags(kernel, site):
    """The compiler flags of a launch of `kernel` (trnsim/nki/_flags.py), its --target
    applied: the platform is built for it, unless --config or NEURON_PLATFORM_TARGET_OVERRIDE
    chose one; a platform built for another target is an error (one per process)."""
    flags = _flags.read(kernel, _explicit_keys(), site)
    _check_environment_target(site)
    if flags.target is not None:
        word = next(w for w in flags.applied if w.startswith('--target'))
        if _settings['config'] or _target_from_environment()[0]:
            flags.applied.remove(word)
            flags.ignored.append(f'{word} (the platform chosen by --config, '
                                 'NEURON_PLATFORM_TARGET_OVERRIDE or NKI_NC_VERSION wins)')
        elif _platform is None:
            _settings['config'] = flags.target
        elif _platform_config != flags.target:
            raise KernelError('compiler flags', f'{word}: the platform is already '
                              f'{_platform_config}, built for an earlier kernel (SystemC builds '
                              'one platform per process): run this kernel in a process of its '
                              'own, or choose the platform with --config', site)
    if flags.ignored and not _settings['quiet'] and tuple(flags.ignored) not in _flags_said:
        _flags_said.add(tuple(flags.ignored))
        print(f'trnsim: note: {site[0]}:{site[1]}: compiler flags the model takes no setting '
              f'from: {" ".join(flags.ignored)}', file=sys.stderr)
    return flags


_flags_said = set()  # the lists of ignored flags said once


def limits():
    """The platform's limits the frontend checks kernels against."""
    global _limits
    if _limits is None:
        _limits = _replay.frontend_limits(platform())
    return _limits


_trace.limits_of = limits


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


class Traced:
    """A traced kernel: its recording, program and outputs, and the compiler flags it was
    launched with."""

    def __init__(self, trace, program, outputs, description, flops, seconds, flags=None):
        self.trace, self.program, self.outputs = trace, program, outputs
        self.description, self.flops, self.seconds = description, flops, seconds
        self.flags = flags if flags is not None else _flags.CompileFlags()

    @property
    def ops(self):
        return len(self.trace.ops)


def _edition(kernel):
    """The NKI edition a kernel was written in (its nki.jit's; None: beta 1)."""
    seen = set()
    while kernel is not None and id(kernel) not in seen:
        seen.add(id(kernel))
        if getattr(kernel, 'edition', None) is not None:
            return kernel.edition
        kernel = getattr(kernel, 'kernel', None)
    return None


def _record(fn, style, args, kwargs, values, where, grid=(), core_of=None, edition=None,
            no_hoist=frozenset()):
    """The kernel's trace: its Python run once (with a launch grid, each instance in
    turn). `no_hoist`: the load sites and tensor ids whose loads stay where written
    (_ops.hoisted_load)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    trace = _trace.Trace(limits(), style, values, _settings['loops_once'])
    trace.renames = style == 'nl' and edition in (None, 'beta1')
    trace.no_hoist = frozenset(no_hoist)
    bound = []

    def wrap(value, name):
        orig = value
        check_argument(value, name, where)
        if _is_torch(value):
            value = _from_torch(value, name, where)
        if isinstance(value, Placeholder):
            dt = _dtypes.dtype_name(value.dtype)
            return trace.new_hbm(name, value.shape, dt, None, True)
        if isinstance(value, np.generic):  # a numpy number: a number to the kernel
            return value.item() if isinstance(value, (np.integer, np.bool_)) else \
                float(value)
        if isinstance(value, np.ndarray):
            arr = np.asarray(value)
            dt = _dtypes.array_dtype_name(value)
            if dt not in _dtypes.SIZES:
                raise KernelError(f'kernel argument {name}', f'dtype {dt} is not a dtype '
                                  f'of NKI (those: {", ".join(_dtypes.SIZES)})', where)
            vals = None
            if values:
                vals = _dtypes.round_to(arr, dt)
            t = trace.new_hbm(name, arr.shape, dt, vals, True)
            trace.arrays[t.id] = arr
            bound.append((t, orig))
            return t
        return value

    _trace.Trace.current = trace
    # A Python range loop in the kernel (and in the helpers of its module) is the loop its
    # edition makes of it: from NKI 0.7 the NKI iterators' (they are Python's range), before
    # it sequential_range (Python's own range still iterates elsewhere)
    g = getattr(fn, '__globals__', None)
    own_range = g is None or 'range' in g
    if not own_range:
        g['range'] = python_range(edition)
    try:
        wargs = [wrap(a, names[i] if i < len(names) else f'arg{i}')
                 for i, a in enumerate(args)]
        wkwargs = {k: wrap(a, k) for k, a in kwargs.items()}
        if grid:
            rets = [fn(*wargs, **wkwargs) for _ in trace.instances(grid, core_of)]
            ret = rets[0]
            if any(not _same_result(r, ret) for r in rets[1:]):
                raise KernelError('kernel return', 'the SPMD instances return different '
                                  'tensors (allocate outputs in nl.shared_hbm)', where)
        else:
            ret = fn(*wargs, **wkwargs)
    finally:
        _trace.Trace.current = None
        if not own_range:
            g.pop('range', None)
    return trace, ret, bound


def _explain_loops(trace):
    """What became of each loop of the recording (once per line and outcome)."""
    for (site, text), times in trace.loop_notes.items():
        more = f' (x{times})' if times > 1 else ''
        print(f'trnsim: {site[0]}:{site[1]}: {text}{more}', file=sys.stderr)


def _is_torch(x):
    return type(x).__module__.startswith('torch') and hasattr(x, 'detach')


def _from_torch(t, name, where):
    """A torch CPU tensor as the numpy array the kernel gets (bfloat16 by its bits)."""
    t = t.detach()
    if str(t.device) != 'cpu':
        raise KernelError(f'kernel argument {name}', f'a torch tensor on {t.device} (trnsim '
                          'takes CPU tensors, as nki.simulate does)', where)
    dt = str(t.dtype).replace('torch.', '')
    if dt == 'bfloat16':
        import torch
        return t.contiguous().view(torch.int16).numpy().view(_dtypes.bfloat16)
    if dt in _dtypes.CUSTOM:  # float8_e4m3fn, float8_e5m2
        import torch
        return t.contiguous().view(torch.uint8).numpy().view(np.dtype(dt))
    return t.numpy()


def _to_torch(arr):
    """A kernel output as a torch tensor (what nki.simulate returns for torch inputs)."""
    import torch
    arr = np.ascontiguousarray(arr)
    if arr.dtype.name == 'bfloat16':
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    if arr.dtype.name in _dtypes.CUSTOM:
        kind = getattr(torch, arr.dtype.name, None)
        if kind is None:
            raise KernelError('kernel return', f'this torch has no {arr.dtype.name}')
        return torch.from_numpy(arr.view(np.uint8).copy()).view(kind)
    return torch.from_numpy(arr.copy())


def _same_result(a, b):
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_result(x, y) for x, y in zip(a, b))
    return a is b or (isinstance(a, HbmTensor) and isinstance(b, HbmTensor) and a.id == b.id)


def _build(trace, where, cores=1):
    """(programs (one per physical core the kernel's instances run on), races, flops, notes)
    of a recording; (None, loop) when the builder needs that loop of it unrolled."""
    try:
        if cores == 1:
            program, races, flops, notes = platform().build_recording(trace.text())
            return ([program], races, flops, notes), None
        built = [platform().build_recording(trace.text(c)) for c in range(cores)]
        return ([b[0] for b in built], [r for b in built for r in b[1]],
                sum(b[2] for b in built), [n for b in built for n in b[3]]), None
    except native.UnrollRequest as e:
        (loop_id,) = e.args
        return None, loop_id
    except native.RecordingError as e:
        index, message = e.args
        op = trace.ops[index] if 0 <= index < len(trace.ops) else None
        if op is None or op.site is None:
            raise KernelError('kernel end', message, where) from None
        raise KernelError(op.api, message, op.site) from None
    except (native.UserError, RuntimeError, ValueError) as e:
        raise KernelError('kernel end', str(e), where) from None


def _precise_fp():
    """NKI_PRECISE_FP, as AWS's simulator reads it: 1 (the default) keeps bfloat16 and the fp8
    types' values rounded to their type; 0 keeps every value a kernel computes in float32 (its
    outputs rounded once, as the caller gets them). Values only: the model's timing follows
    the declared dtypes either way."""
    flag = os.environ.get('NKI_PRECISE_FP', '').strip()
    if flag not in ('', '0', '1'):
        raise KernelError('NKI_PRECISE_FP', f'{flag!r}: 1 (the default) or 0')
    return flag != '0'


class _KernelBuild:
    """A kernel recorded and built into its program(s) (trace_kernel's first steps): recorded
    again, where a build does not fit, without hoisting the loads whose hoisted tiles take the
    most SBUF, or without hoisting transposes; a loop whose first iteration a builder phase
    begins or ends in unrolled from its folded body. `builds`: each recording (for
    --builds-out, a single core) and what its build gave."""

    def __init__(self, kernel, fn, style, args, kwargs, values, where):
        self.kernel, self.fn, self.style = kernel, fn, style
        self.args, self.kwargs, self.values, self.where = args, kwargs, values, where
        self.grid = getattr(kernel, 'grid', ())
        self.cores = getattr(kernel, 'cores', 1)
        self.core_of = getattr(kernel, 'core_of', None)
        self.hoist = True
        self.unfit = []  # the load sites whose hoisted tiles did not fit, in the order dropped
        self.builds = []

    def record(self):
        """(trace, the kernel's return value, its bound arguments), recorded again while the
        tile of a hoisted load, or its tensor, is written by something else: those loads stay
        where written."""
        no_hoist = set(self.unfit)
        while True:
            got = _record(self.fn, self.style, self.args, self.kwargs, self.values, self.where,
                          self.grid, self.core_of, _edition(self.kernel), no_hoist)
            kept = got[0].hoist_conflicts | (got[0].hoisted_tensors & got[0].hbm_written)
            if not kept:
                got[0].select('hoist' if self.hoist else 'plain')
                if _settings['explain']:
                    _explain_loops(got[0])
                return got
            no_hoist |= kept

    def build(self, trace):
        """(trace, built): the programs, races, flops and notes of the recording that fits
        (`trace` or a later recording)."""
        while True:
            text = trace.text() if self.cores == 1 and _settings['builds_out'] else None
            try:
                built, loop = _build(trace, self.where, self.cores)
            except KernelError as e:
                if trace.hoisted_sites and 'does not fit' in str(e):
                    # the hoisted loads' tiles with the kernel's own: the load line whose
                    # hoisted tiles take the most SBUF where written (the last of equals),
                    # the kernel recorded again
                    self.builds.append((text, 'does not fit'))
                    most = max(trace.hoisted_sites.values())
                    self.unfit.append([site for site, b in trace.hoisted_sites.items()
                                       if b == most][-1])
                    trace, self.ret, self.bound = self.record()
                    continue
                # SBUF the hoisted transposes took: the compiler hoists only what fits, so
                # the kernel is built with its other choice, transposing at every call (said
                # in a note; the recording holds both)
                if not (self.hoist and trace.hoisted_bytes and 'does not fit' in str(e)):
                    raise
                self.builds.append((text, 'does not fit'))
                self.hoist = False
                trace.select('plain')
                continue
            self.builds.append((text, 'built' if built is not None else f'unroll {loop}'))
            if built is not None:
                return trace, self._with_notes(built)
            # (the loop's iterations, from its folded body: the kernel does not run again)
            at = trace.unfold(loop) or self.where
            if _settings['explain']:
                print(f'trnsim: {at[0]}:{at[1]}: loop unrolled: a phase of the builder (memory '
                      'reused by later tiles) begins or ends inside its first iteration',
                      file=sys.stderr)

    def _with_notes(self, built):
        """The build's notes with what was not hoisted for the kernel's tiles to fit."""
        notes = list(built[3])
        if not self.hoist:
            notes.append('the transposes of nl.matmul operands are not hoisted out of loops: the '
                         "kernel's tiles fit in SBUF only so (a tile is transposed at every "
                         'call)')
        if self.unfit:
            notes.append(
                f'the loads at {", ".join(f"{os.path.basename(f)}:{n}" for f, n in self.unfit)} '
                'are not hoisted out of the loops their address does not use: the '
                "kernel's tiles fit in SBUF only so (each runs where written; "
                'compiler.hoist_loads)')
        return built[:3] + (notes,)


def _check_and_say(trace, programs, races, notes, where):
    """Checks the programs as nki.benchmark does before it simulates (in every call), and says
    (unless quiet) the races between tiles the kernel placed itself, which may share bytes with
    no order between their accesses (program/race_check.h, as sim says them of the drivers),
    and the build's and the recording's notes."""
    p = platform()
    try:
        for prog in programs:
            p.check(prog)
    except (native.UserError, RuntimeError) as e:
        raise KernelError('kernel end', str(e), where) from None
    if not _settings['quiet']:
        for race in races:
            print(f'trnsim: warning: {where[0]}:{where[1]}: {race}', file=sys.stderr)
        for note in dict.fromkeys(notes):  # (once each)
            print(f'trnsim: note: {where[0]}:{where[1]}: {note}', file=sys.stderr)
        for (site, api_name), note in trace.notes.items():
            print(f'trnsim: note: {site[0]}:{site[1]}: {api_name}: {note}', file=sys.stderr)


def _run_values(trace, ret, bound, where):
    """The kernel's outputs by the interpreter, as the kind of array it was given (numpy or
    torch); outputs passed as arguments (2024 kernels) are written in place."""
    run = Interpreter(trace).run()
    _say_kernel_bugs(run.warnings)
    torch_in = any(_is_torch(orig) for _, orig in bound)

    def out(r):
        if isinstance(r, HbmTensor):
            arr = _dtypes.to_user(run.output(r), r.dtype_name)
            return _to_torch(arr) if torch_in else _surveyed(arr)
        if isinstance(r, (tuple, list)):
            return type(r)(out(x) for x in r)
        if r is None:
            return None
        what = ('an on-chip tile (store it to an HBM tensor with nl.store)'
                if isinstance(r, (Tile, TileBlocks)) or hasattr(r, 'materialize')
                else type(r).__name__)
        raise KernelError('kernel return', f'a kernel returns HBM tensors, not {what}', where)

    outputs = out(ret)
    for t, orig in bound:
        if not run.written[t.id]:
            continue
        arr = _dtypes.to_user(run.output(t), t.dtype_name)
        if isinstance(orig, np.ndarray) and orig.flags.writeable:
            orig[...] = arr.reshape(orig.shape)
        elif _is_torch(orig):
            orig.copy_(_to_torch(arr).reshape(orig.shape))
    return outputs


def trace_kernel(kernel, args, kwargs, values, flags=None):
    """Runs `kernel` on numpy arrays (or placeholders): its recording, its program, and, when
    `values`, its outputs; `flags`: its launch's compiler flags (else read from `kernel`)."""
    fn = _function(kernel)
    style = 'isa' if _is_isa(kernel) else 'nl'
    if _trace.Trace.current is not None:
        raise KernelError('nki kernel', 'kernels calling kernels are not supported yet')
    where = def_site(fn)
    if flags is None:
        flags = launch_flags(kernel, user_site())
    _dtypes.PRECISE = _precise_fp()
    if isinstance(kernel, JitKernel) and kernel.edition not in (None, 'beta1') and \
            _lnc(user_site(), flags) == 2:
        kernel = Launch(kernel, 2, kernel.edition, where)  # LNC=2: an instance per core
    kb = _KernelBuild(kernel, fn, style, args, kwargs, values, where)
    # A trace holds every tile and operation until the end: the cyclic collector's passes over
    # them would cost more than the tracing.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        trace, kb.ret, kb.bound = kb.record()
        t1 = time.perf_counter()
        recording = t1 - t0
        if _settings['recording_out']:  # (kept when the build fails; rewritten after it)
            with open(_settings['recording_out'], 'w') as f:
                f.write(trace.text())
        trace, built = kb.build(trace)
    finally:
        if gc_was_enabled:
            gc.enable()
    ret, bound = kb.ret, kb.bound
    programs, races, flops, notes = built
    if _settings['recording_out']:
        with open(_settings['recording_out'], 'w') as f:
            f.write(trace.text())
    _check_and_say(trace, programs, races, notes, where)
    t2 = time.perf_counter()
    outputs = None
    _say_kernel_bugs(trace.warnings)  # (found as it was recorded)
    if values:
        outputs = _run_values(trace, ret, bound, where)
    else:
        _check_return(ret, where)
    desc = f'nki {getattr(fn, "__name__", "kernel")} ({style})'
    if values:
        survey({'run': 'values', 'kernel': getattr(fn, '__name__', 'kernel'),
                'ops': len(trace.ops), 'executed': trace.executed})
    traced = Traced(trace, programs[0], outputs, desc, flops, (recording, t2 - t1), flags)
    traced.programs = programs  # one per physical core its instances run on (nl.nc)
    traced.builds = kb.builds if kb.cores == 1 else None
    traced.notes = list(dict.fromkeys(notes))  # what the build decided to make it fit
    return traced


def _say_kernel_bugs(warnings):
    """Kernel bugs the hardware would punish, (site, api, message) each: warnings on stderr,
    the first an error with --strict."""
    for site, api_name, message in warnings:
        if _settings['strict']:
            raise KernelError(api_name, message, site)
        if not _settings['quiet']:
            print(f'trnsim: warning: {site[0]}:{site[1]}: {api_name}: {message} (an error '
                  'with --strict)', file=sys.stderr)


def _check_return(r, where):
    if isinstance(r, (tuple, list)):
        for x in r:
            _check_return(x, where)
    elif r is not None and not isinstance(r, HbmTensor):
        what = ('an on-chip tile (store it to an HBM tensor with nl.store)'
                if isinstance(r, (Tile, TileBlocks)) or hasattr(r, 'materialize')
                else type(r).__name__)
        raise KernelError('kernel return', f'a kernel returns HBM tensors, not {what}', where)


def _lnc(site, flags):
    """The LNC degree of NKI 0.x kernels launched without brackets: NEURON_LOGICAL_NC_CONFIG,
    else the compiler flags' --logical-nc-config, else the config's chip.lnc."""
    env = os.environ.get('NEURON_LOGICAL_NC_CONFIG', '').strip()
    if env and env not in ('1', '2'):
        raise KernelError('kernel[lnc]', f'NEURON_LOGICAL_NC_CONFIG={env}: a logical '
                          'NeuronCore has 1 or 2 physical ones', site)
    if env:
        return int(env)
    return flags.lnc if flags.lnc is not None else platform().integer('chip.lnc')


def _run(tr, timeline):
    """The model's stats (JSON text) of a traced kernel: its program on one core, or its
    instances' programs on the physical cores nl.nc placed them on, at once."""
    flags = tr.flags.native(native)
    if len(tr.programs) == 1:
        return platform().run(tr.program, tr.description, timeline, '', flags)
    return platform().run_cores(tr.programs, tr.description, timeline, flags)


_latencies = {}  # (recordings, compiler flags) -> the model's latency, us


def _say_latency(tr):
    """Says on stderr the model's latency of a launch that asked only for values (a plain
    nki.jit call, nki.baremetal, nki.simulate_kernel), unless quiet: its program run on the
    model, once per recording and flags in this process (a launch recorded the same again is
    said from the first run). Returns tr."""
    if _settings['quiet']:
        return tr
    name = tr.description.split(' ')[1] if ' ' in tr.description else tr.description
    cores = len(tr.programs)
    key = (tuple(tr.trace.text(c) for c in range(cores)) if cores > 1 else tr.trace.text(),
           tuple(tr.flags.applied), tr.flags.hardware_dge)
    us = _latencies.get(key)
    if us is None:
        try:
            us = _stat(json.loads(_run(tr, '')), 'total_time_ns') / 1e3
        except native.UserError as e:
            print(f'trnsim: warning: {name}: the model could not time this launch: {e}',
                  file=sys.stderr)
            return tr
        _latencies[key] = us
    print(f'trnsim: {name} on {platform().name}: {us:.2f} us (model latency of this launch; '
          'nki.benchmark prints where the time goes)', file=sys.stderr)
    return tr


class JitKernel:
    """@nki.jit: called on numpy arrays, runs the kernel and returns its outputs."""

    def __init__(self, func, edition=None, **options):
        self.func = func
        self.edition = edition
        self.options = options
        self.__name__ = getattr(func, '__name__', 'kernel')
        self.__doc__ = getattr(func, '__doc__', None)
        self.__wrapped__ = func  # (inspect.signature and getsource see the kernel's own)

    def __call__(self, *args, **kwargs):
        if _trace.Trace.current is not None:  # a kernel called by the kernel being traced
            # (`@nki.jit(mode='trace')` sub-kernels): traced into it, as a helper function is
            return self.func(*args, **kwargs)
        return _say_latency(trace_kernel(self, args, kwargs, True)).outputs

    def __getitem__(self, grid):
        return Launch(self, grid, self.edition, user_site())


def _lnc_error(n, site):
    return KernelError('kernel[lnc]', f'LNC={n} runs the kernel on {n} physical NeuronCores; '
                       f'this platform ({platform().name}) runs it on '
                       f'{platform().cores()} (the cores of an HBM stack: --config trn2)', site)


def _place_on_cores(launch, sizes, axis, cores, site):
    """Sets launch.cores and launch.core_of: the instances along grid axis `axis` (nl.nc)
    spread over `cores` physical NeuronCores in equal runs (nl.nc's "distributed to different
    physical neuron cores on the annotated dimension")."""
    if cores > platform().cores():
        raise _lnc_error(cores, site)
    per = sizes[axis] // cores
    launch.cores = cores
    launch.core_of = lambda instance: instance[axis] // per


class Launch:
    """kernel[...]: in beta 1 an SPMD launch grid (kernel[4, 2], nl.nc(2) marking physical
    NeuronCores); in NKI 0.x the logical NeuronCore degree (kernel[1], kernel[2] for LNC=2,
    as NEURON_LOGICAL_NC_CONFIG sets it). The instances of a core run on it serially; with
    nl.nc(2) or LNC=2 the two cores of an HBM stack run theirs at once (`cores`, `core_of`)."""

    def __init__(self, kernel, grid, edition, site):
        self.kernel, self.func = kernel, kernel.func
        self.__name__ = getattr(kernel, '__name__', 'kernel')
        dims = grid if isinstance(grid, tuple) else (grid,)
        if edition not in (None, 'beta1'):
            if len(dims) != 1 or isinstance(dims[0], bool) or \
                    not isinstance(dims[0], (int, np.integer)):
                raise KernelError('kernel[lnc]', f'kernel[{grid!r}]: the brackets of NKI 0.x '
                                  'hold one number, the count of physical NeuronCores (LNC)',
                                  site)
            n = int(dims[0])
            if n not in (1, 2):
                raise KernelError('kernel[lnc]', f'LNC={n}: a logical NeuronCore has 1 or 2 '
                                  'physical ones', site)
            self.grid = ()
            if n == 2:  # one instance on each core of the pair: nl.program_id(0) is 0 or 1
                self.grid = (2,)
                _place_on_cores(self, self.grid, 0, 2, site)
            return
        sizes, placed = [], None
        for axis, d in enumerate(dims):
            d = d if isinstance(d, GridDim) else GridDim(_count(d), 1)
            if d.cores > 1:
                if placed is not None:
                    raise unsupported('kernel[grid]', 'nl.nc on two axes of a launch grid',
                                      site)
                placed = (axis, d.cores)
            sizes.append(d.size)
        self.grid = tuple(sizes)
        if placed:
            _place_on_cores(self, self.grid, placed[0], placed[1], site)

    @property
    def _trnsim_isa(self):
        return _is_isa(self.kernel)

    def __call__(self, *args, **kwargs):
        return _say_latency(trace_kernel(self, args, kwargs, True)).outputs


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
    if not template:
        return ''
    return template.replace('{n}', str(_benchmarks))


def _write_stats(path, text):
    """--stats-out: a run's statistics tree (JSON)."""
    if path:
        with open(path, 'w') as f:
            f.write(text + '\n')


def _annotate_if_asked(stats):
    """--annotate: the kernel's source with its lines' figures (trnsim/nki/_annotate.py)."""
    if _settings['annotate']:
        from ._annotate import annotate
        annotate(stats, sys.stdout)
        sys.stdout.flush()


def _launched(kernel, func, grid):
    """The kernel launched on `grid` (beta 1's SPMD grid, NKI 0.x's logical core count), as a
    subscript of nki.benchmark's or nki.simulate's result gives it."""
    if not isinstance(kernel, JitKernel):
        kernel = JitKernel(func, getattr(kernel, 'edition', None))
    return Launch(kernel, grid, kernel.edition, user_site())


class _ModelRun:
    """What nki.benchmark, nki.simulate and nki.profile share: the kernel (a kernel, a launch
    of one or its function), its name, and a run of its traced launch on the model, whose
    statistics stay on the object (`stats`). Subclasses name their API (`api_name`)."""

    api_name = 'nki'

    def __init__(self, kernel):
        self.kernel = kernel
        self.func = _function(kernel)
        self.__name__ = getattr(self.func, '__name__', 'kernel')
        self.stats = None

    @property
    def _trnsim_isa(self):
        return _is_isa(self.kernel)

    def _simulate(self, tr, timeline):
        """Runs traced launch `tr` on the model, its timeline written at `timeline` (None:
        none); keeps its statistics and returns them as JSON text. The model's errors are the
        kernel's, at its def."""
        try:
            text = _run(tr, timeline)
        except native.UserError as e:
            raise KernelError(self.api_name, str(e), def_site(self.func)) from None
        self.stats = json.loads(text)
        return text

    @staticmethod
    def _write_outputs(text, tr):
        """The run's --stats-out and --builds-out (each numbered by the runs so far)."""
        _write_stats(_placeholder(_settings['stats_out']), text)
        if _settings['builds_out']:
            _write_builds(_placeholder(_settings['builds_out']), tr)


class BenchmarkKernel(_ModelRun):
    """nki.benchmark: runs the kernel's program on the model and keeps its latency."""

    api_name = 'nki.benchmark'

    def __init__(self, kernel, warmup=None, iters=None, save_neff_name=None,
                 save_trace_name=None, additional_compile_opt=None, **options):
        super().__init__(kernel)
        self.options = dict(options, warmup=warmup, iters=iters,
                            additional_compile_opt=additional_compile_opt,
                            save_neff_name=save_neff_name, save_trace_name=save_trace_name)
        self.save_neff_name, self.save_trace_name = save_neff_name, save_trace_name
        self.benchmark_result = None
        self._parent = None  # (a launch of this one, bench[grid]: its results go there too)

    def __getitem__(self, grid):
        """bench[grid](...): the kernel launched on that grid (beta 1's SPMD grid, 0.x's LNC),
        its benchmark_result kept on this object too (AWS's tests read it there)."""
        child = BenchmarkKernel(_launched(self.kernel, self.func, grid), **self.options)
        child._parent = self
        return child

    def __call__(self, *args, **kwargs):
        global _benchmarks
        tr = trace_kernel(self.kernel, args, kwargs, False, launch_flags(self, user_site()))
        t1 = time.perf_counter()
        _benchmarks += 1
        timeline = _placeholder(_settings['timeline'])
        text = self._simulate(tr, self.save_trace_name or timeline)
        t2 = time.perf_counter()
        self._write_outputs(text, tr)
        if self.save_neff_name:
            _write_recording(self.save_neff_name, tr)
        if self.save_trace_name:
            _add_summary(self.save_trace_name, perf_summary(self.stats))
            if timeline:
                shutil.copyfile(self.save_trace_name, timeline)
        us = _stat(self.stats, 'total_time_ns') / 1e3
        self.benchmark_result = BenchmarkResult(us, self.stats)
        survey({'run': 'benchmark', 'kernel': self.__name__, 'ops': tr.ops,
                'executed': tr.trace.executed, 'us': us})
        self.record_seconds, self.build_seconds = tr.seconds
        self.simulate_seconds = t2 - t1
        if not _settings['quiet']:
            self._print(us, tr)
        _annotate_if_asked(self.stats)
        if self._parent is not None:
            self._parent.stats, self._parent.benchmark_result = self.stats, self.benchmark_result
        return None

    def _print(self, us, tr):
        p = platform()
        print(f'trnsim nki.benchmark: {self.__name__} on {p.name} (model, deterministic: every '
              'percentile is the same)')
        cols = ['p0', 'p1', 'p10', 'p25', 'p50', 'p90', 'p99', 'p100']
        print('latency (us) ' + ' '.join(f'{c:>10}' for c in cols))
        print(' ' * 13 + ' '.join(f'{us:10.2f}' for _ in cols))
        p.print_summary(tr.description)
        print(f'(recorded {tr.ops} operations standing for {tr.trace.executed} in '
              f'{self.record_seconds:.2f} s, built the program in {self.build_seconds:.2f} s, '
              f'simulated in {self.simulate_seconds:.2f} s)')
        sys.stdout.flush()


def _gbps(text):
    """A bandwidth of the stats' config ("750GB/s", "1.2TB/s", "23B/ns") in GB/s; None if
    it is not one."""
    m = re.fullmatch(r'\s*([0-9.eE+-]+)\s*(GB/s|TB/s|MB/s|B/ns)\s*', str(text or ''))
    if not m:
        return None
    return float(m.group(1)) * {'GB/s': 1.0, 'TB/s': 1e3, 'MB/s': 1e-3, 'B/ns': 1.0}[m.group(2)]


def perf_summary(stats):
    """The profiler-style summary of a run, from the model's statistics: the keys of the Neuron
    profiler's summary that nki-autotune and agent optimisers read, with the meanings the Neuron
    Explorer's profile schema gives them (docs/nki.md, "The summary"): total_time in seconds,
    the utilisations in percent, the FLOP and byte counts of the whole launch (every core of an
    LNC=2 launch); `source` says they are trnsim's model."""
    cores = [c for c in (stats.get('cores') or {}).values() if isinstance(c, dict)] or [stats]

    def total(key):
        return sum(_stat(c, key) for c in cores)
    seconds = _stat(stats, 'total_time_ns') / 1e9
    peak_bw = _gbps(stats.get('config', {}).get('core', {}).get('hbm', {}).get('bandwidth'))
    peak_bw = peak_bw * 1e9 if peak_bw else None  # B/s of the core's HBM stack
    peak_ops = _stat(stats, 'engines.pe.peak_tflops') * 1e12 * len(cores)
    model_flops = total('engines.pe.flops')
    transpose_flops = total('engines.pe.transpose_flops')
    hbm_bytes = total('hbm.read_bytes') + total('hbm.write_bytes')

    def pct(part, whole):
        return 100.0 * part / whole if whole else None
    return {
        'source': 'trnsim model (not a neuron-profile measurement)',
        'total_time': seconds,
        'model_flops': model_flops,
        'hardware_flops': model_flops + transpose_flops,
        'transpose_flops': transpose_flops,
        'hbm_read_bytes': total('hbm.read_bytes'),
        'hbm_write_bytes': total('hbm.write_bytes'),
        'mfu_estimated_percent': pct(model_flops, peak_ops * seconds),
        'hfu_estimated_percent': pct(model_flops + transpose_flops, peak_ops * seconds),
        'mbu_estimated_percent': pct(hbm_bytes, (peak_bw or 0) * seconds),
        'mfu_max_achievable_estimated_percent':
            pct(model_flops / hbm_bytes, peak_ops / peak_bw) if hbm_bytes and peak_bw else None,
        'bound_by': stats.get('limit', {}).get('by'),
    }


_SUMMARY_KEY = 'trnsim_summary'


def _add_summary(path, summary):
    """Adds the run's summary to the timeline trnsim wrote at `path` (its JSON object's
    `trnsim_summary` member, which trace viewers keep as metadata)."""
    with open(path) as f:
        text = f.read()
    end = text.rstrip().rfind('}')
    with open(path, 'w') as f:
        f.write(text[:end] + f',"{_SUMMARY_KEY}":' + json.dumps(summary) + '}\n')


def _write_builds(path, tr):
    """--builds-out: what trnsim.replay needs to build and run this launch again under another
    config: each recording the builder was given and what it answered, the compiler flags, the
    platform config and what else the launch depended on; or why it cannot be replayed (a
    launch on several cores, a script that configured trnsim itself)."""
    if tr.builds is None:
        builds = {'not_replayable': 'the launch ran on several cores'}
    elif _settings['sets_how'] != '--set' or _settings['functional']:
        builds = {'not_replayable': 'the script configured trnsim itself (configure())'}
    else:
        flags = tr.flags.native(native)  # (the bridge's form of the flags)
        builds = {'config': _platform_config, 'frontend': _replay.frontend_view(platform()),
                  'inputs': _replay.launch_inputs(_settings['sets']),
                  'description': tr.description,
                  'flags': {k: getattr(flags, k) for k in ('hardware_dge', 'applied', 'ignored')},
                  'builds': [{'recording': t, 'answer': a} for t, a in tr.builds]}
    with open(path, 'w') as f:
        json.dump(builds, f)


def _write_recording(path, tr):
    """save_neff_name: trnsim's recording of the kernel (its text form), where the SDK saves
    the NEFF."""
    with open(path, 'w') as f:
        f.write(tr.trace.text())


@api('compiler.ncc_driver.extract_perf_metrics', '0.x',
     signature='neff_path, ntff_path, verbose=False')
def extract_perf_metrics(neff_path, ntff_path, verbose=False):
    """nki.compiler.ncc_driver.extract_perf_metrics(neff, ntff) as nki-autotune calls it: the
    summary of the run whose timeline trnsim wrote at ntff_path (nki.benchmark's
    save_trace_name, nki.profile's), or None when there is none (said when verbose), as the
    SDK's returns None when the profiler fails. The NEFF is not read: trnsim's recording holds
    no timing."""
    try:
        with open(ntff_path) as f:
            summary = json.load(f).get(_SUMMARY_KEY)
    except (OSError, ValueError, AttributeError) as e:
        summary, why = None, f'{ntff_path}: {e}'
    else:
        why = f'{ntff_path} is not a timeline trnsim wrote with a summary (nki.benchmark\'s ' \
              'save_trace_name, nki.profile)'
    if summary is None and verbose:
        print(f'Warning: trnsim: no summary: {why}')
    return summary


class ProfileKernel(_ModelRun):
    """nki.profile: runs the kernel (its outputs returned) and writes, in working_directory,
    trnsim's own artefacts at the names the caller gives: at save_neff_name the kernel's
    recording (text, "trnsim-nki-recording 1": not a NEFF), at save_trace_name the model's
    timeline (trnsim's trace JSON: not an NTFF) for each profiled execution (profile_nth, 2 x
    profile_nth, ... up to num_execs; the first named as given, the others <name>_exec_<n>),
    and in json_reports/ one summary (perf_summary) per profiled execution. The model's
    executions are all the same. An existing file is an error unless overwrite=True."""

    api_name = 'nki.profile'

    def __init__(self, kernel, working_directory=None, save_neff_name='file.neff',
                 save_trace_name='profile.ntff', overwrite=False, profile_nth=1, num_execs=1,
                 additional_compile_opt=None, **options):
        super().__init__(kernel)
        self.working_directory, self.overwrite = working_directory, overwrite
        self.save_neff_name, self.save_trace_name = save_neff_name, save_trace_name
        self.profile_nth, self.num_execs = int(profile_nth), int(num_execs)
        self.options = dict(options, additional_compile_opt=additional_compile_opt)

    def _paths(self):
        wd = self.working_directory
        where = def_site(self.func)
        if not wd or not os.path.isabs(str(wd)):
            raise KernelError('nki.profile', f'working_directory must be an absolute path, got '
                              f'{wd!r}', where)
        if self.profile_nth < 1 or self.num_execs < 1:
            raise KernelError('nki.profile', 'profile_nth and num_execs must be at least 1',
                              where)
        execs = list(range(self.profile_nth, self.num_execs + 1, self.profile_nth)) or \
            [self.profile_nth]
        base, ext = os.path.splitext(os.path.basename(self.save_trace_name))
        traces = [os.path.join(wd, f'{base}{ext}' if k == 1 else f'{base}_exec_{k}{ext}')
                  for k in execs]
        reports = [os.path.join(wd, 'json_reports', f'{base}_exec_{k}.json') for k in execs]
        return os.path.join(wd, os.path.basename(self.save_neff_name)), traces, reports

    def __call__(self, *args, **kwargs):
        neff, traces, reports = self._paths()
        if not self.overwrite:
            for path in [neff] + traces + reports:
                if os.path.exists(path):
                    raise KernelError('nki.profile', f'{path} exists (pass overwrite=True to '
                                      'replace it)', def_site(self.func))
        tr = trace_kernel(self.kernel, args, kwargs, True, launch_flags(self, user_site()))
        os.makedirs(os.path.dirname(reports[0]), exist_ok=True)
        self._simulate(tr, traces[0])
        _write_recording(neff, tr)
        summary = perf_summary(self.stats)
        _add_summary(traces[0], summary)
        for path in traces[1:]:
            shutil.copyfile(traces[0], path)
        for path in reports:
            with open(path, 'w') as f:
                json.dump({'summary': [summary], 'stats': self.stats}, f, indent=1)
        if not _settings['quiet']:
            print(f'trnsim: nki.profile {self.__name__} on {platform().name}: '
                  f'{summary["total_time"] * 1e6:.2f} us (model); the recording, timelines and '
                  f'summaries in {self.working_directory}', file=sys.stderr)
        return tr.outputs


# The harness APIs (the top level of nki).

@api('.jit', beta1='func=None, mode=None, **options', v0='fn=None, mode=None, **options')
def jit(func=None, mode=None, fn=None, edition=None, **options):
    """@nki.jit: the kernel, called on numpy arrays, returns its outputs."""
    func = func if func is not None else fn
    if func is None:
        return lambda f: JitKernel(f, edition, **options)
    return JitKernel(func, edition, **options)


api('.trace', 'beta1', signature='func=None, mode=None, **options')(jit)


def _values_kernel(kernel, options):
    if isinstance(kernel, Launch):  # nki.simulate(kernel[1]), nki.baremetal(kernel[4, 2])
        return kernel
    return JitKernel(getattr(kernel, 'func', kernel), getattr(kernel, 'edition', None),
                     **options)


@api('.baremetal', 'beta1', signature='kernel=None, **options')
def baremetal(kernel=None, **options):
    """nki.baremetal(kernel)(*arrays): the kernel's outputs (outputs passed as arguments are
    written in place)."""
    if kernel is None:
        return lambda k: _values_kernel(k, options)
    return _values_kernel(kernel, options)


class SimulatedKernel(_ModelRun):
    """nki.simulate(kernel): called on numpy arrays or torch CPU tensors, returns the kernel's
    outputs in the same kind, as AWS's simulator does; trnsim also runs the model, whose
    latency (`latency_us`) and statistics (`stats`, as nki.benchmark's) stay on this object,
    and says it on stderr (unless quiet). NKI 0.x has no public timing API."""

    api_name = 'nki.simulate'

    def __init__(self, kernel, options=None):
        super().__init__(kernel)
        self.options = dict(options or {})
        self.latency_us = None

    def __getitem__(self, grid):
        """nki.simulate(kernel)[lnc](...) (NKI 0.x: the logical NeuronCore count; beta 1: the
        SPMD grid): the kernel so launched; latency and statistics on the result."""
        return SimulatedKernel(_launched(self.kernel, self.func, grid), self.options)

    def __call__(self, *args, **kwargs):
        global _benchmarks
        tr = trace_kernel(self.kernel, args, kwargs, True, launch_flags(self, user_site()))
        p = platform()
        _benchmarks += 1  # numbers the runs of --stats-out and --timeline's {n}
        text = self._simulate(tr, _placeholder(_settings['timeline']))
        self._write_outputs(text, tr)
        self.latency_us = _stat(self.stats, 'total_time_ns') / 1e3
        if not _settings['quiet']:
            compiled = (f', compiled with {" ".join(tr.flags.applied)}' if tr.flags.applied
                        else '')
            print(f'trnsim: nki.simulate {self.__name__} on {p.name}{compiled}: '
                  f'{self.latency_us:.2f} us (model latency; .latency_us, .stats)',
                  file=sys.stderr)
        _annotate_if_asked(self.stats)
        return tr.outputs


def _as_kernel(kernel, edition, options=None):
    """A kernel given as its plain function (NKI 0.x's nki.simulate "automatically wraps" one)
    as a JitKernel of the edition whose API was called; a kernel or launch as it is."""
    if isinstance(kernel, (JitKernel, Launch)) or not callable(kernel):
        return kernel
    return JitKernel(getattr(kernel, 'func', kernel), getattr(kernel, 'edition', None) or
                     edition, **(options or {}))


@api('.simulate', '0.3+', signature='kernel, **options')
def simulate(kernel, edition=None, **options):
    """nki.simulate(kernel)(*arrays) (NKI 0.3 on): the kernel's outputs (and the model's
    latency, on the returned object)."""
    return SimulatedKernel(_as_kernel(kernel, edition, options), options)


# nki.cpu_simulate(kernel)[lnc](**kwargs), as the NKI Library's older simulation harness calls
# its simulator package (nki_cpu_simulator.nki): nki.simulate under that name (not in the API
# reference: the library's use)
api('.cpu_simulate', '0.x', signature='kernel, **options')(simulate)


@api('simulator.simulate_kernel', '0.3+', signature='kernel, args=(), kwargs=None, lnc=None')
def simulator_simulate_kernel(kernel, args=(), kwargs=None, lnc=None, edition=None):
    """nki.simulator.simulate_kernel(kernel, args, kwargs, lnc=), as vLLM Neuron's CPU mode
    calls it on a kernel's function: its outputs (an array or a tuple), its writes to argument
    tensors landing in the caller's arrays; the model's latency said on stderr (unless quiet)
    and in --stats-out, never in the return value."""
    sim = simulate(kernel, edition)
    if lnc is not None and int(lnc) != 1:
        sim = sim[int(lnc)]
    return sim(*args, **dict(kwargs or {}))


@api('.simulate_kernel', 'beta1', signature='kernel, *args, **kwargs')
def simulate_kernel(kernel, *args, **kwargs):
    """The kernel's output values for numpy inputs."""
    return _say_latency(trace_kernel(kernel, args, kwargs, True)).outputs


@api('.profile', 'beta1', signature='func=None, **options')
def profile(func=None, **options):
    """nki.profile(kernel, working_directory=..., ...) or @nki.profile(...): calling the result
    runs the kernel and writes trnsim's artefacts (ProfileKernel)."""
    if func is None:
        return lambda k: ProfileKernel(k, **options)
    return ProfileKernel(func, **options)


@api('.benchmark', signature='kernel=None, **options')
def benchmark(kernel=None, edition=None, **options):
    """nki.benchmark(kernel, ...), @nki.benchmark(...) or nki.benchmark(...)(kernel): calling
    the result runs the model; its benchmark_result.nc_latency answers latency percentiles. NKI
    0.x has no nki.benchmark; trnsim keeps it there for the model's latency."""
    if kernel is None:
        return lambda k: BenchmarkKernel(_as_kernel(k, edition), **options)
    return BenchmarkKernel(_as_kernel(kernel, edition), **options)

"""Runs AWS's NKI Library's own integration tests (a fetched copy of aws-neuron/nki-library) on
trnsim, in the library's simulation mode: each test's inputs, reference and tolerance are the
library's; the kernel runs through nki.cpu_simulate(kernel)[lnc], as its harness calls a CPU
simulator, and the model's latency is kept beside the values. Run through scripts/nki-library
(docs/nki.md, "Running the NKI Library").

The library's test framework needs what a Debian machine lacks (its orchestrator imports files
the repository does not ship, boto3, paramiko, fabric2, aws_embedded_metrics, allpairspy,
neuron_dtypes): this plugin stands in for the orchestrator (test.utils.test_orchestrator) and
gives those packages the few names the tests reach; everything else is the library's."""

import argparse
import builtins
import json
import os
import re
import sys
import time
import types

import numpy as np

# The library's test folders of kernels that run on one rank (collectives and the transformer
# megakernels excepted; MLP while core/mlp/mlp.py fails to import upstream).
EXCLUDED = ('experimental/collectives', 'experimental/transformer', 'core/transformer',
            'core/mlp')
# The shapes the library's simulation mode skips as too slow for a CPU simulator
# (test/utils/simulation_setup.py), unless --all.
LARGE = ('4096', '5120', '8192', '16384', '32768', '36864')


def _module(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    parent, _, child = name.rpartition('.')
    if parent:
        setattr(sys.modules[parent], child, mod)
    return mod


def _stand_ins():
    """The names the library's tests reach in packages Debian does not have."""
    class MetricsContext:
        @classmethod
        def empty(cls):
            return cls()
    _module('aws_embedded_metrics')
    _module('aws_embedded_metrics.logger')
    _module('aws_embedded_metrics.logger.metrics_context', MetricsContext=MetricsContext)
    _module('aws_embedded_metrics.serializers')
    _module('aws_embedded_metrics.serializers.log_serializer', LogSerializer=object)
    _module('fabric2', Result=object)
    _module('plotext')

    def all_pairs(values, filter_func=None, **_):
        """Pairwise coverage: each value of each parameter at least once (the library's fast
        tests never reach it; a sweep gets every value, not every pair)."""
        width = max(len(v) for v in values)
        for i in range(width):
            row = [v[i % len(v)] for v in values]
            if filter_func is None or filter_func(row):
                yield row
    _module('allpairspy', AllPairs=all_pairs)

    from trnsim.nki import _dtypes

    def static_cast(arr, dtype=None):
        """neuron_dtypes.static_cast as the library uses it: values cast to `dtype` as the
        device rounds (round to nearest even for the floats, truncation and saturation for the
        integers: trnsim's own casts), or four fp8 values packed into an MX x4 element."""
        if isinstance(dtype, _dtypes.MxDtype):
            if dtype.name == 'float4_e2m1fn_x4':
                raise NotImplementedError('static_cast to float4_e2m1fn_x4 (trnsim\'s '
                                          'stand-in of neuron_dtypes packs only fp8)')
            v = np.asarray(arr, dtype=np.float32)
            return _dtypes.pack_fp8(v.reshape(v.shape[:-1] + (-1, 4)), dtype.name).astype(
                _dtypes.storage(dtype.name))
        name = np.dtype(dtype).name
        src = np.asarray(arr)
        if src.dtype.kind in 'fV' or src.dtype.name in _dtypes.CUSTOM:
            src = src.astype(np.float32)
        return np.asarray(_dtypes.round_to(src, name)).astype(np.dtype(name))

    def is_float_type(dtype):
        d = np.dtype(dtype)
        return d.kind == 'f' or d.name in _dtypes.CUSTOM

    _module('neuron_dtypes', static_cast=static_cast, is_float_type=is_float_type,
            sizeinbytes=lambda dtype: np.dtype(dtype).itemsize,
            finfo=lambda dtype: np.finfo(np.float32) if np.dtype(dtype).name in _dtypes.CUSTOM
            else np.finfo(dtype),
            bfloat16=_dtypes.bfloat16, float8_e4m3=_dtypes.float8_e4m3,
            float8_e4m3fn=_dtypes.float8_e4m3fn, float8_e5m2=_dtypes.float8_e5m2,
            **{name: mx for name, mx in _dtypes.MX.items()})


RESULTS = []  # one per kernel launch: test id, kernel, LNC, latency


class Orchestrator:
    """The library's test_manager in simulation mode: runs the kernel through
    nki.cpu_simulate(kernel)[lnc] (its harness's call), then validates the outputs as the
    library's OutputValidator does (its comparator, maxAllClose in "max" mode, or the test's
    own validators on the raw bytes)."""

    def __init__(self, request, platform):
        self.request, self.platform = request, platform

    def execute(self, kernel_args):
        import nki
        from test.integration.nkilib.utils.comparators import maxAllClose
        from test.utils.common_dataclasses import (CustomValidatorWithOutputTensorData,
                                                   LazyGoldenGenerator, normalize_golden_output)
        ci = kernel_args.compiler_input
        os.environ['NKI_NC_VERSION'] = ci.platform_target.get_nc_gen()
        lnc = ci.logical_nc_config
        inputs = {k.removesuffix('.must_alias_input'): v
                  for k, v in (kernel_args.kernel_input or {}).items()}
        sim = nki.cpu_simulate(kernel_args.kernel_func)[lnc]
        try:
            result = sim(**inputs)
        except AssertionError as e:  # kernel_assert's, which negative tests look for
            raise AssertionError(str(e)) from None
        outs = [] if result is None else list(result) if isinstance(result, (list, tuple)) \
            else [result]
        RESULTS.append({'test': self.request.node.nodeid, 'lnc': lnc,
                        'kernel': getattr(kernel_args.kernel_func, '__name__', '?'),
                        'us': sim.latency_us})
        va = kernel_args.validation_args
        if va is None:
            return
        placeholders = normalize_golden_output(va.golden_output)
        assert len(outs) == len(placeholders), \
            f'the kernel returned {len(outs)} outputs, the test names {len(placeholders)}'
        golden = va.golden_output.golden if isinstance(va.golden_output, LazyGoldenGenerator) \
            else va.golden_output
        if golden is None:
            return
        failed = []
        for (name, want), out in zip(placeholders.items(), outs):
            if name not in golden:
                continue
            ref = golden[name]
            if isinstance(ref, CustomValidatorWithOutputTensorData):
                raw = np.ascontiguousarray(np.asarray(out, dtype=ref.dtype)).view(np.uint8)
                if not ref.validator(None).validate(raw.ravel()):
                    failed.append(name)
                continue
            got = np.asarray(out, dtype=want.dtype).astype(np.float32).reshape(
                np.shape(ref))
            if not maxAllClose(got, np.asarray(ref).astype(np.float32),
                               rtol=va.relative_accuracy, atol=va.absolute_accuracy, verbose=1):
                failed.append(name)
        assert not failed, f'values outside the library\'s tolerance: {", ".join(failed)}'


class Plugin:
    """pytest hooks and fixtures standing in for the library's conftest."""

    def __init__(self, platform):
        self.platform = platform

    def pytest_generate_tests(self, metafunc):
        from test.utils.coverage_parametrized_tests import (extract_parametrize_args,
                                                            generate_parametrized_test_case)
        from test.utils.ranged_test_harness import RangeTestHarness
        if 'range_test_options' in metafunc.fixturenames:
            ids, cases = RangeTestHarness(metafunc.function.range_test_config) \
                .get_unique_test_cases()
            metafunc.parametrize('range_test_options', cases, ids=ids)
            return
        marker = metafunc.definition.get_closest_marker('coverage_parametrize')
        if marker:
            params = dict(marker.kwargs)
            coverage = params.pop('coverage', None) or 'singles'
            keys = ('filter', 'enable_automatic_boundary_tests',
                    'enable_invalid_combination_tests', 'n_tests_per_boundary_value',
                    'max_invalid_tests')
            opts = {k: params.pop(k) for k in keys if k in params}
            cases = generate_parametrized_test_case(params=params, coverage=coverage,
                                                    filter_func=opts.pop('filter', None),
                                                    **opts)
            names, values, ids = extract_parametrize_args(params, cases)
            metafunc.parametrize(names, values, ids=ids)

    def pytest_collection_modifyitems(self, config, items):
        import pytest
        from test.utils.common_dataclasses import Platforms
        target = Platforms(self.platform)
        skips = {id(item): self._skip_reason(item, target, config) for item in items}
        if config.getoption('--smallest'):  # each test class's smallest positive case that
            keep = {}                          # can run, fast-marked or not
            for item in items:
                if self._negative(item):
                    continue
                path = (str(item.fspath), getattr(item.cls, '__name__', ''))
                rank = (skips[id(item)] is not None, self._size(item))
                if path not in keep or rank < keep[path][0]:
                    keep[path] = (rank, item)
            chosen = {id(item) for _, item in keep.values()}
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in chosen])
            items[:] = [i for i in items if id(i) in chosen]
        for item in items:
            if skips[id(item)]:
                item.add_marker(pytest.mark.skip(reason=skips[id(item)]))

    @staticmethod
    def _skip_reason(item, target, config):
        """Why the library's simulation mode would not run a test here, or None."""
        own = item.get_closest_marker('skip')  # (the test's own, an empty parameter set's)
        if own:
            return own.kwargs.get('reason') or (own.args[0] if own.args else 'skipped')
        m = item.get_closest_marker('platforms')
        if m and target in m.kwargs.get('exclude', ()):
            return f'not on {target.value}'
        if not (config.getoption('--all-shapes') or config.getoption('--smallest')) and \
                any(s in item.name for s in LARGE):
            return 'a large shape (the library\'s simulation mode skips it)'
        if item.get_closest_marker('trace_only'):
            return 'trace only (the NKI compiler\'s frontend, not a simulation)'
        return None

    def pytest_addoption(self, parser):
        parser.addoption('--all-shapes', action='store_true')
        parser.addoption('--smallest', action='store_true')

    @staticmethod
    def _size(item):
        """A test case's size: the product of the whole numbers among its parameters (nested
        ones too), the measure --smallest ranks a file's cases by."""
        size, seen = 1, set()

        def walk(x):
            nonlocal size
            if id(x) in seen:
                return
            seen.add(id(x))
            if isinstance(x, bool):
                return
            if isinstance(x, int) and x > 0:
                size *= x
            elif isinstance(x, dict):
                for v in x.values():
                    walk(v)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)
            elif hasattr(x, '__dict__') and not isinstance(x, type):
                for v in vars(x).values():
                    walk(v)
        walk(getattr(getattr(item, 'callspec', None), 'params', {}))
        return size

    @staticmethod
    def _negative(item):
        params = getattr(getattr(item, 'callspec', None), 'params', {})
        case = params.get('range_test_options')
        return bool(params.get('is_negative_test_case') or
                    getattr(case, 'is_negative_test_case', False))

    def _fixtures(self):
        import pytest
        from test.utils.common_dataclasses import Platforms
        from test.utils.metrics_collector import NoopMetricsCollector
        platform = self.platform

        @pytest.fixture
        def test_manager(request):
            return Orchestrator(request, platform)

        @pytest.fixture
        def platform_target():
            return Platforms(platform)

        @pytest.fixture
        def collector():
            return NoopMetricsCollector()
        return test_manager, platform_target, collector


def main():
    ap = argparse.ArgumentParser(prog='scripts/nki-library', description=__doc__.split('\n\n')[0])
    ap.add_argument('library', help='a fetched copy of aws-neuron/nki-library')
    ap.add_argument('--platform', default='trn2', choices=('trn2', 'trn3'))
    ap.add_argument('--json', help='a file that gets the run\'s launches and outcomes')
    ap.add_argument('--quiet', action='store_true', help='no pytest report, only the lines')
    ap.add_argument('--smallest', action='store_true',
                    help='each test class\'s smallest positive case that can run')
    ap.add_argument('--all-shapes', action='store_true',
                    help='also the shapes the library\'s simulation mode skips as too large')
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != '--']  # more pytest arguments (-k EXPR, test files)
    root = os.path.abspath(args.library)
    tests = os.path.join(root, 'test', 'integration', 'nkilib')
    if not os.path.isdir(tests):
        print(f'scripts/nki-library: error: {root} is not a copy of aws-neuron/nki-library '
              '(no test/integration/nkilib)', file=sys.stderr)
        return 2
    sys.path[:0] = [root, os.path.join(root, 'src')]
    sys.modules.pop('test', None)  # (the library's test package, not the standard library's)
    _stand_ins()
    from test.utils import simulation_setup
    simulation_setup.setup_simulation_mode()
    orchestrator = _module('test.utils.test_orchestrator', Orchestrator=Orchestrator)
    del orchestrator
    import pytest
    plugin = Plugin(args.platform)
    fixtures = types.ModuleType('nki_library_fixtures')
    for f in plugin._fixtures():
        setattr(fixtures, f.__name__, f)
    ignores = [f'--ignore={os.path.join(tests, e)}' for e in EXCLUDED]
    outcomes = {}

    class Outcomes:
        def pytest_runtest_logreport(self, report):
            if report.when == 'call' or report.outcome != 'passed':
                outcomes[report.nodeid] = (report.outcome, _first_line(report))
                _say(report.nodeid, outcomes[report.nodeid])
    t0 = time.time()
    quiet = ['-qq', '--tb=no', '-p', 'no:warnings'] if args.quiet else ['-q']
    fast = [] if args.smallest else ['-m', 'fast']  # (the library's fast suite, or each class)
    status = pytest.main(['--noconftest', '-p', 'no:cacheprovider', *quiet, *fast,
                          '--continue-on-collection-errors',
                          '--rootdir', root, '-W', 'ignore::DeprecationWarning',
                          *ignores, *(extra if any(os.path.exists(a) for a in extra)
                                      else [tests] + extra),
                          *(['--smallest'] if args.smallest else []),
                          *(['--all-shapes'] if args.all_shapes else [])],
                         plugins=[plugin, fixtures, Outcomes()])
    _report(outcomes, args, time.time() - t0)
    return int(status)


def _first_line(report):
    """What stopped a test: the last line of its error that names the failure."""
    if report.outcome == 'skipped':
        return report.longrepr[2] if isinstance(report.longrepr, tuple) else ''
    text = str(report.longrepr or '')
    lines = [ln for ln in text.splitlines() if re.match(r'^E\s', ln)]
    return lines[0][1:].strip() if lines else text.splitlines()[-1] if text else ''


def _say(test, outcome):
    """A line on stderr as each test ends (the table comes at the end)."""
    runs = [r for r in RESULTS if r['test'] == test]
    us = ' '.join(f'{r["us"]:.2f}' for r in runs if r['us'] is not None)
    print(f'nki-library: {outcome[0]:8} {test} {us and us + " us"} {outcome[1][:200]}',
          file=sys.stderr, flush=True)


def _report(outcomes, args, seconds):
    by_test = {}
    for r in RESULTS:
        by_test.setdefault(r['test'], []).append(r)
    rows = []
    for test, (outcome, why) in sorted(outcomes.items()):
        runs = by_test.get(test, [])
        us = ' '.join(f'{r["us"]:.2f}' for r in runs if r['us'] is not None)
        if outcome == 'passed' and not runs:  # (a negative test: the kernel refused its input)
            outcome, why = 'no launch', 'passed without running a kernel (a negative test)'
        rows.append({'test': test, 'outcome': outcome, 'why': why, 'lnc': runs[0]['lnc'] if runs
                     else None, 'kernel': runs[0]['kernel'] if runs else None, 'us': us})
        print(f'{outcome:8} {test}  LNC={rows[-1]["lnc"]}  {us} us  {why[:160]}')
    counts = {}
    for r in rows:
        counts[r['outcome']] = counts.get(r['outcome'], 0) + 1
    print(f'nki-library: {len(rows)} tests in {seconds:.0f} s: ' +
          ', '.join(f'{n} {k}' for k, n in sorted(counts.items())))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rows, f, indent=1)


if __name__ == '__main__':
    builtins.__dict__.setdefault('builtin', None)
    sys.exit(main())

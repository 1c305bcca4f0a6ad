"""Runs the performance tests of AWS's nki-samples unit suite (a fetched copy of
aws-neuron/nki-samples) on trnsim and sets the model's latency beside each test's threshold.
Run through scripts/nki-samples (docs/results.md, "AWS's nki-samples thresholds").

Each performance test benchmarks one kernel and asserts its latency is at most a figure written
in the test's parameters (`latency`, `max_p99_latency`), times 1.05 when its assertion says so:
AWS's measured latency on an unnamed trn1-family machine (the repository's CONTRIBUTING) with a
margin. The tests run as written (inputs, kernels, benchmark calls), their assertions included:
a test fails when the model is slower than its threshold."""

import argparse
import inspect
import json
import os
import re
import sys
import tempfile
import time

RESULTS = {}  # test id -> the latency of the last kernel the test benchmarked (us)


class Plugin:
    """Keeps each performance test's threshold and the model's latency."""

    def __init__(self):
        self.thresholds = {}  # test id -> (threshold us, factor its assertion applies)
        self.outcomes = {}

    def pytest_collection_modifyitems(self, items):
        for item in items:
            params = getattr(getattr(item, 'callspec', None), 'params', {})
            names = [n for n in params if n == 'latency' or n.endswith('_latency')]
            if not names:
                continue
            source = inspect.getsource(item.function)
            factor = 1.05 if re.search(rf'\b{names[0]}\s*\*\s*1\.05', source) else 1.0
            self.thresholds[item.nodeid] = (float(params[names[0]]) * factor, factor)

    def pytest_runtest_setup(self, item):
        RESULTS.pop(item.nodeid, None)
        Plugin.current = item.nodeid

    def pytest_runtest_logreport(self, report):
        if report.when == 'call' or report.outcome != 'passed':
            self.outcomes[report.nodeid] = report.outcome


Plugin.current = None


def _record_latencies():
    """Each benchmark's latency, under the test that runs it."""
    from trnsim.nki import _runner
    made = _runner.BenchmarkResult.__init__

    def init(self, us, stats):
        made(self, us, stats)
        RESULTS[Plugin.current] = us
    _runner.BenchmarkResult.__init__ = init


def main():
    ap = argparse.ArgumentParser(prog='scripts/nki-samples',
                                 description=__doc__.split('\n\n')[0])
    ap.add_argument('samples', help='a fetched copy of aws-neuron/nki-samples (5cfeabc: the last '
                    'commit whose performance tests assert their thresholds)')
    ap.add_argument('--json', help='a file that gets the table')
    ap.add_argument('-k', dest='select', help='only the performance tests this pytest '
                    'expression selects')
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != '--']  # more pytest arguments
    select = f'perf and ({args.select})' if args.select else 'perf'
    root = os.path.abspath(args.samples)
    out = os.path.abspath(args.json) if args.json else None  # (the tests run elsewhere)
    tests = os.path.join(root, 'test', 'unit')
    if not os.path.isdir(tests) or not os.path.isdir(os.path.join(root, 'src')):
        print(f'scripts/nki-samples: error: {root} is not a copy of aws-neuron/nki-samples '
              '(no test/unit and src)', file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))  # (this file would shadow the package)
    sys.path[:] = [os.path.join(root, 'src')] + [p for p in sys.path
                                                 if os.path.abspath(p or '.') != here]
    _record_latencies()
    import pytest
    plugin = Plugin()
    t0 = time.time()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix='nki-samples-') as scratch:
        os.chdir(scratch)  # (the tests write their profile traces into the working directory)
        try:
            status = pytest.main(['-p', 'no:cacheprovider', '-qq', '--tb=line', '-p',
                                  'no:warnings', '--rootdir', root, tests, '-k', select, *extra],
                                 plugins=[plugin])
        finally:
            os.chdir(cwd)
    rows = []
    for test, (threshold, factor) in sorted(plugin.thresholds.items()):
        if test not in plugin.outcomes:
            continue
        us = RESULTS.get(test)
        rows.append({'test': test, 'outcome': plugin.outcomes[test], 'threshold_us': threshold,
                     'factor': factor, 'model_us': us,
                     'ratio': us / threshold if us is not None else None})
        ratio = f'{us / threshold:6.2f}x' if us is not None else '      -'
        model = f'{us:12.1f}' if us is not None else '           -'
        print(f'{rows[-1]["outcome"]:7} {threshold:14.1f} {model} {ratio}  {test}')
    print(f'nki-samples: {len(rows)} performance tests in {time.time() - t0:.0f} s: columns '
          'outcome, threshold (us), model (us), model / threshold, test')
    if out:
        with open(out, 'w') as f:
            json.dump(rows, f, indent=1)
    return 0 if rows else int(status) or 1


if __name__ == '__main__':
    sys.exit(main())

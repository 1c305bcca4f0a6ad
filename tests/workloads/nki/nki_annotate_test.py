"""scripts/nki --annotate: each line of a kernel with what it costs, the lines' critical-path
shares adding up to the kernel time; the hottest line is the one an expert would point at (the
moving-tile loads of the matmul tutorial's early steps, the matmuls of its last step and of the
measured trn2 conv2d); compare-stats --lines compares two runs line by line."""

import json
import os
import re
import subprocess
import tempfile
import unittest

SOURCE = os.environ['TRNSIM_SOURCE_DIR']
NKI = os.path.join(SOURCE, 'scripts', 'nki')
KERNELS = os.path.join(SOURCE, 'workloads', 'nki', 'kernels')
EXAMPLES = os.path.join(SOURCE, 'workloads', 'nki', 'examples')


def run(config, *args, stats=None):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)  # scripts/nki sets it
    env.pop('TRNSIM_NKI_QUIET', None)
    extra = ['--stats-out', stats] if stats else []
    r = subprocess.run([NKI, '--config', config, '--annotate', *extra, *args],
                       capture_output=True, text=True, env=env, cwd=SOURCE)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def line_of(path, text):
    """The number of the first line of `path` that contains `text`."""
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            if text in line:
                return n
    raise AssertionError(f'no {text!r} in {path}')


def hottest(stdout):
    """FILE:LINE of the first of the hottest lines."""
    tail = stdout.split('hottest lines', 1)[1]
    m = re.search(r'^\s+[0-9.]+%\s+[0-9.]+%\s+(\S+:\d+)', tail, re.M)
    assert m, stdout
    return m.group(1)


class Annotate(unittest.TestCase):

    def check_hottest(self, stdout, path, text):
        where = f'{os.path.relpath(path, SOURCE)}:{line_of(path, text)}'
        self.assertEqual(hottest(stdout), where, stdout)

    def test_matmul_tutorial_steps(self):
        matmul = os.path.join(KERNELS, 'matmul.py')
        bench = os.path.join(EXAMPLES, 'matmul_benchmark.py')
        for variant, text in (('tiled', 'rhs_tile[...] = nl.load'),
                              ('hoist_load', 'rhs_tiles[bn, k] = nl.load'),
                              ('block_free_dimension', 'rhs_tiles[bn, k] = nl.load'),
                              ('fully_optimized', 'res_tile += nl.matmul')):
            with self.subTest(variant=variant), tempfile.TemporaryDirectory() as tmp:
                stats = os.path.join(tmp, 's.json')
                out = run('trn1', bench, '--variant', variant, stats=stats)
                self.check_hottest(out, matmul, text)
                with open(stats) as f:
                    s = json.load(f)
                lines = [v for k, v in s['lines'].items() if k != 'count']
                # the lines' critical-path times add up to the kernel time, within 1%
                total = sum(v['critical_path_ns'] for v in lines)
                self.assertAlmostEqual(total / s['total_time_ns'], 1.0, delta=0.01)
                # the source is listed with the figures beside its lines
                self.assertRegex(out, rf'\d+\.\d%.*{line_of(matmul, text)}\s+\S')
                self.assertIn('a line in a loop sums all its iterations', out)

    def test_conv2d_on_trn2_points_at_its_matmuls(self):
        conv = os.path.join(KERNELS, 'conv2d.py')
        out = run('trn2', conv)
        self.check_hottest(out, conv, 'prod = nisa.nc_matmul(')

    def test_compare_stats_line_by_line(self):
        bench = os.path.join(EXAMPLES, 'matmul_benchmark.py')
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, 'a.json'), os.path.join(tmp, 'b.json')
            run('trn1', bench, '--variant', 'tiled', '--m', '512', '--n', '1024', stats=a)
            run('trn1', bench, '--variant', 'tiled', '--m', '512', '--n', '2048', stats=b)
            r = subprocess.run([os.path.join(SOURCE, 'scripts', 'compare-stats'), a, b,
                                '--lines'], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            # twice the columns: every line of the loop takes longer; the launch does not
            load = f'matmul.py:{line_of(os.path.join(KERNELS, "matmul.py"), "rhs_tile[...] = nl.load")}'
            self.assertRegex(r.stdout, rf'{re.escape(load)}\s+[0-9.]+ ->\s+[0-9.]+ us  \(\+')
            self.assertRegex(r.stdout, r'\(none\)\s+[0-9.]+ ->\s+[0-9.]+ us  \(\+0\.000 us\)')


if __name__ == '__main__':
    unittest.main()

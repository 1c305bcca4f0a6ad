"""The course-style harness and the beta 2 example, run unchanged through scripts/nki: they
print the model's latency, which is the one in --stats-out and the C++ driver's."""

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ['TRNSIM_SOURCE_DIR']
NKI = os.path.join(SOURCE, 'scripts', 'nki')
EXAMPLES = os.path.join(SOURCE, 'workloads', 'nki', 'examples')


def run(*args, check=True):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)  # scripts/nki sets it
    env.pop('TRNSIM_NKI_QUIET', None)
    return subprocess.run([NKI, *args], capture_output=True, text=True, env=env, check=check)


@contextlib.contextmanager
def script_file(text):
    """The path of a kernel script holding `text`, in a folder of its own while in use."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'k.py')
        with open(path, 'w') as f:
            f.write(text)
        yield path


def latency(stdout):
    m = re.search(r'Latency: ([0-9.]+) us', stdout)
    assert m, stdout
    return float(m.group(1))


class Harness(unittest.TestCase):

    def test_configure_says_a_bad_config_at_once_as_sim_says_it(self):
        for kwargs, cli in (({'config': 'trn9'}, ['--config', 'trn9']),
                            ({'sets': ['core.pe.rows=many']},
                             ['--config', 'trn2', '--set', 'core.pe.rows=many'])):
            code = ('import trnsim.nki as n\n'
                    'try:\n'
                    f'    n.configure(**{kwargs!r})\n'
                    'except Exception as e:\n'
                    '    print(type(e).__name__ + ": " + str(e))\n'
                    'else:\n'
                    '    print("accepted")\n')
            env = dict(os.environ, TRNSIM_NKI_CONFIG='trn2')
            said = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                                  env=env).stdout.strip()
            sim = subprocess.run([os.environ['TRNSIM_SIM']] + cli + ['--workload', 'vector_add'],
                                 capture_output=True, text=True)
            self.assertEqual(sim.returncode, 2, sim.stderr)
            message = sim.stderr.strip().removeprefix('sim: error: ')
            self.assertEqual(said, 'UserError: ' + message)

    def test_configure_sets_are_said_as_such(self):
        # overrides given to configure() are not reported as the command line's --set
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, 's.json')
            code = ('import numpy as np, trnsim.nki as t\n'
                    f"t.configure(config='trn2', sets=['core.dma.fixed_latency=1us'], "
                    f'stats_out={stats!r})\n'
                    'import nki, nki.language as nl\n'
                    '@nki.jit\n'
                    'def k(x):\n'
                    '    o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n'
                    '    nl.store(o, value=nl.load(x))\n'
                    '    return o\n'
                    'nki.benchmark(k, warmup=1, iters=1)(np.ones((128, 64), np.float32))\n')
            env = dict(os.environ)
            env.pop('TRNSIM_NKI_QUIET', None)
            r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                               env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('with configure(sets=) core.dma.fixed_latency=1us', r.stdout + r.stderr)
            with open(stats) as f:
                origin = json.load(f)['config_origin']['core']['dma']['fixed_latency']
            self.assertEqual(origin, 'configure(sets=) core.dma.fixed_latency=1us')

    def test_every_spelling_prints_the_latency_of_its_stats(self):
        with tempfile.TemporaryDirectory() as tmp:
            for kernel in ('stream', 'strided', '2024', 'matmul'):
                stats = os.path.join(tmp, f'{kernel}.json')
                r = run('--config', os.path.join(SOURCE, 'configs', 'trn1.yaml'), '--stats-out',
                        stats,
                        os.path.join(EXAMPLES, 'course_harness.py'), '--kernel', kernel)
                self.assertIn('latency (us)', r.stdout)
                self.assertIn('kernel time', r.stdout)  # trnsim's own summary
                with open(stats) as f:
                    total = json.load(f)['total_time_ns']
                self.assertAlmostEqual(latency(r.stdout), total / 1e3, places=3)

    def test_2024_kernel_matches_the_driver(self):
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, 'driver.json')
            subprocess.run([os.environ['TRNSIM_SIM'], '--config', 'trn2', '--workload',
                            'vector_add', '--param', 'variant=tiled', '--param', 'n=25600',
                            '--param', 'row_chunk=128', '--stats-out', stats, '--quiet'],
                           check=True)
            with open(stats) as f:
                driver_us = json.load(f)['total_time_ns'] / 1e3
        r = run('--config', 'trn2', os.path.join(EXAMPLES, 'course_harness.py'), '--kernel',
                '2024')
        self.assertAlmostEqual(latency(r.stdout), driver_us, places=3)

    def test_beta2_spelling_set_and_numbered_stats(self):
        example = os.path.join(EXAMPLES, 'beta2_kernel.py')
        base = latency(run(example).stdout)
        with tempfile.TemporaryDirectory() as tmp:
            r = run('--set', 'core.dma.fixed_latency=5us', '--stats-out',
                    os.path.join(tmp, 's{n}.json'), '--timeline', os.path.join(tmp, 't{n}.json'),
                    example)
            self.assertGreater(latency(r.stdout), base + 3.0)  # the DMA latency took effect
            self.assertEqual(sorted(os.listdir(tmp)), ['s1.json', 't1.json'])

    def test_the_platform_target_override(self):
        script = """
import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(t, a)
    nisa.dma_copy(out, t)
    return out

a = np.ones((128, 4), np.float32)
assert (nki.simulate(copy)(a) == a).all()
"""
        with script_file(script) as path:
            for target, config in (('trn1', 'trn1'), ('gen3', 'trn2'), ('', 'trn2'),
                                   ('trn3', 'trn3'), ('gen4', 'trn3')):
                env = dict(os.environ, NEURON_PLATFORM_TARGET_OVERRIDE=target)
                env.pop('PYTHONPATH', None)
                env.pop('TRNSIM_NKI_QUIET', None)
                env.pop('TRNSIM_NKI_CONFIG', None)
                r = subprocess.run([NKI, path], capture_output=True, text=True, env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stderr, rf'nki.simulate copy on {config}: [0-9.]+ us')
            env['NEURON_PLATFORM_TARGET_OVERRIDE'] = 'trn1'
            r = subprocess.run([NKI, '--config', 'trn2', path], capture_output=True, text=True,
                               env=env)
            self.assertIn('on trn2', r.stderr)  # --config wins
            for target, message in (('trn9', "'trn9' is not a target"),):
                env['NEURON_PLATFORM_TARGET_OVERRIDE'] = target
                r = subprocess.run([NKI, path], capture_output=True, text=True, env=env)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f'NEURON_PLATFORM_TARGET_OVERRIDE: {message}', r.stderr)

    def test_the_kernels_compiler_flags_apply_to_its_launch(self):
        """NEURON_CC_FLAGS set by the kernel's module (as CS152's 2026 conv2d does) and
        nki.benchmark's additional_compile_opt, read at each launch: --disable-dge runs as
        --set core.dma.hardware_dge=false does; an explicit --set wins; --target chooses the
        platform; other flags are listed."""
        script = """
import os, sys
os.environ['NEURON_CC_FLAGS'] = sys.argv[1]
import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def stream(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out

a = np.ones((2048, 512), np.float32)
k = nki.simulate(stream)
assert (k(a) == a).all()
run = k.stats['run']
print('flags', k.latency_us, repr(run['compiled_with']), repr(run['flags_not_modelled']),
      run['config'], k.stats['config']['core']['dma']['hardware_dge'],
      repr(k.stats['config_origin']['core']['dma']['hardware_dge']))
os.environ['NEURON_CC_FLAGS'] = ''
for opt in ('--disable-dge', ''):
    b = nki.benchmark(stream, additional_compile_opt=opt)
    b(a)
    print('bench', repr(opt), b.benchmark_result.nc_latency.get_latency_percentile(50))
"""
        with script_file(script) as path:

            def lines(*args):
                r = run(*args, check=False)
                self.assertEqual(r.returncode, 0, r.stderr)
                said = [ln.split(' ', 1)[1] for ln in r.stdout.splitlines()
                        if ln.startswith(('flags ', 'bench '))]
                return said, r.stderr

            def us(line):  # the latency a 'flags' or 'bench' line says
                words = line.split()
                return float(words[-1] if line.startswith("'") else words[0])

            plain, _ = lines('--config', 'trn2', path, '')
            static, _ = lines('--config', 'trn2', '--set', 'core.dma.hardware_dge=false', path,
                              '')
            flagged, err = lines('--config', 'trn2', path, ' --disable-dge --auto-cast=none ')
            self.assertIn('compiled with --disable-dge', err)
            self.assertIn('compiler flags the model takes no setting from: --auto-cast=none',
                          err)
            self.assertEqual(flagged[0].split()[1:4],
                             ["'--disable-dge'", "'--auto-cast=none'", 'trn2.yaml'])
            # the stats' config says what the run used, and why
            self.assertEqual(flagged[0].split(' ', 5)[4:],
                             ["false", "\"the kernel's compiler flags: --disable-dge\""])
            self.assertEqual(plain[0].split()[4], 'true')
            self.assertNotEqual(us(plain[0]), us(static[0]))  # the flag matters on trn2
            self.assertEqual(us(flagged[0]), us(static[0]))
            # nki.benchmark's additional_compile_opt, per launch in one process
            self.assertEqual(us(flagged[1]), us(static[0]))
            self.assertEqual(us(flagged[2]), us(plain[0]))
            # an explicit --set wins over the flag, and says so
            won, err = lines('--config', 'trn2', '--set', 'core.dma.hardware_dge=true', path,
                             '--disable-dge')
            self.assertEqual(us(won[0]), us(plain[0]))
            self.assertIn('--disable-dge (--set core.dma.hardware_dge wins)', err)
            # --target chooses the platform when nothing else does
            env = dict(os.environ)
            for k in ('TRNSIM_NKI_CONFIG', 'NEURON_PLATFORM_TARGET_OVERRIDE', 'PYTHONPATH',
                      'TRNSIM_NKI_QUIET'):
                env.pop(k, None)
            r = subprocess.run([NKI, path, '--target=trn1'], capture_output=True, text=True,
                               env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('trn1.yaml', r.stdout)
            self.assertIn('nki.simulate stream on trn1, compiled with --target=trn1', r.stderr)

    def test_a_plain_jit_launch_says_its_latency(self):
        """A plain @nki.jit call (how most tutorial harnesses run a kernel) says the model's
        latency, the one nki.benchmark gives; a second launch of the same recording too."""
        script = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        rows = slice(i * 128, (i + 1) * 128)
        nl.store(out[rows], value=nl.add(nl.load(a[rows]), nl.load(b[rows])))
    return out

a = np.ones((512, 64), np.float32)
for _ in range(2):
    assert (add(a, a) == 2).all()
b = nki.benchmark(add)
b(a, a)
print('benchmark', b.benchmark_result.nc_latency.get_latency_percentile(50))
"""
        with script_file(script) as path:
            r = run('--config', 'trn2', path)
            said = re.findall(r'trnsim: add on trn2: ([0-9.]+) us \(model latency', r.stderr)
            bench = float(re.search(r'benchmark ([0-9.]+)', r.stdout).group(1))
            self.assertEqual(len(said), 2, r.stderr)
            self.assertEqual([float(x) for x in said], [round(bench, 2)] * 2)
            env = dict(os.environ, TRNSIM_NKI_QUIET='1')
            env.pop('PYTHONPATH', None)
            quiet = subprocess.run([NKI, '--config', 'trn2', path], capture_output=True,
                                   text=True, env=env, check=True)
            self.assertNotIn('model latency', quiet.stderr)

    def test_two_physical_cores_on_trn1_are_an_error(self):
        """docs/nki.md: an nl.nc(2) grid on trn1 (a stack per core) is an error at its line."""
        script = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out

copy[nl.nc(2), 1](np.ones((128, 4), np.float32))
"""
        with script_file(script) as path:
            r = run('--config', 'trn1', path, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f'{path}:12: kernel[lnc]: LNC=2 runs the kernel on 2 physical '
                      'NeuronCores; this platform (trn1) runs it on 1', r.stderr)

    def test_explain_loops_says_what_became_of_each_loop(self):
        script = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))
    for i in nl.affine_range(4):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        if i % 2 == 0:
            t = nl.multiply(t, 2.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out

a = np.ones((512, 8), np.float32)
assert (k(a)[256:384] == 2).all()
"""
        with script_file(script) as path:
            r = run('--explain-loops', path)
        self.assertIn(f'{path}:9: affine loop of 4 iterations: folded into one body; its '
                      'Python ran iterations 0 and 1, which stand for all', r.stderr)
        self.assertIn(f'{path}:11: affine loop of 4 iterations: unrolled: iteration 2 records '
                      'differently from iteration 1', r.stderr)

    def test_an_unsupported_name_imported_by_name_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'imports.py')
            for name, message in (('local_gather', 'nki.isa.local_gather: not supported by '
                                   'trnsim yet'),
                                  ('nc_matmull', 'nki.isa.nc_matmull: no such API in nki.isa '
                                   '(the NKI API reference, SDK 2.26.1; did you mean '
                                   'nisa.nc_matmul?)')):
                with open(path, 'w') as f:
                    f.write(f'import numpy\nfrom neuronxcc.nki.isa import {name}\n')
                r = run(path, check=False)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr.strip().splitlines()[-1],
                                 f'scripts/nki: error: {path}:2: {message}'
                                 + ('' if 'did you' in message else
                                    ' (docs/nki.md lists what is supported)'))

    def test_aliases_only_inside_scripts_nki(self):
        env = dict(os.environ)
        env['PYTHONPATH'] = os.path.join(SOURCE, 'workloads', 'nki', 'python')
        r = subprocess.run([sys.executable, '-c', 'import neuronxcc.nki'], env=env,
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('neuronxcc', r.stderr)

    def test_bad_option_and_bad_config(self):
        r = run('--bogus', 'x.py', check=False)
        self.assertEqual(r.returncode, 2)
        r = run('--config', 'no_such_config', os.path.join(EXAMPLES, 'beta2_kernel.py'),
                check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("config 'no_such_config' not found", r.stderr)

    def test_a_bad_kernel_is_one_line_naming_its_line_and_status_2(self):
        script = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def too_tall(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=t)
    return out

nki.benchmark(warmup=1, iters=1)(too_tall)(np.ones((256, 4), np.float32))
"""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'tall.py')

            def error_of(text):
                """(exit status, stderr) of scripts/nki on the script `text`."""
                with open(path, 'w') as f:
                    f.write(text)
                r = run('--config', 'trn1', path, check=False)
                return r.returncode, r.stderr.strip()

            self.assertEqual(error_of(script), (2, f'scripts/nki: error: {path}:9: nl.load: '
                             'number of partitions 256 exceeds the architecture limit of 128'))
            # an API the frontend lacks, at module level of nki, is the same one line
            self.assertEqual(
                error_of(script.replace('buffer=nl.shared_hbm', 'buffer=nki.hbm_buffer')),
                (2, f'scripts/nki: error: {path}:8: nki.hbm_buffer: no such API in nki (the NKI '
                 'API reference, SDK 2.26.1)'))
            self.assertEqual(
                error_of(script.replace('buffer=nl.shared_hbm', 'buffer=nl.atomic_rmw')),
                (2, f'scripts/nki: error: {path}:8: nki.language.atomic_rmw: not supported by '
                 'trnsim yet (docs/nki.md lists what is supported)'))
            # a keyword the API does not take is not ignored: the same one line
            self.assertEqual(
                error_of(script.replace('nl.load(a)', 'nl.load(a, mask_=None)')),
                (2, f"scripts/nki: error: {path}:9: nl.load: got an unexpected keyword argument "
                 "'mask_' (docs/nki.md lists what is supported)"))
            # so is a call of a generated API (nl.sqrt) with a keyword it does not take
            fits = script.replace('np.ones((256, 4)', 'np.ones((128, 4)')
            status, err = error_of(fits.replace('nl.load(a)', 'nl.sqrt(nl.load(a), foo=1)'))
            self.assertEqual(status, 2)
            self.assertIn(f"{path}:9: nl.sqrt: got an unexpected keyword argument 'foo'", err)
            # but a TypeError of the script's own functions (even one named like an API) or of
            # numpy stays the script's: a traceback, exit status 1
            for call in ('load()', 'np.exp()'):
                status, err = error_of('def load(path):\n    return path\n' + fits.replace(
                    't = nl.load(a)', f'{call}\n    t = nl.load(a)'))
                self.assertEqual(status, 1, call)
                self.assertIn('Traceback', err, call)
                self.assertNotIn('scripts/nki: error', err, call)
            r = run('--config', 'trn1', os.path.join(tmp, 'missing.py'), check=False)
            self.assertEqual(r.returncode, 2)
            self.assertIn('no such script', r.stderr)

    def test_hoisting_has_a_configured_sbuf_share(self):
        script = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def four_matmuls(x, y):
    out = nl.ndarray((4, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    xt, yt = nl.load(x), nl.load(y)
    for i in nl.affine_range(4):
        acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
        acc += nl.matmul(xt, yt)
        nl.store(out[i], value=nl.copy(acc))
    return out

x = np.ones((128, 128), np.float32)
nki.benchmark(warmup=1, iters=1)(four_matmuls)(x, x)
"""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'four.py')
            with open(path, 'w') as f:
                f.write(script)
            counts = []
            for share in ('0.25', '0'):
                stats = os.path.join(tmp, f'{share}.json')
                run('--config', 'trn1', '--set', f'compiler.hoist_sbuf_share={share}',
                    '--stats-out', stats, path)
                with open(stats) as f:
                    counts.append(json.load(f)['engines']['pe']['opcodes']['transpose']['count'])
        self.assertEqual(counts, [1, 4])  # hoisted once; with no SBUF for it, at every call


TORCH_HARNESS = """import torch
import torch_neuronx
import torch_xla
import torch_xla.core.xla_model as xm
import neuronxcc.nki.language as nl


@torch_neuronx.nki_jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


device = xm.xla_device()
a = torch.rand((128, 64), dtype=torch.float32).to(device=device)
b = torch.rand((128, 64), dtype=torch.float32).to(device=device)
out = add(a, b)
xm.mark_step()
print(device.type, torch_xla.device().type, torch_neuronx.__version__,
      bool(torch.allclose(out.to(torch.device('cpu')), a + b)))
"""


class FrameworkStandIns(unittest.TestCase):
    """The tutorials' torch harnesses run unchanged: torch_xla's device is the CPU and
    torch_neuronx imports, unless the real packages are there; a JAX harness says in one line
    why it cannot run."""

    def test_a_torch_xla_harness_runs_on_the_cpu(self):
        with script_file(TORCH_HARNESS) as path:
            r = run(path)
        self.assertEqual(r.stdout.strip().splitlines()[-1], 'cpu cpu trnsim stand-in True',
                         r.stderr)

    def test_the_real_torch_xla_wins(self):
        aliases = os.path.join(SOURCE, 'workloads', 'nki', 'python', 'trnsim', '_alias_packages')
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, 'torch_xla'))
            with open(os.path.join(tmp, 'torch_xla', '__init__.py'), 'w') as f:
                f.write('REAL = True\n')
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [aliases, tmp, os.path.join(SOURCE, 'workloads', 'nki', 'python')]))
            r = subprocess.run([sys.executable, '-c', 'import torch_xla; print(torch_xla.REAL)'],
                               env=env, capture_output=True, text=True)
            self.assertEqual(r.stdout.strip(), 'True', r.stderr)

    def test_a_tensor_this_torch_cannot_hold_is_one_line(self):
        import torch
        if hasattr(torch, 'uint32'):
            self.skipTest(f'torch {torch.__version__} holds uint32 tensors')
        with script_file('import numpy as np\nimport torch\n'
                         'torch.from_numpy(np.zeros(4, np.uint32))\n') as path:
            r = run(path, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr.strip(), r'^scripts/nki: error: \S*k\.py:3: torch \S+ has no '
                         r'uint32 tensors')

    def test_a_jax_harness_says_why_it_cannot_run(self):
        with script_file('import numpy as np\nimport jax\n') as path:
            r = run(path, check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr.strip(), r'^scripts/nki: error: \S*k\.py:2: JAX is not '
                         r'installed \(Debian has no JAX package\)')
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == '__main__':
    unittest.main()

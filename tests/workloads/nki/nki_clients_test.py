"""The tools that call a CPU simulator of NKI kernels, each in its own convention, run through
scripts/nki on the example scripts written here (workloads/nki/examples/clients): vLLM Neuron's
nki.simulator.simulate_kernel, the NKI Library's harness (nki_cpu_simulator with its module
aliasing and nki.cpu_simulate(k)[lnc], and nki.simulate(k)[lnc]), nki-autotune's
extract_perf_metrics; and the environment they set (NKI_NC_VERSION, NKI_PRECISE_FP)."""

import json
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np

SOURCE = os.environ['TRNSIM_SOURCE_DIR']
NKI = os.path.join(SOURCE, 'scripts', 'nki')
CLIENTS = os.path.join(SOURCE, 'workloads', 'nki', 'examples', 'clients')


def run(script, *args, config='trn2', env_extra=None):
    """scripts/nki on a client script, as a user runs it (its own PYTHONPATH, the latency said)."""
    env = dict(os.environ, **(env_extra or {}))
    for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG',
              'NEURON_PLATFORM_TARGET_OVERRIDE', 'NKI_NC_VERSION', 'NKI_PRECISE_FP'):
        if k not in (env_extra or {}):
            env.pop(k, None)
    cmd = [NKI] + (['--config', config] if config else []) + [os.path.join(CLIENTS, script),
                                                               *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def latencies(stderr, name):
    return [float(x) for x in re.findall(rf'nki.simulate {name} on \w+: ([0-9.]+) us', stderr)]


class Clients(unittest.TestCase):

    def test_vllm_neurons_simulate_kernel(self):
        r = run('vllm_cpu_mode.py')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count('values right'), 2, r.stdout)
        one, two = latencies(r.stderr, 'scaled_add')
        self.assertLess(two, one)  # LNC=2: each physical core half the rows, at once

    def test_the_nki_librarys_harness_both_conventions(self):
        """Without --config, NKI_NC_VERSION (the script sets gen3, or the argument) chooses the
        platform; both conventions, LNC 1 and 2, right values; LNC=2 faster."""
        for gen, config in (('gen3', 'trn2'), ('gen4', 'trn3')):
            r = run('library_harness.py', gen, config=None)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.count('values right'), 4, r.stdout)
            self.assertIn(f'nki.simulate scaled_add on {config}:', r.stderr)
            us = latencies(r.stderr, 'scaled_add')
            self.assertEqual(us[0:2], us[2:4])  # cpu_simulate is simulate
            self.assertLess(us[1], us[0])
        # --config wins over the environment's target
        r = run('library_harness.py', 'gen2', config='trn2')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('nki.simulate scaled_add on trn2:', r.stderr)
        r = run('library_harness.py', 'gen9', config=None)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("NKI_NC_VERSION: 'gen9' is not a target (one of gen2, gen3, gen4)",
                      r.stderr)
        # NEURON_PLATFORM_TARGET_OVERRIDE wins over NKI_NC_VERSION
        r = run('library_harness.py', 'gen2', config=None,
                env_extra={'NEURON_PLATFORM_TARGET_OVERRIDE': 'trn2'})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('nki.simulate scaled_add on trn2:', r.stderr)

    def test_another_target_after_the_platform_is_built(self):
        """The library's harness sets NKI_NC_VERSION before each kernel: a later kernel for
        another generation is an error naming the variable (one platform per process)."""
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, 'k.py')
            with open(script, 'w') as f:
                f.write(TWO_TARGETS)
            env = dict(os.environ)
            for k in ('PYTHONPATH', 'TRNSIM_NKI_CONFIG', 'NEURON_PLATFORM_TARGET_OVERRIDE'):
                env.pop(k, None)
            r = subprocess.run([NKI, script], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('first ok', r.stdout)
        self.assertRegex(r.stderr, r'k.py:\d+: NKI_NC_VERSION: gen4 is trn3, but the platform '
                         r'is already trn2')

    def test_nki_autotunes_summary(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run('autotune_summary.py', tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            summary = json.loads(r.stdout[r.stdout.index('{'):])
            with open(os.path.join(tmp, 'profile.ntff')) as f:
                timeline = json.load(f)  # still a timeline, the summary one member of it
            self.assertTrue(timeline['traceEvents'])
            self.assertEqual(timeline['trnsim_summary'], summary)
            with open(os.path.join(tmp, 'file.neff')) as f:
                self.assertIn('trnsim-nki-recording', f.readline())
        # a 128 x 128 x 512 matmul, and a 128 x 128 transpose (2 x 128 x 128 x 128)
        self.assertEqual(summary['model_flops'], 2 * 128 * 128 * 512)
        self.assertEqual(summary['transpose_flops'], 2 * 128 ** 3)
        self.assertEqual(summary['hardware_flops'], 2 * 128 * 128 * 512 + 2 * 128 ** 3)
        self.assertEqual(summary['hbm_read_bytes'], 4 * (128 * 128 + 128 * 512))
        self.assertEqual(summary['hbm_write_bytes'], 4 * 128 * 512)
        seconds = summary['total_time']
        peak = 2 * 128 * 128 * 2.4e9  # trn2's Tensor engine at its clock (the stats' peak)
        self.assertAlmostEqual(summary['mfu_estimated_percent'],
                               100 * summary['model_flops'] / (peak * seconds), delta=1e-6)
        self.assertAlmostEqual(summary['mbu_estimated_percent'],
                               100 * 4 * (128 * 128 + 2 * 128 * 512) / (750e9 * seconds),
                               delta=1e-6)
        self.assertAlmostEqual(summary['mfu_max_achievable_estimated_percent'],
                               100 * (summary['model_flops'] / (4 * (128 * 128 + 2 * 128 * 512)))
                               / (peak / 750e9), delta=1e-6)

    def test_extract_perf_metrics_without_a_summary(self):
        from trnsim.nki._runner import extract_perf_metrics
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'x.ntff')
            with open(path, 'wb') as f:
                f.write(b'\x00NTFF')
            self.assertIsNone(extract_perf_metrics(path, path))
            self.assertIsNone(extract_perf_metrics(path, os.path.join(tmp, 'none.ntff')))


TWO_TARGETS = """
import os
import sys
import numpy as np
import nki
sys.path.insert(0, %r)
from kernels import scaled_add

a = np.ones((128, 8), np.float32)
os.environ['NKI_NC_VERSION'] = 'gen3'
nki.simulate(scaled_add)(a, a, np.zeros_like(a))
print('first ok', flush=True)
os.environ['NKI_NC_VERSION'] = 'gen4'
nki.simulate(scaled_add)(a, a, np.zeros_like(a))
""" % CLIENTS


PRECISE = """
import sys
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def through_bf16(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    h = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=h, data=t, op0=nl.multiply, operand0=3.0)
    f = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=f, src=h)
    nisa.dma_copy(dst=out, src=f)
    return out


a = (1 + np.arange(128 * 8, dtype=np.float32).reshape(128, 8) / 3000).astype(np.float32)
np.save(sys.argv[1], nki.simulate(through_bf16)(a))
"""


class PreciseFp(unittest.TestCase):

    def test_nki_precise_fp(self):
        """NKI_PRECISE_FP=0 keeps a bfloat16 intermediate's values in float32; 1 (and unset)
        rounds them; anything else is an error naming the variable."""
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, 'k.py')
            with open(script, 'w') as f:
                f.write(PRECISE)
            a = (1 + np.arange(128 * 8, dtype=np.float32).reshape(128, 8) / 3000)
            got = {}
            for flag in ('', '1', '0', 'yes'):
                out = os.path.join(tmp, f'o{flag}.npy')
                env = dict(os.environ, NKI_PRECISE_FP=flag)
                env.pop('PYTHONPATH', None)
                r = subprocess.run([NKI, '--config', 'trn2', script, out], capture_output=True,
                                   text=True, env=env)
                if flag == 'yes':
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn("NKI_PRECISE_FP: 'yes': 1 (the default) or 0", r.stderr)
                    continue
                self.assertEqual(r.returncode, 0, r.stderr)
                got[flag] = np.load(out)
            np.testing.assert_array_equal(got[''], got['1'])
            self.assertGreater(np.abs(got['1'] - 3 * a).max(), 1e-3)  # bf16's 8 bits
            np.testing.assert_allclose(got['0'], 3 * a, rtol=1e-6)


if __name__ == '__main__':
    unittest.main()

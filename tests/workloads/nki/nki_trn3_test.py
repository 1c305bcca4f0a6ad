"""NeuronCore-v4 (run on trn3): nisa.exponential's values (the frontend's against numpy, and the
model's functional Vector engine against the frontend), its sums through the Vector engine's
reduce registers, its error before NeuronCore-v4, and the documented gain of the example that
compares it with the Scalar engine's exp."""

import os
import re
import subprocess
import unittest

import numpy as np

import trnsim.nki as nki
from trnsim.nki import _runner
import nki as nki0
import nki.isa as nisa
import nki.language as nl

from nki_functional_test import model_and_frontend

nki.configure(functional=True)
SOURCE = os.environ['TRNSIM_SOURCE_DIR']


@nki0.jit
def exponentials(x):
    """exp(x - rowmax) with the row sums (reset_reduce), then exp(x - 0.5) summed twice onto the
    Vector engine's registers (reduce): the values and both sums, as float32."""
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1)
    e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=e, src=t, max_value=m, reduce_res=s,
                     reduce_cmd=nisa.reduce_cmd.reset_reduce)
    f = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    s2 = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=f, src=t, max_value=0.5, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                     reduce_res=s2)
    nisa.exponential(dst=f, src=t, max_value=0.5, reduce_res=s2,
                     reduce_cmd=nisa.reduce_cmd.reduce)
    outs = []
    for r in (e, s, s2):
        o = nl.ndarray(r.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=r)
        outs.append(o)
    return outs


class Exponential(unittest.TestCase):

    def setUp(self):
        if _runner.limits()['isa_version'] < 4:
            self.skipTest('NeuronCore-v4: --config trn3')

    def test_values_and_sums(self):
        x = np.random.default_rng(3).random((128, 64), dtype=np.float32)
        e, s, s2 = exponentials(x)
        want = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(e, want, rtol=1e-6)
        np.testing.assert_allclose(s, want.sum(axis=1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(s2, 2 * np.exp(x - 0.5).sum(axis=1, keepdims=True),
                                   rtol=1e-5)

    def test_a_reset_without_a_result_is_refused(self):
        @nki0.jit
        def reset_only(x):
            t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            e = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.exponential(dst=e, src=t, reduce_cmd=nisa.reduce_cmd.reset_reduce)
            o = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=e)
            return o
        with self.assertRaisesRegex(nki.KernelError, 'reset_reduce without reduce_res'):
            reset_only(np.ones((128, 8), np.float32))

    def test_the_model_computes_as_the_frontend(self):
        for i, (model, frontend) in enumerate(model_and_frontend(exponentials, (128, 64))):
            np.testing.assert_allclose(model, frontend, rtol=3e-7, err_msg=f'output {i}')

    def test_four_times_the_scalar_engines_rate(self):
        """The example's exponentials on the Vector engine against the Scalar engine's: the
        exponentials' engine time a quarter (MIN_II aside), the kernel faster."""
        times = {}
        for way in ('vector', 'scalar'):
            env = dict(os.environ)
            for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG'):
                env.pop(k, None)
            r = subprocess.run(
                [os.path.join(SOURCE, 'scripts', 'nki'), '--config', 'trn3',
                 os.path.join(SOURCE, 'workloads', 'nki', 'examples', 'score_exponentials.py'),
                 '--way', way], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            times[way] = float(re.search(r'engine\): ([0-9.]+) us', r.stdout).group(1))
        self.assertLess(times['vector'], 0.8 * times['scalar'])


if __name__ == '__main__':
    unittest.main()

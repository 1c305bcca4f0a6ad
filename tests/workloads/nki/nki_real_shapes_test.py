"""The matmul tutorial's four steps at its reference shape (M1: 4096 x 8192 x 8192, bf16),
recorded without values (as nki.benchmark does): instruction counts equal and latency within
2% of the C++ driver's, on the platform named by TRNSIM_NKI_CONFIG."""

import unittest

import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

import matmul
import nki_support as s

M, K, N = 4096, 8192, 8192


class ReferenceShape(unittest.TestCase):

    def check(self, variant):
        kernel = getattr(matmul, f'matmul_{variant}')
        front = s.frontend_stats(kernel, nt.tensor[[K, M], nl.bfloat16],
                                 nt.tensor[[K, N], nl.bfloat16])
        c = s.Comparison(f'matmul {variant} M1', front,
                         s.driver_stats('matmul', {'variant': variant, 'm': M, 'k': K,
                                                   'n': N}))
        c.report()
        self.assertEqual(c.front, c.driver)
        self.assertLessEqual(abs(c.diff_pct), 2.0)

    def test_tiled(self):
        self.check('tiled')

    def test_hoist_load(self):
        self.check('hoist_load')

    def test_block_free_dimension(self):
        self.check('block_free_dimension')

    def test_fully_optimized(self):
        self.check('fully_optimized')


if __name__ == '__main__':
    unittest.main()

"""The matmul tutorial's four steps at its reference shape (M1: 4096 x 8192 x 8192, bf16), the
CS149 conv2d (224 x 224, 256 -> 256 channels, fp16) and the CS152 ffnn (n=2048, d=4096, h=8192,
c=2048), recorded without values (as nki.benchmark does): instruction counts equal and latency
within 2% of the C++ driver's, on the platform named by TRNSIM_NKI_CONFIG."""

import unittest

import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

import conv2d
import ffnn
import matmul
import nki_support as s

M, K, N = 4096, 8192, 8192


class ReferenceShape(unittest.TestCase):

    def same(self, name, front, workload, params):
        c = s.Comparison(name, front, s.driver_stats(workload, params))
        c.report()
        self.assertEqual(c.front, c.driver)
        self.assertLessEqual(abs(c.diff_pct), 2.0)

    def check(self, variant):
        kernel = getattr(matmul, f'matmul_{variant}')
        front = s.frontend_stats(kernel, nt.tensor[[K, M], nl.bfloat16],
                                 nt.tensor[[K, N], nl.bfloat16])
        self.same(f'matmul {variant} M1', front, 'matmul',
                  {'variant': variant, 'm': M, 'k': K, 'n': N})

    def test_conv2d_row_cs149_fp16(self):
        f16 = nl.float16
        front = s.frontend_stats(conv2d.conv2d_row, nt.tensor[[1, 256, 224, 224], f16],
                                 nt.tensor[[256, 256, 3, 3], f16], nt.tensor[[256], f16])
        self.same('conv2d row C1b/C4b', front, 'conv2d',
                  {'variant': 'row', 'in': 256, 'out': 256, 'h': 224, 'w': 224,
                   'dtype': 'float16'})

    def test_ffnn_cs152(self):
        f32 = nl.float32
        n, d, h, c = 2048, 4096, 8192, 2048
        front = s.frontend_stats(ffnn.ffnn_predict, nt.tensor[[n, d], f32],
                                 nt.tensor[[d, h], f32], nt.tensor[[h], f32],
                                 nt.tensor[[h, c], f32], nt.tensor[[c], f32])
        self.same('ffnn predict tiled (lab shape)', front, 'ffnn', {'matmul': 'tiled'})

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

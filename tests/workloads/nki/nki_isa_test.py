"""Instructions of the ISA as real kernels use them (the ISA issue): their values against numpy
in each edition, their recorded instructions, and their errors."""

import unittest

import numpy as np

import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import nki_support as s
from trnsim.nki import KernelError, trace_kernel


def kinds(kernel, *args):
    return [op.kind for op in trace_kernel(kernel, args, {}, False).trace.ops]


@nki1.jit
def transpose_beta1(x):
    """x.T through the Tensor engine's transpose mode: a matmul by the identity, in x's
    dtype."""
    out = nl1.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl1.shared_hbm)
    ident = nl1.load(nl1.shared_identity_matrix(x.shape[0], dtype=x.dtype))
    ps = nl1.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl1.psum)
    ps[...] = nisa1.nc_matmul(nl1.load(x), ident, is_transpose=True)
    nl1.store(out, value=nl1.copy(ps))
    return out


@nki0.jit
def transpose_nki0(x, ident):
    out = nl0.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(x.shape, dtype=x.dtype, buffer=nl0.sbuf)
    i = nl0.ndarray(ident.shape, dtype=ident.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, x)
    nisa0.dma_copy(i, ident)
    ps = nl0.ndarray((x.shape[1], x.shape[0]), dtype=nl0.float32, buffer=nl0.psum)
    nisa0.nc_matmul(ps, t, i, is_transpose=True)
    res = nl0.ndarray(ps.shape, dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, ps)
    nisa0.dma_copy(out, res)
    return out


class TransposeMode(unittest.TestCase):

    def test_a_matmul_by_the_identity_in_transpose_mode(self):
        (x,) = s.random_inputs((128, 96), lo=-3.0, hi=3.0)
        xb = x.astype(nl1.bfloat16)
        got = transpose_beta1(xb)
        self.assertEqual(got.dtype, nl1.bfloat16)
        np.testing.assert_array_equal(got.astype(np.float32), xb.astype(np.float32).T)
        self.assertEqual(kinds(transpose_beta1, xb).count('transpose'), 1)
        (y,) = s.random_inputs((64, 128))
        np.testing.assert_array_equal(transpose_nki0(y, np.eye(64, dtype=np.float32)), y.T)

    def test_the_moving_operand_must_be_the_identity(self):
        (y,) = s.random_inputs((64, 128))
        with self.assertRaisesRegex(KernelError, 'is_transpose=True with a moving operand that '
                                    'is not the identity'):
            transpose_nki0(y, 2 * np.eye(64, dtype=np.float32))
        with self.assertRaisesRegex(KernelError, r'the moving operand must be the \[64, 64\] '
                                    'identity'):
            transpose_nki0(y, np.eye(32, dtype=np.float32))


if __name__ == '__main__':
    unittest.main()

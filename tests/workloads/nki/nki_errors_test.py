"""The errors the real toolchain reports, raised by the frontend with the message and the
kernel's file:line (and no frame of the frontend named instead)."""

import unittest

import numpy as np

import bad_kernels as bad
import trnsim.nki as nki

SOURCE = bad.__file__


def line_of(marker):
    with open(SOURCE) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f'# ERROR: {marker}'):
                return n
    raise LookupError(marker)


class DocumentedErrors(unittest.TestCase):

    def expect(self, marker, fragment, kernel, *args, error=nki.KernelError):
        with self.assertRaises(error) as caught:
            kernel(*args)
        message = str(caught.exception)
        self.assertIn(f'{SOURCE}:{line_of(marker)}:', message)
        self.assertIn(fragment, message)
        self.assertNotIn('trnsim/nki/', message)

    def test_partition_dimension_over_128(self):
        self.expect('partitions_decl', 'number of partitions 256 exceeds the architecture '
                    'limit of 128', bad.too_many_partitions, np.zeros(4, np.float32))
        self.expect('partitions_load', 'number of partitions 256 exceeds the architecture '
                    'limit of 128', bad.load_too_many_partitions, np.zeros(256, np.float32))

    def test_sbuf_over_allocation(self):
        self.expect('sbuf', 'does not fit', bad.sbuf_overflow, np.zeros(4, np.float32))

    def test_psum_over_allocation(self):
        self.expect('psum', 'psum allocation', bad.psum_overflow, np.zeros(4, np.float32))

    def test_psum_tile_over_2kib(self):
        self.expect('psum_tile', 'exceeds the 2048 bytes of a PSUM bank',
                    bad.psum_tile_too_big, np.zeros(4, np.float32))

    def test_shape_mismatch(self):
        self.expect('shape', 'shape mismatch', bad.shape_mismatch,
                    np.zeros((128, 4), np.float32), np.zeros((128, 8), np.float32))

    def test_matmul_operand_limits(self):
        self.expect('moving', 'moving free size 1024 exceeds the limit of 512',
                    bad.moving_too_wide, np.zeros((128, 128), np.float32),
                    np.zeros((128, 1024), np.float32))

    def test_unsupported_keyword(self):
        self.expect('mask', 'a mask on an index without a tile axis', bad.masked,
                    np.zeros((128, 4), np.float32))

    def test_access_out_of_bounds_without_a_mask(self):
        self.expect('oob', 'nl.load: index range 64..191 is out of bounds for dimension 0 of '
                    'size 128', bad.out_of_bounds, np.zeros(128, np.float32))

    def test_unsupported_access_pattern(self):
        self.expect('pattern', 'access pattern not supported yet (slice step -1)',
                    bad.reversed_access, np.zeros((128, 64), np.float32))

    def test_dma_from_psum(self):
        self.expect('psum_dma', 'DMA cannot reach PSUM', bad.store_from_psum,
                    np.zeros((128, 128), np.float32))

    def test_kernel_returning_a_tile(self):
        self.expect('return', 'a kernel returns HBM tensors, not an on-chip tile',
                    bad.returns_a_tile, np.zeros((128, 4), np.float32))

    def test_unsupported_input_dtype(self):
        self.expect('dtype', 'kernel argument a: dtype float64 is not a dtype of NKI',
                    bad.takes_doubles, np.zeros((128, 4), np.float64))

    def test_unsupported_api(self):
        self.expect('unknown', 'nki.language.rms_norm: not supported', bad.unknown_api,
                    np.zeros((128, 4), np.float32), error=AttributeError)

    def test_unknown_attribute_of_a_tensor(self):
        # a kernel error at the kernel's line, and still an AttributeError for hasattr()
        self.expect('attribute', '.stride_bytes: an HBM tensor has no such attribute',
                    bad.unknown_attribute, np.zeros((128, 4), np.float32), error=AttributeError)
        self.expect('attribute', '.stride_bytes', bad.unknown_attribute, np.zeros((128, 4), np.float32))


if __name__ == '__main__':
    unittest.main()

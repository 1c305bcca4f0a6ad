"""The editions of the NKI API: beta 1 (`neuronxcc.nki`, SDK 2.21-2.26) and NKI 0.2-0.7 (`nki`,
SDK 2.27-2.33), each API with the signature of its edition, what an edition lacks an error
naming the editions that have it; every declared signature binds to its implementation; an API
declared in this file alone is usable in kernels of the editions it names."""

import os
import subprocess
import tempfile
import unittest

import numpy as np

import neuronxcc.nki as nki1
import neuronxcc.nki.isa as nisa1
import neuronxcc.nki.language as nl1
import nki as nki0
import nki.isa as nisa0
import nki.language as nl0
import nki_support as s
from trnsim.nki import KernelError, _namespaces, _ops, _registry
from trnsim.nki._errors import UnsupportedAttribute

SOURCE = os.environ['TRNSIM_SOURCE_DIR']


@_registry.api('language.twice_plus_one', 'all', beta1='x, dtype=None, mask=None',
               v0='x, dtype=None')
def twice_plus_one(x, dtype=None, mask=None):
    """2 x + 1: one Vector-engine instruction (a tensor_scalar of two operations); its name and
    the kernel's line from the registry."""
    api_name, site = _registry.called()
    if isinstance(x, (int, float)):
        raise KernelError(api_name, 'x is a tile', site)
    return _ops.tensor_scalar(api_name, site, x, 'multiply', 2.0, None, dtype, mask=mask,
                              alu1='add', scalar1=1.0)


@nki1.jit
def twice_plus_one_beta1(a):
    out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    nl1.store(out, value=nl1.twice_plus_one(nl1.load(a)))
    return out


@nki0.jit
def twice_plus_one_nki0(a):
    out = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(t, a)
    nisa0.dma_copy(out, nl0.twice_plus_one(t))
    return out


@nki0.jit
def positional_nki0(a, b):
    """NKI 0.x's positional dst-first calls: memset, iota, tensor_copy, nc_matmul (whose
    products accumulate), tensor_tensor."""
    out = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.shared_hbm)
    x = nl0.ndarray((128, 128), dtype=a.dtype, buffer=nl0.sbuf)
    y = nl0.ndarray((128, 512), dtype=b.dtype, buffer=nl0.sbuf)
    nisa0.dma_copy(x, a)
    nisa0.dma_copy(y, b)
    acc = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.psum)
    nisa0.nc_matmul(acc, x, y)
    nisa0.nc_matmul(acc, x, y)
    idx = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.iota(idx, [[1, 512]], 0, channel_multiplier=512)
    ones = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.memset(ones, 1.0)
    res = nl0.ndarray((128, 512), dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.tensor_copy(res, acc)
    nisa0.tensor_tensor(res, res, idx, nl0.add)
    nisa0.tensor_tensor(res, res, ones, np.add)
    nisa0.dma_copy(out, res)
    return out


@nki0.jit
def spread_rows_nki0(x, bits):
    """x [16, 64]: rows 4q..4q+3 into partitions 32q..32q+3 of a zeroed [128, 64] tile, by DMAs
    with access patterns on both sides (NkiTensor.ap), as the MX tutorial spreads its scales over
    the SBUF quadrants; and `bits` (uint32) read as float8_e5m2_x4 through .ap(dtype=) and
    stored back as uint32 (the same bits)."""
    out = nl0.ndarray((128, 64), dtype=x.dtype, buffer=nl0.shared_hbm)
    again = nl0.ndarray(bits.shape, dtype=bits.dtype, buffer=nl0.shared_hbm)
    t = nl0.ndarray((128, 64), dtype=x.dtype, buffer=nl0.sbuf)
    nisa0.memset(dst=t, value=0.0)
    for q in range(4):
        nisa0.dma_copy(src=x.ap(pattern=[[64, 4], [1, 64]], offset=4 * q * 64),
                       dst=t.ap(pattern=[[64, 4], [1, 64]], offset=32 * q * 64))
    nisa0.dma_copy(dst=out, src=t)
    f = nl0.ndarray(bits.shape, dtype=nl0.float8_e5m2_x4, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=f, src=bits.ap(pattern=[[bits.shape[1], bits.shape[0]],
                                                [1, bits.shape[1]]], dtype=nl0.float8_e5m2_x4))
    nisa0.dma_copy(dst=again, src=f)
    return out, again


@nki0.jit
def pool_and_halves_nki0(x):
    """x [C, 8, 8]: its 2x2 max pool through a 5-D access pattern of the loaded tile (the pool
    axes last, reduced), and its even and odd columns stored from tile parts of step 2 (a DMA
    descriptor per element)."""
    c, h, w = x.shape
    pooled = nl0.ndarray((c, h // 2, w // 2), dtype=x.dtype, buffer=nl0.shared_hbm)
    even = nl0.ndarray((c, h * w // 2), dtype=x.dtype, buffer=nl0.shared_hbm)
    odd = nl0.ndarray((c, h * w // 2), dtype=x.dtype, buffer=nl0.shared_hbm)
    t = nl0.load(x)
    windows = t.ap([[h * w, c], [2 * w, h // 2], [2, w // 2], [w, 2], [1, 2]])
    nl0.store(pooled, value=nl0.max(windows, axis=[3, 4]))
    flat = t.reshape((c, h * w))
    nl0.store(even, value=flat[:, 0:h * w:2])
    nl0.store(odd, value=flat[:, 1:h * w:2])
    return pooled, even, odd


VIEW_FACTS = {}


@nki0.jit
def views_nki0(x):
    """x [128, 4, 8] through NkiTensor's views (NKI 0.5+): a permute, a slice then a select,
    a row max broadcast back along its axis, flattened dimensions, an einops rearrange, and an
    HBM tensor's dimension split then selected; their patterns noted in VIEW_FACTS."""
    p, a, b = x.shape
    outs = [nl0.ndarray(s, dtype=x.dtype, buffer=nl0.shared_hbm)
            for s in ((p, b, a), (p, 2), (p, a, b), (p, a * b), (p, b, a), (p, 2, b))]
    t = nl0.load(x)
    nl0.store(outs[0], value=t.permute((0, 2, 1)))
    nl0.store(outs[1], value=t.slice(1, 1, 3).select(2, 5))
    top = nl0.max(t, axis=[2], keepdims=True)
    nl0.store(outs[2], value=nl0.subtract(t, top.broadcast(2, b)))
    nl0.store(outs[3], value=t.flatten_dims(1, 2))
    nl0.store(outs[4], value=t.rearrange(('p', 'a', 'b'), ('p', 'b', 'a')))
    nl0.store(outs[5], value=nl0.load(x.reshape_dim(1, (2, 2)).select(1, 1)))
    VIEW_FACTS.update(pattern=t.slice(2, 0, 4).get_pattern(), offset=t.select(1, 2).offset,
                      strides=t.permute((0, 2, 1)).strides, size=t.expand_dim(1).squeeze_dim(1).size)
    return outs


@nki0.jit
def bits_views_nki0(words, halves):
    """words (uint32 [128, 8]) read as float32 through NkiTensor.view, and halves (uint8
    [128, 64]) as float4_e2m1fn_x4 (two bytes each) through .ap(dtype=), each stored back as
    loaded (the same bits)."""
    floats = nl0.ndarray(words.shape, dtype=nl0.float32, buffer=nl0.shared_hbm)
    packed = nl0.ndarray((128, 32), dtype=nl0.uint16, buffer=nl0.shared_hbm)
    f = nl0.ndarray(words.shape, dtype=nl0.float32, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=f, src=words.view(nl0.float32))
    nisa0.dma_copy(dst=floats, src=f)
    x4 = nl0.ndarray((128, 32), dtype=nl0.float4_e2m1fn_x4, buffer=nl0.sbuf)
    nisa0.dma_copy(dst=x4, src=halves.ap(pattern=[[32, 128], [1, 32]],
                                         dtype=nl0.float4_e2m1fn_x4))
    nisa0.dma_copy(dst=packed, src=x4)
    return floats, packed


class Editions(unittest.TestCase):

    def test_views_of_the_bits_as_another_dtype(self):
        rng = np.random.default_rng(17)
        words = rng.random((128, 8), dtype=np.float32).view(np.uint32)
        halves = rng.integers(0, 256, (128, 64)).astype(np.uint8)
        floats, packed = bits_views_nki0(words, halves)
        np.testing.assert_array_equal(floats, words.view(np.float32))
        np.testing.assert_array_equal(packed, halves.view(np.uint16))

    def test_tensor_views(self):
        x = np.random.default_rng(16).random((128, 4, 8), dtype=np.float32)
        outs = views_nki0(x)
        want = (x.transpose(0, 2, 1), x[:, 1:3, 5], x - x.max(axis=2, keepdims=True),
                x.reshape(128, 32), x.transpose(0, 2, 1), x[:, 2:4, :])
        for got, w in zip(outs, want):
            np.testing.assert_array_equal(got, w)
        self.assertEqual(VIEW_FACTS, {'pattern': [[32, 128], [8, 4], [1, 4]], 'offset': 16,
                                      'strides': (32, 1, 8), 'size': 128 * 32})
        with self.assertRaisesRegex(KernelError, 'partition dimension'):
            @nki0.jit
            def permute_partitions(x):
                t = nl0.load(x)
                return t.permute((1, 0, 2))
            permute_partitions(x)

    def test_a_pattern_of_a_loaded_tile_and_strided_parts_stored(self):
        x = np.random.default_rng(15).random((4, 8, 8), dtype=np.float32)
        pooled, even, odd = pool_and_halves_nki0(x)
        np.testing.assert_array_equal(pooled, x.reshape(4, 4, 2, 4, 2).max(axis=(2, 4)))
        np.testing.assert_array_equal(even, x.reshape(4, 64)[:, 0::2])
        np.testing.assert_array_equal(odd, x.reshape(4, 64)[:, 1::2])

    def test_access_patterns_on_hbm_tensors_and_tiles(self):
        x = np.random.default_rng(13).random((16, 64), dtype=np.float32)
        bits = np.random.default_rng(14).integers(0, 2 ** 32, (128, 8)).astype(np.uint32)
        out, again = spread_rows_nki0(x, bits)
        want = np.zeros((128, 64), np.float32)
        for q in range(4):
            want[32 * q:32 * q + 4] = x[4 * q:4 * q + 4]
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(again, bits)
        with self.assertRaisesRegex(KernelError, 'runs outside the tensor'):
            @nki0.jit
            def past_the_end(x):
                t = nl0.ndarray((4, 64), dtype=x.dtype, buffer=nl0.sbuf)
                nisa0.dma_copy(dst=t, src=x.ap(pattern=[[64, 4], [1, 64]], offset=13 * 64))
                return t
            past_the_end(x)

    def test_an_api_declared_in_one_file(self):
        (a,) = s.random_inputs((128, 64))
        for kernel in (twice_plus_one_beta1, twice_plus_one_nki0):
            np.testing.assert_allclose(kernel(a), 2 * a + 1, rtol=1e-6)
            self.assertEqual(s.compute_instructions(s.frontend_stats(kernel, a)), 1)

    def test_the_registry_hands_an_api_its_name_and_the_kernels_line(self):
        @nki0.jit
        def on_a_number(a):
            return nl0.twice_plus_one(3.0)

        with self.assertRaisesRegex(KernelError, r'nki_editions_test.py:\d+: nl.twice_plus_one: x '
                                    r'is a tile'):
            on_a_number(np.zeros((128, 4), np.float32))
        with self.assertRaisesRegex(RuntimeError, 'outside an API'):
            _registry.called()

    def test_dst_first_calls_of_nki0(self):
        a, b = s.random_inputs((128, 128), (128, 512), lo=-1.0)
        want = 2 * (a.T @ b) + np.arange(128 * 512).reshape(128, 512) + 1
        np.testing.assert_allclose(positional_nki0(a, b), want, rtol=1e-5, atol=1e-3)

    def test_beta1_returns_results(self):
        @nki1.jit
        def product(a, b):
            out = nl1.ndarray((128, 512), dtype=nl1.float32, buffer=nl1.shared_hbm)
            p = nisa1.nc_matmul(nl1.load(a), nl1.load(b))
            nl1.store(out, value=nisa1.tensor_copy(p))
            return out

        a, b = s.random_inputs((128, 128), (128, 512), lo=-1.0)
        np.testing.assert_allclose(product(a, b), a.T @ b, rtol=1e-5, atol=1e-5)

    def test_a_call_of_another_edition_is_an_error(self):
        @nki0.jit
        def beta1_call_in_nki0(a):
            t = nl0.ndarray(a.shape, dtype=a.dtype, buffer=nl0.sbuf)
            nisa0.dma_copy(t, a)
            nisa0.tensor_copy(t, mask=None)  # beta 1's spelling
            return a

        with self.assertRaisesRegex(KernelError, r"nisa.tensor_copy: got an unexpected keyword "
                                    r"argument 'mask'"):
            beta1_call_in_nki0(np.zeros((128, 4), np.float32))

    def test_what_an_edition_lacks_names_the_editions_that_have_it(self):
        nl2 = _namespaces.namespaces('0.2')[1]['language']
        with self.assertRaisesRegex(UnsupportedAttribute, r'nki.language.load: not in NKI 0.2 '
                                    r'\(it is in beta 1 \(neuronxcc.nki\) and NKI 0.3-0.7; '
                                    'removed in NKI 0.2'):
            nl2.load
        self.assertTrue(callable(nl0.load))  # back in 0.3
        with self.assertRaisesRegex(UnsupportedAttribute, 'nki.baremetal: not in NKI 0.7'):
            nki0.baremetal
        with self.assertRaisesRegex(UnsupportedAttribute, 'nki.simulate: not in beta 1'):
            nki1.simulate
        with self.assertRaisesRegex(UnsupportedAttribute, 'nki.language.rms_norm: not supported '
                                    'by trnsim yet'):
            nl0.rms_norm
        self.assertFalse(hasattr(nl0, 'arange'))
        self.assertTrue(hasattr(nl1, 'arange'))
        self.assertIn('affine_range', dir(nl0))

    def test_the_launch_bracket_differs_by_edition(self):
        def kernel(a):
            return a

        a = np.zeros((128, 4), np.float32)
        self.assertEqual(nki1.jit(kernel)[2, 2].grid, (2, 2))  # beta 1: an SPMD grid
        self.assertEqual(nki0.jit(kernel)[1].grid, ())  # 0.x: LNC=1
        self.assertEqual(nki0.jit(kernel)[2].grid, (2,))  # 0.x: LNC=2, one instance a core
        with self.assertRaisesRegex(KernelError, r'kernel\[lnc\]: LNC=3: a logical '
                                    'NeuronCore has 1 or 2'):
            nki0.jit(kernel)[3](a)

    def test_a_typo_is_not_unsupported(self):
        with self.assertRaisesRegex(UnsupportedAttribute, r'nki.language.sofmax: no such API in '
                                    r'nki.language \(the NKI API reference, SDK 2.26.1; did you '
                                    r'mean nl.softmax\?\)'):
            nl1.sofmax
        with self.assertRaisesRegex(UnsupportedAttribute, r'did you mean nisa.nc_matmul\?'):
            nisa0.nc_matmull
        with self.assertRaisesRegex(UnsupportedAttribute, r'no such API in nki.language \(the '
                                    r'NKI API reference, SDK 2.33\)$'):
            nl0.frobnicate
        with self.assertRaisesRegex(UnsupportedAttribute, 'nki.language.rms_norm: not supported '
                                    'by trnsim yet'):
            nl0.rms_norm

    def test_what_trnsim_declares_is_in_the_reference(self):
        # kept beyond the reference: nki.benchmark in 0.x (the model's latency), beta 1's
        # nki.compiler decorators, which 0.x kernels of SDK 2.27-2.28 still import, and
        # nl.finfo, which AWS's vision kernels (nki-samples) use
        kept = {'language.twice_plus_one', 'language.finfo',  # (the first declared above)
                '.benchmark', 'compiler.skip_middle_end_transformations', 'compiler.sbuf',
                'compiler.psum', 'compiler.force_auto_alloc', 'compiler.enable_stack_allocator'}
        from trnsim.nki import _reference
        odd = sorted({a.qualname for a in _registry.all_apis() for e in a.editions
                      if not _reference.is_real(a.namespace, a.name, e)} - kept)
        self.assertEqual(odd, [])

    def test_every_signature_binds_to_its_implementation(self):
        count = 0
        for a in _registry.all_apis():
            for edition in a.editions:
                if a.value is None and a.impl is not None:
                    a.for_edition(edition)  # raises if the signature names unknown parameters
                    count += 1
        self.assertGreater(count, 200)

    def test_version_from_the_environment(self):
        script = 'import nki\nprint(hasattr(nki, "simulate"), hasattr(nki.language, "load"))\n'
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'v.py')
            with open(path, 'w') as f:
                f.write(script)
            got = {}
            for version in ('', '0.2', '0.7', '0.9'):
                env = dict(os.environ, TRNSIM_NKI_VERSION=version)
                env.pop('PYTHONPATH', None)
                r = subprocess.run([os.path.join(SOURCE, 'scripts', 'nki'), path], env=env,
                                   capture_output=True, text=True)
                got[version] = (r.returncode, r.stdout.strip(), r.stderr.strip())
        self.assertEqual(got[''][:2], (0, 'True True'))
        self.assertEqual(got['0.7'][:2], (0, 'True True'))
        self.assertEqual(got['0.2'][:2], (0, 'False False'))
        self.assertEqual(got['0.9'][0], 2)
        self.assertIn('NKI version 0.9 (--nki-version, TRNSIM_NKI_VERSION) is not one of 0.2',
                      got['0.9'][2])


if __name__ == '__main__':
    unittest.main()

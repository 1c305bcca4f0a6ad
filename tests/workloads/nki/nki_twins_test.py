"""Every opcode's values in both languages: the frontend's numpy twin (_prims.py's
`instruction` declarations, which the interpreter runs) against the model's functional engines
(models/isa/, each row's execute function, through the bridge's execute_instruction), on random
inputs, equal to the bit."""

import unittest

import numpy as np

from trnsim.nki import _dtypes, _runner
from trnsim.nki._prims import PRIMS, reduce_rows

P = 32

# The opcodes whose values are checked elsewhere, with why: the Tensor engine's (tensor_engine,
# not an ALU row), the MX ones (their packed bits: nki_trn3_test), the control ones (no values;
# the registers' are the interpreter's: nki_dma_test).
ELSEWHERE = {'matmul', 'matmul_mx', 'quantize_mx', 'dma_trigger', 'core_barrier',
             'register_load', 'register_store', 'register_move'}


def tile(rng, cols, lo=-2.0, hi=2.0, dtype='float32', integers=False):
    if integers:
        return rng.integers(int(lo), int(hi), (P, cols)).astype(np.float32), dtype
    return rng.uniform(lo, hi, (P, cols)).astype(np.float32), dtype


def cases(rng):
    """(opcode, operands {slot: (values or None for an output, dtype, [rows, cols])}, fields,
    engine) for every opcode with a numpy twin; several for those with operations to vary."""
    out = []

    def case(opcode, fields=None, engine='dve', dst=(16, 'float32'), **tiles):
        ops = {'dst': (None, dst[1], (P, dst[0]))}
        for slot, spec in tiles.items():
            if spec[0] is None:  # an output: (None, dtype, cols)
                ops[slot] = (None, spec[1], (P, spec[2]))
            else:
                ops[slot] = (spec[0], spec[1], spec[0].shape)
        out.append((opcode, ops, fields or {}, engine))

    for alu in ('add', 'subtract', 'multiply', 'max', 'min', 'divide', 'is_ge', 'abs_max',
                'pow', 'mod'):
        case('tensor_tensor', {'alu': alu}, src0=tile(rng, 16, 0.5, 2), src1=tile(rng, 16, 0.5, 2))
    case('tensor_tensor', {'alu': 'bitwise_xor'}, src0=tile(rng, 16, -40, 40, integers=True),
         src1=tile(rng, 16, -40, 40, integers=True))
    case('tensor_scalar', {'alu': 'subtract', 'imm': 0.0, 'alu1': 'multiply', 'imm1': 0.0,
                           'flags': 'rev0|rev1'},
         src0=tile(rng, 16), src1=tile(rng, 1), src2=tile(rng, 1))
    case('tensor_scalar', {'alu': 'max', 'imm': 0.25, 'alu1': 'bypass', 'imm1': 0.0,
                           'flags': ''}, src0=tile(rng, 16))
    for func in ('exp', 'gelu', 'silu', 'rsqrt', 'tanh', 'sigmoid', 'gelu_apprx_tanh', 'erf'):
        case('activation', {'func': func, 'imm': 0.5}, engine='act', src0=tile(rng, 16, 0.1, 2),
             src1=tile(rng, 1))
    case('activation_reduce', {'func': 'square', 'imm': 0.0, 'alu': 'add', 'flags': ''},
         engine='act', src0=tile(rng, 16), dst1=(None, 'float32', 1))
    case('tensor_scalar_reduce', {'alu': 'multiply', 'imm': 0.0, 'alu1': 'max', 'flags': ''},
         src0=tile(rng, 16), src1=tile(rng, 1), dst1=(None, 'float32', 1))
    case('tensor_reduce', {'alu': 'add', 'flags': 'neg'}, dst=(4, 'float32'), src0=tile(rng, 16))
    case('exponential', {'imm': 0.0, 'flags': ''}, src0=tile(rng, 16), src1=tile(rng, 1),
         dst1=(None, 'float32', 1))
    case('reciprocal', src0=tile(rng, 16, 0.5, 3))
    case('transpose', dst=(P, 'float32'), src0=(rng.uniform(-2, 2, (P, P)).astype(np.float32),
                                                 'float32'))
    case('scalar_tensor_tensor', {'alu': 'subtract', 'imm': 0.5, 'alu1': 'multiply',
                                  'flags': 'rev1'}, src0=tile(rng, 16), src1=tile(rng, 16))
    case('tensor_tensor_scan', {'alu': 'multiply', 'imm': 1.0, 'alu1': 'add', 'flags': ''},
         src0=tile(rng, 16, 0.5, 1), src1=tile(rng, 16))
    case('affine_select', {'alu': 'is_ge', 'imm': 3.0, 'imm1': 1.0, 'imm2': -1.0, 'imm3': -9.0},
         engine='pool', src0=tile(rng, 16))
    case('bn_stats', dst=(6, 'float32'), src0=tile(rng, 16))
    stats = np.tile(np.array([[4.0, 0.5, 1.0, 4.0, -0.25, 2.0]], np.float32), (P, 1))
    case('bn_aggr', dst=(2, 'float32'), src0=(stats * rng.uniform(0.5, 1.5, (P, 6)).astype(
        np.float32), 'float32'))
    case('select', {'imm': -1.0, 'alu': 'add', 'flags': 'rev0'},
         src0=tile(rng, 16, 0, 2, integers=True), src1=tile(rng, 16), src2=tile(rng, 1),
         dst1=(None, 'float32', 1))
    case('range_select', {'alu': 'is_ge', 'alu1': 'is_lt', 'imm': 0.0, 'imm1': -5.0},
         src0=tile(rng, 16), src1=tile(rng, 1, 0, 8, integers=True),
         src2=tile(rng, 1, 8, 16, integers=True), dst1=(None, 'float32', 1))
    case('tensor_copy', dst=(16, 'bfloat16'), src0=tile(rng, 16))
    case('memset', {'imm': 2.5})
    case('iota', {'imm': 3.0, 'imm1': 16.0}, engine='pool')
    case('max8', dst=(8, 'float32'), src0=tile(rng, 16))
    case('find_index8', dst=(8, 'int32'), src0=tile(rng, 16, 0, 6, integers=True),
         src1=tile(rng, 8, 0, 8, integers=True))
    case('match_replace8', {'imm': -1.0}, dst=(16, 'float32'),
         src0=tile(rng, 16, 0, 5, integers=True), src1=tile(rng, 8, 0, 7, integers=True),
         dst1=(None, 'int32', 8))
    case('stream_shuffle', {'imm': 3.0, 'imm1': 5.0, 'imm2': 0.0, 'imm3': 32.0},
         src0=tile(rng, 16))
    case('stream_shuffle', {'imm': 0.0, 'imm1': 0.0, 'imm2': 0.0, 'imm3': 32.0},
         src0=(rng.uniform(-2, 2, (1, 16)).astype(np.float32), 'float32'))
    case('stream_shuffle', {'imm': 1.0, 'imm1': 27.0, 'imm2': 5.0, 'imm3': 12.0},
         src0=tile(rng, 16), src1=tile(rng, 16))  # a shift into part of each quadrant
    topk_src = _dtypes.round_to(rng.uniform(-2, 2, (P, 4)).astype(np.float32), 'bfloat16')
    case('topk', {'imm': 60.0, 'imm1': 20.0}, engine='pool', dst=(2, 'bfloat16'),
         src0=(np.asarray(topk_src, np.float32), 'bfloat16'), dst1=(None, 'uint32', 2))
    case('tensor_tensor', {'alu': 'abs'}, src0=tile(rng, 16, -2, 2), src1=tile(rng, 16))
    sparse = (rng.uniform(0, 1, (P, 16)) > 0.6).astype(np.float32)
    case('nonzero_count', {'imm': 3.0, 'imm1': -1.0}, engine='pool', dst=(17, 'int32'),
         src0=(sparse, 'float32'), src1=tile(rng, 17, -5, 5, 'int32', integers=True))
    return out


def packed(values, dtype):
    v = np.asarray(_dtypes.round_to(values, dtype), np.float32)
    if dtype == 'bfloat16':
        return (v.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return v.astype({'float32': np.float32, 'int32': np.int32, 'uint32': np.uint32}[dtype]).tobytes()


def unpacked(raw, dtype, shape):
    if dtype == 'bfloat16':
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(
            np.float32).reshape(shape).astype(np.float64)
    return np.frombuffer(raw, {'float32': np.float32, 'int32': np.int32,
                               'uint32': np.uint32}[dtype]).reshape(shape).astype(np.float64)


def numpy_twin(opcode, ops, fields, engine):
    """(dst, dst1 or None) as the interpreter computes them: the primitive's values, its own
    second result or the reduction of dst's rows as stored, rounded to their dtypes."""
    prim = next(p for p in PRIMS.values() if p.opcode == opcode)
    vals = []
    for name, kind in zip(prim.fields[1:], prim.layout[1:]):
        if kind in ('O', 'O?'):
            continue
        if kind in ('T', 'T?'):
            vals.append(ops[name][0] if name in ops else None)
        elif kind == 'f':
            vals.append(float(fields.get(name, 0.0)))
        elif kind == 'eng':
            vals.append(engine)
        else:
            vals.append(fields.get(name, ''))
    vals += [None] * prim.values_only  # (as a recording without them: the defaults)
    shape = ops['dst'][2]
    if prim.shaped:
        vals.append(shape)
    out, second = prim.impl(*vals), None
    if prim.reduce is None and ('O' in prim.layout or 'O?' in prim.layout):
        out, second = out
    dst = _dtypes.round_to(np.broadcast_to(np.asarray(out, np.float32).reshape(shape)
                                           if np.ndim(out) else out, shape), ops['dst'][1])
    if prim.reduce is not None and 'dst1' in ops:
        alu = prim.reduce[1:] if prim.reduce.startswith('=') else fields[prim.reduce]
        second = reduce_rows(alu, np.asarray(dst, np.float32).reshape(shape[0], -1))
    if second is not None and 'dst1' in ops:
        second = _dtypes.round_to(np.asarray(second, np.float32).reshape(ops['dst1'][2]),
                                  ops['dst1'][1])
    return np.asarray(dst, np.float64), None if second is None else np.asarray(second, np.float64)


# The functions whose float32 values come from the math libraries (C's libm, numpy's own
# loops), which may differ in the last bits: at most this many units in the last place apart
# (measured over 20 seeds of these cases: gelu 7, sigmoid 4, tanh, gelu_apprx_tanh and
# exponential 3, exp and silu 2, erf and pow 1); every other result equal to the bit.
LIBM_ULPS = 8


def ulps(a, b):
    """How many float32 values lie between a and b (elementwise; equal NaNs: 0)."""
    def ordered(x):
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, np.abs(ordered(a) - ordered(b)))


def from_libm(opcode, fields):
    return opcode in ('activation', 'activation_reduce', 'exponential') or \
        fields.get('alu') == 'pow'


class Twins(unittest.TestCase):

    def test_every_opcode_is_covered(self):
        with_twin = {p.opcode for p in PRIMS.values() if p.opcode}
        covered = {c[0] for c in cases(np.random.default_rng(1))}
        self.assertEqual(with_twin - covered - ELSEWHERE, set(),
                         'opcodes with a numpy twin and no case')
        self.assertEqual(with_twin & ELSEWHERE, {'quantize_mx', 'register_load',
                                                 'register_store', 'register_move'})

    def test_numpy_and_the_model_agree_to_the_bit(self):
        for seed in range(3):
            for opcode, ops, fields, engine in cases(np.random.default_rng(seed)):
                with self.subTest(opcode=opcode, fields=fields, seed=seed):
                    want, want1 = numpy_twin(opcode, ops, fields, engine)
                    got = _runner.native.execute_instruction(
                        opcode, fields,
                        {s: (shape[0], shape[1], dt) for s, (_, dt, shape) in ops.items()},
                        {s: packed(v, dt) for s, (v, dt, _) in ops.items() if v is not None})
                    pairs = [(unpacked(got['dst'], ops['dst'][1], ops['dst'][2]), want)]
                    if want1 is not None:
                        pairs.append((unpacked(got['dst1'], ops['dst1'][1], ops['dst1'][2]),
                                      want1))
                    for model, frontend in pairs:
                        if from_libm(opcode, fields):
                            self.assertLessEqual(int(ulps(model, frontend).max()), LIBM_ULPS)
                        else:
                            np.testing.assert_array_equal(model, frontend)


if __name__ == '__main__':
    unittest.main()

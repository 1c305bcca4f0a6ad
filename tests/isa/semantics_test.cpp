// execute_alu / apply_alu (isa/semantics.h, the rows' execute functions): the functional
// semantics of every data-path opcode, on small packed tiles, including element-type conversion
// on load and store.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "isa/semantics.h"
#include "support/operands.h"

namespace {

using trn::testing::make_instruction;

using trn::alu_op;
using trn::dtype;
using trn::instruction;
using trn::opcode;
using trn::operand;

operand tile(dtype t, std::uint32_t partitions, std::uint32_t elems) {
    operand o;
    o.space = trn::mem_space::sbuf;
    o.type = t;
    o.partitions = partitions;
    o.elems = elems;
    return o;
}

std::vector<std::uint8_t> pack_f32(const std::vector<float>& v) {
    std::vector<std::uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

std::vector<float> unpack_f32(const std::vector<std::uint8_t>& b) {
    std::vector<float> out(b.size() / 4);
    std::memcpy(out.data(), b.data(), out.size() * 4);
    return out;
}

// bf16 by truncation of exactly representable values (the tests choose such values), or its
// raw 16-bit words for rounding checks.
std::vector<std::uint8_t> pack_bf16(const std::vector<float>& v) {
    std::vector<std::uint8_t> out(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &v[i], 4);
        EXPECT_EQ(u & 0xffffu, 0u) << v[i] << " is not exact in bf16";
        const auto h = static_cast<std::uint16_t>(u >> 16);
        std::memcpy(&out[i * 2], &h, 2);
    }
    return out;
}

std::vector<std::uint16_t> words16(const std::vector<std::uint8_t>& b) {
    std::vector<std::uint16_t> out(b.size() / 2);
    std::memcpy(out.data(), b.data(), out.size() * 2);
    return out;
}

std::uint16_t bf16_word(float v) {  // bits of an exactly representable value
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<std::uint16_t>(u >> 16);
}

const std::vector<float> a{1.5f, -2.0f, 3.25f, 0.0f, -7.5f, 100.0f};
const std::vector<float> b{0.5f, 4.0f, -3.25f, -1.0f, -8.0f, 0.25f};

TEST(Alu, ApplyAluEveryOperation) {
    EXPECT_EQ(trn::apply_alu(alu_op::bypass, 3, 9), 3);
    EXPECT_EQ(trn::apply_alu(alu_op::add, 3, 9), 12);
    EXPECT_EQ(trn::apply_alu(alu_op::subtract, 3, 9), -6);
    EXPECT_EQ(trn::apply_alu(alu_op::multiply, 3, 9), 27);
    EXPECT_EQ(trn::apply_alu(alu_op::max, 3, 9), 9);
    EXPECT_EQ(trn::apply_alu(alu_op::min, 3, 9), 3);
    EXPECT_EQ(trn::apply_alu(alu_op::max, -3, -9), -3);
    EXPECT_EQ(trn::apply_alu(alu_op::min, -3, -9), -9);
}

TEST(Alu, TensorTensorAppliesTheAluElementwise) {
    const auto t = tile(dtype::float32, 2, 3);
    for (auto op : {alu_op::add, alu_op::subtract, alu_op::multiply, alu_op::max, alu_op::min}) {
        std::vector<std::uint8_t> out;
        trn::execute_alu(make_instruction(opcode::tensor_tensor, op, t, t, t), pack_f32(a),
                         pack_f32(b), out);
        const auto got = unpack_f32(out);
        ASSERT_EQ(got.size(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            float want = 0;
            switch (op) {
                case alu_op::add:
                    want = a[i] + b[i];
                    break;
                case alu_op::subtract:
                    want = a[i] - b[i];
                    break;
                case alu_op::multiply:
                    want = a[i] * b[i];
                    break;
                case alu_op::max:
                    want = a[i] > b[i] ? a[i] : b[i];
                    break;
                case alu_op::min:
                    want = a[i] < b[i] ? a[i] : b[i];
                    break;
                default:
                    break;
            }
            EXPECT_EQ(got[i], want) << trn::alu_name(op) << " element " << i;
        }
    }
}

TEST(Alu, TensorTensorLoadsEachOperandInItsOwnType) {
    // src0 bf16, src1 fp32, dst fp32.
    std::vector<std::uint8_t> out;
    trn::execute_alu(
        make_instruction(opcode::tensor_tensor, alu_op::add, tile(dtype::float32, 2, 3),
                         tile(dtype::bfloat16, 2, 3), tile(dtype::float32, 2, 3)),
        pack_bf16(a), pack_f32(b), out);
    const auto got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], a[i] + b[i]) << i;
}

TEST(Alu, TensorScalarUsesTheImmediate) {
    const auto t = tile(dtype::float32, 3, 2);
    std::vector<std::uint8_t> out;
    trn::execute_alu(make_instruction(opcode::tensor_scalar, alu_op::multiply, t, t, {}, -2.0f),
                     pack_f32(a), {}, out);
    auto got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], a[i] * -2.0f) << i;
    trn::execute_alu(make_instruction(opcode::tensor_scalar, alu_op::max, t, t, {}, 1.0f),
                     pack_f32(a), {}, out);
    got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], a[i] > 1.0f ? a[i] : 1.0f) << i;
}

TEST(Alu, TensorScalarWithAColumnUsesOneScalarPerPartition) {
    // src1 is [P, 1]: partition p uses src1[p].
    const std::vector<float> col{10.0f, -1.0f};
    std::vector<std::uint8_t> out;
    trn::execute_alu(
        make_instruction(opcode::tensor_scalar, alu_op::subtract, tile(dtype::float32, 2, 3),
                         tile(dtype::float32, 2, 3), tile(dtype::float32, 2, 1), 99.0f),
        pack_f32(a), pack_f32(col), out);
    const auto got = unpack_f32(out);
    ASSERT_EQ(got.size(), a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], a[i] - col[i / 3]) << i;  // the immediate is not used
}

TEST(Alu, MemsetFillsTheDestinationInItsType) {
    std::vector<std::uint8_t> out;
    trn::execute_alu(make_instruction(opcode::memset, alu_op::bypass, tile(dtype::bfloat16, 4, 5),
                                      {}, {}, -0.375f),
                     {}, {}, out);
    ASSERT_EQ(out.size(), 4u * 5 * 2);
    for (auto w : words16(out))
        EXPECT_EQ(w, bf16_word(-0.375f));
    trn::execute_alu(
        make_instruction(opcode::memset, alu_op::bypass, tile(dtype::int32, 2, 2), {}, {}, 7.0f),
        {}, {}, out);
    ASSERT_EQ(out.size(), 16u);
    for (int i = 0; i < 4; ++i) {
        std::int32_t v;
        std::memcpy(&v, &out[i * 4], 4);
        EXPECT_EQ(v, 7);
    }
}

TEST(Alu, TensorCopyConvertsFp32ToBf16RoundingToNearestEven) {
    // bf16 keeps 8 significant bits: in [1, 2) its step is 2^-7.
    const float step = 1.0f / 128;
    const std::vector<float> in{
        1.0f + step / 4,      // below half a step: down to 1
        1.0f + 3 * step / 4,  // above half: up to 1 + step
        1.0f + step / 2,      // tie, 1 is even: down
        1.0f + 3 * step / 2,  // tie, 1 + step is odd: up to 1 + 2 step
        -2.5f,                // exact
    };
    const std::vector<float> want{1.0f, 1.0f + step, 1.0f, 1.0f + 2 * step, -2.5f};
    std::vector<std::uint8_t> out;
    trn::execute_alu(make_instruction(opcode::tensor_copy, alu_op::bypass,
                                      tile(dtype::bfloat16, 1, 5), tile(dtype::float32, 1, 5)),
                     pack_f32(in), {}, out);
    const auto got = words16(out);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(got[i], bf16_word(want[i])) << "element " << i;
}

TEST(Alu, TensorCopyConvertsBf16ToFp32AndFp32ToInt32) {
    std::vector<std::uint8_t> out;
    trn::execute_alu(make_instruction(opcode::tensor_copy, alu_op::bypass,
                                      tile(dtype::float32, 2, 3), tile(dtype::bfloat16, 2, 3)),
                     pack_bf16(a), {}, out);
    EXPECT_EQ(unpack_f32(out), a);
    const std::vector<float> in{2.75f, -2.75f, 0.5f, 1e6f};
    trn::execute_alu(make_instruction(opcode::tensor_copy, alu_op::bypass, tile(dtype::int32, 1, 4),
                                      tile(dtype::float32, 1, 4)),
                     pack_f32(in), {}, out);
    std::vector<std::int32_t> got(4);
    std::memcpy(got.data(), out.data(), 16);
    EXPECT_EQ(got, (std::vector<std::int32_t>{2, -2, 0, 1000000}));  // truncation toward zero
}

TEST(Alu, TensorReduceOverTheFreeAxisPerPartition) {
    // Three partitions of five elements.
    const std::vector<float> src{3, -1, 8, 2, 0, -5, -9, -2, -7, -3, 4, 4, 1, 0, 6};
    const auto s = tile(dtype::float32, 3, 5);
    std::vector<std::uint8_t> out;
    trn::execute_alu(
        make_instruction(opcode::tensor_reduce, alu_op::max, tile(dtype::float32, 3, 1), s),
        pack_f32(src), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{8, -2, 6}));
    trn::execute_alu(
        make_instruction(opcode::tensor_reduce, alu_op::add, tile(dtype::float32, 3, 1), s),
        pack_f32(src), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{12, -26, 15}));
    trn::execute_alu(
        make_instruction(opcode::tensor_reduce, alu_op::min, tile(dtype::float32, 3, 1), s),
        pack_f32(src), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{-1, -9, 0}));
}

TEST(Alu, TensorReduceOfGroupsNegated) {
    // dst [2, 3] from src [2, 6]: each element reduces a group of 2 consecutive elements
    const std::vector<float> src{1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
    std::vector<std::uint8_t> out;
    instruction r = make_instruction(opcode::tensor_reduce, alu_op::add, tile(dtype::float32, 2, 3),
                                     tile(dtype::float32, 2, 6));
    trn::execute_alu(r, pack_f32(src), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{3, 7, 11, -3, -7, -11}));
    r.flags = trn::flag::negate;
    r.alu = alu_op::max;
    trn::execute_alu(r, pack_f32(src), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{-2, -4, -6, 1, 3, 5}));
}

TEST(Alu, IotaIsOffsetPlusPartitionStepPlusIndex) {
    std::vector<std::uint8_t> out;
    instruction iota = make_instruction(opcode::iota, alu_op::bypass, tile(dtype::float32, 3, 4));
    iota.imm1 = 4;  // numbered across partitions
    trn::execute_alu(iota, {}, {}, out);
    auto got = unpack_f32(out);
    ASSERT_EQ(got.size(), 12u);
    for (std::uint32_t p = 0; p < 3; ++p)
        for (std::uint32_t i = 0; i < 4; ++i)
            EXPECT_EQ(got[p * 4 + i], static_cast<float>(p * 4 + i));
    iota.imm = 10;  // an offset, and the partition index alone times -1
    iota.imm1 = -1;
    trn::execute_alu(iota, {}, {}, out);
    got = unpack_f32(out);
    EXPECT_EQ(got[0], 10.0f);
    EXPECT_EQ(got[2 * 4 + 3], 10.0f - 2 + 3);
    instruction ints_iota =
        make_instruction(opcode::iota, alu_op::bypass, tile(dtype::int32, 2, 3));
    ints_iota.imm1 = 3;
    trn::execute_alu(ints_iota, {}, {}, out);
    std::vector<std::int32_t> ints(6);
    std::memcpy(ints.data(), out.data(), 24);
    EXPECT_EQ(ints, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Alu, TensorScalarSecondOperation) {
    std::vector<std::uint8_t> out;
    instruction ts =
        make_instruction(opcode::tensor_scalar, alu_op::subtract, tile(dtype::float32, 2, 2),
                         tile(dtype::float32, 2, 2), {}, 1.0f);
    ts.alu1 = alu_op::multiply;
    ts.imm1 = 3.0f;
    trn::execute_alu(ts, pack_f32({1, 2, 3, 4}), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{0, 3, 6, 9}));
}

TEST(Alu, ActivationAddsAPerPartitionBias) {
    std::vector<std::uint8_t> out;
    instruction a = make_instruction(opcode::activation, alu_op::bypass, tile(dtype::float32, 2, 2),
                                     tile(dtype::float32, 2, 2), tile(dtype::float32, 2, 1), 2.0f);
    a.func = trn::act_func::relu;
    trn::execute_alu(a, pack_f32({1, -2, 3, 4}), pack_f32({0.5f, -7}), out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{2.5f, 0, 0, 1}));
}

instruction activation(trn::act_func f, operand t, float scale) {
    instruction i = make_instruction(opcode::activation, alu_op::bypass, t, t, {}, scale);
    i.func = f;
    return i;
}

TEST(Alu, ActivationAppliesItsFunctionToTheScaledInput) {
    const auto t = tile(dtype::float32, 2, 3);
    std::vector<std::uint8_t> out;
    // relu; a scale (imm) of 0 means 1.
    trn::execute_alu(activation(trn::act_func::relu, t, 0.0f), pack_f32(a), {}, out);
    auto got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], a[i] > 0 ? a[i] : 0.0f) << i;
    // relu(x * scale) with a negative scale flips which elements survive.
    trn::execute_alu(activation(trn::act_func::relu, t, -2.0f), pack_f32(a), {}, out);
    got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], -2.0f * a[i] > 0 ? -2.0f * a[i] : 0.0f) << i;
    // identity: the input times the scale.
    trn::execute_alu(activation(trn::act_func::identity, t, 3.0f), pack_f32(a), {}, out);
    got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(got[i], 3.0f * a[i]) << i;
    // exp and reciprocal of the scaled input.
    trn::execute_alu(activation(trn::act_func::exp, t, 0.5f), pack_f32(a), {}, out);
    got = unpack_f32(out);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_FLOAT_EQ(got[i], std::exp(0.5f * a[i])) << i;
    const std::vector<float> nonzero{2.0f, -4.0f, 0.5f, 8.0f, -0.25f, 1.0f};
    trn::execute_alu(activation(trn::act_func::reciprocal, t, 2.0f), pack_f32(nonzero), {}, out);
    got = unpack_f32(out);
    for (std::size_t i = 0; i < nonzero.size(); ++i)
        EXPECT_EQ(got[i], 1.0f / (2.0f * nonzero[i])) << i;
}

TEST(Alu, OutputIsSizedByTheDestination) {
    std::vector<std::uint8_t> out(1000, 0xee);
    trn::execute_alu(
        make_instruction(opcode::memset, alu_op::bypass, tile(dtype::float16, 3, 7), {}, {}, 1), {},
        {}, out);
    EXPECT_EQ(out.size(), 3u * 7 * 2);
    for (auto w : words16(out))
        EXPECT_EQ(w, 0x3c00);  // 1.0 in fp16
}

}  // namespace

namespace {

TEST(Alu, TraceVersionThreeOperations) {
    using trn::apply_alu;
    EXPECT_EQ(apply_alu(alu_op::divide, 3, 4), 0.75f);
    EXPECT_EQ(apply_alu(alu_op::pow, 2, 10), 1024.0f);
    EXPECT_EQ(apply_alu(alu_op::mod, -7, 3), 2.0f);  // the divisor's sign, as numpy
    EXPECT_EQ(apply_alu(alu_op::mod, 7, -3), -2.0f);
    EXPECT_EQ(apply_alu(alu_op::abs_max, -5, 3), 5.0f);
    EXPECT_EQ(apply_alu(alu_op::is_equal, 2, 2), 1.0f);
    EXPECT_EQ(apply_alu(alu_op::not_equal, 2, 2), 0.0f);
    EXPECT_EQ(apply_alu(alu_op::is_gt, 3, 2), 1.0f);
    EXPECT_EQ(apply_alu(alu_op::is_ge, 2, 2), 1.0f);
    EXPECT_EQ(apply_alu(alu_op::is_lt, 3, 2), 0.0f);
    EXPECT_EQ(apply_alu(alu_op::is_le, 2, 3), 1.0f);
    EXPECT_EQ(apply_alu(alu_op::logical_and, 2, 0), 0.0f);
    EXPECT_EQ(apply_alu(alu_op::logical_or, 2, 0), 1.0f);
    EXPECT_EQ(apply_alu(alu_op::logical_xor, 2, 3), 0.0f);
    EXPECT_EQ(apply_alu(alu_op::bitwise_and, 12, 10), 8.0f);
    EXPECT_EQ(apply_alu(alu_op::bitwise_or, 12, 10), 14.0f);
    EXPECT_EQ(apply_alu(alu_op::bitwise_xor, 12, 10), 6.0f);
    EXPECT_EQ(apply_alu(alu_op::left_shift, 3, 4), 48.0f);
    EXPECT_EQ(apply_alu(alu_op::right_shift, -16, 2), -4.0f);  // the sign kept
    EXPECT_EQ(apply_alu(alu_op::left_shift, 3, 40), 0.0f);     // shifted out
}

TEST(Alu, ReversedOperationsAndAPerPartitionSecondOperand) {
    // (2 - x) / s[p], s from src2
    instruction ts =
        make_instruction(opcode::tensor_scalar, alu_op::subtract, tile(dtype::float32, 2, 2),
                         tile(dtype::float32, 2, 2), {}, 2.0f);
    ts.alu1 = alu_op::divide;
    ts.src2 = tile(dtype::float32, 2, 1);
    ts.flags = trn::flag::reverse0;
    std::vector<std::uint8_t> out, unused;
    trn::execute_alu(ts, pack_f32({1, 3, 5, -2}), {}, pack_f32({2, 4}), out, unused);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{0.5f, -0.5f, -0.75f, 1.0f}));
    ts.flags = trn::flag::reverse0 | trn::flag::reverse1;  // s[p] / (2 - x)
    trn::execute_alu(ts, pack_f32({1, 3, 5, -2}), {}, pack_f32({2, 4}), out, unused);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{2, -2, -4.0f / 3.0f, 1.0f}));
}

TEST(Alu, ReduceOpcodesWriteTheirSecondOutputFromTheRoundedResult) {
    // activation_reduce: exp(x * s[p]) into bf16, then the row sums of the bf16 values
    instruction ar = make_instruction(opcode::activation_reduce, alu_op::add,
                                      tile(dtype::bfloat16, 2, 3), tile(dtype::float32, 2, 3));
    ar.func = trn::act_func::identity;
    ar.src2 = tile(dtype::float32, 2, 1);
    ar.dst1 = tile(dtype::float32, 2, 1);
    std::vector<std::uint8_t> out, sums;
    trn::execute_alu(ar, pack_f32({1, 2, 3, 1.00390625f, 0, 0}), {}, pack_f32({1, 2}), out, sums);
    // 1.00390625 * 2 = 2.0078125 rounds to 2.0 in bf16 (8 bits of mantissa): the sum is 2
    EXPECT_EQ(unpack_f32(sums), (std::vector<float>{6, 2}));
    instruction tsr =
        make_instruction(opcode::tensor_scalar_reduce, alu_op::multiply, tile(dtype::float32, 2, 3),
                         tile(dtype::float32, 2, 3), {}, -1.0f);
    tsr.alu1 = alu_op::max;
    tsr.dst1 = tile(dtype::float32, 2, 1);
    trn::execute_alu(tsr, pack_f32({1, 2, 3, -4, 5, -6}), {}, {}, out, sums);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{-1, -2, -3, 4, -5, 6}));
    EXPECT_EQ(unpack_f32(sums), (std::vector<float>{-1, 6}));
}

TEST(Alu, VectorEngineReciprocalAndTranspose) {
    std::vector<std::uint8_t> out;
    trn::execute_alu(make_instruction(opcode::reciprocal, alu_op::bypass,
                                      tile(dtype::float32, 1, 3), tile(dtype::float32, 1, 3)),
                     pack_f32({2, -4, 0.5f}), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{0.5f, -0.25f, 2}));
    trn::execute_alu(make_instruction(opcode::transpose, alu_op::bypass, tile(dtype::float32, 3, 2),
                                      tile(dtype::float32, 2, 3)),
                     pack_f32({1, 2, 3, 4, 5, 6}), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

}  // namespace

namespace {

TEST(Alu, AffineSelectKeepsWhereThePredicateHolds) {
    // p - i >= 0: the lower triangle kept, the rest filled
    instruction s = make_instruction(opcode::affine_select, alu_op::is_ge,
                                     tile(dtype::float32, 2, 3), tile(dtype::float32, 2, 3));
    s.imm1 = 1;
    s.imm2 = -1;
    s.imm3 = -9984.0f;
    std::vector<std::uint8_t> out;
    trn::execute_alu(s, pack_f32({1, 2, 3, 4, 5, 6}), {}, out);
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{1, -9984, -9984, 4, 5, -9984}));
}

}  // namespace

namespace {

TEST(Alu, BnStatsAndBnAggrGiveTheMeanAndVariance) {
    // a row of 1..6: even elements 1 3 5 (mean 3, squared deviations 8), odd 2 4 6 (4, 8)
    std::vector<std::uint8_t> stats, out;
    trn::execute_alu(make_instruction(opcode::bn_stats, alu_op::bypass, tile(dtype::float32, 1, 6),
                                      tile(dtype::float32, 1, 6)),
                     pack_f32({1, 2, 3, 4, 5, 6}), {}, stats);
    EXPECT_EQ(unpack_f32(stats), (std::vector<float>{3, 3, 8, 3, 4, 8}));
    trn::execute_alu(make_instruction(opcode::bn_aggr, alu_op::bypass, tile(dtype::float32, 1, 2),
                                      tile(dtype::float32, 1, 6)),
                     stats, {}, out);
    // mean 3.5, variance (8 + 8 + 3 * 0.25 + 3 * 0.25) / 6 = 17.5 / 6
    EXPECT_EQ(unpack_f32(out), (std::vector<float>{3.5f, 17.5f / 6}));
}

}  // namespace

namespace {

// bf16 words back to floats (exact).
std::vector<float> unpack_bf16(const std::vector<std::uint8_t>& b) {
    std::vector<float> out;
    for (const std::uint16_t w : words16(b)) {
        const std::uint32_t u = std::uint32_t{w} << 16;
        float f;
        std::memcpy(&f, &u, 4);
        out.push_back(f);
    }
    return out;
}

TEST(Alu, ExponentialSubtractsTheMaxAndSumsThroughTheVectorRegisters) {
    // dst = exp(src - m): m an immediate, or src1[p, 0]; dst1[p, 0] = the row's sum, added onto
    // the register with racc, the register zeroed with rzero.
    const std::vector<float> x = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};  // 2 partitions x 3
    instruction e =
        make_instruction(opcode::exponential, alu_op::bypass, tile(dtype::float32, 2, 3),
                         tile(dtype::float32, 2, 3), {}, 1.0f);
    std::vector<std::uint8_t> out, sums;
    trn::execute_alu(e, pack_f32(x), {}, {}, out, sums);
    std::vector<float> v = unpack_f32(out);
    for (std::size_t i = 0; i < x.size(); ++i)
        EXPECT_FLOAT_EQ(v[i], std::exp(x[i] - 1.0f)) << i;
    e.src1 = tile(dtype::float32, 2, 1);  // the max per partition: 2 and 5
    e.dst1 = tile(dtype::float32, 2, 1);
    std::vector<float> regs;
    trn::execute_alu(e, pack_f32(x), pack_f32({2.0f, 5.0f}), {}, out, sums, &regs);
    v = unpack_f32(out);
    const std::vector<float> s = unpack_f32(sums);
    EXPECT_FLOAT_EQ(v[2], 1.0f);
    EXPECT_FLOAT_EQ(v[5], 1.0f);
    EXPECT_NEAR(s[0], std::exp(-2.0f) + std::exp(-1.0f) + 1.0f, 1e-6);
    e.flags = trn::flag::reduce_accumulate;  // onto the register: twice the sum
    trn::execute_alu(e, pack_f32(x), pack_f32({2.0f, 5.0f}), {}, out, sums, &regs);
    EXPECT_NEAR(unpack_f32(sums)[1], 2 * (std::exp(-2.0f) + std::exp(-1.0f) + 1.0f), 1e-5);
}

// quantize_mx: each 8 partitions x 4 elements share X = 2^(floor(log2 max|x|) - (emax - 1)),
// emax 8 (e4m3fn) or 15 (e5m2), its exponent + 127 at scale partition 32 (p / 32) + (p % 32) / 8;
// a group of zeros 2^-127 (byte 0); the scale's other partitions keep their bytes.
TEST(Alu, QuantizeMxScalesEachGroupOfThirtyTwoAndPacksItsValues) {
    const std::uint32_t parts = 64, cols = 8;  // 8 groups of partitions, 2 packed columns
    std::vector<float> x(parts * cols);
    for (std::uint32_t p = 0; p < parts; ++p)
        for (std::uint32_t j = 0; j < cols; ++j)  // group g of packed column c: max 3 * 2^g
            x[p * cols + j] = (p / 8 == 5 && j >= 4) ? 0.0f
                                                     : std::ldexp(1.0f + 2.0f * ((p + j) % 2),
                                                                  static_cast<int>(p / 8)) *
                                                           (j % 2 ? -1.0f : 1.0f);
    instruction q = make_instruction(opcode::quantize_mx, alu_op::bypass,
                                     tile(dtype::fp8_e4m3fn_x4, parts, cols / 4),
                                     tile(dtype::bfloat16, parts, cols));
    q.dst1 = tile(dtype::uint8, parts, cols / 4);
    std::vector<std::uint8_t> out, scale(parts * (cols / 4), 0xAB);
    trn::execute_alu(q, pack_bf16(x), {}, {}, out, scale);
    for (std::uint32_t g = 0; g < parts / 8; ++g)
        for (std::uint32_t c = 0; c < cols / 4; ++c) {
            const bool zeros = g == 5 && c == 1;
            const int e = zeros ? -127 : static_cast<int>(g) + 1 - 7;  // max 3 * 2^g: log2 g + 1
            const std::size_t at = (32 * (g / 4) + g % 4) * (cols / 4) + c;
            EXPECT_EQ(scale[at], e + 127) << "group " << g << " column " << c;
            for (std::uint32_t p = 8 * g; p < 8 * g + 8; ++p)
                for (int k = 0; k < 4; ++k)
                    EXPECT_EQ(
                        trn::packed_value(&out[(p * (cols / 4) + c) * 4], dtype::fp8_e4m3fn_x4, k),
                        x[p * cols + 4 * c + k] * std::ldexp(1.0f, -e))
                        << p << " " << c << " " << k;
        }
    EXPECT_EQ(scale[4 * (cols / 4)], 0xAB);  // partition 4: not a scale partition, kept
    EXPECT_EQ(scale[31 * (cols / 4) + 1], 0xAB);
    // e5m2: emax 15
    q.dst.type = dtype::fp8_e5m2_x4;
    trn::execute_alu(q, pack_bf16(x), {}, {}, out, scale);
    EXPECT_EQ(scale[0], 0 + 1 - 14 + 127);
}

TEST(Alu, TopkSortsEachSnakeOfSixteenPartitionsLargestFirst) {
    // two groups of 16 partitions, 2 columns each: snake element e at partition e % 16, column
    // e / 16; n = 20 elements per group are read (the rest ignored), k = 18 results (2 columns)
    std::vector<float> src(32 * 2, 1000.0f);  // unread slots: larger than every element
    for (std::uint32_t g = 0; g < 2; ++g)
        for (std::uint32_t e = 0; e < 20; ++e) {
            const float v = g == 0 ? static_cast<float>(e) : static_cast<float>(e % 4);
            src[(g * 16 + e % 16) * 2 + e / 16] = v;
        }
    instruction t = make_instruction(opcode::topk, alu_op::bypass, tile(dtype::bfloat16, 32, 2),
                                     tile(dtype::bfloat16, 32, 2), {}, 20.0f);
    t.imm1 = 18;
    t.dst1 = tile(dtype::uint32, 32, 2);
    std::vector<std::uint8_t> vals, idx;
    trn::execute_alu(t, pack_bf16(src), {}, {}, vals, idx);
    const std::vector<float> v = unpack_bf16(vals);
    std::vector<std::uint32_t> ix(idx.size() / 4);
    std::memcpy(ix.data(), idx.data(), idx.size());
    auto slot = [](std::uint32_t g, std::uint32_t j) { return (g * 16 + j % 16) * 2 + j / 16; };
    for (std::uint32_t j = 0; j < 32; ++j) {
        if (j < 20) {  // group 0: 19, 18, ... 0 at indices 19, 18, ...
            EXPECT_EQ(v[slot(0, j)], 19.0f - j) << j;
            EXPECT_EQ(ix[slot(0, j)], 19u - j) << j;
        } else {  // past n: -inf, index n
            EXPECT_EQ(v[slot(0, j)], -std::numeric_limits<float>::infinity()) << j;
            EXPECT_EQ(ix[slot(0, j)], 20u) << j;
        }
    }
    // group 1: 0 1 2 3 repeated: the 3s first, ties in index order (3, 7, 11, 15, 19)
    EXPECT_EQ(v[slot(1, 0)], 3.0f);
    EXPECT_EQ(ix[slot(1, 0)], 3u);
    EXPECT_EQ(ix[slot(1, 4)], 19u);
    EXPECT_EQ(v[slot(1, 5)], 2.0f);
    EXPECT_EQ(ix[slot(1, 5)], 2u);
}

}  // namespace

TEST(Alu, MatchReplace8ReplacesEachValuesFirstFreeOccurrenceLastValueFirst) {
    // the NKI reference's example: duplicate values take distinct occurrences, the last value
    // the first one; a value not found is -1 (and replaces nothing)
    const std::vector<float> data = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8,
                                     5, 6, 7, 9, 9, 9, 9, 9, 9, 9, 9};
    const std::vector<float> vals = {3, 8, 8, 8, 8, 8, 8, 8, 9, 42, 9, 5, 9, 9, 9, 6};
    instruction m =
        make_instruction(opcode::match_replace8, alu_op::bypass, tile(dtype::float32, 2, 11),
                         tile(dtype::float32, 2, 11), tile(dtype::float32, 2, 8), -1.5f);
    m.dst1 = tile(dtype::int32, 2, 8);
    std::vector<std::uint8_t> out, idx;
    trn::execute_alu(m, pack_f32(data), pack_f32(vals), {}, out, idx);
    const std::vector<float> got = unpack_f32(out);
    std::vector<std::int32_t> ix(idx.size() / 4);
    std::memcpy(ix.data(), idx.data(), idx.size());
    EXPECT_EQ(std::vector<std::int32_t>(ix.begin(), ix.begin() + 8),
              (std::vector<std::int32_t>{2, 10, 9, 8, 7, 6, 5, 4}));
    EXPECT_EQ(
        std::vector<float>(got.begin(), got.begin() + 11),
        (std::vector<float>{1, 2, -1.5f, 4, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f}));
    // row 1: 5 6 7 9 9 9 9 9 9 9 9; vals 9 42 9 5 9 9 9 6 (the 6 first, then 9s from the left)
    EXPECT_EQ(std::vector<std::int32_t>(ix.begin() + 8, ix.end()),
              (std::vector<std::int32_t>{7, -1, 6, 0, 5, 4, 3, 1}));
    EXPECT_EQ(std::vector<float>(got.begin() + 11, got.end()),
              (std::vector<float>{-1.5f, -1.5f, 7, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, 9, 9, 9}));
}

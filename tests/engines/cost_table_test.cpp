// cost_table: every rule family gives the cycles of hardware-facts.md section 2, written out
// here as formulas of N (elements per partition) and MIN_II, for NeuronCore-v2 and -v3.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engines/cost_table.h"
#include "support/operands.h"

namespace {

using trn::testing::make_instruction;

using trn::alu_op;
using trn::cost_table;
using trn::dtype;
using trn::engine_kind;
using trn::instruction;
using trn::mem_space;
using trn::opcode;
using trn::operand;

constexpr double min_ii = 64;
const std::vector<std::uint32_t> sizes{1,   16,  31,  32,  33,  63,  64,   65,  100,
                                       127, 128, 129, 256, 511, 512, 2048, 8192};

operand op(mem_space s, dtype t, std::uint32_t elems, std::uint32_t partitions = 128) {
    operand o;
    o.space = s;
    o.type = t;
    o.partitions = partitions;
    o.elems = elems;
    return o;
}

constexpr auto S = mem_space::sbuf;
constexpr auto P = mem_space::psum;
constexpr auto f32 = dtype::float32;
constexpr auto bf16 = dtype::bfloat16;
constexpr auto f16 = dtype::float16;

double with_min_ii(double c) {
    return std::max(min_ii, c);
}

TEST(CostTable, DveTensorTensorFp32BothSbufIsTwoN) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (auto n : sizes)
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, n),
                                          op(S, f32, n), op(S, f32, n))),
                with_min_ii(2.0 * n))
                << "isa " << isa << " N " << n;
    }
}

// An instruction that continues the one before it (one access pattern of several runs a
// partition, written as one instruction a run) costs its elements alone.
TEST(CostTable, AContinuationCostsItsElementsAlone) {
    const cost_table t(2, min_ii);
    for (auto n : sizes) {
        instruction ins = make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, n),
                                           op(S, f32, n), op(S, f32, n));
        ins.flags = trn::flag::continues;
        EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve, ins), 2.0 * n) << "N " << n;
    }
}

TEST(CostTable, DveTensorTensorOneInputInPsumIsN) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (auto n : sizes) {
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::tensor_tensor, alu_op::max, op(S, f32, n),
                                          op(P, f32, n), op(S, f32, n))),
                with_min_ii(n))
                << "isa " << isa << " N " << n;
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::tensor_tensor, alu_op::add, op(P, f32, n),
                                          op(S, f32, n), op(P, f32, n))),
                with_min_ii(n))
                << "isa " << isa << " N " << n;
            // All bf16 but one input in PSUM: the v3 all-SBUF 2x mode does not apply.
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::tensor_tensor, alu_op::add, op(S, bf16, n),
                                          op(S, bf16, n), op(P, bf16, n))),
                with_min_ii(n))
                << "isa " << isa << " N " << n;
        }
    }
}

TEST(CostTable, DveTensorTensorBf16ArithmeticInSbufIsNOnV2) {
    const cost_table t(2, min_ii);
    for (auto n : sizes) {
        for (auto alu : {alu_op::add, alu_op::subtract, alu_op::multiply})
            EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve,
                                      make_instruction(opcode::tensor_tensor, alu, op(S, bf16, n),
                                                       op(S, bf16, n), op(S, bf16, n))),
                             with_min_ii(n))
                << "N " << n;
        // Not add/subtract/multiply, or not bf16: the 2N rule.
        EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve,
                                  make_instruction(opcode::tensor_tensor, alu_op::max,
                                                   op(S, bf16, n), op(S, bf16, n), op(S, bf16, n))),
                         with_min_ii(2.0 * n));
        EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve,
                                  make_instruction(opcode::tensor_tensor, alu_op::add,
                                                   op(S, f32, n), op(S, bf16, n), op(S, bf16, n))),
                         with_min_ii(2.0 * n));
    }
}

TEST(CostTable, DveTensorTensorV3SixteenBitAllSbufIsHalfN) {
    const cost_table t(3, min_ii);
    for (auto n : sizes)
        for (auto type : {bf16, f16})
            for (auto alu : {alu_op::add, alu_op::max})
                EXPECT_DOUBLE_EQ(
                    t.cycles(engine_kind::dve,
                             make_instruction(opcode::tensor_tensor, alu, op(S, type, n),
                                              op(S, type, n), op(S, type, n))),
                    with_min_ii(n / 2.0))
                    << "N " << n;
}

TEST(CostTable, DveTensorScalarAndCopy) {
    for (auto code : {opcode::tensor_scalar, opcode::tensor_copy}) {
        const cost_table v2(2, min_ii), v3(3, min_ii);
        for (auto n : sizes) {
            const auto fp32 =
                make_instruction(code, alu_op::multiply, op(S, f32, n), op(S, f32, n));
            const auto b16 =
                make_instruction(code, alu_op::multiply, op(S, bf16, n), op(S, bf16, n));
            const auto b16_psum =
                make_instruction(code, alu_op::multiply, op(S, bf16, n), op(P, bf16, n));
            // v2: max(MIN_II, N) whatever the types.
            EXPECT_DOUBLE_EQ(v2.cycles(engine_kind::dve, fp32), with_min_ii(n));
            EXPECT_DOUBLE_EQ(v2.cycles(engine_kind::dve, b16), with_min_ii(n));
            // v3 perf modes: 4x for 16-bit in SBUF, 2x otherwise.
            EXPECT_DOUBLE_EQ(v3.cycles(engine_kind::dve, b16), with_min_ii(n / 4.0));
            EXPECT_DOUBLE_EQ(v3.cycles(engine_kind::dve, fp32), with_min_ii(n / 2.0));
            EXPECT_DOUBLE_EQ(v3.cycles(engine_kind::dve, b16_psum), with_min_ii(n / 2.0));
        }
    }
}

TEST(CostTable, DveMemset) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (auto n : sizes) {
            // Zero into bf16/fp16: max(MIN_II, N/2); otherwise max(MIN_II, N).
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::memset, alu_op::bypass, op(S, bf16, n))),
                with_min_ii(n / 2.0));
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::memset, alu_op::bypass, op(S, f16, n))),
                with_min_ii(n / 2.0));
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::memset, alu_op::bypass,
                                                            op(S, bf16, n), {}, {}, 1.5f)),
                with_min_ii(n));
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::memset, alu_op::bypass, op(S, f32, n))),
                with_min_ii(n));
        }
    }
}

TEST(CostTable, DveTensorReduceHasNoMinIiAndCountsSourceElements) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (auto n : sizes) {
            // N is the source's free size; the destination holds one element per partition.
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::tensor_reduce, alu_op::add,
                                                            op(S, f32, 1), op(S, f32, n))),
                n)
                << "N " << n;
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::tensor_reduce, alu_op::max,
                                                            op(S, bf16, 1), op(S, bf16, n))),
                n / 2.0)
                << "N " << n;
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::tensor_reduce, alu_op::max,
                                                            op(S, f32, 1), op(S, bf16, n))),
                n);  // bf16 in, fp32 out: not the bf16 mode
        }
    }
}

TEST(CostTable, DveMax8AndFindIndex8CostTheInputSize) {
    // hardware-facts 2: max8 / nc_find_index8, 8 <= N <= 16384, cost N (no MIN_II). The output
    // is always [P, 8]; N is the input's free size.
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (std::uint32_t n : {8u, 10u, 64u, 512u, 16384u}) {
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::max8, alu_op::bypass,
                                                            op(S, f32, 8), op(S, f32, n))),
                n)
                << "N " << n;
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::find_index8, alu_op::bypass,
                                          op(S, dtype::int32, 8), op(S, f32, n), op(S, f32, 8))),
                n)
                << "N " << n;
        }
        EXPECT_FALSE(t.supports(engine_kind::act, opcode::max8));
        EXPECT_FALSE(t.supports(engine_kind::pool, opcode::find_index8));
    }
}

TEST(CostTable, DveScalarTensorTensorAndScan) {
    // hardware-facts 2: scalar_tensor_tensor costs N for bf16 subtract-then-multiply on an
    // even free size, else 2N (NC-v2); N / 2 in every case on NC-v3.
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        auto stt = [&](dtype d, alu_op a0, alu_op a1, std::uint32_t n) {
            instruction i = make_instruction(opcode::scalar_tensor_tensor, a0, op(S, d, n),
                                             op(S, d, n), op(S, d, n), 0.5f);
            i.alu1 = a1;
            return t.cycles(engine_kind::dve, i);
        };
        // NC-v3: N / 2 in every case (2 elements per partition per cycle, as profiled on trn2)
        const double two = isa == 3 ? 0.5 : 2.0, sub_mul = isa == 3 ? 0.5 : 1.0;
        for (std::uint32_t n : {64u, 128u, 512u}) {
            EXPECT_DOUBLE_EQ(stt(bf16, alu_op::subtract, alu_op::multiply, n), sub_mul * n);
            EXPECT_DOUBLE_EQ(stt(bf16, alu_op::add, alu_op::multiply, n), two * n);
            EXPECT_DOUBLE_EQ(stt(f32, alu_op::subtract, alu_op::multiply, n), two * n);
        }
        EXPECT_DOUBLE_EQ(stt(bf16, alu_op::subtract, alu_op::multiply, 65), two * 65);  // odd N
        EXPECT_FALSE(t.supports(engine_kind::act, opcode::scalar_tensor_tensor));
        // tensor_tensor_scan: max(MIN_II, 2N).
        for (std::uint32_t n : sizes)
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve,
                         make_instruction(opcode::tensor_tensor_scan, alu_op::add, op(S, f32, n),
                                          op(S, f32, n), op(S, f32, n))),
                std::max(min_ii, 2.0 * n))
                << "N " << n;
    }
}

TEST(CostTable, ActActivationAndTensorScalarAreMaxMinIiN) {
    // activation: max(MIN_II, N) on NC-v2 and NC-v4 (the guides' 128 elements a cycle),
    // max(MIN_II, N / 2) on NC-v3 (its profiled rate, hardware-facts 2); tensor_scalar
    // max(MIN_II, N) on each.
    for (int isa : {2, 3, 4}) {
        const cost_table t(isa, min_ii);
        const double per_elem = isa == 3 ? 0.5 : 1.0;
        for (auto n : sizes) {
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::act, make_instruction(opcode::activation, alu_op::max,
                                                            op(S, f32, n), op(P, f32, n))),
                with_min_ii(per_elem * n))
                << "isa " << isa << " N " << n;
            if (isa == 4) continue;  // (NC-v4's 16-bit tensor_scalar: its own test)
            // ACT has no 16-bit fast modes.
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::act, make_instruction(opcode::tensor_scalar, alu_op::add,
                                                            op(S, bf16, n), op(S, bf16, n))),
                with_min_ii(n));
        }
    }
}

TEST(CostTable, ActTensorCopyOnlyOnV3) {
    const cost_table v2(2, min_ii), v3(3, min_ii);
    EXPECT_FALSE(v2.supports(engine_kind::act, opcode::tensor_copy));
    EXPECT_TRUE(v3.supports(engine_kind::act, opcode::tensor_copy));
    for (auto n : sizes)
        EXPECT_DOUBLE_EQ(
            v3.cycles(engine_kind::act, make_instruction(opcode::tensor_copy, alu_op::bypass,
                                                         op(S, f32, n), op(P, f32, n))),
            with_min_ii(n));
    EXPECT_EQ(v2.match(engine_kind::act, make_instruction(opcode::tensor_copy, alu_op::bypass,
                                                          op(S, f32, 8), op(S, f32, 8))),
              nullptr);
}

TEST(CostTable, PoolIsGpsimdStartPlusPerElement) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (auto n : sizes) {
            // iota: 150 + N, no MIN_II (N = 1 costs 151).
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::pool,
                         make_instruction(opcode::iota, alu_op::bypass, op(S, f32, n))),
                150.0 + n);
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::pool,
                         make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, n),
                                          op(S, f32, n), op(S, f32, n))),
                150.0 + 2.0 * n);
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::pool, make_instruction(opcode::tensor_scalar, alu_op::add,
                                                             op(S, f32, n), op(S, f32, n))),
                150.0 + n);
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::pool, make_instruction(opcode::tensor_copy, alu_op::bypass,
                                                             op(S, bf16, n), op(S, f32, n))),
                150.0 + n);
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::pool,
                         make_instruction(opcode::memset, alu_op::bypass, op(S, bf16, n))),
                150.0 + n);
        }
    }
}

TEST(CostTable, PartitionsDoNotChangeTheCost) {
    const cost_table t(2, min_ii);
    for (std::uint32_t p : {1u, 7u, 64u, 128u})
        EXPECT_DOUBLE_EQ(
            t.cycles(engine_kind::dve,
                     make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 300, p),
                                      op(S, f32, 300, p), op(S, f32, 300, p))),
            600.0);
}

TEST(CostTable, MinIiIsAParameter) {
    const cost_table t(2, 100);
    EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve,
                              make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 30),
                                               op(S, f32, 30), op(S, f32, 30))),
                     100.0);
    EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve,
                              make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 80),
                                               op(S, f32, 80), op(S, f32, 80))),
                     160.0);
    // Rules without MIN_II ignore it.
    EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve, make_instruction(opcode::tensor_reduce, alu_op::add,
                                                                 op(S, f32, 1), op(S, f32, 30))),
                     30.0);
    EXPECT_DOUBLE_EQ(
        t.cycles(engine_kind::pool, make_instruction(opcode::iota, alu_op::bypass, op(S, f32, 1))),
        151.0);
}

TEST(CostTable, SupportsByEngineAndOpcode) {
    for (int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        EXPECT_FALSE(t.supports(engine_kind::sp, opcode::tensor_tensor));
        EXPECT_FALSE(t.supports(engine_kind::sp, opcode::memset));
        EXPECT_TRUE(t.supports(engine_kind::sp, opcode::dma_trigger));
        EXPECT_TRUE(t.supports(engine_kind::act, opcode::dma_trigger));
        EXPECT_TRUE(t.supports(engine_kind::pool, opcode::dma_trigger));
        EXPECT_FALSE(t.supports(engine_kind::dve, opcode::dma_trigger));
        EXPECT_FALSE(t.supports(engine_kind::pe, opcode::tensor_tensor));
        EXPECT_TRUE(t.supports(engine_kind::dve, opcode::tensor_reduce));
        EXPECT_FALSE(t.supports(engine_kind::dve, opcode::activation));
        EXPECT_FALSE(t.supports(engine_kind::dve, opcode::iota));
        EXPECT_FALSE(t.supports(engine_kind::act, opcode::tensor_tensor));
        EXPECT_FALSE(t.supports(engine_kind::act, opcode::memset));
        EXPECT_TRUE(t.supports(engine_kind::pool, opcode::iota));
        EXPECT_TRUE(t.supports(engine_kind::pool, opcode::tensor_tensor));
        EXPECT_FALSE(t.supports(engine_kind::pool, opcode::tensor_reduce));
        EXPECT_FALSE(t.supports(engine_kind::pool, opcode::activation));
    }
}

TEST(CostTable, PoolCannotUsePsumOperands) {
    const cost_table t(2, min_ii);
    const instruction in_psum[] = {
        make_instruction(opcode::iota, alu_op::bypass, op(P, f32, 16)),
        make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 16), op(P, f32, 16),
                         op(S, f32, 16)),
        make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 16), op(S, f32, 16),
                         op(P, f32, 16)),
        make_instruction(opcode::tensor_copy, alu_op::bypass, op(P, f32, 16), op(S, f32, 16)),
        make_instruction(opcode::memset, alu_op::bypass, op(P, f32, 16)),
    };
    for (const auto& i : in_psum) {
        EXPECT_EQ(t.match(engine_kind::pool, i), nullptr) << trn::opcode_name(i.op);
        EXPECT_DOUBLE_EQ(t.cycles(engine_kind::pool, i), 0.0);
    }
    EXPECT_NE(t.match(engine_kind::pool, make_instruction(opcode::tensor_copy, alu_op::bypass,
                                                          op(S, f32, 16), op(S, f32, 16))),
              nullptr);
}

TEST(CostTable, UnsupportedInstructionsHaveNoRuleAndNoCycles) {
    const cost_table t(3, min_ii);
    const auto tt = make_instruction(opcode::tensor_tensor, alu_op::add, op(S, f32, 64),
                                     op(S, f32, 64), op(S, f32, 64));
    EXPECT_EQ(t.match(engine_kind::sp, tt), nullptr);
    EXPECT_DOUBLE_EQ(t.cycles(engine_kind::sp, tt), 0.0);
    instruction trigger;
    trigger.op = opcode::dma_trigger;
    EXPECT_EQ(t.match(engine_kind::sp, trigger), nullptr);  // its cost is a time, not cycles
    EXPECT_DOUBLE_EQ(t.cycles(engine_kind::sp, trigger), 0.0);
}

TEST(CostTable, EveryRuleCitesItsSourceAndAppliesToAKnownIsa) {
    for (const auto& r : cost_table::rules()) {
        ASSERT_NE(r.source, nullptr);
        EXPECT_NE(std::string(r.source).find("hardware-facts"), std::string::npos);
        EXPECT_TRUE(r.isa == 0 || r.isa == 2 || r.isa == 3 || r.isa == 4);
        EXPECT_TRUE(r.per_elem > 0 || (r.custom && r.custom_text));
        EXPECT_NE(r.op, opcode::dma_trigger);
    }
}

}  // namespace

namespace {

// The instructions of the 2.21-2.26 notes: the same formula on NC-v2 and NC-v3 (but for the
// Scalar engine's NC-v3 rate).
TEST(CostTable, ReduceVariantsReciprocalAndVectorTranspose) {
    for (const int isa : {2, 3}) {
        const cost_table t(isa, min_ii);
        for (const std::uint32_t n : sizes) {
            instruction ar = make_instruction(opcode::activation_reduce, alu_op::add, op(S, f32, n),
                                              op(S, f32, n));
            ar.dst1 = op(S, f32, 1);
            // the activation's data path (N / 2 on NC-v3, as activation), plus MIN_II
            const double act_n = isa == 3 ? n / 2.0 : double(n);
            EXPECT_DOUBLE_EQ(t.cycles(engine_kind::act, ar), std::max(min_ii, act_n) + min_ii) << n;
            instruction tsr = make_instruction(opcode::tensor_scalar_reduce, alu_op::add,
                                               op(S, bf16, n), op(S, bf16, n), {}, 1.0f);
            tsr.dst1 = op(S, f32, 1);
            EXPECT_DOUBLE_EQ(t.cycles(engine_kind::dve, tsr), std::max(min_ii, double(n)) + min_ii)
                << n;
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::reciprocal, alu_op::bypass,
                                                            op(S, f32, n), op(S, f32, n))),
                std::max(min_ii, 8.0 * n))
                << n;
            // a per-partition scale costs nothing more
            instruction scaled =
                make_instruction(opcode::activation, alu_op::bypass, op(S, f32, n), op(S, f32, n));
            scaled.src2 = op(S, f32, 1);
            EXPECT_DOUBLE_EQ(t.cycles(engine_kind::act, scaled), std::max(min_ii, act_n));
        }
        for (const std::uint32_t n : {1u, 8u, 32u})
            EXPECT_DOUBLE_EQ(
                t.cycles(engine_kind::dve, make_instruction(opcode::transpose, alu_op::bypass,
                                                            op(S, f32, 32, n), op(P, f32, n, 32))),
                std::max(min_ii, 32.0));
        // the Vector engine transposes at most 32 x 32; the Scalar engine not at all
        EXPECT_EQ(
            t.match(engine_kind::dve, make_instruction(opcode::transpose, alu_op::bypass,
                                                       op(S, f32, 64, 64), op(S, f32, 64, 64))),
            nullptr);
        EXPECT_FALSE(t.supports(engine_kind::act, opcode::reciprocal));
    }
}

}  // namespace

namespace {

// nisa.topk: 4n + k GpSimd cycles (n the snake's elements, k the results), NeuronCore-v3 on.
TEST(CostTable, TopkCostsFourCyclesPerElementAndOnePerResult) {
    instruction t = make_instruction(opcode::topk, alu_op::bypass, op(S, bf16, 4, 128),
                                     op(S, bf16, 64, 128), {}, 1000.0f);
    t.imm1 = 64;
    t.dst1 = op(S, dtype::uint32, 4, 128);
    EXPECT_DOUBLE_EQ(cost_table(3, min_ii).cycles(engine_kind::pool, t), 4 * 1000.0 + 64);
    t.imm = 8;
    t.imm1 = 1;
    EXPECT_DOUBLE_EQ(cost_table(3, min_ii).cycles(engine_kind::pool, t), 33.0);
    EXPECT_FALSE(cost_table(2, min_ii).supports(engine_kind::pool, opcode::topk));
    EXPECT_FALSE(cost_table(3, min_ii).supports(engine_kind::dve, opcode::topk));
    EXPECT_EQ(trn::formula(*cost_table(3, min_ii).match(engine_kind::pool, t)),
              "4 * imm + imm1 cycles (4n + k)");
}

TEST(CostTable, NcV4TakesNcV3CostsAndItsOwnVectorExponential) {
    // NeuronCore-v4 (isa 4): NC-v3's rules where it has none of its own (a bf16 tensor_copy,
    // N/4 on NC-v3); its Vector-engine exponential at 4x the Scalar engine's exp (1 per
    // element), with the MIN_II floor; no exponential before NC-v4.
    const instruction copy = make_instruction(opcode::tensor_copy, alu_op::bypass,
                                              op(S, bf16, 2048, 128), op(S, bf16, 2048, 128));
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::dve, copy),
                     cost_table(3, min_ii).cycles(engine_kind::dve, copy));
    // 4x the Scalar engine's rate for 16-bit data (the Vector engine's 512 elements a cycle),
    // half that for fp32 (256 a cycle)
    const instruction ex = make_instruction(opcode::exponential, alu_op::bypass,
                                            op(S, bf16, 2048, 128), op(S, bf16, 2048, 128));
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::dve, ex), 2048 / 4.0);
    const instruction ex32 =
        make_instruction(opcode::exponential, alu_op::bypass, op(S, dtype::float32, 2048, 128),
                         op(S, dtype::float32, 2048, 128));
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::dve, ex32), 2048 / 2.0);
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(
                         engine_kind::dve, make_instruction(opcode::exponential, alu_op::bypass,
                                                            op(S, dtype::float32, 64, 128),
                                                            op(S, dtype::float32, 64, 128))),
                     min_ii);
    instruction act_exp =
        make_instruction(opcode::activation, alu_op::bypass, op(S, dtype::float32, 2048, 128),
                         op(S, dtype::float32, 2048, 128));
    act_exp.func = trn::act_func::exp;
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::act, act_exp), 2048.0);
    EXPECT_FALSE(cost_table(3, min_ii).supports(engine_kind::dve, opcode::exponential));
    EXPECT_FALSE(cost_table(4, min_ii).supports(engine_kind::act, opcode::exponential));
}

TEST(CostTable, NcV4QuantizeMxTakesFourInputElementsAPartitionACycle) {
    // "four input elements per partition, per cycle (i.e., 4x Vector performance mode)": N / 4
    // of src0's free size, at least MIN_II; no such instruction before NeuronCore-v4
    instruction q = make_instruction(opcode::quantize_mx, alu_op::bypass,
                                     op(S, dtype::fp8_e4m3fn_x4, 512, 128), op(S, bf16, 2048, 128));
    q.dst1 = op(S, dtype::uint8, 512, 128);
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::dve, q), 512.0);
    q.src0.elems = 128;
    q.dst.elems = q.dst1.elems = 32;
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::dve, q), min_ii);
    EXPECT_FALSE(cost_table(3, min_ii).supports(engine_kind::dve, opcode::quantize_mx));
}

TEST(CostTable, NcV4ScalarEngineCopiesAndTensorScalarsBf16AtTwiceTheRate) {
    const instruction copy16 = make_instruction(opcode::tensor_copy, alu_op::bypass,
                                                op(S, bf16, 2048, 128), op(S, bf16, 2048, 128));
    const instruction copy32 =
        make_instruction(opcode::tensor_copy, alu_op::bypass, op(S, dtype::float32, 2048, 128),
                         op(S, dtype::float32, 2048, 128));
    const instruction ts16 = make_instruction(opcode::tensor_scalar, alu_op::multiply,
                                              op(S, bf16, 2048, 128), op(S, bf16, 2048, 128));
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::act, copy16), 1024.0);
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::act, copy32), 2048.0);
    EXPECT_DOUBLE_EQ(cost_table(4, min_ii).cycles(engine_kind::act, ts16), 1024.0);
    EXPECT_DOUBLE_EQ(cost_table(3, min_ii).cycles(engine_kind::act, copy16), 2048.0);
    EXPECT_DOUBLE_EQ(cost_table(3, min_ii).cycles(engine_kind::act, ts16), 2048.0);
}

}  // namespace

// trn::validate_program: every violation is a user_error naming the stream, index and limit.
// Also program counts and region_initial_bytes.
#include "program/program.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/expect_error.h"
#include "support/operands.h"

namespace {

using namespace trn;
using trn::testing::chip_op;
using trn::testing::contains;
using trn::testing::hbm_op;
using trn::testing::trigger;
using trn::testing::user_error_of;

constexpr std::uint64_t sbuf_bytes = 196608, psum_bytes = 16384, hbm_size = 1 << 20;

program_limits limits() {
    program_limits l;
    l.partitions = 128;
    l.sbuf_partition_bytes = sbuf_bytes;
    l.psum_partition_bytes = psum_bytes;
    l.hbm_bytes = hbm_size;
    l.dma_queues = 16;
    return l;
}

operand sbuf(std::uint32_t partitions, std::uint32_t elems, std::uint64_t offset) {
    return chip_op(mem_space::sbuf, dtype::float32, 0, partitions, elems, offset);
}

std::vector<instruction>& stream(program& p, engine_kind e) {
    return p.engines[std::size_t(e)];
}

// A valid program: load 128x16 floats (q0), scale them on the DVE, store them (q1, from ACT).
program valid_program() {
    program p;
    p.hbm_bytes = 16384;
    p.queues.resize(2);
    p.queues[0].push_back({sbuf(128, 16, 0), hbm_op(dtype::float32, 128, 16, 0, 64)});
    p.queues[1].push_back({hbm_op(dtype::float32, 128, 16, 8192, 64), sbuf(128, 16, 1024)});
    stream(p, engine_kind::sp).push_back(trigger(0));
    instruction scale;
    scale.op = opcode::tensor_scalar;
    scale.alu = alu_op::multiply;
    scale.dst = sbuf(128, 16, 1024);
    scale.src0 = sbuf(128, 16, 0);
    scale.imm = 2;
    scale.waits = {{semaphore_of_queue(0), 1}};
    stream(p, engine_kind::dve).push_back(scale);
    stream(p, engine_kind::act).push_back(trigger(1, {{semaphore_of_engine(engine_kind::dve), 1}}));
    return p;
}

instruction& dve0(program& p) {
    return stream(p, engine_kind::dve)[0];
}

std::string violation(const program& p) {
    return user_error_of([&] { validate_program(p, limits()); });
}

TEST(ProgramCounts, CountsTransfersAndInstructions) {
    const program p = valid_program();
    EXPECT_EQ(p.transfer_count(), 2u);
    EXPECT_EQ(p.instruction_count(), 2u + 3u);  // transfers count as instructions
    EXPECT_EQ(semaphore_name(semaphore_of_engine(engine_kind::dve)), "dve");
    EXPECT_EQ(semaphore_name(semaphore_of_queue(3)), "q3");
    EXPECT_EQ(semaphore_of_queue(0), engine_count);
}

TEST(ProgramEquality, EveryFieldMatters) {
    const program base = valid_program();
    EXPECT_EQ(base, valid_program());
    program p = base;
    dve0(p).imm = 3;
    EXPECT_FALSE(p == base);
    p = base;
    dve0(p).waits[0].value = 2;
    EXPECT_FALSE(p == base);
    p = base;
    p.queues[0][0].src.row_stride = 128;
    EXPECT_FALSE(p == base);
    p = base;
    p.queues[0][0].transpose = true;
    EXPECT_FALSE(p == base);
    p = base;
    p.hbm_bytes += 1;
    EXPECT_FALSE(p == base);
    p = base;
    p.regions.push_back({});
    EXPECT_FALSE(p == base);
}

TEST(ValidateProgram, ValidProgramPasses) {
    EXPECT_NO_THROW(validate_program(valid_program(), limits()));
}

// Tensor indirection: the offsets an integer SBUF tile of the operand's partitions on a quadrant,
// holding the operand's elements in the engine's groups of 16 partitions; the indexed columns
// within the memory; only dst, src0 and src1, on chip.
TEST(ValidateProgram, IndirectionIsChecked) {
    const auto with = [](indirection t, std::uint32_t elems = 16) {
        program p = valid_program();
        dve0(p).src0.elems = elems;
        dve0(p).dst.elems = elems;
        dve0(p).indirect = {t};
        return p;
    };
    operand index = chip_op(mem_space::sbuf, dtype::int32, 0, 128, 1, 4096);
    EXPECT_NO_THROW(validate_program(with({operand_slot::src0, 16, index}), limits()));
    // 16 offsets in one column of 16 partitions; 17 need a second group of them (the next 16
    // partitions' column 0), which a 16-partition index does not have
    EXPECT_NO_THROW(validate_program(with({operand_slot::src0, 16, index}, 17), limits()));
    operand small = index;
    small.partitions = 16;
    EXPECT_PRED2(contains, violation(with({operand_slot::src0, 16, small})),
                 "src0_index has 16 partitions, src0 128");
    operand floats = index;
    floats.type = dtype::float32;
    EXPECT_PRED2(contains, violation(with({operand_slot::src0, 16, floats})),
                 "an integer tile in SBUF, not float32");
    operand off_quadrant = index;
    off_quadrant.partition = 16;
    off_quadrant.partitions = 112;
    program q = with({operand_slot::src0, 16, off_quadrant});
    stream(q, engine_kind::dve)[0].src0.partitions = 112;
    stream(q, engine_kind::dve)[0].dst.partitions = 112;
    EXPECT_PRED2(contains, violation(q), "not on a quadrant boundary");
    EXPECT_PRED2(contains, violation(with({operand_slot::src0, 1u << 20, index})),
                 "src0 (its 1048576 indexed columns) ends at byte");
    EXPECT_PRED2(contains, violation(with({operand_slot::src2, 16, index})),
                 "only dst, src0 and src1 may be indirect");
    EXPECT_PRED2(contains, violation(with({operand_slot::src1, 16, index})),
                 "src1_index= without src1=");
    program twice = with({operand_slot::dst, 16, index});
    dve0(twice).indirect.push_back({operand_slot::dst, 16, index});
    EXPECT_PRED2(contains, violation(twice), "dst is indirect twice");
}

TEST(ValidateProgram, PartitionOverflowNamesLimit) {
    program p = valid_program();
    dve0(p).dst.partition = 64;  // partitions 64..191
    dve0(p).src0.partition = 64;
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "dve instruction 0");
    EXPECT_PRED2(contains, msg, "64..191");
    EXPECT_PRED2(contains, msg, "exceed");
    EXPECT_PRED2(contains, msg, "128");

    program q = valid_program();
    q.queues[0][0].dst.partitions = 129;
    q.queues[0][0].src.partitions = 129;
    const std::string dma = violation(q);
    EXPECT_PRED2(contains, dma, "q0 transfer 0");
    EXPECT_PRED2(contains, dma, "exceed");
    EXPECT_PRED2(contains, dma, "128");
}

TEST(ValidateProgram, SbufByteOverflowNamesEndAndCapacity) {
    program p = valid_program();
    const std::uint64_t row = 16 * 4;
    dve0(p).dst.offset = sbuf_bytes - row;  // ends exactly at the capacity: fine
    EXPECT_NO_THROW(validate_program(p, limits()));
    dve0(p).dst.offset = sbuf_bytes - row + 4;
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "dve instruction 0");
    EXPECT_PRED2(contains, msg, "dst");
    EXPECT_PRED2(contains, msg, std::to_string(sbuf_bytes + 4));
    EXPECT_PRED2(contains, msg, "sbuf partition of " + std::to_string(sbuf_bytes) + " bytes");
}

TEST(ValidateProgram, PsumByteOverflowUsesPsumCapacity) {
    program p = valid_program();
    dve0(p).dst = chip_op(mem_space::psum, dtype::float32, 0, 128, 16, psum_bytes - 64);
    EXPECT_NO_THROW(validate_program(p, limits()));
    dve0(p).dst.offset = psum_bytes;  // would fit in SBUF, not in PSUM
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "psum partition of " + std::to_string(psum_bytes) + " bytes");
}

TEST(ValidateProgram, HbmOverflowNamesEndByte) {
    program p = valid_program();
    p.hbm_bytes = hbm_size;  // the platform's bound, not the program's, is tested here
    const std::uint64_t stride = 4096, row = 64;
    // The last row ends at offset + 127 * stride + row.
    const std::uint64_t fits = hbm_size - 127 * stride - row;
    p.queues[0][0].src = hbm_op(dtype::float32, 128, 16, fits, stride);
    EXPECT_NO_THROW(validate_program(p, limits()));
    p.queues[0][0].src.offset = fits + 8;
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "q0 transfer 0");
    EXPECT_PRED2(contains, msg, "src");
    EXPECT_PRED2(contains, msg, "HBM byte " + std::to_string(hbm_size + 8));
    EXPECT_PRED2(contains, msg, std::to_string(hbm_size) + " bytes of HBM");
}

TEST(ValidateProgram, BoundsChecksDoNotWrapAround) {
    const std::uint64_t huge = ~std::uint64_t{0};
    program p = valid_program();
    dve0(p).dst.offset = huge;  // offset + span would wrap to a small number
    EXPECT_PRED2(contains, violation(p), "ends at byte " + std::to_string(huge));
    program q = valid_program();
    q.queues[0][0].src.row_stride = huge / 2;  // 127 rows of it wrap around
    EXPECT_PRED2(contains, violation(q), "HBM byte " + std::to_string(huge));
    program r = valid_program();
    dve0(r).dst.partition = 1;
    dve0(r).dst.partitions = ~std::uint32_t{0};  // partition + partitions would wrap to 0
    EXPECT_PRED2(contains, violation(r), "1..4294967295");
}

TEST(ValidateProgram, ProgramLevelLimits) {
    program p = valid_program();
    p.hbm_bytes = hbm_size + 1;
    const std::string hbm_msg = violation(p);
    EXPECT_PRED2(contains, hbm_msg, std::to_string(hbm_size + 1));
    EXPECT_PRED2(contains, hbm_msg, std::to_string(hbm_size));
    program q = valid_program();
    q.queues.resize(17);
    const std::string queues = violation(q);
    EXPECT_PRED2(contains, queues, "17 DMA queues");
    EXPECT_PRED2(contains, queues, "16");
}

TEST(ValidateProgram, DmaCannotReachPsum) {
    program p = valid_program();
    p.queues[0][0].dst = chip_op(mem_space::psum, dtype::float32, 0, 128, 16, 0);
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "q0 transfer 0");
    EXPECT_PRED2(contains, msg, "PSUM");
}

TEST(ValidateProgram, DmaShapesMustMatch) {
    program p = valid_program();
    p.queues[1][0].src.elems = 8;  // 32 bytes per row vs 64
    const std::string bytes = violation(p);
    EXPECT_PRED2(contains, bytes, "q1 transfer 0");
    EXPECT_PRED2(contains, bytes, "differ in rows or elements per row");
    program q = valid_program();
    q.queues[0][0].dst.partitions = 64;  // 64 rows vs 128
    EXPECT_PRED2(contains, violation(q), "differ in rows or elements per row");
    // The same rows and elements in another dtype is a cast (the DMA casts through fp32)...
    program r = valid_program();
    r.queues[0][0].dst = chip_op(mem_space::sbuf, dtype::bfloat16, 0, 128, 16, 0);
    EXPECT_NO_THROW(validate_program(r, limits()));
    // ... and the same bytes in other elements is not a copy
    r.queues[0][0].dst = chip_op(mem_space::sbuf, dtype::bfloat16, 0, 128, 32, 0);
    EXPECT_PRED2(contains, violation(r), "differ in rows or elements per row");
}

TEST(ValidateProgram, TriggerCountMustMatchTransfers) {
    program missing = valid_program();
    stream(missing, engine_kind::sp).clear();
    const std::string msg = violation(missing);
    EXPECT_PRED2(contains, msg, "q0 has 1 transfers but 0 dma_trigger");

    program extra = valid_program();
    stream(extra, engine_kind::sp).push_back(trigger(0));
    const std::string too_many = violation(extra);
    EXPECT_PRED2(contains, too_many, "sp instruction 1");
    EXPECT_PRED2(contains, too_many, "q0");
    EXPECT_PRED2(contains, too_many, "no transfer left");

    program beyond = valid_program();
    stream(beyond, engine_kind::sp).push_back(trigger(5));
    EXPECT_PRED2(contains, violation(beyond), "triggers q5");
}

TEST(ValidateProgram, WaitNeverReachedIsDeadlock) {
    program p = valid_program();
    dve0(p).waits.push_back({semaphore_of_engine(engine_kind::act), 2});
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "dve instruction 0");
    EXPECT_PRED2(contains, msg, "deadlock");
    EXPECT_PRED2(contains, msg, "act>=2");
    EXPECT_PRED2(contains, msg, "act only ever reaches 1");

    program q = valid_program();
    dve0(q).waits = {{semaphore_of_queue(0), 2}};  // q0 has one transfer
    const std::string queue = violation(q);
    EXPECT_PRED2(contains, queue, "deadlock");
    EXPECT_PRED2(contains, queue, "q0>=2");

    // Waiting for exactly the final count is fine.
    program r = valid_program();
    dve0(r).waits.push_back({semaphore_of_engine(engine_kind::act), 1});
    EXPECT_NO_THROW(validate_program(r, limits()));
}

TEST(ValidateProgram, UnknownSemaphoreNamed) {
    program p = valid_program();
    dve0(p).waits.push_back({semaphore_of_queue(5), 1});  // only q0, q1 exist
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "unknown semaphore q5");
}

TEST(ValidateProgram, EnginesCannotTouchHbm) {
    program p = valid_program();
    dve0(p).src0 = hbm_op(dtype::float32, 128, 16, 0, 64);
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "dve instruction 0 (tensor_scalar)");
    EXPECT_PRED2(contains, msg, "HBM");
    program q = valid_program();
    dve0(q).dst = hbm_op(dtype::float32, 128, 16, 0, 64);
    EXPECT_PRED2(contains, violation(q), "engines cannot access HBM");
}

TEST(ValidateProgram, EngineOperandShapes) {
    program p = valid_program();
    dve0(p).src0.elems = 8;
    EXPECT_PRED2(contains, violation(p), "src0 and dst shapes differ");

    program reduce = valid_program();  // a reduction writes one element per partition
    dve0(reduce).op = opcode::tensor_reduce;
    dve0(reduce).alu = alu_op::add;
    dve0(reduce).dst.elems = 1;
    EXPECT_NO_THROW(validate_program(reduce, limits()));

    program tt = valid_program();
    dve0(tt).op = opcode::tensor_tensor;
    dve0(tt).alu = alu_op::add;
    dve0(tt).src1 = sbuf(64, 16, 2048);
    EXPECT_PRED2(contains, violation(tt), "src1 and dst");
    dve0(tt).src0 = chip_op(mem_space::psum, dtype::float32, 0, 128, 16, 0);
    dve0(tt).src1 = chip_op(mem_space::psum, dtype::float32, 0, 128, 16, 64);
    EXPECT_PRED2(contains, violation(tt), "both inputs in PSUM");

    program empty = valid_program();
    dve0(empty).dst = operand{};
    EXPECT_PRED2(contains, violation(empty), "operand dst is empty");
}

hbm_region input_region(dtype t, float lo, float hi, std::uint32_t seed) {
    hbm_region r;
    r.name = "x";
    r.type = t;
    r.bytes = 4096 * dtype_size(t);
    r.input = true;
    r.lo = lo;
    r.hi = hi;
    r.seed = seed;
    return r;
}

std::vector<float> values(const hbm_region& r, const std::vector<std::uint8_t>& bytes) {
    std::vector<float> out;
    for (std::size_t i = 0; i + dtype_size(r.type) <= bytes.size(); i += dtype_size(r.type))
        out.push_back(load_element(&bytes[i], r.type));
    return out;
}

TEST(RegionInitialBytes, DeterministicPerSeed) {
    const hbm_region r = input_region(dtype::float32, -1.0f, 3.0f, 7);
    const auto a = region_initial_bytes(r), b = region_initial_bytes(r);
    ASSERT_EQ(a.size(), r.bytes);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, region_initial_bytes(input_region(dtype::float32, -1.0f, 3.0f, 8)));
}

TEST(RegionInitialBytes, UniformWithinLoHi) {
    const float lo = -1.0f, hi = 3.0f;
    const hbm_region r = input_region(dtype::float32, lo, hi, 7);
    const auto v = values(r, region_initial_bytes(r));
    ASSERT_EQ(v.size(), 4096u);
    double sum = 0;
    for (float x : v) {
        ASSERT_GE(x, lo);
        ASSERT_LT(x, hi);
        sum += x;
    }
    // A fixed-seed sample of 4096: it spans the range and its mean is near the middle.
    EXPECT_LT(*std::min_element(v.begin(), v.end()), lo + 0.01f * (hi - lo));
    EXPECT_GT(*std::max_element(v.begin(), v.end()), hi - 0.01f * (hi - lo));
    EXPECT_NEAR(sum / v.size(), (lo + hi) / 2, 0.05 * (hi - lo));
}

TEST(RegionInitialBytes, NarrowTypesStayInRange) {
    // Rounding to a 2-byte type may reach hi itself, never beyond [lo, hi].
    for (dtype t : {dtype::bfloat16, dtype::float16}) {
        const hbm_region r = input_region(t, 0.0f, 1.0f, 3);
        const auto v = values(r, region_initial_bytes(r));
        ASSERT_EQ(v.size(), 4096u);
        for (float x : v) {
            ASSERT_GE(x, 0.0f) << dtype_name(t);
            ASSERT_LE(x, 1.0f) << dtype_name(t);
        }
        EXPECT_GT(*std::max_element(v.begin(), v.end()), 0.9f);
    }
}

TEST(ValidateProgram, AccessesAndRegionsStayInsideTheDeclaredHbm) {
    program p = valid_program();
    const std::uint64_t declared = p.hbm_bytes;
    p.queues[0][0].src = hbm_op(dtype::float32, 128, 16, declared - 64, 0);
    EXPECT_NO_THROW(validate_program(p, limits()));
    p.queues[0][0].src.offset = declared - 60;
    const std::string msg = violation(p);
    EXPECT_PRED2(contains, msg, "q0 transfer 0");
    EXPECT_PRED2(contains, msg, "declared hbm_bytes " + std::to_string(declared));
    program r = valid_program();
    r.regions.push_back({"late", declared - 8, 16, dtype::float32});
    EXPECT_PRED2(contains, violation(r), "region 'late' ends at HBM byte");
}

}  // namespace

namespace {

TEST(ValidateProgram, TopkOperandsAreChecked) {
    auto topk = [](std::uint32_t partitions, std::uint32_t cols, float n, float k) {
        instruction t;
        t.op = opcode::topk;
        t.dst = chip_op(mem_space::sbuf, dtype::bfloat16, 0, partitions, cols, 8192);
        t.dst1 = chip_op(mem_space::sbuf, dtype::uint32, 0, partitions, cols, 9000);
        t.src0 = chip_op(mem_space::sbuf, dtype::bfloat16, 0, partitions, 8, 0);
        t.imm = n;
        t.imm1 = k;
        return t;
    };
    program ok = valid_program();
    stream(ok, engine_kind::pool).push_back(topk(32, 2, 128, 20));
    EXPECT_NO_THROW(validate_program(ok, limits()));
    for (const auto& [bad, why] :
         {std::pair<instruction, std::string>{topk(32, 2, 7, 5), "8 <= imm (n) < 65536"},
          {topk(32, 2, 128, 200), "(k) <= n"},
          {topk(32, 1, 128, 20), "ceil(k / 16) = 2 columns"},
          {topk(24, 2, 128, 20), "a multiple of 16"},
          {topk(32, 2, 129, 20), "src0 at least ceil(n / 16)"}}) {
        program p = valid_program();
        stream(p, engine_kind::pool).push_back(bad);
        EXPECT_PRED2(contains, violation(p), why);
    }
    program f = valid_program();
    instruction t = topk(32, 2, 128, 20);
    t.dst1.type = dtype::int32;
    stream(f, engine_kind::pool).push_back(t);
    EXPECT_PRED2(contains, violation(f), "uint32 dst1");
}

TEST(ValidateProgram, TraceFormatThreeOperandsAreChecked) {
    const operand tile = chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 0);
    const operand col = chip_op(mem_space::sbuf, dtype::float32, 0, 128, 1, 4096);
    program p = valid_program();
    instruction window;
    window.op = opcode::range_select;
    window.alu = alu_op::is_ge;
    window.alu1 = alu_op::is_lt;
    window.dst = chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 8192);
    window.src0 = tile;
    window.src1 = col;  // no src2: a bound missing
    stream(p, engine_kind::dve).push_back(window);
    EXPECT_PRED2(contains, violation(p), "range_select needs src1 and src2");
    program q = valid_program();
    instruction ts;
    ts.op = opcode::tensor_scalar;
    ts.alu = alu_op::add;
    ts.dst = window.dst;
    ts.src0 = tile;
    ts.src2 = tile;  // a second scalar must be [P, 1]
    stream(q, engine_kind::dve).push_back(ts);
    EXPECT_PRED2(contains, violation(q), "src2 must be [P, 1]");
    program r = valid_program();
    ts.src2 = {};
    ts.dst1 = col;  // a second output only on the reducing opcodes
    stream(r, engine_kind::dve).push_back(ts);
    EXPECT_PRED2(contains, violation(r), "dst1 (a reduction) is given only with");
}

}  // namespace

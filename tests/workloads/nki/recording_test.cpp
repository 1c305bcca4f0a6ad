// trn::parse_recording and trn::expand_recording: the text form read strictly (a mistake names
// its line), loops expanded into exactly the builder calls of the unrolled kernel, the first
// iteration's operations and accumulation flags, instances counted back, phases.
#include "workloads/nki/recording.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace {

using namespace trn;

builder_options options(kernel_style style) {
    builder_options o;
    o.style = style;
    o.limits.partitions = 128;
    o.limits.sbuf_partition_bytes = 196608;
    o.limits.psum_partition_bytes = 16384;
    o.limits.hbm_bytes = 1ull << 30;
    o.limits.dma_queues = 16;
    return o;
}

nki_recording parse(const std::string& text) {
    std::istringstream in("trnsim-nki-recording 1\n" + text);
    return parse_recording(in);
}

program expand(const std::string& text) {
    const nki_recording r = parse(text);
    kernel_builder kb(options(r.style));
    return expand_recording(r, kb);
}

std::string parse_error(const std::string& text) {
    try {
        parse(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

const char* const vector_add = R"(style nl
tensor input float32 32768 a
tensor input float32 32768 b
tensor output float32 32768 out
decl sbuf 128 64 float32 1 0 0 4 - - x
decl sbuf 128 64 float32 1 0 0 4 - - y
loop L0 4
declare 0
declare 1
load T0.0.0:0:128:0:64:1 H0:8192*L0:128:64:64
load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64
ins dve tensor_tensor dst=T0.0.0:0:128:0:64:1 src0=T0.0.0:0:128:0:64:1 src1=T1.0.0:0:128:0:64:1 alu=add
store H2:8192*L0:128:64:64 T0.0.0:0:128:0:64:1
end L0
)";

TEST(Recording, ALoopExpandsIntoTheUnrolledBuilderCalls) {
    const program p = expand(vector_add);
    // the same kernel written unrolled against the builder
    kernel_builder kb(options(kernel_style::nl));
    const auto a = kb.input("a", 32768, dtype::float32, 0, 1, 0);
    const auto b = kb.input("b", 32768, dtype::float32, 0, 1, 0);
    const auto out = kb.output("out", 32768, dtype::float32);
    const auto bufs = kb.plan_buffers(
        {{mem_space::sbuf, 256, 1, false, {4}}, {mem_space::sbuf, 256, 1, false, {4}}});
    const auto x = kb.declare_tile("x", mem_space::sbuf, 128, 64, dtype::float32, bufs[0]);
    const auto y = kb.declare_tile("y", mem_space::sbuf, 128, 64, dtype::float32, bufs[1]);
    for (std::uint64_t i = 0; i < 4; ++i) {
        const tile tx = kb.next(x), ty = kb.next(y);
        kb.load(tx, a, kb.view(a, 8192 * i, 128, 64, 64));
        kb.load(ty, b, kb.view(b, 8192 * i, 128, 64, 64));
        kb.tensor_tensor(tx, tx, ty, alu_op::add);
        kb.store(out, kb.view(out, 8192 * i, 128, 64, 64), tx);
    }
    EXPECT_EQ(p, kb.finish());
    EXPECT_EQ(p.transfer_count(), 12u);
}

TEST(Recording, FirstIterationOnlyAndAccumulation) {
    // A matmul that overwrites in the first iteration of L1 and adds in the others, and a
    // memset that runs in the first iteration of L0 only.
    const program p = expand(R"(style isa
tensor input bfloat16 65536 a
decl sbuf 128 128 bfloat16 1 0 1 - - - s
decl psum 128 128 float32 1 0 1 - - - acc
declare 0
declare 1
loop L0 3
ins if=L0 dve memset dst=T1.0.0:0:128:0:128:1
loop L1 2
load T0.0.0:0:128:0:128:1 H0:16384*L1:128:128:128
matmul T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 !L1
end L1
end L0
)");
    const auto& pe = p.engines[std::size_t(engine_kind::pe)];
    ASSERT_EQ(pe.size(), 6u);
    for (std::size_t i = 0; i < pe.size(); ++i)
        EXPECT_EQ((pe[i].flags & flag::accumulate) != 0, i % 2 == 1) << i;
    EXPECT_EQ(p.engines[std::size_t(engine_kind::dve)].size(), 1u);
}

TEST(Recording, AnOperationRunsInTheIterationsOfItsSpan) {
    // A loop of 3 whose last iteration a mask cuts to 64 partitions: iterations 0 and 1 load
    // and store whole tiles (`if=L0@0:2`), iteration 2 the cut ones (`if=L0@2:3`).
    const program p = expand(R"(style nl
tensor input float32 40960 a
tensor output float32 40960 out
decl sbuf 128 128 float32 1 0 0 3 - - t
loop L0 3
declare 0
load if=L0@0:2 T0.0.0:0:128:0:128:1 H0:16384*L0:128:128:128
store if=L0@0:2 H1:16384*L0:128:128:128 T0.0.0:0:128:0:128:1
load if=L0@2:3 T0.0.0:0:64:0:128:1 H0:16384*L0:64:128:128
store if=L0@2:3 H1:16384*L0:64:128:128 T0.0.0:0:64:0:128:1
end L0
)");
    EXPECT_EQ(p.transfer_count(), 6u);
    std::uint64_t bytes = 0;
    for (const auto& q : p.queues)
        for (const auto& t : q)
            bytes += t.src.bytes();
    EXPECT_EQ(bytes, 2u * (2 * 128 + 64) * 128 * 4);
    const std::string decl = "style nl\ndecl sbuf 128 64 float32 1 0 0 - - - t\n";
    EXPECT_NE(parse_error(decl + "loop L0 3\nend L0\n"
                                 "ins if=L0@0:2 dve memset dst=T0.0.0:0:128:0:64:1\n")
                  .find("not a loop around the operation"),
              std::string::npos);
    // (a plain condition too names a loop around the operation, and a loop id fits 32 bits)
    const std::pair<const char*, const char*> bad[] = {
        {"L0@2:2", "empty span 'L0@2:2'"},
        {"L0@2", "bad condition 'L0@2'"},
        {"L5000000000", "bad loop 'L5000000000'"},
        {"L7", "a condition on L7, not a loop around the operation"},
        {"", "an empty if="},
    };
    for (const auto& [condition, message] : bad)
        EXPECT_NE(parse_error(decl + "loop L0 3\nins if=" + condition +
                              " dve memset dst=T0.0.0:0:128:0:64:1\nend L0\n")
                      .find(message),
                  std::string::npos)
            << condition;
}

TEST(Recording, BlocksRotateOverTheCopiesOfALoopInEachPart) {
    // NKIBench's transpose_matmul, smaller: a PSUM tensor of 176 blocks of one bank, 16 blocks
    // (32 KiB, PSUM has 16) used in each iteration of L2, whose last iteration is a part of its
    // own holding its own copy of the loop L4 (its L5 unrolled). The blocks rotate over L4 in
    // both copies, two banks at a time; counted apart, L2 alone would be around every use.
    const program p = expand(R"(style nl
tensor input float32 8388608 v1
tensor input float32 22413312 v2
tensor output float32 44826624 out
decl sbuf 128 1024 float32 2 1 1 - - - lhs
decl sbuf 128 1024 float32 22 1 1 - - - rhs
decl psum 128 512 float32 176 1 1 - - - acc
decl sbuf 128 1024 float32 88 1 1 - - - res
declare 0
declare 1
declare 2
declare 3
loop L1 2
load T0.0.1*L1:0:128:0:1024:1 H0:4096*L1:128:1024:65536
end L1
loop L2 11
loop L3 2
load if=L2@0:10 T1.0.2*L2+1*L3:0:128:0:1024:1 H1:1024*L2+10944*L3:128:1024:175104
end L3
loop L4 8
loop L5 2
loop L6 2
matmul if=L2@0:10 T2.0.16*L2+2*L4+1*L5:0:128:0:512:1 T0.0.1*L6:0:128:128*L4:128:1 T1.0.2*L2+1*L6:0:128:512*L5:512:1 !L6
end L6
copy if=L2@0:10 T3.0.1*L2+11*L4:0:128:512*L5:512:1 T2.0.16*L2+2*L4+1*L5:0:128:0:512:1
end L5
store if=L2@0:10 H2:1024*L2+1400832*L4:128:1024:10944 T3.0.1*L2+11*L4:0:128:0:1024:1
end L4
loop L3 2
load if=L2@10:11 T1.0.2*L2+1*L3:0:128:0:704:1 H1:10944*L3+10240:128:704:175104
end L3
loop L4 8
iteration 2
loop L6 2
matmul if=L2@10:11 T2.0.16*L2+2*L4:0:128:0:512:1 T0.0.1*L6:0:128:128*L4:128:1 T1.0.2*L2+1*L6:0:128:0:512:1 !L6
end L6
copy if=L2@10:11 T3.0.1*L2+11*L4:0:128:0:512:1 T2.0.16*L2+2*L4:0:128:0:512:1
iteration 2
loop L6 2
matmul if=L2@10:11 T2.0.16*L2+2*L4+1:0:128:0:192:1 T0.0.1*L6:0:128:128*L4:128:1 T1.0.2*L2+1*L6:0:128:512:192:1 !L6
end L6
copy if=L2@10:11 T3.0.1*L2+11*L4:0:128:512:192:1 T2.0.16*L2+2*L4+1:0:128:0:192:1
iteration 2
store if=L2@10:11 H2:1400832*L4+10240:128:704:10944 T3.0.1*L2+11*L4:0:128:0:704:1
end L4
end L2
)");
    EXPECT_EQ(p.engines[std::size_t(engine_kind::pe)].size(), 2u * 8 * 2 * 11);
}

TEST(Recording, DoubleRowMatmulsCarryTheirFlag) {
    const char* const text = R"(style isa
tensor input float8_e4m3 16384 a
decl sbuf 128 128 float8_e4m3 1 0 1 - - - s
decl psum 128 128 float32 1 0 1 - - - acc
declare 0
declare 1
load T0.0.0:0:128:0:128:1 H0:0:128:128:128
matmul T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 0 double_row
matmul T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 1
)";
    const program p = expand(text);
    const auto& pe = p.engines[std::size_t(engine_kind::pe)];
    ASSERT_EQ(pe.size(), 2u);
    EXPECT_NE(pe[0].flags & flag::double_row, 0);
    EXPECT_EQ(pe[1].flags & flag::double_row, 0);
    EXPECT_NE(parse_error(
                  std::string(text).replace(std::string(text).find("0 double_row"), 12, "0 bogus"))
                  .find("expected 4 operands"),
              std::string::npos);
}

// A matmul's last words stationary_onezero / moving_onezero (nc_matmul's declarations of ones
// and zeros), after its accumulation or double_row, and a transpose's moving_onezero (its
// identity) reach the instructions' flags; a transpose has no stationary to declare.
TEST(Recording, OnesAndZerosDeclarationsReachTheFlags) {
    const char* const text = R"(style isa
tensor input float32 16384 a
decl sbuf 128 128 float32 1 0 1 - - - s
decl psum 128 128 float32 1 0 1 - - - acc
declare 0
declare 1
load T0.0.0:0:128:0:128:1 H0:0:128:128:128
matmul T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 0 stationary_onezero
matmul T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 1 stationary_onezero moving_onezero
transpose T1.0.0:0:128:0:128:1 T0.0.0:0:128:0:128:1 moving_onezero
)";
    const program p = expand(text);
    const auto& pe = p.engines[std::size_t(engine_kind::pe)];
    ASSERT_EQ(pe.size(), 3u);
    EXPECT_EQ(pe[0].flags, flag::stationary_onezero);
    EXPECT_EQ(pe[1].flags, flag::accumulate | flag::stationary_onezero | flag::moving_onezero);
    EXPECT_EQ(pe[2].flags, flag::moving_onezero);
    const std::string t(text);
    EXPECT_NE(parse_error(t.substr(0, t.rfind("moving_onezero")) + "stationary_onezero\n")
                  .find("a transpose declares only its identity"),
              std::string::npos);
}

// A load's or store's optional last word priority=N (nisa.dma_copy's priority=) reaches its
// transfer; without it the transfer is of level 0.
TEST(Recording, DmaPrioritiesReachTheirTransfers) {
    std::string text = vector_add;
    const auto at = [&](const std::string& what) { return text.find(what) + what.size(); };
    text.insert(at("load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64"), " priority=2");
    text.insert(at("store H2:8192*L0:128:64:64 T0.0.0:0:128:0:64:1"), " priority=3");
    const program p = expand(text);
    ASSERT_EQ(p.queues.size(), 3u);
    for (const dma_transfer& t : p.queues[0])
        EXPECT_EQ(t.priority, 0);
    for (const dma_transfer& t : p.queues[1])
        EXPECT_EQ(t.priority, 2);
    for (const dma_transfer& t : p.queues[2])
        EXPECT_EQ(t.priority, 3);
    text = vector_add;
    text.insert(at("load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64"), " priority=x");
    EXPECT_NE(parse_error(text).find("line 12"), std::string::npos) << parse_error(text);
}

// A DMA's part=N reaches its transfer (its runs spread over the engines), an instruction's cont
// its flag; a part outside 1..255 is an error naming the line.
TEST(Recording, PartsAndContinuationsReachTheProgram) {
    std::string text = vector_add;
    const auto at = [&](const std::string& what) { return text.find(what) + what.size(); };
    text.insert(at("load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64"), " part=3");
    text.insert(at("alu=add"), " cont");
    const program p = expand(text);
    for (const dma_transfer& t : p.queues[1])
        EXPECT_EQ(t.part, 3);
    for (const dma_transfer& t : p.queues[0])
        EXPECT_EQ(t.part, 0);
    for (const auto& ins : p.engines[std::size_t(engine_kind::dve)])
        EXPECT_NE(ins.flags & flag::continues, 0);
    text = vector_add;
    text.insert(at("load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64"), " part=300");
    EXPECT_NE(parse_error(text).find("bad DMA part 'part=300' (1 to 255)"), std::string::npos)
        << parse_error(text);
}

// An indirect load: triggered from the GpSimd engine (software DGE) once the indices are
// written (the Vector engine's instruction that made them), timed on the rows its H gives.
TEST(Recording, AGatherWaitsForItsIndicesOnTheGpSimdEngine) {
    const program p = expand(R"(style nl
tensor input float32 65536 table
tensor output float32 8192 out
decl sbuf 128 1 int32 1 0 0 - - - idx
decl sbuf 128 64 float32 1 0 0 - - - rows
declare 0
ins dve memset dst=T0.0.0:0:128:0:1:1 imm=3.0
declare 1
gather T1.0.0:0:128:0:64:1 H0:0:128:64:64 T0.0.0:0:128:0:1:1
store H1:0:128:64:64 T1.0.0:0:128:0:64:1
)");
    const auto& pool = p.engines[std::size_t(engine_kind::pool)];
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_EQ(pool[0].op, opcode::dma_trigger);
    ASSERT_FALSE(pool[0].waits.empty());
    EXPECT_EQ(pool[0].waits[0].sem, semaphore_of_engine(engine_kind::dve));
    EXPECT_EQ(p.queues[0].front().src.row_stride, 64u * 4);
    EXPECT_NE(parse_error("tensor input float32 64 t\ndecl sbuf 128 1 int32 1 0 0 - - - i\n"
                          "gather T0.0.0:0:128:0:1:1 H0:0:128:1:1\n")
                  .find("line 4"),
              std::string::npos);
}

// A load and a store at a run-time offset (NkiTensor.ap's scalar_offset) wait for the offset's
// tile to be written, on the engines that trigger plain DMAs; a DMA between two SBUF tiles is a
// transfer of its own from the Sync engine.
TEST(Recording, ADmaAtARunTimeOffsetWaitsForTheOffset) {
    const program p = expand(R"(style nl
tensor input float32 65536 table
tensor output float32 65536 out
decl sbuf 1 1 int32 1 0 0 - - - at
decl sbuf 128 64 float32 1 0 0 - - - rows
decl sbuf 128 64 float32 1 0 0 - - - copy
declare 0
ins dve memset dst=T0.0.0:0:1:0:1:1 imm=3.0
declare 1
load_at T1.0.0:0:128:0:64:1 H0:0:128:64:64 T0.0.0:0:1:0:1:1
declare 2
dma T2.0.0:0:128:0:64:1 T1.0.0:0:128:0:64:1
store_at H1:0:128:64:64 T2.0.0:0:128:0:64:1 T0.0.0:0:1:0:1:1
)");
    const auto& sp = p.engines[std::size_t(engine_kind::sp)];
    const auto& act = p.engines[std::size_t(engine_kind::act)];
    ASSERT_EQ(sp.size(), 2u);   // the load's trigger, the SBUF-to-SBUF DMA's
    ASSERT_EQ(act.size(), 1u);  // the store's
    for (const auto* ins : {&sp[0], &act[0]}) {
        EXPECT_EQ(ins->op, opcode::dma_trigger);
        bool waits_for_offset = false;
        for (const auto& w : ins->waits)
            waits_for_offset |= w.sem == semaphore_of_engine(engine_kind::dve);
        EXPECT_TRUE(waits_for_offset);
    }
    std::size_t transfers = 0;
    for (const auto& q : p.queues)
        transfers += q.size();
    EXPECT_EQ(transfers, 3u);
}

// A load marked `bits` moves a tensor's bytes into a tile of another dtype (NkiTensor.view):
// its transfer is the tile's dtype and elements over the same bytes; rows of other sizes are
// an error.
TEST(Recording, ABitsLoadMovesTheBytesAsTheTilesDtype) {
    const std::string text = R"(style nl
tensor input uint8 8192 halves
decl sbuf 128 32 float4_e2m1fn_x4 1 0 0 - - - packed
declare 0
load T0.0.0:0:128:0:32:1 H0:0:128:64:64 bits
)";
    const program p = expand(text);
    ASSERT_EQ(p.queues.size(), 1u);
    const dma_transfer& t = p.queues[0].front();
    EXPECT_EQ(t.src.type, dtype::fp4_e2m1fn_x4);
    EXPECT_EQ(t.src.elems, 32u);
    EXPECT_EQ(t.src.row_bytes(), 64u);
    std::string bad = text;
    bad.replace(bad.find("H0:0:128:64:64"), 14, "H0:0:128:48:64");
    EXPECT_THROW(expand(bad), std::runtime_error);
}

// A load marked `transpose` is one DMA transpose: the tile's partitions are the access's
// elements and its elements the access's rows; other shapes are an error.
TEST(Recording, ATransposeLoadIsOneDmaTranspose) {
    const std::string text = R"(style nl
tensor input float32 8192 x
decl sbuf 128 64 float32 1 0 0 - - - transposed
declare 0
load T0.0.0:0:128:0:64:1 H0:0:64:128:128 transpose
)";
    const program p = expand(text);
    ASSERT_EQ(p.queues.size(), 1u);
    ASSERT_EQ(p.queues[0].size(), 1u);
    const dma_transfer& t = p.queues[0].front();
    EXPECT_TRUE(t.transpose);
    EXPECT_EQ(t.dst.partitions, 128u);
    EXPECT_EQ(t.dst.elems, 64u);
    EXPECT_EQ(t.src.partitions, 64u);
    EXPECT_EQ(t.src.elems, 128u);
    std::string bad = text;
    bad.replace(bad.find("H0:0:64:128:128"), 15, "H0:0:64:96:128");
    EXPECT_THROW(expand(bad), std::runtime_error);
}

// A core_barrier over a tile (tile_barrier) waits for the tile's writer and holds back its next
// access; the keyword says which operand it takes.
TEST(Recording, ATileBarrierOrdersTheTilesAccesses) {
    const std::string text = R"(style isa
tensor output float32 64 out
decl sbuf 1 64 float32 1 0 0 - - - t
declare 0
ins dve memset dst=T0.0.0:0:1:0:64:1 imm=1.0
tile_barrier pool T0.0.0:0:1:0:64:1
store H0:0:1:64:64 T0.0.0:0:1:0:64:1
)";
    const program p = expand(text);
    const auto& pool = p.engines[static_cast<std::size_t>(engine_kind::pool)];
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_EQ(pool[0].op, opcode::core_barrier);
    ASSERT_EQ(pool[0].waits.size(), 1u);  // after the memset on the Vector engine
    EXPECT_EQ(pool[0].waits[0].sem, semaphore_of_engine(engine_kind::dve));
    bool store_waits_for_the_barrier = false;
    for (const auto& stream : p.engines)
        for (const auto& ins : stream)
            if (ins.op == opcode::dma_trigger)
                for (const auto& w : ins.waits)
                    store_waits_for_the_barrier = store_waits_for_the_barrier ||
                                                  w.sem == semaphore_of_engine(engine_kind::pool);
    EXPECT_TRUE(store_waits_for_the_barrier);
    EXPECT_NE(parse_error("style nl\ndecl sbuf 1 64 float32 1 0 0 - - - t\n"
                          "barrier pool T0.0.0:0:1:0:64:1\n")
                  .find("barrier meets over an HBM access"),
              std::string::npos);
    EXPECT_NE(parse_error("style nl\ntensor input float32 64 a\ntile_barrier pool H0:0:1:64:64\n")
                  .find("tile_barrier meets over a tile"),
              std::string::npos);
}

// With DMA levels (trn3's 4), a tensor's DMAs of a level above 0 go to a queue of their own,
// the highest free one below the last (sendrecv's): none that a tensor's level-0 DMAs use.
TEST(Recording, ATensorsDmasOfEachLevelGoToAQueueOfTheirOwn) {
    std::string text = vector_add;
    const std::string second = "load T1.0.0:0:128:0:64:1 H1:8192*L0:128:64:64";
    text.insert(text.find(second) + second.size(),
                "\n" + second +
                    " priority=2\nload T1.0.0:0:128:0:64:1 H0:8192*L0:128:64:64 "
                    "priority=1\n" +
                    second + " priority=2");
    const nki_recording r = parse(text);
    builder_options o = options(r.style);
    o.limits.dma_priority_levels = 4;
    kernel_builder kb(o);
    const program p = expand_recording(r, kb);
    ASSERT_EQ(p.queues.size(), 15u);
    EXPECT_EQ(p.queues[0].size(), 4u);   // tensor 0's level-0 loads
    EXPECT_EQ(p.queues[1].size(), 4u);   // tensor 1's
    EXPECT_EQ(p.queues[14].size(), 8u);  // tensor 1's level-2 loads, the first level above 0
    EXPECT_EQ(p.queues[13].size(), 4u);  // tensor 0's level-1 loads
    for (const dma_transfer& t : p.queues[14])
        EXPECT_EQ(t.priority, 2);
    for (const dma_transfer& t : p.queues[13])
        EXPECT_EQ(t.priority, 1);
}

TEST(Recording, InstancesCountedBack) {
    // `back` 1: the instance before the latest, in its own buffer (2 buffers rotate).
    const nki_recording r = parse(R"(style nl
tensor input float32 65536 a
decl sbuf 128 64 float32 1 0 0 8 - - t
loop L0 4
declare 0
load T0.0.0:0:128:0:64:1 H0:64*L0:128:64:512
ins dve tensor_copy dst=T0.0.0:0:128:0:64:1 src0=T0.1.0:0:128:0:64:1
end L0
)");
    // the first iteration has no instance before the latest
    kernel_builder kb(options(r.style));
    try {
        expand_recording(r, kb);
        FAIL() << "expected an error";
    } catch (const nki_op_error& e) {
        EXPECT_EQ(e.op(), 3u);  // the tensor_copy
        EXPECT_NE(std::string(e.what()).find("does not exist yet"), std::string::npos);
    }
}

TEST(Recording, BuilderErrorsNameTheOperation) {
    const nki_recording r = parse(R"(style nl
decl sbuf 128 60000 float32 1 0 1 - - - big
declare 0
)");
    kernel_builder kb(options(r.style));
    try {
        expand_recording(r, kb);
        FAIL() << "expected an error";
    } catch (const nki_op_error& e) {
        EXPECT_EQ(e.op(), 0u);
        EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
    }
}

TEST(Recording, PhasesFreeTheMemoryOfDeadDeclarations) {
    // Two steps whose tiles never live together: 2 x 120000 bytes fit one after the other.
    const program p = expand(R"(style isa
tensor input float32 30720000 a
decl sbuf 128 30000 float32 1 0 1 - - - first
decl sbuf 128 30000 float32 1 0 1 - - - second
declare 0
load T0.0.0:0:128:0:30000:1 H0:0:128:30000:30000
declare 1
load T1.0.0:0:128:0:30000:1 H0:0:128:30000:30000
)");
    EXPECT_EQ(p.transfer_count(), 2u);
}

TEST(Recording, MistakesNameTheirLine) {
    EXPECT_NE(parse_error("style nl\nfrobnicate T0\n")
                  .find("recording line 3: unknown "
                        "operation 'frobnicate'"),
              std::string::npos);
    EXPECT_NE(parse_error("style nl\nloop L0 2\nend L1\n").find("line 4"), std::string::npos);
    EXPECT_NE(parse_error("style nl\ndecl sbuf 128 64 float32 1 0 0 - - - t\n"
                          "load T3.0.0:0:128:0:64:1 H0:0:128:64:64\n")
                  .find("undeclared"),
              std::string::npos);
    EXPECT_NE(parse_error("style nl\ndecl sbuf 128 64 float32 1 0 0 - - - t\n"
                          "ins dve memset dst=T0.0.0:0:128:0:64:1 imm=x\n")
                  .find("bad number 'x'"),
              std::string::npos);
    EXPECT_NE(parse_error("style nl\nloop L0 2\n").find("not closed"), std::string::npos);
    std::istringstream empty("");
    EXPECT_THROW(parse_recording(empty), std::invalid_argument);
}

TEST(Recording, AffineExpressions) {
    const nki_recording r = parse(R"(style nl
tensor input float32 1000000 a
decl sbuf 128 8 float32 1 0 0 - - - t
loop L0 3
loop L1 5
declare 0
load T0.0.0:0:128:0:8:1 H0:-1*L1+1000*L0+7:128:8:100
end L1
end L0
)");
    const nki_affine& a = r.ops[3].hbm.first;
    EXPECT_EQ(a.at({2, 4}), 2003);
    EXPECT_EQ(a.at({0, 0}), 7);
}

}  // namespace

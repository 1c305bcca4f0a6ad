// The text trace format: read_trace(write_trace(p)) == p, and every malformed line is a
// user_error "<name>:<line>: ...".
#include "program/trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include "platforms/neuron_core.h"
#include "program/race_check.h"
#include "support/expect_error.h"
#include "support/operands.h"
#include "support/platform_config.h"
#include "workloads/registry.h"

namespace {

using trn::testing::make_instruction;
using trn::testing::trigger;

using namespace trn;
using trn::testing::contains;
using trn::testing::starts_with;
using trn::testing::user_error_of;

operand op(mem_space s, std::uint32_t p0, std::uint32_t p1, std::uint64_t offset,
           std::uint32_t elems, dtype t, std::uint64_t stride = 0) {
    operand o;
    o.space = s;
    o.partition = p0;
    o.partitions = p1 - p0;
    o.offset = offset;
    o.elems = elems;
    o.type = t;
    o.row_stride = stride;
    return o;
}

sem_wait on(engine_kind e, std::uint32_t v) {
    return {semaphore_of_engine(e), v};
}
sem_wait on_q(std::size_t q, std::uint32_t v) {
    return {semaphore_of_queue(q), v};
}

// Every opcode, every ALU op, every memory and dtype, several queues, input and output regions,
// 64-bit HBM offsets, fractional immediates and multi-semaphore waits.
program rich_program() {
    constexpr mem_space hbm = mem_space::hbm, sbuf = mem_space::sbuf, psum = mem_space::psum;
    program p;
    p.hbm_bytes = 1ull << 34;
    p.regions.push_back({"a", 0, 8192, dtype::bfloat16, true, -0.5f, 2.5f, 42});
    p.regions.push_back({"b_tensor", 8192, 4096, dtype::fp8_e4m3, true, 0.1f, 0.3f, 0});
    p.regions.push_back({"out", 1ull << 33, 65536, dtype::float32, false, 0, 1, 0});
    p.queues.resize(3);
    p.queues[0].push_back(
        {op(sbuf, 0, 128, 0, 32, dtype::bfloat16), op(hbm, 0, 128, 0, 32, dtype::bfloat16, 64)});
    p.queues[0].push_back({op(sbuf, 32, 96, 4096, 16, dtype::bfloat16),
                           op(hbm, 0, 64, 4096, 16, dtype::bfloat16, 4096)});
    p.queues[1].push_back({op(sbuf, 0, 128, 512, 32, dtype::fp8_e4m3),
                           op(hbm, 0, 128, 8192, 32, dtype::fp8_e4m3, 32)});
    p.queues[1].push_back({op(sbuf, 0, 128, 0, 32, dtype::bfloat16),
                           op(hbm, 0, 128, 0, 32, dtype::bfloat16, 64), alu_op::add, 2});
    p.queues[2].push_back({op(hbm, 0, 128, 1ull << 33, 16, dtype::float32, 512),
                           op(sbuf, 0, 128, 1024, 16, dtype::float32)});
    auto& pe = p.engines[std::size_t(engine_kind::pe)];
    auto& dve = p.engines[std::size_t(engine_kind::dve)];
    auto& act = p.engines[std::size_t(engine_kind::act)];
    auto& pool = p.engines[std::size_t(engine_kind::pool)];
    auto& sp = p.engines[std::size_t(engine_kind::sp)];
    sp.push_back(trigger(0));
    sp.push_back(trigger(1));
    sp.push_back(trigger(0, {on(engine_kind::dve, 1)}));
    dve.push_back(make_instruction(
        opcode::tensor_tensor, alu_op::add, op(sbuf, 0, 128, 2048, 16, dtype::float32),
        op(sbuf, 0, 128, 0, 16, dtype::bfloat16), op(sbuf, 0, 128, 512, 16, dtype::fp8_e4m3), 0,
        {on_q(0, 1), on_q(1, 1)}));
    dve.push_back(make_instruction(opcode::tensor_scalar, alu_op::multiply,
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                   op(sbuf, 0, 128, 2048, 16, dtype::float32), {}, 0.1f));
    dve.push_back(make_instruction(opcode::tensor_reduce, alu_op::min,
                                   op(sbuf, 0, 128, 3072, 1, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32)));
    dve.push_back(make_instruction(
        opcode::tensor_copy, alu_op::bypass, op(sbuf, 0, 128, 3200, 16, dtype::int32),
        op(psum, 0, 128, 0, 16, dtype::float32), {}, 0, {on(engine_kind::act, 1)}));
    act.push_back(make_instruction(
        opcode::activation, alu_op::bypass, op(psum, 0, 128, 0, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), {}, -3.25f, {on(engine_kind::dve, 2)}));
    act.push_back(trigger(2, {on(engine_kind::dve, 4), on(engine_kind::pool, 2)}));
    pool.push_back(
        make_instruction(opcode::iota, alu_op::bypass, op(sbuf, 0, 128, 8192, 64, dtype::int32)));
    // Version 2's fields: iota's offset and partition step, tensor_scalar's second operation,
    // activation's bias.
    instruction iota = make_instruction(opcode::iota, alu_op::bypass,
                                        op(sbuf, 0, 128, 8448, 64, dtype::float32), {}, {}, 5.0f);
    iota.imm1 = 64;
    pool.push_back(iota);
    instruction ts2 = make_instruction(opcode::tensor_scalar, alu_op::subtract,
                                       op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                       op(sbuf, 0, 128, 2048, 16, dtype::float32), {}, 0.5f);
    ts2.alu1 = alu_op::multiply;
    ts2.imm1 = -2.5f;
    pool.push_back(ts2);
    instruction stt = make_instruction(opcode::scalar_tensor_tensor, alu_op::subtract,
                                       op(sbuf, 0, 128, 4352, 16, dtype::float32),
                                       op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                       op(sbuf, 0, 128, 2048, 16, dtype::float32), 0.25f);
    stt.alu1 = alu_op::multiply;
    dve.push_back(stt);
    stt.op = opcode::tensor_tensor_scan;
    stt.alu1 = alu_op::add;
    stt.imm = -1.5f;
    dve.push_back(stt);
    act.push_back(make_instruction(opcode::activation, alu_op::bypass,
                                   op(sbuf, 0, 128, 4096, 16, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                   op(sbuf, 0, 128, 3072, 1, dtype::float32), 2.0f));
    pool.push_back(make_instruction(opcode::memset, alu_op::bypass,
                                    op(sbuf, 64, 128, 9000, 7, dtype::float16), {}, {}, 1e-7f));
    pool.push_back(make_instruction(
        opcode::tensor_tensor, alu_op::subtract, op(sbuf, 0, 128, 10000, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 2048, 16, dtype::float32), 0,
        {on(engine_kind::dve, 2)}));
    instruction mm = make_instruction(
        opcode::matmul, alu_op::bypass, op(psum, 0, 128, 128, 64, dtype::float32),
        op(sbuf, 0, 128, 12000, 128, dtype::bfloat16), op(sbuf, 0, 128, 13000, 64, dtype::bfloat16),
        0, {on(engine_kind::sp, 3), on_q(2, 1)});
    pe.push_back(mm);
    mm.flags = flag::accumulate;
    mm.waits.clear();
    pe.push_back(mm);
    mm.flags = flag::accumulate | flag::double_row;
    pe.push_back(mm);
    mm.flags = flag::double_row;
    pe.push_back(mm);
    mm.flags = flag::accumulate | flag::stationary_onezero | flag::moving_onezero;
    pe.push_back(mm);
    pe.push_back(make_instruction(opcode::transpose, alu_op::bypass,
                                  op(psum, 0, 32, 1024, 128, dtype::float32),
                                  op(sbuf, 0, 128, 14000, 32, dtype::float32)));
    dve.push_back(make_instruction(opcode::max8, alu_op::bypass,
                                   op(sbuf, 0, 128, 15000, 8, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32)));
    dve.push_back(make_instruction(
        opcode::find_index8, alu_op::bypass, op(sbuf, 0, 128, 15100, 8, dtype::int32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 15000, 8, dtype::float32)));
    dve.push_back(make_instruction(
        opcode::tensor_scalar, alu_op::subtract, op(sbuf, 0, 128, 15200, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 15000, 1, dtype::float32)));
    dve.push_back(make_instruction(opcode::tensor_reduce, alu_op::max,
                                   op(sbuf, 0, 128, 15300, 1, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32)));
    for (auto f : trn::all_act_funcs) {
        act.push_back(make_instruction(opcode::activation, alu_op::bypass,
                                       op(sbuf, 0, 128, 16000, 16, dtype::float32),
                                       op(sbuf, 0, 128, 1024, 16, dtype::float32)));
        act.back().func = f;
    }
    // Version 3: a per-partition scale (src2), second outputs (dst1), reversed operations,
    // negated and grouped reductions, the Vector engine's reciprocal and transpose, every ALU
    // operation, and the source places of instructions and transfers.
    instruction scaled = make_instruction(
        opcode::activation, alu_op::bypass, op(sbuf, 0, 128, 17000, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 3072, 1, dtype::float32));
    scaled.src2 = op(sbuf, 0, 128, 3080, 1, dtype::float32);
    act.push_back(scaled);
    scaled.op = opcode::activation_reduce;
    scaled.alu = alu_op::add;
    scaled.dst1 = op(sbuf, 0, 128, 3088, 1, dtype::float32);
    act.push_back(scaled);
    scaled.flags = flag::reduce_accumulate;
    scaled.dst1 = {};
    act.push_back(scaled);
    scaled.flags = flag::reduce_reset;
    act.push_back(scaled);
    instruction tsr = make_instruction(opcode::tensor_scalar_reduce, alu_op::subtract,
                                       op(sbuf, 0, 128, 17100, 16, dtype::float32),
                                       op(sbuf, 0, 128, 1024, 16, dtype::float32), {}, 3.0f);
    tsr.alu1 = alu_op::max;
    tsr.flags = flag::reverse0;
    tsr.dst1 = op(sbuf, 0, 128, 3096, 1, dtype::bfloat16);
    dve.push_back(tsr);
    instruction ts3 = make_instruction(
        opcode::tensor_scalar, alu_op::divide, op(sbuf, 0, 128, 17200, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 3072, 1, dtype::float32));
    ts3.alu1 = alu_op::subtract;
    ts3.src2 = op(sbuf, 0, 128, 3080, 1, dtype::float32);
    ts3.flags = flag::reverse0 | flag::reverse1;
    dve.push_back(ts3);
    instruction grouped = make_instruction(opcode::tensor_reduce, alu_op::add,
                                           op(sbuf, 0, 128, 17300, 4, dtype::float32),
                                           op(sbuf, 0, 128, 1024, 16, dtype::float32));
    grouped.flags = flag::negate;
    dve.push_back(grouped);
    dve.push_back(make_instruction(opcode::reciprocal, alu_op::bypass,
                                   op(sbuf, 0, 128, 17400, 16, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32)));
    dve.push_back(make_instruction(opcode::transpose, alu_op::bypass,
                                   op(sbuf, 0, 16, 17500, 32, dtype::float32),
                                   op(sbuf, 0, 32, 1024, 16, dtype::float32)));
    for (const alu_op a : trn::all_alu_ops)
        if (trn::alu_since(a) >= 3)
            dve.push_back(make_instruction(opcode::tensor_tensor, a,
                                           op(sbuf, 0, 128, 18000, 16, dtype::float32),
                                           op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                           op(sbuf, 0, 128, 2048, 16, dtype::float32)));
    instruction select = make_instruction(opcode::affine_select, alu_op::is_ge,
                                          op(sbuf, 0, 128, 18500, 16, dtype::float32),
                                          op(sbuf, 0, 128, 1024, 16, dtype::float32), {}, 2.0f);
    select.imm1 = 1;
    select.imm2 = -1;
    select.imm3 = -9984.0f;
    pool.push_back(select);
    instruction sel =
        make_instruction(opcode::select, alu_op::max, op(sbuf, 0, 128, 18800, 16, dtype::float32),
                         op(sbuf, 0, 128, 1024, 16, dtype::uint8),
                         op(sbuf, 0, 128, 2048, 16, dtype::float32), -1.0f);
    sel.src2 = op(sbuf, 0, 128, 3072, 1, dtype::float32);
    sel.dst1 = op(sbuf, 0, 128, 18900, 1, dtype::float32);
    sel.flags = flag::reverse0;
    dve.push_back(sel);
    instruction window = make_instruction(opcode::range_select, alu_op::is_ge,
                                          op(sbuf, 0, 128, 19000, 16, dtype::float32),
                                          op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                          op(sbuf, 0, 128, 3072, 1, dtype::float32), 0.5f);
    window.alu1 = alu_op::is_lt;
    window.src2 = op(sbuf, 0, 128, 3080, 1, dtype::float32);
    window.imm1 = -3.0f;
    window.dst1 = op(sbuf, 0, 128, 19100, 1, dtype::float32);
    dve.push_back(window);
    dve.push_back(make_instruction(opcode::bn_stats, alu_op::bypass,
                                   op(sbuf, 0, 128, 18600, 6, dtype::float32),
                                   op(sbuf, 0, 128, 1024, 16, dtype::float32)));
    dve.push_back(make_instruction(opcode::bn_aggr, alu_op::bypass,
                                   op(sbuf, 0, 128, 18700, 2, dtype::float32),
                                   op(sbuf, 0, 128, 18600, 6, dtype::float32)));
    instruction ex = make_instruction(
        opcode::exponential, alu_op::bypass, op(sbuf, 0, 128, 19500, 16, dtype::float32),
        op(sbuf, 0, 128, 1024, 16, dtype::float32), op(sbuf, 0, 128, 19600, 1, dtype::float32));
    ex.dst1 = op(sbuf, 0, 128, 19700, 1, dtype::float32);
    ex.flags = flag::reduce_accumulate;
    dve.push_back(ex);
    instruction replace = make_instruction(opcode::match_replace8, alu_op::bypass,
                                           op(sbuf, 0, 128, 19500, 16, dtype::float32),
                                           op(sbuf, 0, 128, 1024, 16, dtype::float32),
                                           op(sbuf, 0, 128, 15000, 8, dtype::float32), -1.0f);
    replace.dst1 = op(sbuf, 0, 128, 19800, 8, dtype::int32);
    dve.push_back(replace);
    instruction shuffle = make_instruction(opcode::stream_shuffle, alu_op::bypass,
                                           op(sbuf, 32, 64, 20000, 8, dtype::float32),
                                           op(sbuf, 0, 1, 20000, 8, dtype::float32), {}, 0.0f);
    shuffle.imm1 = 0;
    shuffle.imm3 = 32;
    dve.push_back(shuffle);
    instruction top =
        make_instruction(opcode::topk, alu_op::bypass, op(sbuf, 0, 128, 19200, 2, dtype::bfloat16),
                         op(sbuf, 0, 128, 19300, 4, dtype::bfloat16), {}, 60.0f);
    top.imm1 = 20;
    top.dst1 = op(sbuf, 0, 128, 19400, 2, dtype::uint32);
    pool.push_back(top);
    instruction barrier;
    barrier.op = opcode::core_barrier;
    barrier.imm = 1;
    pool.push_back(barrier);
    // Version 7: the registers of an engine's sequencer (a load from a [1, 1] tile, a store,
    // a move of a constant and of another register)
    instruction reg;
    reg.op = opcode::register_load;
    reg.src0 = op(sbuf, 0, 1, 20500, 1, dtype::int32);
    reg.imm = 3;
    sp.push_back(reg);
    reg = {};
    reg.op = opcode::register_store;
    reg.dst = op(sbuf, 0, 1, 20504, 1, dtype::int32);
    reg.imm = 3;
    sp.push_back(reg);
    instruction nonzero = make_instruction(opcode::nonzero_count, alu_op::bypass,
                                           op(sbuf, 0, 32, 20600, 9, dtype::int32),
                                           op(sbuf, 0, 32, 20700, 8, dtype::float32), {}, 16.0f);
    nonzero.src1 = nonzero.dst;
    nonzero.imm1 = -1;
    pool.push_back(nonzero);
    reg = {};
    reg.op = opcode::register_move;
    reg.imm = 4;
    reg.imm1 = 7;
    reg.imm2 = -1;
    act.push_back(reg);
    // NeuronCore-v4's MX instructions: quantize_mx's packed dst and scales, matmul_mx's four
    // inputs (src3 the moving scale)
    instruction quantize = make_instruction(opcode::quantize_mx, alu_op::bypass,
                                            op(sbuf, 0, 128, 20000, 4, dtype::fp8_e4m3fn_x4),
                                            op(sbuf, 0, 128, 20100, 16, dtype::bfloat16));
    quantize.dst1 = op(sbuf, 0, 128, 20200, 4, dtype::fp8_e8m0);
    dve.push_back(quantize);
    instruction mx =
        make_instruction(opcode::matmul_mx, alu_op::bypass, op(psum, 0, 4, 0, 8, dtype::bfloat16),
                         op(sbuf, 0, 128, 20000, 4, dtype::fp8_e4m3fn_x4),
                         op(sbuf, 0, 128, 20300, 8, dtype::fp4_e2m1fn_x4));
    mx.src2 = op(sbuf, 0, 128, 20200, 4, dtype::fp8_e8m0);
    mx.src3 = op(sbuf, 0, 128, 20400, 8, dtype::uint8);
    mx.flags = flag::accumulate;
    pe.push_back(mx);
    // NeuronCore-v4's tensor indirection: a gather of 40 columns of 512 into a scatter
    instruction gather = make_instruction(opcode::activation, alu_op::bypass,
                                          op(sbuf, 0, 128, 30000, 40, dtype::float32),
                                          op(sbuf, 0, 128, 32000, 40, dtype::float32));
    gather.func = act_func::exp;
    gather.indirect = {{operand_slot::dst, 200, op(sbuf, 0, 128, 34000, 4, dtype::int32)},
                       {operand_slot::src0, 512, op(sbuf, 0, 128, 34100, 3, dtype::uint16)}};
    act.push_back(gather);
    // places: some instructions and transfers, a file name with a space and a '#'
    p.sources.engines[std::size_t(engine_kind::dve)].assign(dve.size(), 0);
    p.sources.engines[std::size_t(engine_kind::dve)][0] = p.sources.intern("kernels/my k#1.py:12");
    p.sources.engines[std::size_t(engine_kind::dve)][2] = p.sources.intern("kernel.py:7");
    p.sources.queues.resize(p.queues.size());
    p.sources.queues[2] = {p.sources.intern("kernel.py:7")};
    return p;
}

std::string to_text(const program& p) {
    std::ostringstream os;
    write_trace(os, p);
    return os.str();
}

program from_text(const std::string& text, const std::string& name = "test.trace") {
    std::istringstream is(text);
    return read_trace(is, name);
}

TEST(TraceRoundTrip, RichProgramHasEveryOpcodeAndAlu) {
    const program p = rich_program();
    std::set<std::string> opcodes, alus;
    for (const auto& s : p.engines)
        for (const auto& i : s) {
            opcodes.insert(opcode_name(i.op));
            alus.insert(alu_name(i.alu));
        }
    // Every opcode the enum declares (opcode_name is "?" past the last one).
    for (int o = 0; std::string(opcode_name(static_cast<opcode>(o))) != "?"; ++o)
        EXPECT_EQ(opcodes.count(opcode_name(static_cast<opcode>(o))), 1u)
            << opcode_name(static_cast<opcode>(o));
    for (int a = 0; std::string(alu_name(static_cast<alu_op>(a))) != "?"; ++a)
        EXPECT_EQ(alus.count(alu_name(static_cast<alu_op>(a))), 1u)
            << alu_name(static_cast<alu_op>(a));
}

TEST(TraceRoundTrip, RichProgram) {
    const program p = rich_program();
    const std::string text = to_text(p);
    const program back = from_text(text);
    EXPECT_EQ(back.regions, p.regions);
    EXPECT_EQ(back.queues, p.queues);
    for (auto e : all_engines)
        EXPECT_EQ(back.engines[std::size_t(e)], p.engines[std::size_t(e)]) << engine_name(e);
    EXPECT_EQ(back.hbm_bytes, p.hbm_bytes);
    EXPECT_TRUE(back == p);
    EXPECT_EQ(to_text(back), text);
    // The immediates survive bit for bit.
    EXPECT_EQ(back.engines[std::size_t(engine_kind::dve)][1].imm, 0.1f);
    EXPECT_EQ(back.engines[std::size_t(engine_kind::pool)][3].imm, 1e-7f);
}

TEST(TraceRoundTrip, TextLooksAsDocumented) {
    const std::string text = to_text(rich_program());
    EXPECT_PRED2(starts_with, text, "trnsim-trace 10\n");
    EXPECT_PRED2(contains, text,
                 "\nq1 dma dst=sbuf[0:128]@0:32xbfloat16 src=hbm[0:128]@0/64:32xbfloat16 op=add "
                 "priority=2\n");
    EXPECT_PRED2(contains, text,
                 " alu=subtract dst=sbuf[0:128]@1024:16xfloat32 "
                 "src0=sbuf[0:128]@2048:16xfloat32 imm=0.5 alu1=multiply imm1=-2.5");
    EXPECT_PRED2(contains, text, "\nqueues 3\n");
    EXPECT_PRED2(contains, text, "\nhbm_bytes 17179869184\n");
    EXPECT_PRED2(contains, text, "\nregion a 0 8192 bfloat16 input -0.5 2.5 42\n");
    EXPECT_PRED2(contains, text, "\nregion out 8589934592 65536 float32 output\n");
    EXPECT_PRED2(contains, text,
                 "\nq0 dma dst=sbuf[32:96]@4096:16xbfloat16 src=hbm[0:64]@4096/4096:16xbfloat16\n");
    EXPECT_PRED2(contains, text, "\nsp dma_trigger queue=0 wait=dve>=1\n");
    EXPECT_PRED2(contains, text, "\nact dma_trigger queue=2 wait=dve>=4,pool>=2\n");
    EXPECT_PRED2(contains, text, " imm=-3.25 ");
    EXPECT_PRED2(contains, text, " flags=acc|double_row\n");
    EXPECT_PRED2(contains, text, " flags=rev0|rev1\n");
    EXPECT_PRED2(contains, text, " wait=q0>=1,q1>=1 at=kernels/my%20k%231.py:12\n");
    EXPECT_PRED2(contains, text,
                 "\nq2 dma dst=hbm[0:128]@8589934592/512:16xfloat32 "
                 "src=sbuf[0:128]@1024:16xfloat32 at=kernel.py:7\n");
    operand doc_example;
    doc_example.space = mem_space::hbm;
    doc_example.partitions = 128;
    doc_example.offset = 4096;
    doc_example.row_stride = 800;
    doc_example.elems = 2;
    EXPECT_EQ(format_operand(doc_example), "hbm[0:128]@4096/800:2xfloat32");
}

TEST(TraceRoundTrip, HandWrittenTraceWithCommentsAndAliases) {
    const program p = from_text(
        "# a hand-written trace\n"
        "\n"
        "trnsim-trace 1   # header\n"
        "queues 1\n"
        "hbm_bytes 4096\n"
        "q0 dma dst=sbuf[0:128]@0:2xfp32 src=hbm[0:128]@0/8:2xfloat32\n"
        "sp dma_trigger queue=0\n"
        "   dve   tensor_scalar alu=add dst=sbuf[0:128]@64:2xbf16 src0=sbuf[0:128]@0:2xfloat32 "
        "imm=1.5 wait=q0>=1\n");
    ASSERT_EQ(p.queues.size(), 1u);
    ASSERT_EQ(p.queues[0].size(), 1u);
    EXPECT_EQ(p.queues[0][0].src.row_stride, 8u);
    EXPECT_EQ(p.queues[0][0].dst.type, dtype::float32);
    const auto& dve = p.engines[std::size_t(engine_kind::dve)];
    ASSERT_EQ(dve.size(), 1u);
    EXPECT_EQ(dve[0].op, opcode::tensor_scalar);
    EXPECT_EQ(dve[0].alu, alu_op::add);
    EXPECT_EQ(dve[0].dst.type, dtype::bfloat16);
    EXPECT_EQ(dve[0].dst.offset, 64u);
    EXPECT_EQ(dve[0].imm, 1.5f);
    EXPECT_EQ(dve[0].waits, (trn::wait_list{on_q(0, 1)}));
}

const config& trn1_config() {
    static const config cfg = trn::testing::platform_config("trn1");
    return cfg;
}

TEST(TraceRoundTrip, VectorAddProgramThroughFile) {
    const workload& w = find_workload("vector_add");
    const workload_params params("vector_add", w.params(),
                                 {{"variant", "stream"}, {"n", "4096"}, {"free_dim", "8"}});
    const program p = w.build(params, trn1_config(), trn::testing::limits_of(trn1_config())).prog;
    ASSERT_GT(p.instruction_count(), 0u);
    const std::string path = ::testing::TempDir() + "program_trace_test_vector_add.trace";
    write_trace_file(path, p);
    const program back = read_trace_file(path);
    std::remove(path.c_str());
    EXPECT_TRUE(back == p);
    EXPECT_EQ(to_text(back), to_text(p));
}

TEST(TraceFiles, MissingFileNamed) {
    const std::string msg = user_error_of([] { read_trace_file("/nonexistent/x.trace"); });
    EXPECT_PRED2(contains, msg, "/nonexistent/x.trace");
}

// Valid lines 1-4; tests append the malformed line 5.
const std::string prefix =
    "trnsim-trace 1\n"
    "hbm_bytes 65536\n"
    "queues 2\n"
    "q0 dma dst=sbuf[0:128]@0:16xfloat32 src=hbm[0:128]@0/64:16xfloat32\n";

std::string error_of(const std::string& text) {
    return user_error_of([&] { from_text(text, "bad.trace"); });
}

// The message of reading prefix + `line` (line 5): must start with "bad.trace:5: ".
std::string line5_error(const std::string& line) {
    const std::string msg = error_of(prefix + line + "\n");
    EXPECT_PRED2(starts_with, msg, "bad.trace:5: ");
    return msg;
}

TEST(TraceErrors, PrefixIsValid) {
    EXPECT_NO_THROW(from_text(prefix + "sp dma_trigger queue=0\n"));
}

TEST(TraceErrors, BadHeader) {
    const std::string msg = error_of("trnsim-trac 1\nqueues 1\n");
    EXPECT_PRED2(starts_with, msg, "bad.trace:1: ");
    EXPECT_PRED2(contains, msg, "trnsim-trace 10");
    // Comments and blank lines before the header count as lines.
    EXPECT_PRED2(starts_with, error_of("# comment\n\nqueues 1\n"), "bad.trace:3: ");
    EXPECT_PRED2(starts_with, error_of("trnsim-trace\n"), "bad.trace:1: ");
}

TEST(TraceErrors, WrongVersion) {
    const std::string msg = error_of("trnsim-trace 11\n");
    EXPECT_PRED2(starts_with, msg, "bad.trace:1: ");
    EXPECT_PRED2(contains, msg, "version 11");
    EXPECT_PRED2(contains, msg, "reads 1 to 10");
    EXPECT_PRED2(contains, error_of("trnsim-trace 0\n"), "version 0 is not supported");
}

TEST(TraceErrors, EndlessLinesAndBinaryInputAreRejected) {
    EXPECT_PRED2(contains, line5_error(std::string(70000, 'x')), "line longer than 65536 bytes");
    EXPECT_PRED2(contains, line5_error(std::string("sp dma_trigger") + '\0'), "NUL byte");
    const std::string msg = user_error_of([] { read_trace_file("/dev/zero"); });
    EXPECT_PRED2(starts_with, msg, "/dev/zero:1: ");
    // A last line without a newline still counts.
    EXPECT_NO_THROW(from_text(prefix + "sp dma_trigger queue=0"));
}

TEST(TraceErrors, EmptyTrace) {
    const std::string msg = error_of("# nothing\n\n");
    EXPECT_PRED2(starts_with, msg, "bad.trace:");
    EXPECT_PRED2(contains, msg, "empty trace");
}

TEST(TraceErrors, UnknownOpcode) {
    EXPECT_PRED2(contains, line5_error("dve frobnicate dst=sbuf[0:1]@0:1xfloat32"),
                 "unknown opcode 'frobnicate'");
    EXPECT_PRED2(contains, line5_error("dve"), "expected an opcode");
}

TEST(TraceErrors, BadOperand) {
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]0:16xfloat32"),
                 "bad operand 'sbuf[0:128]0:16xfloat32'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=dram[0:128]@0:16xfloat32"),
                 "bad memory 'dram'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[4:4]@0:16xfloat32"),
                 "empty partition range");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:x]@0:16xfloat32"),
                 "bad end partition 'x'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]@-8:16xfloat32"),
                 "bad offset '-8'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]@0/64:16xfloat32"),
                 "only HBM operands take a row stride");
    EXPECT_PRED2(contains,
                 line5_error("q1 dma dst=sbuf[0:128]@0:16xfloat32 src=hbm[0:128]@0:16xfloat32"),
                 "needs offset/stride");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]@0:16float32"),
                 "needs elemsxdtype");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]@0:16xfloat64"),
                 "unknown dtype 'float64'");
}

TEST(TraceErrors, NumbersTooLargeForTheirField) {
    const std::pair<const char*, const char*> cases[] = {
        {"dve memset dst=sbuf[70000:70001]@0:1xfloat32",
         "first partition 70000 is too large (at most 65535)"},
        {"dve memset dst=sbuf[1:4294967296]@0:1xfloat32",
         "end partition 4294967296 is too large (at most 4294967295)"},
        {"region a 0 64 float32 input 0 1 4294967296", "seed 4294967296 is too large"},
        {"dve memset dst=sbuf[0:1]@0:4294967296xfloat32",
         "element count 4294967296 is too large (at most 4294967295)"},
        {"dve memset dst=sbuf[0:1]@0:1xfloat32~4294967296",
         "element stride 4294967296 is too large"},
        {"sp dma_trigger queue=65536", "queue 65536 is too large (at most 65535)"},
        {"dve memset dst=sbuf[0:1]@0:1xfloat32 wait=dve>=4294967296",
         "wait value 4294967296 is too large"},
    };
    for (const auto& [line, what] : cases)
        EXPECT_PRED2(contains, line5_error(line), what) << line;
}

TEST(TraceLimits, NumbersAtTheirFieldsLimitsAreRead) {
    const program p = from_text(
        "trnsim-trace 1\nhbm_bytes 64\nregion a 0 64 float32 input 0 1 4294967295\n"
        "dve memset dst=sbuf[65535:4294967295]@0:4294967295xfloat32~4294967295 "
        "wait=dve>=4294967295\n");
    const operand& dst = p.engines[std::size_t(engine_kind::dve)].at(0).dst;
    EXPECT_EQ(dst.partition, 65535u);
    EXPECT_EQ(dst.partitions, 4294967295u - 65535u);
    EXPECT_EQ(dst.elems, 4294967295u);
    EXPECT_EQ(dst.elem_stride, 4294967295u);
    EXPECT_EQ(p.regions.at(0).seed, 4294967295u);
}

TEST(TraceErrors, BadFields) {
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 color=red"),
                 "unknown field 'color'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 imm"),
                 "expected key=value, got 'imm'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 imm=one"),
                 "bad immediate 'one'");
    EXPECT_PRED2(contains, line5_error("dve tensor_tensor alu=xor dst=sbuf[0:1]@0:1xfloat32"),
                 "unknown alu op 'xor'");
    EXPECT_PRED2(contains, line5_error("pe matmul dst=psum[0:1]@0:1xfloat32 flags=acc|fast"),
                 "unknown flag 'fast'");
    EXPECT_PRED2(contains, line5_error("sp dma_trigger"), "dma_trigger needs queue=N");
    EXPECT_PRED2(contains, line5_error("sp dma_trigger queue=zero"), "bad queue 'zero'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 wait=dve=1"),
                 "bad wait 'dve=1'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 wait=dve>=x"),
                 "bad wait value 'x'");
}

TEST(TraceErrors, Indirection) {
    const std::string head = "trnsim-trace 4\nhbm_bytes 64\nqueues 0\n";
    const std::string ins =
        "act activation dst=sbuf[0:128]@0:8xfloat32 src0=sbuf[0:128]@64:8xfloat32";
    EXPECT_PRED2(contains, error_of(head + ins + " src0_index=sbuf[0:128]@512:1xint32\n"),
                 "needs both src0_index=OPERAND and src0_extent=N");
    EXPECT_PRED2(contains,
                 error_of(head + ins + " src3_extent=4 src3_index=sbuf[0:128]@512:1xint32\n"),
                 "field 'src3_extent' does not apply to activation");
    EXPECT_PRED2(contains,
                 error_of("trnsim-trace 3\nhbm_bytes 64\nqueues 0\n" + ins +
                          " src0_extent=4 src0_index=sbuf[0:128]@512:1xint32\n"),
                 "src0_extent= is not in trace format version 3");
    EXPECT_PRED2(contains,
                 error_of(head + ins + " src0_extent=x src0_index=sbuf[0:128]@512:1xint32\n"),
                 "extent");
    const program p =
        from_text(head + ins + " src0_extent=16 src0_index=sbuf[0:128]@512:1xint32\n");
    ASSERT_EQ(p.engines[std::size_t(engine_kind::act)][0].indirect.size(), 1u);
    EXPECT_EQ(p.engines[std::size_t(engine_kind::act)][0].indirect[0].extent, 16u);
}

TEST(TraceErrors, UnknownSemaphore) {
    const std::string msg = line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 wait=dve>=1,q2>=1");
    EXPECT_PRED2(contains, msg, "unknown semaphore 'q2'");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:1]@0:1xfloat32 wait=tpu>=1"),
                 "unknown semaphore 'tpu'");
}

TEST(TraceErrors, QueueBeyondDeclaredCount) {
    const std::string msg =
        line5_error("q2 dma dst=sbuf[0:128]@0:16xfloat32 src=hbm[0:128]@0/64:16xfloat32");
    EXPECT_PRED2(contains, msg, "q2");
    EXPECT_PRED2(contains, msg, "beyond the declared 2 queues");
}

TEST(TraceErrors, TransferBeforeQueues) {
    const std::string msg = error_of(
        "trnsim-trace 1\n"
        "hbm_bytes 65536\n"
        "q0 dma dst=sbuf[0:128]@0:16xfloat32 src=hbm[0:128]@0/64:16xfloat32\n"
        "queues 1\n");
    EXPECT_PRED2(starts_with, msg, "bad.trace:3: ");
    EXPECT_PRED2(contains, msg, "'queues N'");
}

TEST(TraceErrors, MissingDst) {
    const std::string msg =
        line5_error("dve tensor_scalar alu=add src0=sbuf[0:1]@0:1xfloat32 imm=1");
    EXPECT_PRED2(contains, msg, "tensor_scalar needs dst=OPERAND");
    EXPECT_PRED2(contains, line5_error("q1 dma src=hbm[0:128]@0/64:16xfloat32"),
                 "expected 'q<N> dma dst=OPERAND src=OPERAND [op=add] [transpose] [priority=N] "
                 "[part=N] [at=FILE:LINE]'");
}

TEST(TraceErrors, BadHeaderLines) {
    EXPECT_PRED2(contains, line5_error("queues 3"), "one 'queues N' line");
    EXPECT_PRED2(contains, line5_error("hbm_bytes"), "expected one 'hbm_bytes N' line");
    EXPECT_PRED2(contains, line5_error("hbm_bytes 12 13"), "expected one 'hbm_bytes N' line");
    EXPECT_PRED2(contains, error_of("trnsim-trace 1\nhbm_bytes lots\n"), "bad byte count 'lots'");
    EXPECT_PRED2(contains, line5_error("region a 0 64 float32"), "expected 'region");
    EXPECT_PRED2(contains, line5_error("region a 0 64 float32 input 0 1"), "input LO HI SEED");
    EXPECT_PRED2(contains, line5_error("region a 0 64 float32 scratch"), "region kind");
    EXPECT_PRED2(contains, line5_error("region a 0 64 float32 input 0 high 1"),
                 "bad upper bound 'high'");
    EXPECT_PRED2(contains, line5_error("tpu memset"), "unknown line kind 'tpu'");
}

TEST(TraceErrors, FieldsAreGivenOnceAndOnlyWhereTheyApply) {
    EXPECT_PRED2(contains, line5_error("sp dma_trigger queue=0 queue=1"),
                 "field 'queue' given twice");
    EXPECT_PRED2(contains,
                 line5_error("dve tensor_tensor alu=max alu=add dst=sbuf[0:128]@0:16xfloat32 "
                             "src0=sbuf[0:128]@0:16xfloat32 src1=sbuf[0:128]@0:16xfloat32"),
                 "field 'alu' given twice");
    EXPECT_PRED2(contains, line5_error("sp dma_trigger queue=0 wait=dve>=1 wait=act>=1"),
                 "field 'wait' given twice");
    EXPECT_PRED2(contains, line5_error("dve memset dst=sbuf[0:128]@0:16xfloat32 queue=3"),
                 "field 'queue' does not apply to memset");
    EXPECT_PRED2(contains, line5_error("sp dma_trigger queue=0 imm=2"),
                 "field 'imm' does not apply to dma_trigger");
    EXPECT_PRED2(contains,
                 line5_error("dve tensor_copy dst=sbuf[0:128]@0:16xfloat32 "
                             "src0=sbuf[0:128]@64:16xfloat32 func=exp"),
                 "field 'func' does not apply to tensor_copy");
}

TEST(TraceErrors, FloatsMustBeFinite) {
    // an immediate may be inf or -inf, as written (a mask's fill value); nothing else infinite
    for (const char* v : {"nan", "1e39", "INF", "infinity"}) {
        EXPECT_PRED2(contains,
                     line5_error(std::string("dve memset dst=sbuf[0:128]@0:16xfloat32 imm=") + v),
                     "not a finite float (or inf, -inf)")
            << v;
    }
    for (const char* v : {"inf", "-inf"}) {
        const program p = from_text(std::string("trnsim-trace 3\nhbm_bytes 64\nqueues 0\n") +
                                    "dve memset dst=sbuf[0:128]@0:16xfloat32 imm=" + v + "\n");
        EXPECT_TRUE(std::isinf(p.engines[std::size_t(engine_kind::dve)][0].imm)) << v;
    }
    for (const char* v : {"nan", "inf", "-inf", "1e39"}) {
        EXPECT_PRED2(contains,
                     line5_error(std::string("region x 0 64 float32 input 0 ") + v + " 1"),
                     "not a finite float")
            << v;
    }
}

TEST(TraceRoundTrip, SubnormalImmediatesReadBackExactly) {
    program p = from_text(prefix + "sp dma_trigger queue=0\n");
    instruction ms;
    ms.op = opcode::memset;
    ms.dst = p.queues[0][0].dst;
    ms.imm = std::numeric_limits<float>::denorm_min() * 3;
    p.engines[std::size_t(engine_kind::dve)].push_back(ms);
    const program back = from_text(to_text(p));
    EXPECT_TRUE(back == p);
    EXPECT_EQ(back.engines[std::size_t(engine_kind::dve)][0].imm, ms.imm);
}

// Limits for validating the small programs of these tests.
program_limits small_limits() {
    program_limits lim;
    lim.partitions = 128;
    lim.sbuf_partition_bytes = 1 << 16;
    lim.psum_partition_bytes = 1 << 14;
    lim.hbm_bytes = 1 << 20;
    lim.dma_queues = 16;
    return lim;
}

TEST(TraceErrors, ValidationNamesTheTraceLine) {
    // Line 6 waits for a semaphore value that is never reached.
    const program p = from_text(prefix + "sp dma_trigger queue=0\n" +
                                    "dve memset dst=sbuf[0:128]@0:16xfloat32 wait=q0>=5\n",
                                "bad.trace");
    const program_limits lim = small_limits();
    const std::string msg = user_error_of([&] { validate_program(p, lim); });
    EXPECT_PRED2(starts_with, msg, "bad.trace:6: dve instruction 0");
    // A region beyond the declared hbm_bytes names its line too.
    const program r = from_text(
        "trnsim-trace 1\nhbm_bytes 64\nqueues 0\n"
        "region big 0 128 float32 output\n",
        "bad.trace");
    EXPECT_PRED2(starts_with, user_error_of([&] { validate_program(r, lim); }),
                 "bad.trace:4: region 'big'");
}

// A DMA read-add-write (op=add): version 3, add only, and (validation) into SBUF, bf16 or
// fp32, dst and src alike.
TEST(TraceErrors, DmaReadAddWritesAreCheckedAndNamed) {
    const std::string head = "trnsim-trace 3\nhbm_bytes 65536\nqueues 1\n";
    const std::string rmw = "q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/32:8xfloat32 op=";
    const program p = from_text(head + rmw + "add at=k.py:7\n");
    EXPECT_EQ(p.queues[0][0].rmw, alu_op::add);
    EXPECT_EQ(p.sources.of_queue(0, 0), "k.py:7");
    EXPECT_PRED2(contains, to_text(p), "op=add at=k.py:7\n");
    EXPECT_PRED2(contains, error_of(head + rmw + "multiply\n"),
                 "bad.trace:4: a DMA read-add-write adds: op=add, not op=multiply");
    EXPECT_PRED2(contains, error_of(head + rmw + "plus\n"), "unknown alu op 'plus'");
    EXPECT_PRED2(contains, error_of("trnsim-trace 2\nhbm_bytes 65536\nqueues 1\n" + rmw + "add\n"),
                 "op= is not in trace format version 2");
    const program_limits lim = small_limits();
    auto invalid = [&](const std::string& line) {
        return user_error_of(
            [&] { validate_program(from_text(head + line + "\nsp dma_trigger queue=0\n"), lim); });
    };
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=hbm[0:4]@0/32:8xfloat32 src=sbuf[0:4]@0:8xfloat32 op=add"),
                 "a DMA read-add-write adds into SBUF");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/16:8xbfloat16 op=add"),
                 "takes bf16 or fp32, the same for dst and src (got float32 and bfloat16)");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=sbuf[0:4]@0:8xint32 src=hbm[0:4]@0/32:8xint32 op=add"),
                 "takes bf16 or fp32");
}

// A transfer's part of a DMA split into one transfer a run (part=N, version 8): after
// priority= and before at=, written only when not 0.
TEST(TraceVersions, TransferPartsAreVersionEight) {
    const std::string head = "hbm_bytes 65536\nqueues 1\n";
    const std::string load = "q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/32:8xfloat32";
    const program p = from_text("trnsim-trace 8\n" + head + load +
                                " priority=1 part=3 at=k.py:2\n" + load + "\n");
    EXPECT_EQ(p.queues[0][0].part, 3);
    EXPECT_EQ(p.queues[0][1].part, 0);
    const std::string text = to_text(p);
    EXPECT_PRED2(contains, text, "priority=1 part=3 at=k.py:2\n");
    EXPECT_EQ(from_text(text).queues, p.queues);
    EXPECT_PRED2(contains, error_of("trnsim-trace 7\n" + head + load + " part=1\n"),
                 "bad.trace:4: part= is not in trace format version 7");
    EXPECT_PRED2(contains, error_of("trnsim-trace 8\n" + head + load + " part=x\n"),
                 "bad part 'x'");
    // the flag cont: on an instruction its engine costs by its elements, from version 8
    const std::string copy =
        "dve tensor_copy dst=sbuf[0:4]@0:8xfloat32 src0=sbuf[0:4]@64:8xfloat32 flags=cont\n";
    const program c = from_text("trnsim-trace 8\nhbm_bytes 64\nqueues 0\n" + copy);
    EXPECT_EQ(c.engines[std::size_t(engine_kind::dve)][0].flags, trn::flag::continues);
    EXPECT_PRED2(contains, to_text(c), " flags=cont");
    EXPECT_PRED2(contains, error_of("trnsim-trace 7\nhbm_bytes 64\nqueues 0\n" + copy),
                 "field 'flags' does not apply to tensor_copy");
    EXPECT_PRED2(contains,
                 error_of("trnsim-trace 8\nhbm_bytes 64\nqueues 0\nsp dma_trigger queue=0 "
                          "flags=cont\n"),
                 "flag 'cont' does not apply to dma_trigger");
}

// A DMA's quality-of-service level (priority=N, version 5): after op= and before at=, written
// only when not 0, and (validation) below the core's core.dma.priority_levels.
TEST(TraceErrors, DmaPrioritiesAreReadWrittenAndChecked) {
    const std::string head = "trnsim-trace 5\nhbm_bytes 65536\nqueues 1\n";
    const std::string load = "q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/32:8xfloat32";
    const program p = from_text(head + load + " op=add priority=3 at=k.py:7\n" + load + "\n");
    EXPECT_EQ(p.queues[0][0].priority, 3);
    EXPECT_EQ(p.queues[0][0].rmw, alu_op::add);
    EXPECT_EQ(p.queues[0][1].priority, 0);
    const std::string text = to_text(p);
    EXPECT_PRED2(contains, text, "op=add priority=3 at=k.py:7\n");
    EXPECT_PRED2(contains, text, "src=hbm[0:4]@0/32:8xfloat32\n");  // level 0 left out
    EXPECT_EQ(from_text(text).queues, p.queues);
    EXPECT_PRED2(contains,
                 error_of("trnsim-trace 4\nhbm_bytes 65536\nqueues 1\n" + load + " priority=1\n"),
                 "bad.trace:4: priority= is not in trace format version 4");
    EXPECT_PRED2(contains, error_of(head + load + " priority=high\n"), "bad priority 'high'");
    EXPECT_PRED2(contains, error_of(head + load + " priority=300\n"),
                 "priority 300 is too large (at most 255)");
    EXPECT_PRED2(contains, error_of(head + load + " at=k.py:7 priority=1\n"),
                 "expected 'q<N> dma dst=OPERAND src=OPERAND [op=add] [transpose] [priority=N]");
    program_limits lim = small_limits();
    const program two = from_text(head + load + " priority=2\nsp dma_trigger queue=0\n");
    EXPECT_PRED2(contains, user_error_of([&] { validate_program(two, lim); }),
                 ":4: q0 transfer 0: priority 2 needs DMA quality-of-service levels, which "
                 "this core has not (core.dma.priority_levels 1;");
    lim.dma_priority_levels = 2;
    EXPECT_PRED2(contains, user_error_of([&] { validate_program(two, lim); }),
                 ":4: q0 transfer 0: priority 2 is not a DMA quality-of-service level of this "
                 "core: 0 to 1 (core.dma.priority_levels 2)");
    lim.dma_priority_levels = 4;
    validate_program(two, lim);
}

// A DMA transpose (`transpose`, version 10): after op= and before priority=, written only when
// set; validation wants src in HBM, dst in SBUF with src's elements as its rows and src's rows
// as its elements, 2- or 4-byte elements, and no read-add-write.
TEST(TraceErrors, DmaTransposesAreReadWrittenAndChecked) {
    const std::string head = "trnsim-trace 10\nhbm_bytes 65536\nqueues 1\n";
    const std::string load = "q0 dma dst=sbuf[0:8]@0:4xfloat32 src=hbm[0:4]@0/32:8xfloat32";
    const program p = from_text(head + load + " transpose priority=1 at=k.py:7\n");
    EXPECT_TRUE(p.queues[0][0].transpose);
    EXPECT_EQ(p.queues[0][0].rows(), 8u);        // dst's partitions
    EXPECT_EQ(p.queues[0][0].row_bytes(), 16u);  // one element of each of 4 source rows
    const std::string text = to_text(p);
    EXPECT_PRED2(contains, text, "src=hbm[0:4]@0/32:8xfloat32 transpose priority=1 at=k.py:7\n");
    EXPECT_EQ(from_text(text).queues, p.queues);
    EXPECT_PRED2(contains,
                 error_of("trnsim-trace 9\nhbm_bytes 65536\nqueues 1\n" + load + " transpose\n"),
                 "bad.trace:4: transpose is not in trace format version 9");
    EXPECT_PRED2(contains, error_of(head + load + " priority=1 transpose\n"),
                 "expected 'q<N> dma dst=OPERAND src=OPERAND [op=add] [transpose]");
    program_limits lim = small_limits();
    lim.dma_priority_levels = 2;
    const auto invalid = [&](const std::string& line) {
        return user_error_of(
            [&] { validate_program(from_text(head + line + "\nsp dma_trigger queue=0\n"), lim); });
    };
    validate_program(from_text(head + load + " transpose\nsp dma_trigger queue=0\n"), lim);
    EXPECT_PRED2(contains, invalid(load), "dst and src differ in rows or elements per row");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/32:8xfloat32 transpose"),
                 ":4: q0 transfer 0: a DMA transpose's dst has src's elements as rows and its rows "
                 "as elements (dst 4 x 8, src 4 x 8)");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=hbm[0:8]@4096/16:4xfloat32 src=hbm[0:4]@0/32:8xfloat32 "
                         "transpose"),
                 "a DMA transpose reads HBM and writes into SBUF");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=sbuf[0:8]@0:4xfloat32 src=sbuf[0:4]@64:8xfloat32 transpose"),
                 "a DMA transpose reads HBM and writes into SBUF (from SBUF");
    EXPECT_PRED2(contains,
                 invalid("q0 dma dst=sbuf[0:8]@0:4xint8 src=hbm[0:4]@0/8:8xint8 transpose"),
                 "a DMA transpose moves 2- or 4-byte elements, not int8");
    EXPECT_PRED2(contains, invalid(load + " op=add transpose"),
                 "a DMA transpose cannot read-add-write");
}

TEST(TraceErrors, ATraceWithARaceIsRejectedNamingBothLines) {
    // Line 5 writes the SBUF bytes that the load of line 4 writes, with no wait on q0: a valid
    // program (validate_program), in which the race check (as the platform runs it on a trace,
    // tests/platforms/cli_test.cpp) finds the race.
    const program p =
        from_text(prefix + "dve memset dst=sbuf[0:128]@0:16xfloat32\n" + "sp dma_trigger queue=0\n",
                  "race.trace");
    const program_limits lim = small_limits();
    EXPECT_NO_THROW(validate_program(p, lim));
    const std::string msg = user_error_of([&] { check_no_races(p); });
    EXPECT_PRED2(contains, msg, "race: ");
    EXPECT_PRED2(contains, msg, "race.trace:5 (dve instruction 0");
    EXPECT_PRED2(contains, msg, "race.trace:4 (q0 transfer 0)");
    // With the wait the trace is accepted.
    const program ok = from_text(prefix + "sp dma_trigger queue=0\n" +
                                     "dve memset dst=sbuf[0:128]@0:16xfloat32 wait=q0>=1\n",
                                 "race.trace");
    EXPECT_NO_THROW(validate_program(ok, lim));
    EXPECT_NO_THROW(check_no_races(ok));
}

}  // namespace

TEST(TraceVersions, VersionOneStillReads) {
    // Version 1's iota numbered elements across partitions (p * elems + i): read as imm1 = elems.
    const program p =
        from_text("trnsim-trace 1\nhbm_bytes 64\nqueues 0\npool iota dst=sbuf[0:4]@0:8xfloat32\n");
    const instruction& ins = p.engines[std::size_t(engine_kind::pool)][0];
    EXPECT_EQ(ins.imm, 0.0f);
    EXPECT_EQ(ins.imm1, 8.0f);
    // Written back, it is a version 2 trace that says so.
    EXPECT_PRED2(contains, to_text(p), "pool iota dst=sbuf[0:4]@0:8xfloat32 imm1=8\n");
}

TEST(TraceVersions, VersionTwoFieldsAreErrorsInVersionOne) {
    const std::string head = "trnsim-trace 1\nhbm_bytes 64\nqueues 0\n";
    EXPECT_PRED2(contains,
                 error_of(head + "dve tensor_scalar alu=add dst=sbuf[0:4]@0:8xfloat32 "
                                 "src0=sbuf[0:4]@0:8xfloat32 imm=1 alu1=max\n"),
                 "bad.trace:4: field 'alu1' does not apply to tensor_scalar in trace format "
                 "version 1");
    EXPECT_PRED2(contains, error_of(head + "pool iota dst=sbuf[0:4]@0:8xfloat32 imm=3\n"),
                 "field 'imm' does not apply to iota in trace format version 1");
    EXPECT_PRED2(contains,
                 error_of(head + "act activation func=gelu dst=sbuf[0:4]@0:8xfloat32 "
                                 "src0=sbuf[0:4]@0:8xfloat32\n"),
                 "activation function 'gelu' is not in trace format version 1");
    EXPECT_PRED2(contains, error_of("trnsim-trace 11\n"),
                 "trace format version 11 is not supported (this build reads 1 to 10)");
}

// Version 7 added the register instructions and the ALU operation abs: version 6 files may not
// use them; in version 7 they read.
TEST(TraceVersions, RegistersAndAbsAreVersionSeven) {
    const std::string head = "hbm_bytes 64\nqueues 0\n";
    const std::string load = "sp register_load src0=sbuf[0:1]@0:1xint32 imm=2\n";
    const std::string abs =
        "dve tensor_tensor alu=abs dst=sbuf[0:4]@0:8xfloat32 src0=sbuf[0:4]@0:8xfloat32 "
        "src1=sbuf[0:4]@0:8xfloat32\n";
    EXPECT_PRED2(contains, error_of("trnsim-trace 6\n" + head + load), "register_load");
    EXPECT_PRED2(contains, error_of("trnsim-trace 6\n" + head + abs), "abs");
    const program p = from_text("trnsim-trace 7\n" + head + load + abs);
    EXPECT_EQ(p.engines[std::size_t(engine_kind::sp)][0].op, opcode::register_load);
    EXPECT_EQ(p.engines[std::size_t(engine_kind::sp)][0].imm, 2.0f);
    EXPECT_EQ(p.engines[std::size_t(engine_kind::dve)][0].alu, alu_op::abs);
}

// Version 6 added stream_shuffle (nc_stream_shuffle): version 5 files may not use it; in
// version 6 it reads, and runs on the Vector engine only.
TEST(TraceVersions, VersionSixAddsStreamShuffle) {
    const std::string line =
        "dve stream_shuffle dst=sbuf[0:32]@0:8xfloat32 src0=sbuf[32:33]@0:8xfloat32 imm=0 "
        "imm1=0 imm3=32\n";
    const std::string head = "hbm_bytes 65536\nqueues 1\n";
    EXPECT_PRED2(contains, error_of("trnsim-trace 5\n" + head + line), "stream_shuffle");
    const program p = from_text("trnsim-trace 6\n" + head + line, "good.trace");
    ASSERT_EQ(p.engines[std::size_t(engine_kind::dve)].size(), 1u);
    EXPECT_EQ(p.engines[std::size_t(engine_kind::dve)][0].op, opcode::stream_shuffle);
}

TEST(TraceVersions, VersionThreeAdditionsAreErrorsInVersionTwo) {
    const std::string head = "trnsim-trace 2\nhbm_bytes 64\nqueues 1\n";
    const std::string ts =
        "dve tensor_scalar alu=add dst=sbuf[0:4]@0:8xfloat32 "
        "src0=sbuf[0:4]@0:8xfloat32 src1=sbuf[0:4]@64:1xfloat32";
    EXPECT_PRED2(contains, error_of(head + ts + " src2=sbuf[0:4]@68:1xfloat32\n"),
                 "bad.trace:4: field 'src2' does not apply to tensor_scalar in trace format "
                 "version 2");
    EXPECT_PRED2(contains, error_of(head + ts + " flags=rev0\n"),
                 "unknown flag 'rev0' (acc, double_row in trace format version 2)");
    EXPECT_PRED2(contains, error_of(head + ts + " at=k.py:3\n"),
                 "at= is not in trace format version 2");
    EXPECT_PRED2(contains,
                 error_of(head + "dve tensor_tensor alu=divide dst=sbuf[0:4]@0:8xfloat32 "
                                 "src0=sbuf[0:4]@0:8xfloat32 src1=sbuf[0:4]@0:8xfloat32\n"),
                 "alu op 'divide' is not in trace format version 2");
    EXPECT_PRED2(contains,
                 error_of(head + "dve reciprocal dst=sbuf[0:4]@0:8xfloat32 "
                                 "src0=sbuf[0:4]@0:8xfloat32\n"),
                 "opcode 'reciprocal' is not in trace format version 2");
    EXPECT_PRED2(contains,
                 error_of(head + "act activation func=mish dst=sbuf[0:4]@0:8xfloat32 "
                                 "src0=sbuf[0:4]@0:8xfloat32\n"),
                 "activation function 'mish' is not in trace format version 2");
    EXPECT_PRED2(contains,
                 error_of(head + "q0 dma dst=sbuf[0:4]@0:8xfloat32 src=hbm[0:4]@0/0:8xfloat32 "
                                 "at=k.py:1\n"),
                 "at= is not in trace format version 2");
    // flags apply to their opcodes only
    EXPECT_PRED2(contains,
                 error_of("trnsim-trace 3\nhbm_bytes 64\nqueues 1\n" + ts + " flags=racc\n"),
                 "flag 'racc' does not apply to tensor_scalar");
    // version 3 reads them, and a place's escapes
    const program p = from_text("trnsim-trace 3\nhbm_bytes 64\nqueues 1\n" + ts +
                                " src2=sbuf[0:4]@68:1xfloat32 flags=rev0 at=a%20b.py:3\n");
    EXPECT_EQ(p.sources.of_engine(engine_kind::dve, 0), "a b.py:3");
    EXPECT_PRED2(contains, error_of("trnsim-trace 3\nhbm_bytes 64\nqueues 1\n" + ts + " at=a%2\n"),
                 "bad escape in at='a%2'");
}

// trn::kernel_builder: buffer allocation, semaphore waits derived from data dependencies
// (RAW, WAR, WAW), redundant-wait pruning, and the trigger placement of the nl and isa styles.
#include "workloads/builder/kernel_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "program/race_check.h"
#include "support/expect_error.h"

namespace {

using namespace trn;
using trn::testing::contains;
using trn::testing::user_error_of;

constexpr std::uint64_t sbuf_cap = 196608, psum_cap = 16384;

program_limits limits() {
    program_limits l;
    l.partitions = 128;
    l.sbuf_partition_bytes = sbuf_cap;
    l.psum_partition_bytes = psum_cap;
    l.hbm_bytes = 1ull << 30;
    l.dma_queues = 16;
    return l;
}

builder_options options(kernel_style style, std::uint32_t nl_buffers = 4) {
    builder_options o;
    o.style = style;
    o.limits = limits();
    o.nl_buffers = nl_buffers;
    return o;
}

const sem_id dve_sem = semaphore_of_engine(engine_kind::dve);

const std::vector<instruction>& stream(const program& p, engine_kind e) {
    return p.engines[std::size_t(e)];
}

// The value an instruction waits for on `sem` (0: no wait).
std::uint32_t wait_value(const instruction& ins, sem_id sem) {
    for (const auto& w : ins.waits)
        if (w.sem == sem) return w.value;
    return 0;
}

// What instruction `idx` of a stream effectively waits for on `sem`: streams run in order, so
// every wait of an earlier instruction also holds for it.
std::uint32_t implied_wait(const std::vector<instruction>& s, std::size_t idx, sem_id sem) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i <= idx; ++i)
        v = std::max(v, wait_value(s[i], sem));
    return v;
}

// No stream waits twice for what it already waited for.
void expect_no_redundant_waits(const program& p) {
    for (auto e : all_engines) {
        std::map<sem_id, std::uint32_t> seen;
        const auto& s = stream(p, e);
        for (std::size_t i = 0; i < s.size(); ++i)
            for (const auto& w : s[i].waits) {
                EXPECT_GT(w.value, seen[w.sem]) << engine_name(e) << " instruction " << i
                                                << " repeats a wait on " << semaphore_name(w.sem);
                seen[w.sem] = w.value;
            }
    }
}

// The vector_add loop: per iteration load a and b, add on the DVE, store the result.
struct vadd {
    kernel_builder kb;
    hbm_tensor a, b, out;
    std::size_t ta, tb, tr;
    std::uint32_t elems;

    vadd(const builder_options& o, std::uint32_t iterations, std::uint32_t elems_ = 4)
        : kb(o), elems(elems_) {
        const std::uint64_t n = std::uint64_t{128} * elems * iterations;
        a = kb.input("a", n, dtype::float32, 0, 1, 1);
        b = kb.input("b", n, dtype::float32, 0, 1, 2);
        out = kb.output("out", n, dtype::float32);
        ta = kb.declare_tile("a_tile", mem_space::sbuf, 128, elems, dtype::float32);
        tb = kb.declare_tile("b_tile", mem_space::sbuf, 128, elems, dtype::float32);
        tr = kb.declare_tile("res_tile", mem_space::sbuf, 128, elems, dtype::float32);
        for (std::uint32_t m = 0; m < iterations; ++m) {
            const std::uint64_t first = std::uint64_t{m} * 128 * elems;
            const tile at = kb.next(ta), bt = kb.next(tb), rt = kb.next(tr);
            kb.load(at, a, kb.view(a, first, 128, elems, elems));
            kb.load(bt, b, kb.view(b, first, 128, elems, elems));
            kb.tensor_tensor(rt, at, bt, alu_op::add);
            kb.store(out, kb.view(out, first, 128, elems, elems), rt);
        }
    }
};

TEST(KernelBuilder, StyleParsing) {
    EXPECT_EQ(parse_style("nl"), kernel_style::nl);
    EXPECT_EQ(parse_style("isa"), kernel_style::isa);
    EXPECT_PRED2(contains, user_error_of([] { parse_style("asm"); }),
                 "'asm' is not one of: nl, isa");
}

TEST(KernelBuilder, TensorsAreQueuedAndPlacedIn4KiBSteps) {
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 1000, dtype::float32, -1, 1, 9);
    const hbm_tensor o = kb.output("o", 10, dtype::bfloat16);
    EXPECT_EQ(a.offset, 0u);
    EXPECT_EQ(o.offset, 4096u);  // 4000 bytes rounded up to 4 KiB
    const program p = kb.finish();
    EXPECT_EQ(p.hbm_bytes, 4096u + 4096u);
    ASSERT_EQ(p.regions.size(), 2u);
    EXPECT_EQ(p.regions[0], (hbm_region{"a", 0, 4000, dtype::float32, true, -1, 1, 9}));
    EXPECT_EQ(p.regions[1].bytes, 20u);
    EXPECT_FALSE(p.regions[1].input);

    kernel_builder big(options(kernel_style::isa));
    const std::string msg =
        user_error_of([&] { big.input("huge", (1ull << 30) / 4 + 1, dtype::float32, 0, 1, 0); });
    EXPECT_PRED2(contains, msg, "'huge'");
    EXPECT_PRED2(contains, msg, std::to_string(1ull << 30));
}

TEST(KernelBuilder, ViewComputesByteOffsetsAndStrides) {
    kernel_builder kb(options(kernel_style::isa));
    kb.input("pad", 1024, dtype::float32, 0, 1, 0);
    const hbm_tensor t = kb.input("t", 128 * 64, dtype::bfloat16, 0, 1, 0);
    const operand v = kb.view(t, 10, 128, 8, 64);
    EXPECT_EQ(v.space, mem_space::hbm);
    EXPECT_EQ(v.type, dtype::bfloat16);
    EXPECT_EQ(v.partitions, 128u);
    EXPECT_EQ(v.elems, 8u);
    EXPECT_EQ(v.offset, t.offset + 10 * 2);
    EXPECT_EQ(v.row_stride, 64u * 2);
    EXPECT_THROW(kb.view(t, 57, 128, 8, 64), std::logic_error);  // last row runs past the end
}

TEST(KernelBuilder, ReadAfterWriteWaitsForTheTransferCount) {
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 128 * 8, dtype::float32, 0, 1, 1);  // queue 0
    const hbm_tensor b = kb.input("b", 128 * 8, dtype::float32, 0, 1, 2);  // queue 1
    const std::size_t ta = kb.declare_tile("ta", mem_space::sbuf, 128, 4, dtype::float32, 2);
    const std::size_t tb = kb.declare_tile("tb", mem_space::sbuf, 128, 4, dtype::float32);
    const std::size_t tr = kb.declare_tile("tr", mem_space::sbuf, 128, 4, dtype::float32, 4);
    const tile a0 = kb.next(ta), a1 = kb.next(ta), b0 = kb.next(tb);
    kb.load(a0, a, kb.view(a, 0, 128, 4, 4));    // q0 transfer 1
    kb.load(a1, a, kb.view(a, 512, 128, 4, 4));  // q0 transfer 2
    kb.load(b0, b, kb.view(b, 0, 128, 4, 4));    // q1 transfer 1
    const tile r0 = kb.next(tr), r1 = kb.next(tr), r2 = kb.next(tr), r3 = kb.next(tr);
    kb.tensor_scalar(r0, a0, alu_op::multiply, 2.0f);              // dve 1: q0>=1
    kb.tensor_tensor(r1, a1, b0, alu_op::add);                     // dve 2: q0>=2, q1>=1
    kb.tensor_copy(r2, a0);                                        // dve 3: implied
    kb.tensor_copy(r3, r1, engine_kind::act);                      // act 1: dve>=2
    kb.tensor_tensor(r2, a0, b0, alu_op::max, engine_kind::pool);  // pool 1: RAW+WAW
    const program p = kb.finish();
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(dve.size(), 3u);
    EXPECT_EQ(dve[0].waits, (wait_list{{semaphore_of_queue(0), 1}}));
    EXPECT_EQ(dve[1].waits, (wait_list{{semaphore_of_queue(0), 2}, {semaphore_of_queue(1), 1}}));
    EXPECT_TRUE(dve[2].waits.empty());  // q0>=1 is implied by dve instruction 1's q0>=2
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 1u);
    EXPECT_EQ(act[0].waits, (wait_list{{dve_sem, 2}}));  // r1 is dve instruction 2
    // Another engine does not inherit the DVE's waits; writing r2 waits for its writer (dve 3).
    const auto& pool = stream(p, engine_kind::pool);
    ASSERT_EQ(pool.size(), 1u);
    EXPECT_EQ(wait_value(pool[0], semaphore_of_queue(0)), 1u);
    EXPECT_EQ(wait_value(pool[0], semaphore_of_queue(1)), 1u);
    EXPECT_EQ(wait_value(pool[0], dve_sem), 3u);
    // Loads read HBM inputs nobody writes: no waits.
    for (const auto& trig : stream(p, engine_kind::sp))
        EXPECT_TRUE(trig.waits.empty());
    EXPECT_NO_THROW(validate_program(p, limits()));
}

TEST(KernelBuilder, AnInstructionWithASecondOutputOrdersBoth) {
    // activation_reduce writes dst and dst1: a reader of either waits for it, and it waits
    // for the readers of both (WAR); its scale (src2) is read like any source.
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 128 * 8, dtype::float32, 0, 1, 1);
    const std::size_t tx = kb.declare_tile("x", mem_space::sbuf, 128, 8, dtype::float32);
    const std::size_t ts = kb.declare_tile("s", mem_space::sbuf, 128, 1, dtype::float32);
    const std::size_t ty = kb.declare_tile("y", mem_space::sbuf, 128, 8, dtype::float32);
    const std::size_t tr = kb.declare_tile("r", mem_space::sbuf, 128, 1, dtype::float32);
    const tile x = kb.next(tx), s = kb.next(ts), y = kb.next(ty), r = kb.next(tr);
    kb.load(x, a, kb.view(a, 0, 128, 8, 8));  // q0 transfer 1
    kb.memset(s, 2.0f);                       // dve 1
    kb.tensor_copy(r, s);                     // dve 2 reads s... and writes r
    instruction ins;
    ins.op = opcode::activation_reduce;
    ins.func = act_func::exp;
    ins.alu = alu_op::add;
    kb.set_place("k.py:7");
    kb.instruction_op(engine_kind::act, ins, &y, &x, nullptr, &s, &r);  // act 1
    kb.set_place("");
    kb.tensor_copy(s, r);  // dve 3: reads r (RAW on act 1's dst1)
    const program p = kb.finish();
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 1u);
    EXPECT_EQ(act[0].src2, s.op);
    EXPECT_EQ(act[0].dst1, r.op);
    EXPECT_EQ(wait_value(act[0], semaphore_of_queue(0)), 1u);  // x loaded
    EXPECT_EQ(wait_value(act[0], dve_sem), 2u);                // s set, r written (WAW)
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(dve.size(), 3u);
    EXPECT_EQ(wait_value(dve[2], semaphore_of_engine(engine_kind::act)), 1u);
    // the activation has the place set; the others, built with none set, their steps
    EXPECT_EQ(p.sources.of_engine(engine_kind::act, 0), "k.py:7");
    EXPECT_EQ(p.sources.of_engine(engine_kind::dve, 0), "memset s");
    EXPECT_EQ(p.sources.of_engine(engine_kind::dve, 2), "tensor_copy s");
    EXPECT_EQ(p.sources.of_queue(0, 0), "load x");
    EXPECT_EQ(p.sources.of_engine(engine_kind::sp, 0), "load x");  // its trigger
    EXPECT_NO_THROW(validate_program(p, limits()));
}

TEST(KernelBuilder, AnIndirectOperandOrdersWithAllOfItsTileAndItsOffsets) {
    // A gather of 4 columns of x (v4 tensor indirection) may read any of x's 64 columns: it
    // waits for a write of its last column and for its offsets; a scatter into y waits for a
    // reader of y's first column, and a reader of any of y's columns waits for it.
    kernel_builder kb(options(kernel_style::isa));
    const std::size_t tx = kb.declare_tile("x", mem_space::sbuf, 128, 64, dtype::float32);
    const std::size_t ti = kb.declare_tile("i", mem_space::sbuf, 128, 1, dtype::int32);
    const std::size_t ty = kb.declare_tile("y", mem_space::sbuf, 128, 64, dtype::float32);
    const std::size_t tz = kb.declare_tile("z", mem_space::sbuf, 128, 4, dtype::float32);
    const tile x = kb.next(tx), idx = kb.next(ti), y = kb.next(ty), z = kb.next(tz);
    kb.memset(y, 0.0f);                                           // dve 1
    kb.tensor_copy(z, kernel_builder::part(y, 0, 128, 0, 4, 1));  // dve 2: reads y[:, 0:4]
    kb.memset(kernel_builder::part(x, 0, 128, 63, 1, 1), 1.0f);   // dve 3: x's last column
    instruction iota;
    iota.op = opcode::iota;
    kb.instruction_op(engine_kind::pool, iota, &idx, nullptr);  // pool 1: the offsets
    const auto indirect = [&](const tile& t) {
        tile v = kernel_builder::part(t, 0, 128, 0, 64, 1);
        v.op.elems = 4;
        v.extent = 64;
        v.index = idx.op;
        v.index_buffer = idx.buffer;
        return v;
    };
    instruction exp;
    exp.op = opcode::activation;
    exp.func = act_func::exp;
    const tile gather = indirect(x);
    const tile scattered = indirect(y);
    kb.instruction_op(engine_kind::act, exp, &scattered, &gather);  // act 1
    kb.tensor_copy(z, kernel_builder::part(y, 0, 128, 60, 4, 1));   // dve 4: y's last columns
    const program p = kb.finish();
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 1u);
    ASSERT_EQ(act[0].indirect.size(), 2u);
    EXPECT_EQ(act[0].indirect[0].slot, operand_slot::dst);
    EXPECT_EQ(act[0].indirect[1].slot, operand_slot::src0);
    EXPECT_EQ(act[0].indirect[1].extent, 64u);
    EXPECT_EQ(act[0].src0.elems, 4u);
    EXPECT_EQ(wait_value(act[0], dve_sem), 3u);  // x's column 63 set (outside the view's 0:4)
    EXPECT_EQ(wait_value(act[0], semaphore_of_engine(engine_kind::pool)), 1u);
    EXPECT_EQ(wait_value(stream(p, engine_kind::dve)[3], semaphore_of_engine(engine_kind::act)),
              1u);
}

TEST(KernelBuilder, DisjointPartsOfATileAreNotOrdered) {
    // Four loads fill the four quarters of one tile (as `strip[:, r*W:(r+1)*W] = nl.load(...)`
    // does): none waits for another. A read of two quarters waits for those two loads only; a
    // load over quarters 1 and 2 waits for their loads (WAW) and that reader (WAR).
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 128 * 64, dtype::float32, 0, 1, 1);  // queue 0
    const std::size_t ts = kb.declare_tile("strip", mem_space::sbuf, 128, 64, dtype::float32);
    const std::size_t tr = kb.declare_tile("r", mem_space::sbuf, 128, 32, dtype::float32);
    const tile strip = kb.next(ts), r = kb.next(tr);
    for (std::uint32_t q = 0; q < 4; ++q)
        kb.load(kb.slice(strip, q * 16, 16), a, kb.view(a, q * 16, 128, 16, 64));
    kb.tensor_copy(r, kb.slice(strip, 16, 32));                       // dve 1: quarters 1, 2
    kb.load(kb.slice(strip, 24, 16), a, kb.view(a, 0, 128, 16, 64));  // q0 transfer 5
    const program p = kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    ASSERT_EQ(sp.size(), 5u);
    for (std::size_t i = 0; i < 4; ++i)
        EXPECT_TRUE(sp[i].waits.empty()) << "load " << i;
    EXPECT_EQ(stream(p, engine_kind::dve)[0].waits, (wait_list{{semaphore_of_queue(0), 3}}));
    EXPECT_EQ(implied_wait(sp, 4, semaphore_of_queue(0)), 3u);
    EXPECT_EQ(implied_wait(sp, 4, dve_sem), 1u);
    EXPECT_TRUE(find_races(p).empty());
    expect_no_redundant_waits(p);
}

TEST(KernelBuilder, CompilerChosenCopiesGoWhereTheyCostLess) {
    // nl: each copy goes to the Vector or Scalar engine where it costs less (cost table at the
    // engine's clock), whatever either has queued; isa, and int32 data, keep the Vector engine.
    for (const kernel_style style : {kernel_style::nl, kernel_style::isa}) {
        kernel_builder kb(options(style));
        const std::size_t ts = kb.declare_tile("s", mem_space::sbuf, 128, 256, dtype::float32);
        const std::size_t td = kb.declare_tile("d", mem_space::sbuf, 128, 256, dtype::float32, 8);
        const std::size_t ti = kb.declare_tile("i", mem_space::sbuf, 128, 256, dtype::int32, 2);
        const tile src = kb.next(ts);
        kb.memset(src, 1.0f);  // dve: 256 cycles
        for (int i = 0; i < 6; ++i)
            kb.copy(kb.next(td), src);
        const tile i0 = kb.next(ti), i1 = kb.next(ti);
        kb.memset(i0, 0.0f);
        kb.copy(i1, i0);
        const program p = kb.finish();
        const auto acts = stream(p, engine_kind::act).size();
        if (style == kernel_style::isa) {
            EXPECT_EQ(acts, 0u);
            EXPECT_EQ(stream(p, engine_kind::dve).size(), 9u);
            continue;
        }
        // 256 elements: 229 ns on the Vector engine (1.12 GHz), 183 ns on the Scalar (1.4 GHz):
        // all six on the Scalar engine, though it is the busier from the second on.
        EXPECT_EQ(acts, 6u);
        for (const auto& ins : stream(p, engine_kind::act)) {
            EXPECT_EQ(ins.op, opcode::activation);
            EXPECT_EQ(ins.func, act_func::identity);
        }
        EXPECT_EQ(stream(p, engine_kind::dve).back().op, opcode::tensor_copy);  // the int32 copy
        EXPECT_NEAR(kb.estimated_ns(engine_kind::act), 6 * 256 / 1.4, 1e-6);
        EXPECT_NEAR(kb.estimated_ns(engine_kind::dve), 3 * 256 / 1.12, 1e-6);
    }
}

TEST(KernelBuilder, AtEqualCostTheCompilerPicksTheLessLoadedEngine) {
    // Both engines at one clock: a copy (N cycles on either) goes to the one with less queued.
    builder_options o = options(kernel_style::nl);
    o.act_clock_ghz = o.dve_clock_ghz;
    kernel_builder kb(o);
    const std::size_t ts = kb.declare_tile("s", mem_space::sbuf, 128, 256, dtype::float32);
    const std::size_t td = kb.declare_tile("d", mem_space::sbuf, 128, 256, dtype::float32, 8);
    const tile src = kb.next(ts);
    kb.memset(src, 1.0f);  // dve: 256 cycles
    for (int i = 0; i < 4; ++i)
        kb.copy(kb.next(td), src);
    const program p = kb.finish();
    // act, then (act 1 = dve 1: the Vector engine) dve, act, then dve at 2 against 2
    EXPECT_EQ(stream(p, engine_kind::act).size(), 2u);
    EXPECT_EQ(stream(p, engine_kind::dve).size(), 3u);
}

TEST(KernelBuilder, AnOpenTensorScalarGoesWhereItCostsLess) {
    // tensor_scalar_open: the Scalar engine at fp32 on NC-v2's clocks (N cycles on both); on
    // NC-v3 the Vector engine's 2x mode wins from N = 80, the Scalar engine's MIN_II below.
    for (const int isa : {2, 3}) {
        builder_options o = options(kernel_style::nl);
        o.isa_version = isa;
        if (isa == 3) o.dve_clock_ghz = 0.96, o.act_clock_ghz = 1.2;
        kernel_builder kb(o);
        const std::size_t tb = kb.declare_tile("b", mem_space::sbuf, 128, 1, dtype::float32);
        const std::size_t tw = kb.declare_tile("w", mem_space::sbuf, 128, 512, dtype::float32, 2);
        const std::size_t tn = kb.declare_tile("n", mem_space::sbuf, 128, 64, dtype::float32, 2);
        const tile b = kb.next(tb), wide = kb.next(tw), narrow = kb.next(tn);
        kb.memset(b, 1.0f);
        kb.memset(wide, 2.0f);
        kb.memset(narrow, 3.0f);
        kb.tensor_scalar_open(kb.next(tw), wide, alu_op::add, b);
        kb.tensor_scalar_open(kb.next(tn), narrow, alu_op::multiply, b);
        const program p = kb.finish();
        const auto& act = stream(p, engine_kind::act);
        if (isa == 2) {
            ASSERT_EQ(act.size(), 2u);
        } else {
            ASSERT_EQ(act.size(), 1u);  // the narrow one
            EXPECT_EQ(act[0].dst.elems, 64u);
            EXPECT_EQ(stream(p, engine_kind::dve).back().op, opcode::tensor_scalar);
        }
        for (const auto& ins : act)
            EXPECT_EQ(ins.op, opcode::tensor_scalar);
    }
}

TEST(KernelBuilder, ATriggerWaitsForTheOtherEnginesTransferBeforeItOnItsQueue) {
    // Tensors 0 and 16 share DMA queue 0: the store of tensor 16 (triggered from the Scalar
    // engine once its data is ready) comes first in the queue, so the load of tensor 0, which
    // needs nothing, must still let it start first: its Sync-engine trigger waits for it.
    kernel_builder kb(options(kernel_style::nl));
    std::vector<hbm_tensor> t;
    for (int i = 0; i < 16; ++i)
        t.push_back(kb.input("x" + std::to_string(i), 128 * 4, dtype::float32, 0, 1, 1));
    const hbm_tensor out = kb.output("y", 128 * 4, dtype::float32);  // id 16: queue 0
    const tile a = kb.next(kb.declare_tile("a", mem_space::sbuf, 128, 4, dtype::float32));
    const tile b = kb.next(kb.declare_tile("b", mem_space::sbuf, 128, 4, dtype::float32));
    const tile c = kb.next(kb.declare_tile("c", mem_space::sbuf, 128, 4, dtype::float32));
    kb.load(a, t[1], kb.view(t[1], 0, 128, 4, 4));
    kb.activation(b, a, act_func::exp);
    kb.store(out, kb.view(out, 0, 128, 4, 4), b);   // q0 transfer 1, from the Scalar engine
    kb.load(c, t[0], kb.view(t[0], 0, 128, 4, 4));  // q0 transfer 2, from the Sync engine
    const program p = kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    ASSERT_EQ(sp.size(), 2u);
    EXPECT_EQ(sp[1].waits, (wait_list{{semaphore_of_queue(0), 1}}));
    EXPECT_TRUE(find_races(p).empty());
}

TEST(KernelBuilder, ReadAfterWriteThroughHbm) {
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor o = kb.output("o", 128 * 4, dtype::float32);  // queue 0
    const std::size_t t = kb.declare_tile("t", mem_space::sbuf, 128, 4, dtype::float32, 2);
    const tile t0 = kb.next(t), t1 = kb.next(t);
    kb.memset(t0, 1.0f);                        // dve 1
    kb.store(o, kb.view(o, 0, 128, 4, 4), t0);  // q0 transfer 1 (act), waits dve>=1
    kb.load(t1, o, kb.view(o, 0, 128, 4, 4));   // q0 transfer 2 (sp), waits q0>=1
    const program p = kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 1u);
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(act[0].waits, (wait_list{{dve_sem, 1}}));
    EXPECT_EQ(sp[0].waits, (wait_list{{semaphore_of_queue(0), 1}}));
    EXPECT_NO_THROW(validate_program(p, limits()));
}

TEST(KernelBuilder, IsaWriteAfterReadWaitsForTheReader) {
    // isa: one buffer per tile, so iteration 1's load into a_tile must wait until the DVE add
    // of iteration 0 has read it.
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 128 * 8, dtype::float32, 0, 1, 1);
    const hbm_tensor b = kb.input("b", 128 * 8, dtype::float32, 0, 1, 2);
    const std::size_t ta = kb.declare_tile("a_tile", mem_space::sbuf, 128, 4, dtype::float32);
    const std::size_t tb = kb.declare_tile("b_tile", mem_space::sbuf, 128, 4, dtype::float32);
    const std::size_t tr = kb.declare_tile("res_tile", mem_space::sbuf, 128, 4, dtype::float32);
    for (std::uint32_t m = 0; m < 2; ++m) {
        const tile at = kb.next(ta), bt = kb.next(tb), rt = kb.next(tr);
        EXPECT_EQ(at.op.offset, kb.next(ta).op.offset);  // a single buffer
        kb.load(at, a, kb.view(a, m * 512, 128, 4, 4));
        kb.load(bt, b, kb.view(b, m * 512, 128, 4, 4));
        kb.tensor_tensor(rt, at, bt, alu_op::add);
    }
    const program p = kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    ASSERT_EQ(sp.size(), 4u);
    EXPECT_TRUE(sp[0].waits.empty());
    EXPECT_TRUE(sp[1].waits.empty());
    EXPECT_EQ(wait_value(sp[2], dve_sem), 1u);                // WAR: the add of iteration 0
    EXPECT_EQ(wait_value(sp[2], semaphore_of_queue(0)), 1u);  // WAW: the previous load
    // b_tile has the same WAR hazard; the DVE wait is already implied by sp instruction 2.
    EXPECT_EQ(sp[3].waits, (wait_list{{semaphore_of_queue(1), 1}}));
    EXPECT_EQ(implied_wait(sp, 3, dve_sem), 1u);
    // The second add overwrites res_tile: it waits for the first (WAW on its own engine).
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(dve.size(), 2u);
    EXPECT_EQ(wait_value(dve[1], dve_sem), 1u);
    EXPECT_EQ(wait_value(dve[1], semaphore_of_queue(0)), 2u);
    EXPECT_EQ(wait_value(dve[1], semaphore_of_queue(1)), 2u);
    expect_no_redundant_waits(p);
}

TEST(KernelBuilder, IsaLoopSerialisesOnTheSingleBuffers) {
    const std::uint32_t iterations = 6;
    vadd v(options(kernel_style::isa), iterations);
    const program p = v.kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    const auto& act = stream(p, engine_kind::act);
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(sp.size(), 2u * iterations);  // loads from the Sync engine
    ASSERT_EQ(act.size(), iterations);      // stores from the Scalar engine
    ASSERT_EQ(dve.size(), iterations);
    for (std::uint32_t m = 0; m < iterations; ++m) {
        // sp: load a (2m), load b (2m+1); act: store (m).
        EXPECT_EQ(sp[2 * m].queue, 0u);
        EXPECT_EQ(sp[2 * m + 1].queue, 1u);
        EXPECT_EQ(act[m].queue, 2u);
        EXPECT_EQ(implied_wait(sp, 2 * m, dve_sem), m) << m;   // WAR: the add of iteration m-1
        EXPECT_EQ(implied_wait(act, m, dve_sem), m + 1) << m;  // RAW: this add
        EXPECT_EQ(wait_value(dve[m], semaphore_of_queue(0)), m + 1) << m;
        EXPECT_EQ(wait_value(dve[m], semaphore_of_queue(1)), m + 1) << m;
        EXPECT_EQ(implied_wait(dve, m, semaphore_of_queue(2)), m) << m;  // WAR: store m-1
    }
    expect_no_redundant_waits(p);
    EXPECT_NO_THROW(validate_program(p, limits()));
}

TEST(KernelBuilder, NlRotatesFourBuffersAndWaitsOnlyForIterationMinusFour) {
    const std::uint32_t iterations = 10, buffers = 4;
    vadd v(options(kernel_style::nl, buffers), iterations);
    const program p = v.kb.finish();
    const auto& sp = stream(p, engine_kind::sp);
    const auto& act = stream(p, engine_kind::act);
    const auto& dve = stream(p, engine_kind::dve);
    // Loads triggered from the Sync engine, stores from the Scalar engine.
    ASSERT_EQ(sp.size(), 2u * iterations);
    ASSERT_EQ(act.size(), iterations);
    ASSERT_EQ(dve.size(), iterations);
    for (const auto& t : sp)
        EXPECT_NE(t.queue, 2u);
    for (const auto& t : act) {
        EXPECT_EQ(t.op, opcode::dma_trigger);
        EXPECT_EQ(t.queue, 2u);
    }
    const std::uint64_t aligned = (std::uint64_t{v.elems} * 4 + 63) / 64 * 64;
    std::set<std::uint64_t> a_offsets;
    for (std::uint32_t i = 0; i < iterations; ++i) {
        const std::uint32_t previous_reader = i >= buffers ? i - buffers + 1 : 0;
        EXPECT_EQ(wait_value(sp[2 * i], dve_sem), previous_reader) << i;
        EXPECT_EQ(implied_wait(sp, 2 * i, dve_sem), previous_reader) << i;
        EXPECT_EQ(implied_wait(sp, 2 * i + 1, dve_sem), previous_reader) << i;
        EXPECT_EQ(wait_value(act[i], dve_sem), i + 1) << i;  // store after this add
        EXPECT_EQ(wait_value(dve[i], semaphore_of_queue(0)), i + 1) << i;
        EXPECT_EQ(wait_value(dve[i], semaphore_of_queue(1)), i + 1) << i;
        EXPECT_EQ(implied_wait(dve, i, semaphore_of_queue(2)), previous_reader) << i;
        // Buffer i % 4 of a_tile.
        const std::uint64_t off = p.queues[0][i].dst.offset;
        EXPECT_EQ(off, p.queues[0][i % buffers].dst.offset) << i;
        a_offsets.insert(off);
    }
    ASSERT_EQ(a_offsets.size(), buffers);
    EXPECT_EQ(*a_offsets.rbegin() - *a_offsets.begin(), (buffers - 1) * aligned);
    expect_no_redundant_waits(p);
    EXPECT_NO_THROW(validate_program(p, limits()));
}

TEST(KernelBuilder, RedundantWaitsArePruned) {
    kernel_builder kb(options(kernel_style::isa));
    const hbm_tensor a = kb.input("a", 128 * 4, dtype::float32, 0, 1, 1);
    const std::size_t ta = kb.declare_tile("ta", mem_space::sbuf, 128, 4, dtype::float32);
    const std::size_t tr = kb.declare_tile("tr", mem_space::sbuf, 128, 4, dtype::float32, 3);
    const tile at = kb.next(ta);
    kb.load(at, a, kb.view(a, 0, 128, 4, 4));
    const tile r0 = kb.next(tr), r1 = kb.next(tr), r2 = kb.next(tr);
    kb.tensor_scalar(r0, at, alu_op::add, 1.0f);
    kb.tensor_scalar(r1, at, alu_op::add, 2.0f);                     // same wait: pruned
    kb.tensor_scalar(r2, at, alu_op::add, 3.0f, engine_kind::pool);  // other engine: kept
    const program p = kb.finish();
    const auto& dve = stream(p, engine_kind::dve);
    ASSERT_EQ(dve.size(), 2u);
    EXPECT_EQ(dve[0].waits, (wait_list{{semaphore_of_queue(0), 1}}));
    EXPECT_TRUE(dve[1].waits.empty());
    EXPECT_EQ(stream(p, engine_kind::pool)[0].waits, (wait_list{{semaphore_of_queue(0), 1}}));
}

TEST(KernelBuilder, TooManyPartitionsNamesTileAndLimit) {
    kernel_builder kb(options(kernel_style::nl));
    const std::string msg =
        user_error_of([&] { kb.declare_tile("big", mem_space::sbuf, 256, 4, dtype::float32); });
    EXPECT_PRED2(contains, msg, "'big'");
    EXPECT_PRED2(contains, msg, "number of partitions 256 exceed architecture limitation of 128");
    const std::string at = user_error_of(
        [&] { kb.declare_tile_at("big_at", mem_space::sbuf, 129, 4, dtype::float32, 0, 1); });
    EXPECT_PRED2(contains, at, "'big_at'");
    EXPECT_PRED2(contains, at, "number of partitions 129 exceed architecture limitation of 128");
    EXPECT_NO_THROW(kb.declare_tile("full", mem_space::sbuf, 128, 4, dtype::float32));
    EXPECT_PRED2(contains, user_error_of([&] {
                     kb.declare_tile("none", mem_space::sbuf, 128, 0, dtype::float32);
                 }),
                 "'none' is empty");
}

TEST(KernelBuilder, SbufOverAllocationNamesTile) {
    kernel_builder kb(options(kernel_style::isa));
    const std::uint32_t first_elems = 40000;  // 160000 bytes per partition
    kb.declare_tile("first", mem_space::sbuf, 128, first_elems, dtype::float32);
    const std::uint64_t used = (std::uint64_t{first_elems} * 4 + 63) / 64 * 64;
    const std::uint32_t fits = static_cast<std::uint32_t>((sbuf_cap - used) / 4);
    const std::string msg = user_error_of(
        [&] { kb.declare_tile("second", mem_space::sbuf, 128, fits + 1, dtype::float32); });
    EXPECT_PRED2(contains, msg, "sbuf allocation of tile 'second'");
    EXPECT_PRED2(contains, msg, std::to_string(used) + " of " + std::to_string(sbuf_cap));
    // What is left still fits exactly.
    EXPECT_NO_THROW(kb.declare_tile("rest", mem_space::sbuf, 128, fits, dtype::float32));

    const std::string psum = user_error_of(
        [&] { kb.declare_tile("acc", mem_space::psum, 128, psum_cap / 4 + 1, dtype::float32); });
    EXPECT_PRED2(contains, psum, "psum allocation of tile 'acc'");
    EXPECT_PRED2(contains, psum, std::to_string(psum_cap));

    const std::string direct = user_error_of([&] {
        kb.declare_tile_at("fixed", mem_space::sbuf, 128, 1000, dtype::float32, sbuf_cap - 8000, 3);
    });
    EXPECT_PRED2(contains, direct, "'fixed'");
    EXPECT_PRED2(contains, direct, std::to_string(sbuf_cap));
}

TEST(KernelBuilder, NlShrinksBuffersWhenSbufIsShort) {
    const std::uint32_t elems = 15000, nl_buffers = 4;  // 60000 bytes per partition
    const std::uint64_t aligned = (std::uint64_t{elems} * 4 + 63) / 64 * 64;
    const std::uint64_t expected = std::min<std::uint64_t>(nl_buffers, sbuf_cap / aligned);
    ASSERT_LT(expected, nl_buffers);  // the premise of the test
    kernel_builder kb(options(kernel_style::nl, nl_buffers));
    const std::size_t t = kb.declare_tile("wide", mem_space::sbuf, 128, elems, dtype::float32);
    std::vector<std::uint64_t> offsets;
    for (std::uint64_t i = 0; i < 2 * expected; ++i)
        offsets.push_back(kb.next(t).op.offset);
    for (std::uint64_t i = 0; i < expected; ++i) {
        EXPECT_EQ(offsets[i], i * aligned);
        EXPECT_EQ(offsets[i + expected], offsets[i]);  // rotates with period `expected`
    }
    // An explicit buffer count is not shrunk.
    kernel_builder explicit_kb(options(kernel_style::nl, nl_buffers));
    const std::string msg = user_error_of(
        [&] { explicit_kb.declare_tile("wide4", mem_space::sbuf, 128, elems, dtype::float32, 4); });
    EXPECT_PRED2(contains, msg, "'wide4'");
}

TEST(KernelBuilder, PlanBuffersSharesOneCountThatFitsAndKeepsCarriedStateSingle) {
    kernel_builder nl(options(kernel_style::nl, 4));
    // SBUF: a carried accumulator (32 x 1 KiB, single), two rotating arrays of 16 KiB and
    // 31.5 KiB per buffer and a 4 KiB tile: 32 KiB + b x 51.5 KiB fits 192 KiB for b = 3, and
    // the 5.5 KiB left give the tile (not the arrays) a fourth buffer; PSUM: 2 KiB, 4 fit.
    const std::vector<tile_request> r = {{mem_space::sbuf, 1024, 32, true, {}},
                                         {mem_space::sbuf, 2048, 8, false, {}},
                                         {mem_space::sbuf, 4000, 8, false, {}},
                                         {mem_space::psum, 2048, 1, false, {}},
                                         {mem_space::sbuf, 4096, 1, false, {}}};
    EXPECT_EQ(nl.plan_buffers(r), (std::vector<std::uint32_t>{1, 3, 3, 4, 4}));
    // Not even one buffer each fits: 1, and declaring reports the overflow.
    const std::vector<tile_request> big = {{mem_space::sbuf, 100000, 2, false, {}}};
    EXPECT_EQ(nl.plan_buffers(big), (std::vector<std::uint32_t>{1}));
    kernel_builder isa(options(kernel_style::isa));
    EXPECT_EQ(isa.plan_buffers(r), (std::vector<std::uint32_t>{1, 1, 1, 1, 1}));
    // A declaration in a 2-trip loop rotates over 2 at most; in a loop longer than the
    // unroll limit (a hardware loop), over 1.
    tile_request two = r[1], hw = r[1];
    two.loops = {1, 2};  // a single-trip loop is no loop
    hw.loops = {100000};
    EXPECT_EQ(nl.plan_buffers({two, hw, r[3]}), (std::vector<std::uint32_t>{2, 1, 4}));
    // Nested short loops unroll together while within the unroll limit (4096 for nl).
    EXPECT_EQ(nl.unrolled_trips({}), 0u);
    EXPECT_EQ(nl.unrolled_trips({8, 2, 2}), 32u);
    EXPECT_EQ(nl.unrolled_trips({4096, 2, 1}), 2u);
    EXPECT_EQ(nl.unrolled_trips({25600}), 25600u);
    // Without the accumulator and the tile, 4 x 47.5 KiB fit: both arrays rotate over 4.
    EXPECT_EQ(nl.plan_buffers({r[1], r[2]}), (std::vector<std::uint32_t>{4, 4}));
}

TEST(KernelBuilder, IsaUsesOneBufferNlUsesConfiguredCount) {
    kernel_builder isa(options(kernel_style::isa));
    const std::size_t ti = isa.declare_tile("t", mem_space::sbuf, 128, 4, dtype::float32);
    const std::uint64_t first = isa.next(ti).op.offset;
    EXPECT_EQ(isa.next(ti).op.offset, first);

    const std::uint32_t nl_buffers = 3;
    kernel_builder nl(options(kernel_style::nl, nl_buffers));
    const std::size_t tn = nl.declare_tile("t", mem_space::sbuf, 128, 20, dtype::float32);
    std::set<std::uint64_t> seen;
    for (std::uint32_t i = 0; i < 2 * nl_buffers; ++i)
        seen.insert(nl.next(tn).op.offset);
    EXPECT_EQ(seen.size(), nl_buffers);
    // Buffers are 64-byte aligned: 80 bytes take 128.
    EXPECT_EQ(*std::next(seen.begin()), 128u);
}

// Buffers a declaration rotates over, counted through the offsets of its instances.
std::size_t distinct_buffers(kernel_builder& kb, std::size_t decl) {
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 64; ++i)
        seen.insert(kb.next(decl).op.offset);
    return seen.size();
}

TEST(KernelBuilder, LoopsTheCompilerUnrollsRotateBuffersLongerLoopsKeepOne) {
    for (const kernel_style style : {kernel_style::nl, kernel_style::isa}) {
        builder_options o = options(style, 4);
        o.nl_unroll_limit = 300;
        o.isa_unroll_limit = 50;
        const std::uint64_t limit = style == kernel_style::nl ? 300 : 50;
        kernel_builder kb(o);
        const auto unrolled =
            kb.declare_tile("u", mem_space::sbuf, 128, 2, dtype::float32, 0, limit);
        const auto rolled =
            kb.declare_tile("r", mem_space::sbuf, 128, 2, dtype::float32, 0, limit + 1);
        const auto short_loop = kb.declare_tile("s", mem_space::sbuf, 128, 2, dtype::float32, 0, 2);
        const auto outside = kb.declare_tile("o", mem_space::sbuf, 128, 2, dtype::float32);
        EXPECT_EQ(distinct_buffers(kb, unrolled), 4u);
        EXPECT_EQ(distinct_buffers(kb, rolled), 1u);
        EXPECT_EQ(distinct_buffers(kb, short_loop), 2u);  // no more buffers than instances
        // Outside a loop (or unsaid) the style decides as before.
        EXPECT_EQ(distinct_buffers(kb, outside), style == kernel_style::nl ? 4u : 1u);
        EXPECT_EQ(kb.policy_buffers(limit + 1), 1u);
        EXPECT_EQ(kb.buffers_that_fit(8, limit), 4u);
    }
}

// Two independent chains of the Vector and the Scalar engine (DVE -> ACT -> DVE -> y), written
// one after the other: the scheduler places the second chain's first Vector-engine step before
// the first chain's last (which waits for the Scalar engine), within one body.
program ping_pong(builder_options o, bool reorder, std::uint64_t fence_trips = 0) {
    kernel_builder kb(o);
    const hbm_tensor y = kb.output("y", 128 * 512 * 2, dtype::float32);
    const auto ta = kb.declare_tile("a", mem_space::sbuf, 128, 512, dtype::float32);
    const auto tb = kb.declare_tile("b", mem_space::sbuf, 128, 512, dtype::float32);
    const auto tc = kb.declare_tile("c", mem_space::sbuf, 128, 512, dtype::float32);
    kb.set_reorder(reorder);
    for (std::uint32_t i = 0; i < 2; ++i) {
        if (fence_trips) kb.loop_iteration(fence_trips);
        const tile at = kb.next(ta), bt = kb.next(tb), ct = kb.next(tc);
        kb.memset(at, float(i + 2));  // (the immediates name the chain)
        kb.activation(bt, at, act_func::exp);
        kb.tensor_scalar(ct, bt, alu_op::add, float(i + 10));
        kb.store(y, kb.view(y, i * 128 * 512, 128, 512, 512), ct);
    }
    return kb.finish();
}

std::vector<float> dve_immediates(const program& p) {
    std::vector<float> out;
    for (const auto& ins : stream(p, engine_kind::dve))
        out.push_back(ins.imm);
    return out;
}

TEST(KernelBuilder, TheSchedulerPlacesIndependentWorkBeforeAnEngineWouldWait) {
    builder_options o = options(kernel_style::nl);
    o.schedule_window = 16;
    const program in_order = ping_pong(o, false);
    EXPECT_EQ(dve_immediates(in_order), (std::vector<float>{2, 10, 3, 11}));
    const program scheduled = ping_pong(o, true);
    EXPECT_EQ(dve_immediates(scheduled), (std::vector<float>{2, 3, 10, 11}));
    // The waits follow the order the entries were placed in: valid, and no access unordered.
    EXPECT_NO_THROW(validate_program(scheduled, limits()));
    EXPECT_TRUE(find_races(scheduled).empty());
    // The first chain's last step waits for the Scalar engine's first instruction, the second
    // chain's for its second.
    const auto& dve = stream(scheduled, engine_kind::dve);
    EXPECT_EQ(wait_value(dve[2], semaphore_of_engine(engine_kind::act)), 1u);
    EXPECT_EQ(wait_value(dve[3], semaphore_of_engine(engine_kind::act)), 2u);
    // A loop the compiler keeps (more iterations than compiler.schedule_unroll_limit) is
    // scheduled one body at a time; a shorter one is unrolled into its parent's body.
    o.schedule_unroll_limit = 2;
    EXPECT_EQ(dve_immediates(ping_pong(o, true, 3)), (std::vector<float>{2, 10, 3, 11}));
    EXPECT_EQ(dve_immediates(ping_pong(o, true, 2)), (std::vector<float>{2, 3, 10, 11}));
    // An isa kernel, and a window of 0, keep program order.
    o.style = kernel_style::isa;
    EXPECT_EQ(dve_immediates(ping_pong(o, true)), (std::vector<float>{2, 10, 3, 11}));
    o.style = kernel_style::nl;
    o.schedule_window = 0;
    EXPECT_EQ(dve_immediates(ping_pong(o, true)), (std::vector<float>{2, 10, 3, 11}));
}

// A continuation run reads what a load held back before its instruction writes: the
// instruction and its run wait for the load, and the run waits for nothing on its own engine.
TEST(KernelBuilder, TheSchedulerKeepsAContinuationAfterWhatItDependsOn) {
    builder_options o = options(kernel_style::nl);
    o.schedule_window = 16;
    kernel_builder kb(o);
    const hbm_tensor x = kb.input("x", 128 * 512, dtype::float32, 0, 1, 1);  // queue 0
    const auto ta = kb.declare_tile("a", mem_space::sbuf, 128, 1024, dtype::float32);
    const auto tz = kb.declare_tile("z", mem_space::sbuf, 128, 512, dtype::float32);
    const auto tb = kb.declare_tile("b", mem_space::sbuf, 128, 512, dtype::float32);
    const auto tr = kb.declare_tile("r", mem_space::sbuf, 128, 1024, dtype::float32);
    kb.set_reorder(true);
    const tile a = kb.next(ta), z = kb.next(tz), b = kb.next(tb), r = kb.next(tr);
    const tile a_high = kernel_builder::slice(a, 512, 512);
    kb.memset(b, 1.0f);
    kb.tensor_copy(z, a_high);                         // reads a's second half
    kb.load(a_high, x, kb.view(x, 0, 128, 512, 512));  // then rewrites it
    kb.activation(kernel_builder::slice(r, 0, 512), b, act_func::exp);
    kb.next_instruction_continues();
    kb.activation(kernel_builder::slice(r, 512, 512), a_high, act_func::exp);  // reads the load
    const program p = kb.finish();
    EXPECT_TRUE(find_races(p).empty());
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 2u);
    EXPECT_TRUE(act[1].flags & flag::continues);
    EXPECT_EQ(implied_wait(act, 1, semaphore_of_queue(0)), 1u);
    EXPECT_EQ(wait_value(act[1], semaphore_of_engine(engine_kind::act)), 0u);
}

// A continuation run the compiler puts on another engine than its instruction (a copy whose two
// engines cost the same: NeuronCore-v3's 160 bf16 elements) is held as an entry of its own: it
// waits for the load it reads.
TEST(KernelBuilder, TheSchedulerHoldsARunOnAnotherEngineOnItsOwn) {
    builder_options o = options(kernel_style::nl);
    o.schedule_window = 16;
    o.isa_version = 3;
    o.dve_clock_ghz = 0.96;
    o.act_clock_ghz = 1.2;
    kernel_builder kb(o);
    const hbm_tensor x = kb.input("x", 128 * 320, dtype::bfloat16, 0, 1, 1);  // queue 0
    const auto ts = kb.declare_tile("s", mem_space::sbuf, 128, 320, dtype::bfloat16);
    const auto td = kb.declare_tile("d", mem_space::sbuf, 128, 320, dtype::bfloat16);
    kb.set_reorder(true);
    const tile s = kb.next(ts), d = kb.next(td);
    kb.load(s, x, kb.view(x, 0, 128, 320, 320));
    kb.copy(kernel_builder::slice(d, 0, 160), kernel_builder::slice(s, 0, 160));
    kb.next_instruction_continues();
    kb.copy(kernel_builder::slice(d, 160, 160), kernel_builder::slice(s, 160, 160));
    const program p = kb.finish();
    ASSERT_EQ(stream(p, engine_kind::dve).size(), 1u);  // (the runs' engines: as the tie says)
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 1u);
    EXPECT_EQ(implied_wait(act, 0, semaphore_of_queue(0)), 1u);
    EXPECT_EQ(implied_wait(stream(p, engine_kind::dve), 0, semaphore_of_queue(0)), 1u);
    for (const auto& trigger : stream(p, engine_kind::sp))
        EXPECT_TRUE(trigger.waits.empty());
}

// Instructions that keep state in their engine (the Scalar engine's reduce registers) keep
// their order there, though the second is ready first.
TEST(KernelBuilder, TheSchedulerKeepsTheOrderOfAnEnginesRegisters) {
    builder_options o = options(kernel_style::nl);
    o.schedule_window = 16;
    kernel_builder kb(o);
    const hbm_tensor x = kb.input("x", 128 * 512, dtype::float32, 0, 1, 1);
    const auto tx = kb.declare_tile("x", mem_space::sbuf, 128, 512, dtype::float32);
    const auto ty = kb.declare_tile("y", mem_space::sbuf, 128, 512, dtype::float32);
    const auto td = kb.declare_tile("d", mem_space::sbuf, 128, 512, dtype::float32);
    kb.set_reorder(true);
    const tile xt = kb.next(tx), yt = kb.next(ty), d0 = kb.next(td), d1 = kb.next(td);
    kb.memset(yt, 1.0f);
    kb.load(xt, x, kb.view(x, 0, 128, 512, 512));
    instruction add;
    add.op = opcode::activation_reduce;
    add.alu = alu_op::add;
    add.flags = flag::reduce_accumulate;
    kb.instruction_op(engine_kind::act, add, &d0, &xt);  // waits for the load
    instruction zero = add;
    zero.flags = flag::reduce_reset;
    kb.instruction_op(engine_kind::act, zero, &d1, &yt);  // ready at once
    const program p = kb.finish();
    const auto& act = stream(p, engine_kind::act);
    ASSERT_EQ(act.size(), 2u);
    EXPECT_EQ(act[0].flags, flag::reduce_accumulate);
    EXPECT_EQ(act[1].flags, flag::reduce_reset);
}

}  // namespace

namespace {

// A kernel that grows: the growth observer hears every `step` instructions and transfers.
TEST(KernelBuilder, GrowthIsReportedEveryStep) {
    std::vector<std::uint64_t> heard;
    kernel_builder::on_growth([&](std::uint64_t n) { heard.push_back(n); }, 100);
    kernel_builder kb(options(kernel_style::nl));
    const hbm_tensor a = kb.input("a", 128 * 4, dtype::float32, 0, 1, 1);
    const std::size_t t = kb.declare_tile("t", mem_space::sbuf, 128, 4, dtype::float32);
    for (int i = 0; i < 100; ++i) {  // 100 x (a load, its trigger, a memset) = 300
        const tile x = kb.next(t);
        kb.load(x, a, kb.view(a, 0, 128, 4, 4));
        kb.memset(x, 1.0f);
    }
    kernel_builder::on_growth(nullptr);
    EXPECT_EQ(heard, (std::vector<std::uint64_t>{100, 200, 300}));
}

}  // namespace

// engine: in-order issue on semaphore waits, cost-table durations, shared-port queueing,
// semaphore signalling `latency` cycles after the data path frees (in program order), and
// dma_trigger ringing the doorbell of its queue (a trigger commits no result: it signals when it
// ends). One bench: the DVE, ACT, Pool and SP engines (functional mode) run a small dependent
// program against a real router, SBUF, PSUM banks and HBM channels; the doorbells are recording
// fakes; monitor threads record when each engine semaphore reaches 1, 2, 3, ... Every expected
// time is derived below from the configured clocks, latencies and the cost formulas of
// hardware-facts.md section 2.
//
// The program (P = 4 partitions, F = 40 elements; [waits]):
// clang-format off
//   sp:   s0 dma_trigger q2
//         s1 dma_trigger q5                  [dve>=2]
//         s2 dma_trigger q2                  [dve>=3]
//   dve:  d0 memset A[P,2048] = 3
//         d1 B = A[:, :F] + C                [act>=1]
//         d2 R = max over the free axis of B [dve>=2]
//   pool: p0 X = iota                        [sp>=1]
//         p1 dma_trigger q0
//   act:  a0 C (PSUM) = relu(2 X)            [pool>=1]
//         a1 dma_trigger q4
// clang-format on
// d0 holds the SBUF port (shared by dve and pool on NeuronCore-v2) for 2048 cycles, so p0, which
// may issue as soon as s0's semaphore fires, queues on the port until d0 ends. a1 ends before
// a0's result commits, so act's second signal waits for its first (results commit in order).
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "platforms/neuron_core.h"
#include "support/memory_system.h"
#include "support/operands.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using trn::testing::make_instruction;
using trn::testing::trigger;

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
using trn::alu_op;
using trn::dtype;
using trn::engine_kind;
using trn::instruction;
using trn::mem_space;
using trn::opcode;
using trn::operand;
namespace amap = trn::address_map;

constexpr double tol_ns = 0.01;  // a few 1 ps roundings of non-integer clock periods

using trn::testing::to_ns;

const trn::config& test_config() {
    static const trn::config cfg = [] {
        trn::config c(trn::testing::platform_registry());
        c.load_yaml_text(
            "core:\n"
            "  isa_version: 2\n"
            "  min_ii: 64\n"
            "  launch_overhead: 2us\n"
            "  dve: {clock: 1.12GHz, latency: 100}\n"
            "  act: {clock: 1.4GHz, latency: 200}\n"
            "  pool: {clock: 1.4GHz, latency: 0}\n"
            "  sp: {clock: 1.4GHz, latency: 7}\n"
            "  dma: {trigger_time: 50ns}\n"
            "  sbuf: {port_sharing: dve+pool}\n"
            "  psum: {port_sharing: dve+act}\n",
            "engine_test");
        return c;
    }();
    return cfg;
}

// Parameters as the test reads them.
double clock_ghz(const char* e) {
    return test_config().frequency_ghz(std::string("core.") + e + ".clock");
}
double latency_ns(const char* e) {
    return test_config().real(std::string("core.") + e + ".latency") / clock_ghz(e);
}
double launch_ns() {
    return test_config().time_ns("core.launch_overhead");
}
double trigger_ns() {
    return test_config().time_ns("core.dma.trigger_time");
}
double min_ii() {
    return test_config().real("core.min_ii");
}

constexpr std::uint32_t P = 4, F = 40, wide = 2048;
constexpr float fill = 3.0f, scale = 2.0f;

operand tile(mem_space s, std::uint32_t elems, std::uint64_t offset) {
    operand o;
    o.space = s;
    o.type = dtype::float32;
    o.partitions = P;
    o.elems = elems;
    o.offset = offset;
    return o;
}

const operand A = tile(mem_space::sbuf, wide, 0);
const operand A_head = tile(mem_space::sbuf, F, 0);
const operand X = tile(mem_space::sbuf, F, 8192);
const operand B = tile(mem_space::sbuf, F, 12288);
const operand R = tile(mem_space::sbuf, 1, 16384);
const operand C = tile(mem_space::psum, F, 2048);  // PSUM bank 1

instruction relu(operand dst, operand src, float scale, std::vector<trn::sem_wait> waits) {
    instruction i =
        make_instruction(opcode::activation, alu_op::bypass, dst, src, {}, scale, std::move(waits));
    i.func = trn::act_func::relu;
    return i;
}

trn::sem_id sem(engine_kind e) {
    return trn::semaphore_of_engine(e);
}

const std::vector<instruction> dve_stream{
    make_instruction(opcode::memset, alu_op::bypass, A, {}, {}, fill, {}),
    make_instruction(opcode::tensor_tensor, alu_op::add, B, A_head, C, 0,
                     {{sem(engine_kind::act), 1}}),
    make_instruction(opcode::tensor_reduce, alu_op::max, R, B, {}, 0, {{sem(engine_kind::dve), 2}}),
};
const std::vector<instruction> act_stream{
    relu(C, X, scale, {{sem(engine_kind::pool), 1}}),
    trigger(4, {}),
};
// X[p, i] = p * F + i.
instruction numbered(const operand& x, std::vector<trn::sem_wait> waits) {
    instruction i = make_instruction(opcode::iota, alu_op::bypass, x, {}, {}, 0, waits);
    i.imm1 = static_cast<float>(x.elems);
    return i;
}
const std::vector<instruction> pool_stream{
    numbered(X, {{sem(engine_kind::sp), 1}}),
    trigger(0, {}),
};
const std::vector<instruction> sp_stream{
    trigger(2, {}),
    trigger(5, {{sem(engine_kind::dve), 2}}),
    trigger(2, {{sem(engine_kind::dve), 3}}),
};

// A doorbell that records when each transfer was asked to start.
class fake_doorbell : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<fake_doorbell> in{"in"};
    std::vector<double> rings;  // now + incoming delay
    std::vector<std::uint64_t> addresses;

    explicit fake_doorbell(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        in.register_b_transport(this, &fake_doorbell::b_transport);
    }

  private:
    void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
        rings.push_back(to_ns(sc_core::sc_time_stamp() + delay));
        addresses.push_back(t.get_address());
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

constexpr std::size_t queues = 6;

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> debug{"debug"};
    trn::semaphore_bank sems{"sems"};
    trn::testing::memory_system mem{test_config()};
    trn::router& router = mem.router;
    trn::onchip_bank& sbuf = mem.sbuf;
    std::vector<std::unique_ptr<fake_doorbell>> bells;
    trn::engine dve{"dve", engine_kind::dve, test_config(), sems, true};
    trn::engine act{"act", engine_kind::act, test_config(), sems, true};
    trn::engine pool{"pool", engine_kind::pool, test_config(), sems, true};
    trn::engine sp{"sp", engine_kind::sp, test_config(), sems, true};

    std::vector<double> reached[trn::engine_count];  // [engine][k-1]
    const trn::program prog = [] {
        trn::program p;
        p.engines[std::size_t(engine_kind::dve)] = dve_stream;
        p.engines[std::size_t(engine_kind::act)] = act_stream;
        p.engines[std::size_t(engine_kind::pool)] = pool_stream;
        p.engines[std::size_t(engine_kind::sp)] = sp_stream;
        return p;
    }();
    trn::whole_program source{prog};

    explicit harness(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        debug.bind(router.in);
        for (std::size_t q = 0; q < queues; ++q) {
            bells.push_back(std::make_unique<fake_doorbell>(("bell" + std::to_string(q)).c_str()));
            router.doorbell.bind(bells.back()->in);
        }
        for (trn::engine* e : {&dve, &act, &pool, &sp})
            e->out.bind(router.in);
        sems.resize(trn::engine_count + queues);
        const sc_time launch = trn::ns(launch_ns());
        dve.load(&source, launch);
        act.load(&source, launch);
        pool.load(&source, launch);
        sp.load(&source, launch);
        SC_THREAD(monitor_dve);
        SC_THREAD(monitor_act);
        SC_THREAD(monitor_pool);
        SC_THREAD(monitor_sp);
    }

    void monitor(engine_kind e) {
        for (std::uint32_t k = 1;; ++k) {
            sems.wait_for(sem(e), k, "monitor", k);
            reached[std::size_t(e)].push_back(to_ns(sc_core::sc_time_stamp()));
        }
    }
    void monitor_dve() { monitor(engine_kind::dve); }
    void monitor_act() { monitor(engine_kind::act); }
    void monitor_pool() { monitor(engine_kind::pool); }
    void monitor_sp() { monitor(engine_kind::sp); }

    std::vector<float> read(const operand& op) {
        std::vector<std::uint8_t> bytes(op.bytes());
        trn::access_ext ext;
        ext.rows = op.partitions;
        ext.row_bytes = op.row_bytes();
        ext.row_stride = trn::row_stride_of(op);
        tlm::tlm_generic_payload t;
        t.set_command(tlm::TLM_READ_COMMAND);
        t.set_address(trn::address_of(op));
        t.set_data_ptr(bytes.data());
        t.set_data_length(static_cast<unsigned>(bytes.size()));
        t.set_extension(&ext);
        debug->transport_dbg(t);
        t.clear_extension(&ext);
        std::vector<float> out(bytes.size() / 4);
        std::memcpy(out.data(), bytes.data(), bytes.size());
        return out;
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

// The schedule the model must produce, derived from the parameters.
struct schedule {
    double L, T, lat_d, lat_a, lat_p, lat_s;
    double D0, D1, D2, P0, A0;
    double sp1, dve1, pool_ask, pool_start, pool_end, pool1, pool2, act_end, act1, act2, d1_issue;
    double dve2, dve3, sp2, sp3, ring_q0, ring_q2_first, ring_q4, ring_q5, ring_q2_second;

    schedule() {
        L = launch_ns();
        T = trigger_ns();
        const double fd = clock_ghz("dve"), fa = clock_ghz("act"), fp = clock_ghz("pool");
        lat_d = latency_ns("dve");
        lat_a = latency_ns("act");
        lat_p = latency_ns("pool");
        lat_s = latency_ns("sp");
        D0 = std::max(min_ii(), double{wide}) / fd;  // DVE memset fp32: max(MIN_II, N)
        D1 = std::max(min_ii(), double{F}) / fd;     // tensor_tensor, one input in PSUM
        D2 = double{F} / fd;                         // tensor_reduce: N, no MIN_II
        P0 = (150.0 + F) / fp;                       // iota: 150 + N
        A0 = std::max(min_ii(), double{F}) / fa;     // activation: max(MIN_II, N)
        sp1 = L + T;                                 // s0 ends at L + T; no commit latency
        dve1 = L + D0 + lat_d;
        pool_ask = sp1;                           // p0's wait is satisfied
        pool_start = std::max(pool_ask, L + D0);  // ... but d0 holds the shared SBUF port
        pool_end = pool_start + P0;
        pool1 = pool_end + lat_p;
        ring_q0 = pool_end + T;  // p1 issues as p0 ends
        pool2 = std::max(pool1, ring_q0);
        act_end = pool1 + A0;
        act1 = act_end + lat_a;
        ring_q4 = act_end + T;           // a1 issues as a0 ends
        act2 = std::max(act1, ring_q4);  // ... but commits after a0
        d1_issue = std::max(L + D0, act1);
        dve2 = d1_issue + D1 + lat_d;
        dve3 = dve2 + D2 + lat_d;
        ring_q2_first = L + T;
        ring_q5 = std::max(L + T, dve2) + T;
        sp2 = ring_q5;
        ring_q2_second = std::max(ring_q5, dve3) + T;
        sp3 = ring_q2_second;
    }
};

TEST(EngineHarness, TheScenarioExercisesPortQueueingAndWaits) {
    const schedule s;
    // Preconditions of the scenario, so that each later check tests what it says.
    EXPECT_LT(s.pool_ask, s.L + s.D0);  // p0 really queues on the SBUF port
    EXPECT_GT(s.act1, s.L + s.D0);      // d1 really waits on act
    EXPECT_GT(s.dve3, s.ring_q5);       // s2 really waits on dve
    EXPECT_GT(s.lat_s, 0);              // and yet triggers signal without it
    EXPECT_LT(s.ring_q4, s.act1);       // a1 ends before a0 commits
}

TEST(EngineHarness, SemaphoresAreSignalledAtEndOfBusyPlusLatency) {
    auto& b = bench();
    const schedule s;
    const auto& dve = b.reached[std::size_t(engine_kind::dve)];
    ASSERT_EQ(dve.size(), 3u);
    EXPECT_NEAR(dve[0], s.dve1, tol_ns);
    EXPECT_NEAR(dve[1], s.dve2, tol_ns);
    EXPECT_NEAR(dve[2], s.dve3, tol_ns);
    const auto& act = b.reached[std::size_t(engine_kind::act)];
    ASSERT_EQ(act.size(), 2u);
    EXPECT_NEAR(act[0], s.act1, tol_ns);
    EXPECT_NEAR(act[1], s.act2, tol_ns);
    const auto& pool = b.reached[std::size_t(engine_kind::pool)];
    ASSERT_EQ(pool.size(), 2u);
    EXPECT_NEAR(pool[0], s.pool1, tol_ns);
    EXPECT_NEAR(pool[1], s.pool2, tol_ns);
    const auto& sp = b.reached[std::size_t(engine_kind::sp)];
    ASSERT_EQ(sp.size(), 3u);
    EXPECT_NEAR(sp[0], s.sp1, tol_ns);
    EXPECT_NEAR(sp[1], s.sp2, tol_ns);
    EXPECT_NEAR(sp[2], s.sp3, tol_ns);
}

TEST(EngineHarness, DmaTriggerRingsTheDoorbellOfItsQueue) {
    auto& b = bench();
    const schedule s;
    for (std::size_t q : {1u, 3u})
        EXPECT_TRUE(b.bells[q]->rings.empty()) << "queue " << q;
    ASSERT_EQ(b.bells[4]->rings.size(), 1u);
    EXPECT_NEAR(b.bells[4]->rings[0], s.ring_q4, tol_ns);  // from act
    ASSERT_EQ(b.bells[0]->rings.size(), 1u);
    EXPECT_NEAR(b.bells[0]->rings[0], s.ring_q0, tol_ns);  // from pool
    ASSERT_EQ(b.bells[2]->rings.size(), 2u);
    EXPECT_NEAR(b.bells[2]->rings[0], s.ring_q2_first, tol_ns);
    EXPECT_NEAR(b.bells[2]->rings[1], s.ring_q2_second, tol_ns);
    ASSERT_EQ(b.bells[5]->rings.size(), 1u);
    EXPECT_NEAR(b.bells[5]->rings[0], s.ring_q5, tol_ns);
    EXPECT_EQ(b.bells[5]->addresses[0], amap::doorbell_base + 5);
}

TEST(EngineHarness, BusyTimeIsTheSumOfCostTableDurations) {
    auto& b = bench();
    const schedule s;
    EXPECT_NEAR(to_ns(b.dve.busy()), s.D0 + s.D1 + s.D2, tol_ns);
    EXPECT_NEAR(to_ns(b.act.busy()), s.A0 + s.T, tol_ns);
    EXPECT_NEAR(to_ns(b.pool.busy()), s.P0 + s.T, tol_ns);
    EXPECT_NEAR(to_ns(b.sp.busy()), 3 * s.T, tol_ns);
    // duration() is what busy() sums.
    EXPECT_NEAR(to_ns(b.dve.duration(dve_stream[1])), s.D1, tol_ns);
    EXPECT_NEAR(to_ns(b.sp.duration(sp_stream[0])), s.T, tol_ns);
}

TEST(EngineHarness, StallSemaphoreAccountsTheWaiting) {
    auto& b = bench();
    const schedule s;
    // d1 waits from d0's end to act's signal; d2 waits dve's own latency.
    EXPECT_NEAR(to_ns(b.dve.stall_semaphore()), (s.d1_issue - (s.L + s.D0)) + s.lat_d, tol_ns);
    EXPECT_NEAR(to_ns(b.act.stall_semaphore()), s.pool1 - s.L, tol_ns);
    EXPECT_NEAR(to_ns(b.pool.stall_semaphore()), s.pool_ask - s.L, tol_ns);
    EXPECT_NEAR(to_ns(b.sp.stall_semaphore()),
                (s.ring_q5 - s.T - (s.L + s.T)) + (s.ring_q2_second - s.T - s.ring_q5), tol_ns);
}

TEST(EngineHarness, StallPortAccountsTheSharedSbufQueueing) {
    auto& b = bench();
    const schedule s;
    EXPECT_NEAR(to_ns(b.pool.stall_port()), s.pool_start - s.pool_ask, tol_ns);
    EXPECT_EQ(b.dve.stall_port(), SC_ZERO_TIME);
    EXPECT_EQ(b.act.stall_port(), SC_ZERO_TIME);
    EXPECT_EQ(b.sp.stall_port(), SC_ZERO_TIME);
    EXPECT_NEAR(to_ns(b.router.shared_port(false).wait_total()), s.pool_start - s.pool_ask, tol_ns);
    EXPECT_EQ(b.router.shared_port(true).wait_total(), SC_ZERO_TIME);
}

TEST(EngineHarness, EveryStreamFinishes) {
    auto& b = bench();
    EXPECT_TRUE(b.dve.finished());
    EXPECT_TRUE(b.act.finished());
    EXPECT_TRUE(b.pool.finished());
    EXPECT_TRUE(b.sp.finished());
    EXPECT_EQ(b.dve.instructions(), dve_stream.size());
    EXPECT_EQ(b.act.instructions(), act_stream.size());
    EXPECT_EQ(b.pool.instructions(), pool_stream.size());
    EXPECT_EQ(b.sp.instructions(), sp_stream.size());
    EXPECT_TRUE(b.sems.blocked_waiters().size() == 4u);  // only the four monitors
}

TEST(EngineHarness, WideElementStridesHalveTheRate) {
    // hardware-facts 1c: an access whose innermost stride exceeds 16 bytes runs at half rate.
    auto& b = bench();
    const double fd = clock_ghz("dve");
    const double base = std::max(min_ii(), 2.0 * 256) / fd;  // tensor_tensor fp32, SBUF + SBUF
    auto tt = [](std::uint32_t stride0, dtype type) {
        operand s0 = tile(mem_space::sbuf, 256, 0), s1 = tile(mem_space::sbuf, 256, 65536);
        s0.type = s1.type = type;
        s0.elem_stride = stride0;
        operand d = tile(mem_space::sbuf, 256, 131072);
        d.type = type;
        return make_instruction(opcode::tensor_tensor, alu_op::max, d, s0, s1, 0, {});
    };
    EXPECT_NEAR(to_ns(b.dve.duration(tt(1, dtype::float32))), base, tol_ns);
    EXPECT_NEAR(to_ns(b.dve.duration(tt(4, dtype::float32))), base, tol_ns);      // 16 B: full rate
    EXPECT_NEAR(to_ns(b.dve.duration(tt(5, dtype::float32))), 2 * base, tol_ns);  // 20 B
    EXPECT_NEAR(to_ns(b.dve.duration(tt(8, dtype::bfloat16))), base, tol_ns);     // 16 B
    EXPECT_NEAR(to_ns(b.dve.duration(tt(9, dtype::bfloat16))), 2 * base, tol_ns);  // 18 B
}

TEST(EngineHarness, FunctionalResultsFlowThroughMemory) {
    auto& b = bench();
    const auto a = b.read(A), x = b.read(X), c = b.read(C), bb = b.read(B), r = b.read(R);
    for (float v : a)
        ASSERT_EQ(v, fill);
    for (std::uint32_t p = 0; p < P; ++p) {
        for (std::uint32_t i = 0; i < F; ++i) {
            const float iota = static_cast<float>(p * F + i);
            EXPECT_EQ(x[p * F + i], iota) << p << "," << i;
            EXPECT_EQ(c[p * F + i], scale * iota) << p << "," << i;
            EXPECT_EQ(bb[p * F + i], fill + scale * iota) << p << "," << i;
        }
        EXPECT_EQ(r[p], fill + scale * static_cast<float>(p * F + F - 1)) << p;
    }
}

}  // namespace

// dma_queue: a doorbell starts the next transfer fixed_latency after the ring; its rows are
// handed to the DMA engines in equal groups by on-chip partition (partitions / engines); each
// memory side of the whole transfer (source read, destination write) is one access issued when
// the first chunk starts; the transfer completes at the latest of its chunks and those
// accesses, and the queue's semaphore counts completed transfers, in queue order. One bench,
// two queues rung through a real router:
//   q0 -> 16 recording fake engines (to see the split and control chunk start and end) and a
//         recording fake memory (to see and delay the memory sides);
//   q1 -> 16 real dma_engines and the router -> real HBM channels, SBUF and PSUM banks, in
//         functional mode (timing and fp32 <-> bf16 conversion end to end).
// Monitor threads record when each queue semaphore reaches 1, 2, 3, ...
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "dma/dma_job.h"
#include "platforms/neuron_core.h"
#include "support/memory_system.h"
#include "support/operands.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
using trn::dtype;
using trn::mem_space;
using trn::operand;
namespace amap = trn::address_map;

constexpr double tol_ns = 0.002;

using trn::testing::to_ns;

const trn::config& test_config() {
    static const trn::config cfg = [] {
        trn::config c(trn::testing::platform_registry());
        c.load_yaml_text(
            "core:\n"
            "  dma:\n"
            "    engines: 16\n"
            "    engine_bandwidth: 16B/ns\n"
            "    descriptor_cost: 20ns\n"
            "    fixed_latency: 1.3us\n"
            "  hbm:\n"
            "    bandwidth: 64000GB/s\n"  // HBM far faster than the engines: they set the pace
            "    latency: 0ns\n"
            "    activate_time: 0ns\n",
            "dma_queue_test");
        return c;
    }();
    return cfg;
}

std::uint32_t engines() {
    return static_cast<std::uint32_t>(test_config().integer("core.dma.engines"));
}
// Partitions per engine: the transfer's 128 partitions in equal groups over the engines.
std::uint32_t per_engine() {
    return static_cast<std::uint32_t>(test_config().integer("core.sbuf.partitions")) / engines();
}
double fixed_ns() {
    return test_config().time_ns("core.dma.fixed_latency");
}
double engine_service_ns(std::uint64_t rows, std::uint64_t row_bytes) {
    const double desc = test_config().time_ns("core.dma.descriptor_cost");
    const double bw = test_config().bandwidth("core.dma.engine_bandwidth");
    return static_cast<double>(rows) * std::max(desc, static_cast<double>(row_bytes) / bw);
}

using trn::testing::chip_op;
using trn::testing::hbm_op;

// A fake DMA engine: records each chunk, starts it `extra_start` after it may start and
// completes it fake_row_ns per row later.
constexpr double fake_row_ns = 10;

struct chunk {
    const trn::dma_transfer* transfer;
    std::uint32_t row_begin, row_end;
    bool functional;
    double now_ns, delay_in_ns;
};

class fake_engine : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<fake_engine> in{"in"};
    std::vector<chunk> chunks;
    sc_time extra_start = SC_ZERO_TIME;

    explicit fake_engine(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        in.register_b_transport(this, &fake_engine::b_transport);
    }

  private:
    void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
        auto* job = t.get_extension<trn::dma_job>();
        chunks.push_back({job->transfer, job->row_begin, job->row_end, job->functional,
                          to_ns(sc_core::sc_time_stamp()), to_ns(delay)});
        job->start = delay + extra_start;
        delay = job->start + trn::ns(fake_row_ns * (job->row_end - job->row_begin));
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

// The memory sides of q0's transfers: records each access and completes it `latency` after
// its start.
struct mem_call {
    tlm::tlm_command cmd;
    std::uint64_t addr;
    unsigned len;
    bool has_data;
    trn::access_ext ext;
    double now_ns, delay_in_ns;
};

class fake_memory : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<fake_memory> in{"in"};
    std::vector<mem_call> calls;
    sc_time latency = SC_ZERO_TIME, onchip_latency = SC_ZERO_TIME;  // HBM, SBUF/PSUM

    explicit fake_memory(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        in.register_b_transport(this, &fake_memory::b_transport);
    }

  private:
    void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
        auto* e = t.get_extension<trn::access_ext>();
        calls.push_back({t.get_command(), t.get_address(), t.get_data_length(),
                         t.get_data_ptr() != nullptr, e ? *e : trn::access_ext{},
                         to_ns(sc_core::sc_time_stamp()), to_ns(delay)});
        delay += t.get_address() < amap::sbuf_base ? latency : onchip_latency;
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

// q0's transfers (timing only, fake engines) and when their doorbells ring.
struct rung {
    double at_ns;  // simulation time of the ring
    double in_ns;  // incoming delay of the ring
};
const std::vector<trn::dma_transfer> q0_transfers{
    // 0: 128 rows into SBUF from partition 0: every engine, 8 rows each.
    {chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 0),
     hbm_op(dtype::float32, 128, 16, 0, 64)},
    // 1: one row into partition 40: engine 40 / 8 = 5.
    {chip_op(mem_space::sbuf, dtype::float32, 40, 1, 16, 0), hbm_op(dtype::float32, 1, 16, 0, 64)},
    // 2: 20 rows from partition 5: groups 0 (5..7), 1, 2, 3 (24).
    {chip_op(mem_space::sbuf, dtype::float32, 5, 20, 16, 0), hbm_op(dtype::float32, 20, 16, 0, 64)},
    // 3: a store from PSUM partition 100: the on-chip side (the source) picks engine 12.
    {hbm_op(dtype::float32, 4, 16, 0, 64), chip_op(mem_space::psum, dtype::float32, 100, 4, 16, 0)},
    // 4: HBM to HBM: rows counted from 0.
    {hbm_op(dtype::float32, 10, 16, 0x8000, 64), hbm_op(dtype::float32, 10, 16, 0, 64)},
    // 5 and 6: a big transfer, then a small one rung just after that finishes earlier.
    {chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 0),
     hbm_op(dtype::float32, 128, 16, 0, 64)},
    {chip_op(mem_space::sbuf, dtype::float32, 64, 1, 16, 0), hbm_op(dtype::float32, 1, 16, 0, 64)},
    // 7: every engine, each starting its chunk a little later (as if busy).
    {chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 0),
     hbm_op(dtype::float32, 128, 16, 0x4000, 64)},
    // 8: a load into slow SBUF.
    {chip_op(mem_space::sbuf, dtype::float32, 8, 2, 16, 0), hbm_op(dtype::float32, 2, 16, 0, 64)},
    // 9: a DMA transpose of 16 rows of 128 elements into 128 partitions: split by dst's.
    [] {
        trn::dma_transfer t{chip_op(mem_space::sbuf, dtype::float32, 0, 128, 16, 0),
                            hbm_op(dtype::float32, 16, 128, 0, 512)};
        t.transpose = true;
        return t;
    }(),
};
const std::vector<rung> q0_rings{{0, 7},     {5000, 0},  {10000, 0}, {15000, 0}, {20000, 0},
                                 {25000, 0}, {25000, 1}, {30000, 0}, {35000, 0}, {40000, 0}};
constexpr std::size_t slow_mem_transfer = 1, late_start_transfer = 7, slow_onchip_transfer = 8;
constexpr double slow_mem_ns = 500;
double late_start_ns(std::size_t engine) {  // engine e starts transfer 7's chunk this late
    return 40.0 + 5.0 * static_cast<double>(engine);
}

// q1's transfers (functional, real engines and memories).
constexpr std::uint32_t u_rows = 128, u_elems = 64;
constexpr std::uint64_t u_src = 0x10000, u_src_stride = 512, u_back = 0x40000;
const std::vector<trn::dma_transfer> q1_transfers{
    // 0: load fp32 HBM (rows with gaps) into bf16 SBUF.
    {chip_op(mem_space::sbuf, dtype::bfloat16, 0, u_rows, u_elems, 1024),
     hbm_op(dtype::float32, u_rows, u_elems, u_src, u_src_stride)},
    // 1: store the bf16 SBUF tile back to fp32 HBM, packed.
    {hbm_op(dtype::float32, u_rows, u_elems, u_back, u_elems * 4),
     chip_op(mem_space::sbuf, dtype::bfloat16, 0, u_rows, u_elems, 1024)},
    // 2: four large rows into partitions 64..67 (one engine, bandwidth-bound).
    {chip_op(mem_space::sbuf, dtype::float32, 64, 4, 1024, 32768),
     hbm_op(dtype::float32, 4, 1024, 0x80000, 4096)},
    // 3: a DMA transpose of the source's first t_rows rows, t_cols elements each, into
    // partitions 16.. (engines 2 to 5, 8 rows of t_rows elements each).
    [] {
        trn::dma_transfer t{chip_op(mem_space::sbuf, dtype::float32, 16, 32, 16, 8192),
                            hbm_op(dtype::float32, 16, 32, 0x10000, 512)};
        t.transpose = true;
        return t;
    }(),
};
constexpr std::uint32_t t_rows = 16, t_cols = 32, t_first = 16, t_offset = 8192;
const std::vector<rung> q1_rings{{0, 0}, {5000, 0}, {10000, 0}, {15000, 0}};

float source_value(std::uint32_t r, std::uint32_t i) {
    const float v = 1.0f + static_cast<float>(r * u_elems + i) / 1024.0f + 1.0f / 8192.0f;
    return (i % 2) ? -v : v;
}

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> cpu{"cpu"};  // rings doorbells, debug access
    trn::semaphore_bank sems{"sems"};
    trn::testing::memory_system mem{test_config()};
    trn::router& router = mem.router;
    trn::onchip_bank& sbuf = mem.sbuf;
    std::vector<std::unique_ptr<fake_engine>> fakes;
    std::vector<std::unique_ptr<trn::dma_engine>> reals;
    fake_memory mem_fake{"mem_fake"};
    trn::dma_queue q0{"q0", test_config(), sems, 0, false};
    trn::dma_queue q1{"q1", test_config(), sems, 1, true};

    std::vector<double> reached[2];             // [queue][k-1]: when the semaphore reached k
    std::vector<double> ring_delay_out[2];      // the doorbell's returned delay
    std::vector<double> rung_at[2];             // absolute start request of each ring
    std::vector<std::vector<mem_call>> q0_mem;  // per q0 transfer, its memory-side accesses
    std::vector<std::uint64_t> real_rows_after_first;
    std::vector<std::uint8_t> sbuf_tile;   // q1 transfer 0's destination
    std::vector<std::uint8_t> hbm_back;    // q1 transfer 1's destination
    std::vector<std::uint8_t> transposed;  // q1 transfer 3's destination
    double hbm_bound_ns = 0;               // upper bound of HBM time of q1's transfer 0
    const trn::program prog = [] {
        trn::program p;
        p.queues = {q0_transfers, q1_transfers};
        return p;
    }();
    trn::whole_program source{prog};

    explicit harness(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        const trn::config& cfg = test_config();
        cpu.bind(router.in);
        for (std::uint32_t e = 0; e < engines(); ++e) {
            fakes.push_back(std::make_unique<fake_engine>(("fake" + std::to_string(e)).c_str()));
            q0.engines.bind(fakes.back()->in);
            reals.push_back(
                std::make_unique<trn::dma_engine>(("dma" + std::to_string(e)).c_str(), cfg));
            reals.back()->out.bind(router.in);
            q1.engines.bind(reals.back()->in);
        }
        router.doorbell.bind(q0.doorbell);
        router.doorbell.bind(q1.doorbell);
        q0.mem.bind(mem_fake.in);
        q1.mem.bind(router.in);
        sems.resize(trn::engine_count + 2);
        q0.load(&source);
        q1.load(&source);
        SC_THREAD(monitor0);
        SC_THREAD(monitor1);
        SC_THREAD(ring0);
        SC_THREAD(ring1);
    }

    void monitor(int q) {
        for (std::uint32_t k = 1;; ++k) {
            sems.wait_for(trn::semaphore_of_queue(q), k, "monitor", k);
            reached[q].push_back(to_ns(sc_core::sc_time_stamp()));
        }
    }
    void monitor0() { monitor(0); }
    void monitor1() { monitor(1); }

    void debug(tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data, unsigned len,
               std::uint32_t rows = 1, std::uint64_t row_bytes = 0) {
        trn::access_ext ext;
        ext.rows = rows;
        ext.row_bytes = row_bytes ? row_bytes : len;
        ext.row_stride = amap::partition_stride;
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(data);
        t.set_data_length(len);
        t.set_extension(&ext);
        cpu->transport_dbg(t);
        t.clear_extension(&ext);
    }

    void ring(int q, const rung& r) {
        tlm::tlm_generic_payload t;
        t.set_command(tlm::TLM_WRITE_COMMAND);
        t.set_address(amap::doorbell_base + static_cast<std::uint64_t>(q));
        t.set_data_ptr(nullptr);
        t.set_data_length(0);
        sc_time d = trn::ns(r.in_ns);
        rung_at[q].push_back(to_ns(sc_core::sc_time_stamp()) + r.in_ns);
        cpu->b_transport(t, d);
        ring_delay_out[q].push_back(to_ns(d));
    }

    void ring_all(int q, const std::vector<rung>& rings) {
        for (const auto& r : rings) {
            const sc_time at = trn::ns(r.at_ns);
            if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
            const std::size_t index = rung_at[q].size();
            if (q == 0 && index == slow_mem_transfer) mem_fake.latency = trn::ns(slow_mem_ns);
            if (q == 0 && index == slow_onchip_transfer)
                mem_fake.onchip_latency = trn::ns(slow_mem_ns);
            if (q == 0 && index == late_start_transfer)
                for (std::size_t e = 0; e < fakes.size(); ++e)
                    fakes[e]->extra_start = trn::ns(late_start_ns(e));
            ring(q, r);
            if (q == 0) {
                mem_fake.latency = mem_fake.onchip_latency = SC_ZERO_TIME;
                for (auto& f : fakes)
                    f->extra_start = SC_ZERO_TIME;
                q0_mem.push_back(mem_fake.calls);
                mem_fake.calls.clear();
            }
            if (q == 1 && rung_at[1].size() == 1) {
                real_rows_after_first.clear();
                for (auto& e : reals)
                    real_rows_after_first.push_back(e->rows());
            }
        }
    }
    void ring0() { ring_all(0, q0_rings); }

    void ring1() {
        // Source tile in HBM, then ring; read the results back once everything is done.
        std::vector<std::uint8_t> row(u_elems * 4);
        for (std::uint32_t r = 0; r < u_rows; ++r) {
            for (std::uint32_t i = 0; i < u_elems; ++i) {
                const float v = source_value(r, i);
                std::memcpy(&row[i * 4], &v, 4);
            }
            debug(tlm::TLM_WRITE_COMMAND, u_src + r * u_src_stride, row.data(),
                  static_cast<unsigned>(row.size()));
        }
        // Transfer 0 reads u_rows * u_elems * 4 bytes; its busiest HBM channel serves at most
        // that much, so this bounds the HBM completion from the transfer's start.
        hbm_bound_ns = static_cast<double>(u_rows * u_elems * 4) /
                           (test_config().bandwidth("core.hbm.bandwidth") /
                            static_cast<double>(test_config().integer("core.hbm.channels"))) +
                       test_config().time_ns("core.hbm.latency");
        ring_all(1, q1_rings);
        sc_core::wait(trn::ns(20000));
        sbuf_tile.assign(u_rows * u_elems * 2, 0);
        debug(tlm::TLM_READ_COMMAND, amap::sbuf_base + 1024, sbuf_tile.data(),
              static_cast<unsigned>(sbuf_tile.size()), u_rows, u_elems * 2);
        hbm_back.assign(u_rows * u_elems * 4, 0);
        debug(tlm::TLM_READ_COMMAND, u_back, hbm_back.data(),
              static_cast<unsigned>(hbm_back.size()));
        transposed.assign(t_cols * t_rows * 4, 0);
        debug(tlm::TLM_READ_COMMAND, amap::sbuf_base + t_first * amap::partition_stride + t_offset,
              transposed.data(), static_cast<unsigned>(transposed.size()), t_cols, t_rows * 4);
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

// The chunks fake engine `e` received for q0 transfer `t`.
std::vector<chunk> chunks_of(std::size_t e, std::size_t t) {
    std::vector<chunk> out;
    for (const auto& c : bench().fakes[e]->chunks)
        if (c.transfer == &bench().prog.queues[0][t]) out.push_back(c);
    return out;
}

// Expected split of transfer `t`: per engine, the list of [begin, end) row ranges.
std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> expected_split(
    const trn::dma_transfer& t) {
    const operand& chip = t.dst.space != mem_space::hbm ? t.dst : t.src;
    const std::uint32_t first = chip.space == mem_space::hbm ? 0 : chip.partition;
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> out(engines());
    // Row r goes to engine ((first + r) / per_engine) mod engines; consecutive rows of a group
    // form one chunk.
    for (std::uint32_t r = 0; r < t.rows(); ++r) {
        auto& v = out[((first + r) / per_engine()) % engines()];
        if (!v.empty() && v.back().second == r)
            ++v.back().second;
        else
            v.push_back({r, r + 1});
    }
    return out;
}

void expect_split(std::size_t t) {
    const auto want = expected_split(q0_transfers[t]);
    std::size_t used = 0;
    for (std::size_t e = 0; e < engines(); ++e) {
        const auto got = chunks_of(e, t);
        ASSERT_EQ(got.size(), want[e].size()) << "transfer " << t << " engine " << e;
        for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].row_begin, want[e][i].first) << "transfer " << t << " engine " << e;
            EXPECT_EQ(got[i].row_end, want[e][i].second) << "transfer " << t << " engine " << e;
            EXPECT_FALSE(got[i].functional);
            // Every chunk starts fixed_latency after the requested ring time.
            EXPECT_NEAR(got[i].now_ns + got[i].delay_in_ns, bench().rung_at[0][t] + fixed_ns(),
                        tol_ns);
        }
        used += !got.empty();
    }
    EXPECT_GT(used, 0u);
}

TEST(DmaQueue, FullTransferTouchesEveryEngineWithItsGroup) {
    expect_split(0);
    for (std::uint32_t e = 0; e < engines(); ++e) {
        const auto got = chunks_of(e, 0);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].row_begin, e * per_engine());
        EXPECT_EQ(got[0].row_end, (e + 1) * per_engine());
    }
}

TEST(DmaQueue, OneRowUsesTheEngineOfItsPartition) {
    expect_split(1);
    const std::uint32_t engine = 40 / per_engine();
    ASSERT_EQ(chunks_of(engine, 1).size(), 1u);
    for (std::uint32_t e = 0; e < engines(); ++e)
        if (e != engine) {
            EXPECT_TRUE(chunks_of(e, 1).empty()) << e;
        }
}

TEST(DmaQueue, UnalignedStartSplitsAtGroupBoundaries) {
    expect_split(2);
    // Partitions 5..24: the first chunk ends at the group boundary (partition 8 = row 3).
    const auto first = chunks_of(0, 2);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].row_end, per_engine() - 5);
}

TEST(DmaQueue, StoreIsSplitByItsOnChipSource) {
    expect_split(3);
    EXPECT_EQ(chunks_of(100 / per_engine(), 3).size(), 1u);
}

TEST(DmaQueue, HbmToHbmIsSplitFromRowZero) {
    expect_split(4);
    EXPECT_EQ(chunks_of(0, 4).size(), 1u);
    EXPECT_EQ(chunks_of(1, 4).size(), 1u);
}

TEST(DmaQueue, ATransposeIsSplitByItsDestinationPartitions) {
    expect_split(9);
    for (std::uint32_t e = 0; e < engines(); ++e) {
        const auto got = chunks_of(e, 9);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].row_begin, e * per_engine());
    }
}

TEST(DmaQueue, DoorbellReturnsAtOnceWithDelayUnchanged) {
    const auto& b = bench();
    for (int q = 0; q < 2; ++q) {
        const auto& rings = q == 0 ? q0_rings : q1_rings;
        ASSERT_EQ(b.ring_delay_out[q].size(), rings.size());
        for (std::size_t i = 0; i < rings.size(); ++i)
            EXPECT_NEAR(b.ring_delay_out[q][i], rings[i].in_ns, tol_ns);
    }
    EXPECT_EQ(b.q0.transfers(), q0_transfers.size());
    EXPECT_EQ(b.q1.transfers(), q1_transfers.size());
}

// Longest chunk (rows) of a q0 transfer.
std::uint32_t longest_chunk(std::size_t t) {
    std::uint32_t longest = 0;
    for (const auto& ranges : expected_split(q0_transfers[t]))
        for (const auto& [begin, end] : ranges)
            longest = std::max(longest, end - begin);
    return longest;
}

TEST(DmaQueue, SemaphoreSignalledAtRingPlusFixedLatencyPlusService) {
    const auto& b = bench();
    ASSERT_EQ(b.reached[0].size(), q0_transfers.size());
    for (std::size_t t : {0u, 2u, 3u, 4u}) {  // chunk-bound, not overlapping their successors
        EXPECT_NEAR(b.reached[0][t], b.rung_at[0][t] + fixed_ns() + fake_row_ns * longest_chunk(t),
                    tol_ns)
            << "transfer " << t;
    }
}

TEST(DmaQueue, SlowMemorySideBoundsCompletion) {
    const auto& b = bench();
    for (std::size_t t : {slow_mem_transfer, slow_onchip_transfer}) {  // HBM, then SBUF slow
        ASSERT_GT(slow_mem_ns, fake_row_ns * longest_chunk(t));
        EXPECT_NEAR(b.reached[0].at(t), b.rung_at[0][t] + fixed_ns() + slow_mem_ns, tol_ns)
            << "transfer " << t;
    }
}

TEST(DmaQueue, EachMemorySideIsOneAccessOfTheWholeTransfer) {
    const auto& b = bench();
    ASSERT_EQ(b.q0_mem.size(), q0_transfers.size());
    for (std::size_t t = 0; t < q0_transfers.size(); ++t) {
        const auto& tr = q0_transfers[t];
        const std::pair<tlm::tlm_command, const operand*> want[] = {
            {tlm::TLM_READ_COMMAND, &tr.src}, {tlm::TLM_WRITE_COMMAND, &tr.dst}};
        const auto& got = b.q0_mem[t];
        ASSERT_EQ(got.size(), 2u) << "transfer " << t;
        for (std::size_t i = 0; i < 2; ++i) {
            const operand& op = *want[i].second;
            EXPECT_EQ(got[i].cmd, want[i].first) << "transfer " << t;
            EXPECT_EQ(got[i].addr, trn::address_of(op)) << "transfer " << t;
            EXPECT_EQ(got[i].len, op.bytes()) << "transfer " << t;
            EXPECT_FALSE(got[i].has_data);
            EXPECT_EQ(got[i].ext.initiator, trn::initiator_id::dma);
            EXPECT_EQ(got[i].ext.rows, op.partitions);
            EXPECT_EQ(got[i].ext.row_bytes, op.row_bytes());
            EXPECT_EQ(got[i].ext.row_stride, trn::row_stride_of(op)) << "transfer " << t;
            EXPECT_EQ(got[i].ext.occupancy, SC_ZERO_TIME);
            if (t != late_start_transfer) {  // issued when the (first) chunk starts
                EXPECT_NEAR(got[i].now_ns + got[i].delay_in_ns, b.rung_at[0][t] + fixed_ns(),
                            tol_ns)
                    << "transfer " << t;
            }
        }
    }
}

TEST(DmaQueue, MemorySidesStartWithTheFirstChunk) {
    const auto& b = bench();
    const std::size_t t = late_start_transfer;
    ASSERT_EQ(b.q0_mem.at(t).size(), 2u);
    const double start = b.rung_at[0][t] + fixed_ns();
    // Engine 0 starts first (late_start_ns grows with the engine).
    for (const auto& call : b.q0_mem[t])
        EXPECT_NEAR(call.now_ns + call.delay_in_ns, start + late_start_ns(0), tol_ns);
    // The transfer ends with the last engine's chunk.
    EXPECT_NEAR(b.reached[0].at(t),
                start + late_start_ns(engines() - 1) + fake_row_ns * per_engine(), tol_ns);
}

TEST(DmaQueue, TransfersCompleteInQueueOrder) {
    const auto& b = bench();
    ASSERT_EQ(b.reached[0].size(), q0_transfers.size());
    const double done5 = b.rung_at[0][5] + fixed_ns() + fake_row_ns * per_engine();
    const double own6 = b.rung_at[0][6] + fixed_ns() + fake_row_ns * 1;
    ASSERT_LT(own6, done5);  // transfer 6 alone would finish first
    EXPECT_NEAR(b.reached[0][5], done5, tol_ns);
    EXPECT_NEAR(b.reached[0][6], done5, tol_ns);  // but it is signalled with transfer 5
    // Its engine did serve it at its own time.
    const auto c6 = chunks_of(64 / per_engine(), 6);
    ASSERT_EQ(c6.size(), 1u);
    EXPECT_NEAR(c6[0].now_ns + c6[0].delay_in_ns, b.rung_at[0][6] + fixed_ns(), tol_ns);
}

TEST(DmaQueue, QueueCountsBytes) {
    const auto& b = bench();
    std::uint64_t want = 0;
    for (const auto& t : q0_transfers)
        want += t.src.bytes();
    EXPECT_EQ(b.q0.bytes(), want);
    EXPECT_EQ(b.q1.bytes(), std::uint64_t{u_rows} * u_elems * 4 +
                                std::uint64_t{u_rows} * u_elems * 2 + 4ull * 1024 * 4 +
                                std::uint64_t{t_rows} * t_cols * 4);
}

TEST(DmaQueue, RealEnginesShareTheLoadAndSetTheCompletion) {
    const auto& b = bench();
    ASSERT_EQ(b.reached[1].size(), q1_transfers.size());
    // Transfer 0: 128 rows over 16 engines, 8 rows of 256 B each.
    ASSERT_EQ(b.real_rows_after_first.size(), engines());
    for (auto rows : b.real_rows_after_first)
        EXPECT_EQ(rows, per_engine());
    const double service0 = engine_service_ns(per_engine(), u_elems * 4);
    ASSERT_LT(b.hbm_bound_ns, service0);  // so the engines, not HBM, set the completion
    EXPECT_NEAR(b.reached[1][0], b.rung_at[1][0] + fixed_ns() + service0, tol_ns);
    // Transfer 1 reads 128 B bf16 rows (descriptor-bound).
    EXPECT_NEAR(b.reached[1][1],
                b.rung_at[1][1] + fixed_ns() + engine_service_ns(per_engine(), u_elems * 2),
                tol_ns);
    // Transfer 2: four 4 KiB rows on engine 64 / 8 (bandwidth-bound).
    EXPECT_NEAR(b.reached[1][2], b.rung_at[1][2] + fixed_ns() + engine_service_ns(4, 4096), tol_ns);
    EXPECT_EQ(b.reals[64 / per_engine()]->rows(), 2 * per_engine() + 4);
}

std::uint16_t bf16_bits(float v) {  // round to nearest even of the top 16 bits
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

TEST(DmaQueue, FunctionalLoadConvertsFp32ToBf16) {
    const auto& b = bench();
    ASSERT_EQ(b.sbuf_tile.size(), std::size_t{u_rows} * u_elems * 2);
    std::size_t bad = 0;
    for (std::uint32_t r = 0; r < u_rows; ++r)
        for (std::uint32_t i = 0; i < u_elems; ++i) {
            const std::size_t k = (std::size_t{r} * u_elems + i) * 2;
            const auto got = static_cast<std::uint16_t>(b.sbuf_tile[k] | b.sbuf_tile[k + 1] << 8);
            if (got != bf16_bits(source_value(r, i)) && bad++ < 10)
                ADD_FAILURE() << "row " << r << " elem " << i << ": got 0x" << std::hex << got
                              << " want 0x" << bf16_bits(source_value(r, i));
        }
    EXPECT_EQ(bad, 0u);
}

TEST(DmaQueue, FunctionalStoreConvertsBf16BackToFp32) {
    const auto& b = bench();
    std::size_t bad = 0;
    for (std::uint32_t r = 0; r < u_rows; ++r)
        for (std::uint32_t i = 0; i < u_elems; ++i) {
            std::uint32_t got;
            std::memcpy(&got, &b.hbm_back[(std::size_t{r} * u_elems + i) * 4], 4);
            const std::uint32_t want = std::uint32_t{bf16_bits(source_value(r, i))} << 16;
            if (got != want && bad++ < 10)
                ADD_FAILURE() << "row " << r << " elem " << i << std::hex << ": got 0x" << got
                              << " want 0x" << want;
        }
    EXPECT_EQ(bad, 0u);
}

// A DMA transpose on the real engines: each destination row is a column of the source rows, and
// its engines take their rows' copy time over core.dma.transpose_rate.
TEST(DmaQueue, FunctionalTransposeMovesColumnsIntoRowsAtTheTransposeRate) {
    const auto& b = bench();
    ASSERT_EQ(b.reached[1].size(), q1_transfers.size());
    const double rate = test_config().real("core.dma.transpose_rate");
    ASSERT_LT(rate, 1.0);
    EXPECT_NEAR(b.reached[1][3],
                b.rung_at[1][3] + fixed_ns() + engine_service_ns(per_engine(), t_rows * 4) / rate,
                tol_ns);
    std::size_t bad = 0;
    for (std::uint32_t c = 0; c < t_cols; ++c)
        for (std::uint32_t r = 0; r < t_rows; ++r) {
            float got;
            std::memcpy(&got, &b.transposed[(std::size_t{c} * t_rows + r) * 4], 4);
            if (got != source_value(r, c) && bad++ < 10)
                ADD_FAILURE() << "dst row " << c << " elem " << r << ": got " << got << " want "
                              << source_value(r, c);
        }
    EXPECT_EQ(bad, 0u);
}

}  // namespace

// dma_engine: a chunk of R rows of B bytes occupies the engine R * max(descriptor_cost,
// B / engine_bandwidth); chunks queue first come first served; a chunk completes when its
// service ends, whatever the memories' latency (the queue times the memory sides of a whole
// transfer, not the engine); a transpose's rows cost that over core.dma.transpose_rate. In
// functional mode it moves the rows with debug accesses, converting element types through fp32
// (a transpose's rows from one column of each source row), and makes no timed access.
// One bench: a fake queue (initiator) hands scripted chunks to the engine, whose memory side is
// a recording fake memory with a settable latency per address space.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "dma/dma_job.h"
#include "platforms/neuron_core.h"
#include "support/operands.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
using trn::access_ext;
using trn::dtype;
using trn::mem_space;
using trn::operand;
namespace amap = trn::address_map;

constexpr double tol_ns = 0.002;

using trn::testing::to_ns;

const trn::config& test_config() {
    static const trn::config cfg = trn::testing::default_config({"core.dma.engine_bandwidth=16B/ns",
                                                                 "core.dma.descriptor_cost=25ns",
                                                                 "core.dma.transpose_rate=0.5"});
    return cfg;
}

// The engine's cost formula, from the configured parameters.
double service_ns(std::uint64_t rows, std::uint64_t row_bytes) {
    const double desc = test_config().time_ns("core.dma.descriptor_cost");
    const double bw = test_config().bandwidth("core.dma.engine_bandwidth");
    return static_cast<double>(rows) * std::max(desc, static_cast<double>(row_bytes) / bw);
}

struct call {
    tlm::tlm_command cmd;
    std::uint64_t addr;
    unsigned len;
    bool has_data;
    access_ext ext;
    double delay_in_ns;
};

// Memory behind the engine: records accesses, adds a latency by address space to timed ones
// and keeps the bytes of functional (debug) accesses, 2-D per access_ext.
class fake_memory : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<fake_memory> in{"in"};
    sc_time hbm_latency = SC_ZERO_TIME, onchip_latency = SC_ZERO_TIME;
    std::vector<call> calls, dbg_calls;
    std::map<std::uint64_t, std::uint8_t> mem;

    explicit fake_memory(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        in.register_b_transport(this, &fake_memory::b_transport);
        in.register_transport_dbg(this, &fake_memory::transport_dbg);
    }

    void poke(std::uint64_t addr, const void* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            mem[addr + i] = static_cast<const std::uint8_t*>(p)[i];
    }
    std::vector<std::uint8_t> peek(std::uint64_t addr, std::size_t n) const {
        std::vector<std::uint8_t> out(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
            auto it = mem.find(addr + i);
            if (it != mem.end()) out[i] = it->second;
        }
        return out;
    }

  private:
    static call record(tlm::tlm_generic_payload& t, const sc_time& delay) {
        auto* e = t.get_extension<access_ext>();
        return {t.get_command(),       t.get_address(),
                t.get_data_length(),   t.get_data_ptr() != nullptr,
                e ? *e : access_ext{}, to_ns(delay)};
    }
    void move(tlm::tlm_generic_payload& t) {
        std::uint8_t* p = t.get_data_ptr();
        if (!p) return;
        auto* e = t.get_extension<access_ext>();
        const std::uint32_t rows = e ? e->rows : 1;
        const std::uint64_t rb = e ? e->row_bytes : t.get_data_length();
        for (std::uint32_t r = 0; r < rows; ++r) {
            const std::uint64_t a = t.get_address() + r * (e ? e->row_stride : 0);
            if (t.is_write())
                poke(a, p + r * rb, rb);
            else
                std::memcpy(p + r * rb, peek(a, rb).data(), rb);
        }
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
        calls.push_back(record(t, delay));
        move(t);
        delay += t.get_address() < amap::sbuf_base ? hbm_latency : onchip_latency;
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    unsigned transport_dbg(tlm::tlm_generic_payload& t) {
        dbg_calls.push_back(record(t, SC_ZERO_TIME));
        move(t);
        return t.get_data_length();
    }
};

using trn::testing::chip_op;
using trn::testing::hbm_op;

// What a chunk returned and the memory accesses it made.
struct chunk_result {
    double now_ns = 0, delay_in_ns = 0, delay_ns = 0, start_ns = -1;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    std::vector<call> calls, dbg_calls;
};

// Transfers used by the chunks ({dst, src}).
const trn::dma_transfer small_rows{chip_op(mem_space::sbuf, dtype::float32, 0, 8, 16, 0),
                                   hbm_op(dtype::float32, 8, 16, 0x100, 64)};  // 64 B rows
const trn::dma_transfer large_rows{chip_op(mem_space::sbuf, dtype::float32, 16, 8, 512, 128),
                                   hbm_op(dtype::float32, 8, 512, 0x10000, 4096)};  // 2 KiB rows
const trn::dma_transfer store_small{hbm_op(dtype::float32, 8, 16, 0x20000, 64),
                                    chip_op(mem_space::psum, dtype::float32, 4, 8, 16, 2048)};
const trn::dma_transfer hbm_copy{hbm_op(dtype::float32, 4, 16, 0x30000, 64),
                                 hbm_op(dtype::float32, 4, 16, 0x100, 64)};
// Functional: fp32 HBM rows with gaps -> bf16 SBUF, back to fp32 HBM, and a same-type copy.
constexpr std::uint32_t f_rows = 4, f_elems = 8;
const trn::dma_transfer to_bf16{chip_op(mem_space::sbuf, dtype::bfloat16, 10, f_rows, f_elems, 32),
                                hbm_op(dtype::float32, f_rows, f_elems, 0x2000, 64)};
const trn::dma_transfer to_fp32{hbm_op(dtype::float32, f_rows, f_elems, 0x3000, 32),
                                chip_op(mem_space::sbuf, dtype::bfloat16, 10, f_rows, f_elems, 32)};
const trn::dma_transfer raw_copy{hbm_op(dtype::float32, f_rows, f_elems, 0x4000, 32),
                                 hbm_op(dtype::float32, f_rows, f_elems, 0x2000, 64)};
// A DMA transpose of to_bf16's source: dst partition 20 + c holds column c of its rows.
trn::dma_transfer transposed() {
    trn::dma_transfer t{chip_op(mem_space::sbuf, dtype::float32, 20, f_elems, f_rows, 64),
                        hbm_op(dtype::float32, f_rows, f_elems, 0x2000, 64)};
    t.transpose = true;
    return t;
}
const trn::dma_transfer transpose_fp32 = transposed();
constexpr std::uint32_t t_begin = 2, t_end = 6;  // the chunk's rows (dst partitions)

constexpr double later_in = 1000;                       // chunk C's incoming delay
constexpr double t_slow = 5000, t_slow_latency = 3000;  // slow on-chip memory
constexpr double t_big = 10000, t_big_latency = 10;     // fast on-chip memory
constexpr double t_copy = 15000, t_func = 20000;
constexpr double hbm_latency = 9999;  // memories are never timed by the engine

float source_value(std::uint32_t r, std::uint32_t i) {
    const float v = 1.0f + static_cast<float>(r * f_elems + i) / 256.0f + 1.0f / 4096.0f;
    return (i % 3 == 1) ? -v : v;
}

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> queue{"queue"};
    trn::dma_engine dut{"dut", test_config()};
    fake_memory memory{"memory"};

    chunk_result a, b, c, d, e, f, g, func1, func2, func3, func4;
    std::uint64_t want_bytes = 0, want_rows = 0;
    double want_busy_ns = 0;

    explicit harness(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        queue.bind(dut.in);
        dut.out.bind(memory.in);
        memory.hbm_latency = trn::ns(hbm_latency);
        SC_THREAD(run);
    }

    chunk_result chunk(const trn::dma_transfer& t, std::uint32_t begin, std::uint32_t end,
                       double delay_ns, bool functional = false) {
        trn::dma_job job;
        job.transfer = &t;
        job.row_begin = begin;
        job.row_end = end;
        job.functional = functional;
        job.start = trn::ns(123456);  // must be overwritten
        tlm::tlm_generic_payload p;
        p.set_command(tlm::TLM_WRITE_COMMAND);
        p.set_extension(&job);
        sc_time dl = trn::ns(delay_ns);
        chunk_result r;
        r.now_ns = to_ns(sc_core::sc_time_stamp());
        r.delay_in_ns = delay_ns;
        queue->b_transport(p, dl);
        p.clear_extension(&job);
        r.delay_ns = to_ns(dl);
        r.start_ns = to_ns(job.start);
        r.status = p.get_response_status();
        r.calls = memory.calls;
        r.dbg_calls = memory.dbg_calls;
        memory.calls.clear();
        memory.dbg_calls.clear();
        want_bytes += std::uint64_t{end - begin} * t.row_bytes();
        want_rows += end - begin;
        want_busy_ns += service_ns(end - begin, t.row_bytes()) /
                        (t.transpose ? test_config().real("core.dma.transpose_rate") : 1.0);
        return r;
    }

    void run() {
        // Time 0: tiny rows (descriptor-bound), then large rows queued behind them, then a
        // chunk whose incoming delay is after the engine frees.
        a = chunk(small_rows, 0, 8, 0);
        b = chunk(large_rows, 2, 6, 0);
        c = chunk(small_rows, 0, 2, later_in);
        // On-chip memory slower than the engine: a load (write-bound), then a store queued
        // behind it (read-bound).
        sc_core::wait(trn::ns(t_slow));
        memory.onchip_latency = trn::ns(t_slow_latency);
        d = chunk(small_rows, 0, 8, 0);
        e = chunk(store_small, 0, 8, 0);
        // On-chip memory faster than the engine.
        sc_core::wait(trn::ns(t_big) - sc_core::sc_time_stamp());
        memory.onchip_latency = trn::ns(t_big_latency);
        f = chunk(large_rows, 0, 8, 0);
        // HBM to HBM: nothing for the engine to time but its own service.
        sc_core::wait(trn::ns(t_copy) - sc_core::sc_time_stamp());
        g = chunk(hbm_copy, 0, 4, 0);
        // Functional: fp32 -> bf16 -> fp32, and a same-type copy that moves raw bytes.
        sc_core::wait(trn::ns(t_func) - sc_core::sc_time_stamp());
        memory.onchip_latency = SC_ZERO_TIME;
        for (std::uint32_t r = 0; r < f_rows; ++r)
            for (std::uint32_t i = 0; i < f_elems; ++i) {
                float v = source_value(r, i);
                if (r == 1 && i == 2) v = 1.0f + 3.0f / 256.0f;  // halfway between two bf16
                if (r == 3 && i == 7) {  // a signalling NaN: only a raw copy keeps its bits
                    const std::uint32_t snan = 0x7f800001u;
                    std::memcpy(&v, &snan, 4);
                }
                memory.poke(to_bf16.src.offset + r * to_bf16.src.row_stride + i * 4, &v, 4);
            }
        func1 = chunk(to_bf16, 0, f_rows, 0, true);
        func2 = chunk(to_fp32, 0, f_rows, 0, true);
        func3 = chunk(raw_copy, 0, f_rows, 0, true);
        func4 = chunk(transpose_fp32, t_begin, t_end, 0, true);
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

std::vector<call> of(const std::vector<call>& calls, tlm::tlm_command cmd) {
    std::vector<call> out;
    for (const auto& c : calls)
        if (c.cmd == cmd) out.push_back(c);
    return out;
}

TEST(DmaEngine, ServiceTimeFollowsTheFormulaInBothRegimes) {
    const auto& dut = bench().dut;
    const double desc = test_config().time_ns("core.dma.descriptor_cost");
    const double bw = test_config().bandwidth("core.dma.engine_bandwidth");
    ASSERT_LT(64 / bw, desc);    // 64 B rows are descriptor-bound
    ASSERT_GT(2048 / bw, desc);  // 2 KiB rows are bandwidth-bound
    EXPECT_NEAR(to_ns(dut.service_time(8, 64)), 8 * desc, tol_ns);
    EXPECT_NEAR(to_ns(dut.service_time(4, 2048)), 4 * 2048 / bw, tol_ns);
    EXPECT_NEAR(to_ns(dut.service_time(1, static_cast<std::uint64_t>(desc * bw))), desc, tol_ns);
    EXPECT_EQ(dut.service_time(0, 4096), SC_ZERO_TIME);
}

TEST(DmaEngine, TinyRowsCostOneDescriptorEach) {
    const auto& r = bench().a;
    EXPECT_EQ(r.status, tlm::TLM_OK_RESPONSE);
    EXPECT_NEAR(r.delay_ns, service_ns(8, 64), tol_ns);
    EXPECT_NEAR(r.start_ns, 0, tol_ns);
}

TEST(DmaEngine, ChunksQueueFirstComeFirstServed) {
    const auto& b = bench();
    // Chunk B arrives at 0 while A holds the engine: it starts when A's service ends.
    const double start_b = service_ns(8, 64);
    EXPECT_NEAR(b.b.start_ns, start_b, tol_ns);
    EXPECT_NEAR(b.b.delay_ns, start_b + service_ns(4, 2048), tol_ns);
    // Chunk C asks to start after B has finished: no queueing.
    ASSERT_GT(later_in, b.b.delay_ns);
    EXPECT_NEAR(b.c.start_ns, later_in, tol_ns);
    EXPECT_NEAR(b.c.delay_ns, later_in + service_ns(2, 64), tol_ns);
}

TEST(DmaEngine, TimingOnlyChunksTouchNoMemory) {
    const auto& b = bench();
    for (const auto* r : {&b.a, &b.b, &b.c, &b.d, &b.e, &b.f, &b.g}) {
        EXPECT_TRUE(r->calls.empty());
        EXPECT_TRUE(r->dbg_calls.empty());
    }
}

TEST(DmaEngine, MemoryLatencyDoesNotBoundTheChunk) {
    const auto& b = bench();
    // Slow on-chip memory: a load, then a store queued behind it, each ends with its service.
    ASSERT_GT(t_slow_latency, service_ns(8, 64));
    EXPECT_NEAR(b.d.now_ns, t_slow, tol_ns);
    EXPECT_NEAR(b.d.delay_ns, service_ns(8, 64), tol_ns);
    EXPECT_NEAR(b.e.start_ns, service_ns(8, 64), tol_ns);
    EXPECT_NEAR(b.e.delay_ns, 2 * service_ns(8, 64), tol_ns);
    // Fast on-chip memory, and HBM to HBM (slow HBM): the same.
    EXPECT_NEAR(b.f.delay_ns, service_ns(8, 2048), tol_ns);
    EXPECT_NEAR(b.g.delay_ns, service_ns(4, 64), tol_ns);
}

TEST(DmaEngine, CountersAndBusyTime) {
    const auto& b = bench();
    EXPECT_EQ(b.dut.bytes(), b.want_bytes);
    EXPECT_EQ(b.dut.rows(), b.want_rows);
    EXPECT_EQ(b.want_rows, 8 + 4 + 2 + 8 + 8 + 8 + 4 + 3 * f_rows + (t_end - t_begin));
    EXPECT_NEAR(to_ns(b.dut.port().busy_total()), b.want_busy_ns, 16 * tol_ns);
}

TEST(DmaEngine, FunctionalChunkMovesDataWithDebugAccessesOnly) {
    const auto& b = bench();
    EXPECT_NEAR(b.func1.delay_ns, service_ns(f_rows, f_elems * 4), tol_ns);
    // Debug: read the source rows, write the destination rows.
    const auto rd = of(b.func1.dbg_calls, tlm::TLM_READ_COMMAND);
    const auto wr = of(b.func1.dbg_calls, tlm::TLM_WRITE_COMMAND);
    ASSERT_EQ(rd.size(), 1u);
    ASSERT_EQ(wr.size(), 1u);
    EXPECT_EQ(rd[0].addr, to_bf16.src.offset);
    EXPECT_EQ(rd[0].ext.row_stride, to_bf16.src.row_stride);
    EXPECT_EQ(wr[0].addr, amap::sbuf_base + 10 * amap::partition_stride + 32);
    EXPECT_EQ(wr[0].len, f_rows * f_elems * 2);
    // No timed access.
    EXPECT_TRUE(b.func1.calls.empty());
}

// Round to nearest even of the top 16 bits: the definition of fp32 -> bf16.
std::uint16_t bf16_bits(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    const std::uint32_t lsb = (u >> 16) & 1;
    return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);
}

TEST(DmaEngine, FunctionalCopyConvertsFp32ToBf16) {
    const auto& b = bench();
    for (std::uint32_t r = 0; r < f_rows; ++r)
        for (std::uint32_t i = 0; i < f_elems; ++i) {
            if (r == 3 && i == 7) continue;  // the NaN
            const auto src = b.memory.peek(to_bf16.src.offset + r * 64 + i * 4, 4);
            float v;
            std::memcpy(&v, src.data(), 4);
            const auto dst =
                b.memory.peek(amap::sbuf_base + (10 + r) * amap::partition_stride + 32 + i * 2, 2);
            const auto got = static_cast<std::uint16_t>(dst[0] | dst[1] << 8);
            EXPECT_EQ(got, bf16_bits(v)) << "row " << r << " elem " << i << " value " << v;
        }
    // The tie 1 + 3/256 lies halfway between 1 + 2/256 and 1 + 4/256: rounds to the even one.
    const auto tie = b.memory.peek(amap::sbuf_base + 11 * amap::partition_stride + 32 + 2 * 2, 2);
    EXPECT_EQ(static_cast<std::uint16_t>(tie[0] | tie[1] << 8), bf16_bits(1.0f + 4.0f / 256.0f));
}

TEST(DmaEngine, FunctionalCopyConvertsBf16BackToFp32) {
    const auto& b = bench();
    for (std::uint32_t r = 0; r < f_rows; ++r)
        for (std::uint32_t i = 0; i < f_elems; ++i) {
            if (r == 3 && i == 7) continue;
            const auto mid =
                b.memory.peek(amap::sbuf_base + (10 + r) * amap::partition_stride + 32 + i * 2, 2);
            const std::uint32_t want_bits = static_cast<std::uint32_t>(mid[0] | mid[1] << 8) << 16;
            const auto got = b.memory.peek(to_fp32.dst.offset + r * 32 + i * 4, 4);
            std::uint32_t got_bits;
            std::memcpy(&got_bits, got.data(), 4);
            EXPECT_EQ(got_bits, want_bits) << "row " << r << " elem " << i;
        }
}

TEST(DmaEngine, FunctionalSameTypeCopyMovesRawBytes) {
    const auto& b = bench();
    for (std::uint32_t r = 0; r < f_rows; ++r)  // strided source rows land packed at stride 32
        EXPECT_EQ(b.memory.peek(raw_copy.dst.offset + r * 32, f_elems * 4),
                  b.memory.peek(raw_copy.src.offset + r * 64, f_elems * 4))
            << "row " << r;
    const auto nan = b.memory.peek(raw_copy.dst.offset + 3 * 32 + 7 * 4, 4);
    std::uint32_t bits;
    std::memcpy(&bits, nan.data(), 4);
    EXPECT_EQ(bits, 0x7f800001u);
    EXPECT_TRUE(b.func3.calls.empty());
}

TEST(DmaEngine, TransposeChunkWritesItsRowsFromColumnsAtTheTransposeRate) {
    const auto& b = bench();
    // Rows 2..5 of dst (partitions 22..25), each a column of the 4 source rows: 16 bytes read
    // a row, at half a copy's rate (core.dma.transpose_rate 0.5 here), behind func3.
    EXPECT_EQ(transpose_fp32.rows(), f_elems);
    EXPECT_EQ(transpose_fp32.row_bytes(), f_rows * 4u);
    EXPECT_NEAR(b.func4.delay_ns - b.func4.start_ns, service_ns(t_end - t_begin, f_rows * 4) / 0.5,
                tol_ns);
    for (std::uint32_t c = 0; c < f_elems; ++c) {
        const auto row =
            b.memory.peek(amap::sbuf_base + (20 + c) * amap::partition_stride + 64, f_rows * 4);
        for (std::uint32_t r = 0; r < f_rows; ++r) {
            const auto want = c >= t_begin && c < t_end
                                  ? b.memory.peek(transpose_fp32.src.offset + r * 64 + c * 4, 4)
                                  : std::vector<std::uint8_t>(4, 0);  // (not this chunk's)
            EXPECT_EQ(std::vector<std::uint8_t>(row.begin() + r * 4, row.begin() + r * 4 + 4), want)
                << "dst row " << c << " elem " << r;
        }
    }
    EXPECT_TRUE(b.func4.calls.empty());
}

}  // namespace

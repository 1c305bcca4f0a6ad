// router: HBM interleaving over channels, routing to SBUF / PSUM banks / doorbells, and the
// shared SBUF/PSUM access ports. One bench holds two routers with different configs, each wired
// to recording fake targets:
//   A: 4 channels, 64 B granule, port sharing dve+pool (SBUF) and dve+act (PSUM);
//   B: 3 channels, 96 B granule (not a power of two), no port sharing.
// The fake HBM channels keep the bytes they receive at their channel-local addresses, so the
// placement of every byte can be checked against the interleave contract of router.h:
// granule k lies in block k / channels; the granules of a block are spread over the channels,
// one each (a hash of the block rotates them), at channel-local address block * interleave.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "platforms/neuron_core.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
using trn::access_ext;
using trn::initiator_id;
namespace amap = trn::address_map;

constexpr double tol_ns = 0.002;

using trn::testing::to_ns;

const trn::config& config_a() {
    static const trn::config c = trn::testing::default_config(
        {"core.hbm.channels=4", "core.hbm.interleave=64B",
         "core.hbm.page_size=128B",  // two granules of a channel: pages change often
         "core.sbuf.port_sharing=dve+pool", "core.psum.port_sharing=dve+act",
         "core.psum.bank_size=2KiB"});
    return c;
}

// Sizes that are not powers of two: the general decoding walk and bank numbering.
const trn::config& config_b() {
    static const trn::config c = trn::testing::default_config(
        {"core.hbm.channels=3", "core.hbm.interleave=96B", "core.hbm.banks=6",
         "core.sbuf.port_sharing=none", "core.psum.port_sharing=none"});
    return c;
}

// A's interleaving with 1024 banks: a large access's summary (one entry per bank touched) is too
// large for the router to remember.
const trn::config& config_c() {
    static const trn::config c =
        trn::testing::default_config({"core.hbm.channels=4", "core.hbm.interleave=64B",
                                      "core.hbm.page_size=128B", "core.hbm.banks=1024"});
    return c;
}

std::uint64_t granule(const trn::config& c) {
    return c.size("core.hbm.interleave");
}
std::uint64_t channels(const trn::config& c) {
    return static_cast<std::uint64_t>(c.integer("core.hbm.channels"));
}
// Channel-local address: the block number times the granule, plus the offset in the granule.
std::uint64_t local_of(const trn::config& c, std::uint64_t a) {
    return (a / granule(c) / channels(c)) * granule(c) + a % granule(c);
}

// One call a fake target received.
struct call {
    tlm::tlm_command cmd;
    std::uint64_t addr;
    unsigned len;
    bool has_data;
    bool has_ext;
    access_ext ext;
    double now_ns;
    double delay_in_ns;
    bool has_pages = false;
    // hbm_pages_ext, if any: its list, or its table's touched banks in bank order (`table`)
    std::vector<trn::hbm_bank_pages> banks;
    bool table = false;
    std::uint64_t changes = 0;
};

// A recording target: returns delay + latency (+ the access occupancy when `add_occupancy`,
// as onchip_bank does) and stores functional bytes (2-D per access_ext) in a sparse memory.
class fake_target : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<fake_target> in{"in"};
    sc_time latency = SC_ZERO_TIME;
    bool add_occupancy = false;
    std::vector<call> calls, dbg_calls, probes;
    sc_time probe_wait = SC_ZERO_TIME;  // how long after the probe's delay it says it can start
    std::map<std::uint64_t, std::uint8_t> mem;

    explicit fake_target(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        in.register_b_transport(this, &fake_target::b_transport);
        in.register_transport_dbg(this, &fake_target::transport_dbg);
    }

  private:
    call record(tlm::tlm_generic_payload& t, const sc_time& delay) {
        call c{t.get_command(),
               t.get_address(),
               t.get_data_length(),
               t.get_data_ptr() != nullptr,
               false,
               access_ext{},
               to_ns(sc_core::sc_time_stamp()),
               to_ns(delay),
               false,
               {},
               false,
               0};
        if (auto* e = t.get_extension<access_ext>()) {
            c.has_ext = true;
            c.ext.initiator = e->initiator;
            c.ext.rows = e->rows;
            c.ext.row_bytes = e->row_bytes;
            c.ext.row_stride = e->row_stride;
            c.ext.occupancy = e->occupancy;
            c.ext.probe = e->probe;
        }
        if (auto* r = t.get_extension<trn::hbm_pages_ext>()) {
            c.has_pages = true;
            if (r->dense) {
                c.table = true;
                for (std::size_t b = 0; b < r->count; ++b)
                    if (r->dense[b] != trn::hbm_no_page)
                        c.banks.push_back({r->dense[b], r->dense[r->count + b]});
            } else {
                c.banks.assign(r->banks, r->banks + r->count);
            }
            c.changes = r->changes;
        }
        return c;
    }
    void move_data(tlm::tlm_generic_payload& t) {
        std::uint8_t* p = t.get_data_ptr();
        if (!p) return;
        auto* e = t.get_extension<access_ext>();
        const std::uint32_t rows = e ? e->rows : 1;
        const std::uint64_t rb = e ? e->row_bytes : t.get_data_length();
        const std::uint64_t stride = e ? e->row_stride : 0;
        for (std::uint32_t r = 0; r < rows; ++r)
            for (std::uint64_t i = 0; i < rb; ++i) {
                const std::uint64_t a = t.get_address() + r * stride + i;
                if (t.is_write())
                    mem[a] = p[r * rb + i];
                else
                    p[r * rb + i] = mem.count(a) ? mem[a] : 0;
            }
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
        if (auto* e = t.get_extension<access_ext>(); e && e->probe) {  // when it could start
            probes.push_back(record(t, delay));
            delay += probe_wait;
            return;
        }
        calls.push_back(record(t, delay));
        move_data(t);
        auto* e = t.get_extension<access_ext>();
        if (add_occupancy && e) delay += e->occupancy;
        delay += latency;
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    unsigned transport_dbg(tlm::tlm_generic_payload& t) {
        dbg_calls.push_back(record(t, SC_ZERO_TIME));
        move_data(t);
        return t.get_data_length();
    }
};

constexpr std::size_t psum_banks = 8, doorbells = 4;

// A router with its fake targets.
struct routed;
std::vector<std::uint64_t> brute_split(const routed& r, std::uint64_t a, std::uint64_t n,
                                       std::uint32_t rows = 1, std::uint64_t stride = 0);

struct routed {
    const trn::config& cfg;
    trn::router dut;
    std::vector<std::unique_ptr<fake_target>> hbm, psum, bell;
    fake_target sbuf;

    routed(const char* name, const trn::config& c)
        : cfg(c), dut(name, c), sbuf((std::string(name) + "_sbuf").c_str()) {
        for (std::uint64_t ch = 0; ch < channels(c); ++ch) {
            hbm.push_back(std::make_unique<fake_target>(
                (std::string(name) + "_hbm" + std::to_string(ch)).c_str()));
            // Channel 1 is the slowest: the latest completion is not the last channel's.
            hbm.back()->latency =
                trn::ns(10.0 * static_cast<double>(ch == 1 ? channels(c) : ch) + 10);
            dut.hbm.bind(hbm.back()->in);
        }
        sbuf.add_occupancy = true;
        dut.sbuf.bind(sbuf.in);
        for (std::size_t b = 0; b < psum_banks; ++b) {
            psum.push_back(std::make_unique<fake_target>(
                (std::string(name) + "_psum" + std::to_string(b)).c_str()));
            psum.back()->add_occupancy = true;
            dut.psum.bind(psum.back()->in);
        }
        for (std::size_t q = 0; q < doorbells; ++q) {
            bell.push_back(std::make_unique<fake_target>(
                (std::string(name) + "_bell" + std::to_string(q)).c_str()));
            dut.doorbell.bind(bell.back()->in);
        }
    }
    std::vector<fake_target*> all() {
        std::vector<fake_target*> v{&sbuf};
        for (auto* group : {&hbm, &psum, &bell})
            for (auto& t : *group)
                v.push_back(t.get());
        return v;
    }
    // Takes and clears every target's record of b_transport calls.
    std::map<const fake_target*, std::vector<call>> take() {
        std::map<const fake_target*, std::vector<call>> out;
        for (auto* t : all()) {
            out[t] = t->calls;
            t->calls.clear();
            t->dbg_calls.clear();
        }
        return out;
    }
};

// Reference split, byte by byte, from the router's own channel map (whose contract is checked
// by InterleaveSpreadsEachBlockOverAllChannels).
std::vector<std::uint64_t> brute_split(const routed& r, std::uint64_t a, std::uint64_t n,
                                       std::uint32_t rows, std::uint64_t stride) {
    std::vector<std::uint64_t> out(channels(r.cfg), 0);
    for (std::uint32_t row = 0; row < rows; ++row)
        for (std::uint64_t i = 0; i < n; ++i)
            ++out[r.dut.hbm_channel_of(a + row * stride + i)];
    return out;
}

struct result {
    double delay_ns = 0;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    std::map<const fake_target*, std::vector<call>> seen;
};

// HBM timing accesses.
constexpr std::uint64_t t1_addr = 100, t1_len = 1000;
constexpr double t1_in = 5;
constexpr std::uint64_t t2_addr = 50, t2_row = 70, t2_stride = 300;
constexpr std::uint32_t t2_rows = 3;
// Rows inside one block of A (256 B), two and eight blocks apart (the router's fast path).
constexpr std::uint64_t t3_addr = 3 * 256 + 40, t3_row = 150, t3_stride = 512;
constexpr std::uint32_t t3_rows = 6;
constexpr std::uint64_t t4_addr = 9 * 256 + 10, t4_row = 60, t4_stride = 2048;
constexpr std::uint32_t t4_rows = 5;
// An access of many pages (A's page: 128 B): many per bank in A, more bank entries than the
// router remembers in C.
constexpr std::uint64_t t5_addr = 1000, t5_len = 160 * 1024;
// Functional HBM accesses.
constexpr std::uint64_t f1_addr = 37, f1_len = 1500;
constexpr std::uint64_t f2_addr = 5000, f2_row = 100, f2_stride = 1000;
constexpr std::uint32_t f2_rows = 4;
// Shared port occupancies.
constexpr double occ_dve = 100, occ_pool = 40, in_pool = 10, occ_act = 50;
constexpr double occ_dve_psum = 60, occ_act_psum = 20, occ_pool_psum = 20;

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>((i * 31 + seed + i / 256) & 0xff);
    return v;
}

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> to_a{"to_a"}, to_b{"to_b"};
    routed a{"router_a", config_a()};
    routed b{"router_b", config_b()};

    routed c{"router_c", config_c()};
    tlm_utils::simple_initiator_socket<harness> to_c{"to_c"};

    result hbm1, hbm2, hbm2_b, hbm3, hbm4, hbm3_again, hbm5, hbm5_again, hbm5_c, hbm5_c_again;
    std::uint64_t hbm5_again_decodings = 9, hbm5_c_again_decodings = 9;  // of the repeats
    result hbm_revisit, hbm_return, hbm5_b;
    // The table of decoded shapes: accesses of shapes that share one set, and how many
    // decodings each took (0: found in the table).
    struct shape {
        std::uint64_t addr;
        std::uint32_t rows;
        std::uint64_t row_bytes, stride;
    };
    std::vector<shape> table_shapes;
    std::vector<result> table_results;
    std::vector<std::uint64_t> table_decodings;
    result hbm3_late;  // t3 again after thousands of other accesses (evictions)
    std::vector<result> hbm_empty;
    unsigned doorbell_dbg = 99;
    std::vector<std::uint8_t> f1_data = pattern(f1_len, 1), f1_back, f1_back_b;
    std::vector<std::uint8_t> f2_data = pattern(f2_rows * f2_row, 2);
    std::vector<std::vector<std::uint8_t>> f2_rows_back;
    std::vector<std::uint8_t> f2_gap;
    std::map<const fake_target*, std::vector<call>> f1_seen;
    result sbuf_r, psum_r[4], bell_r[2];
    std::vector<std::uint8_t> sbuf_dbg = std::vector<std::uint8_t>(16),
                              psum_dbg = std::vector<std::uint8_t>(16);
    std::size_t sbuf_dbg_calls = 0, psum5_dbg_calls = 0;
    // A PSUM access of 3 rows spanning banks 2-4 (a tile of several banks, NeuronCore-v4):
    // written, read back, and its first row read through the debug path.
    result psum_span_w, psum_span_r;
    std::vector<call> span_probes_w, span_probes_r;  // (banks 0-7 in turn)
    std::vector<std::uint8_t> span_data = pattern(3 * 4000, 7),
                              span_back = std::vector<std::uint8_t>(3 * 4000),
                              span_dbg = std::vector<std::uint8_t>(4000);
    // Port sharing: [router][access]
    result share[2][6];
    double port_wait_a_sbuf = 0, port_wait_a_psum = 0, port_wait_b_sbuf = 0, port_wait_b_psum = 0;

    explicit harness(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        to_a.bind(a.dut.in);
        to_b.bind(b.dut.in);
        to_c.bind(c.dut.in);
        SC_THREAD(run);
    }

    template <typename Socket>
    result access(Socket& s, routed& r, tlm::tlm_command cmd, std::uint64_t addr, unsigned len,
                  std::uint8_t* data, const access_ext* ext, double delay_ns) {
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(data);
        t.set_data_length(len);
        access_ext e;
        if (ext) {
            e = *ext;
            t.set_extension(&e);
        }
        sc_time d = trn::ns(delay_ns);
        s->b_transport(t, d);
        if (ext) t.clear_extension(&e);
        result res;
        res.delay_ns = to_ns(d);
        res.status = t.get_response_status();
        res.seen = r.take();
        return res;
    }

    // Shapes in one set of router A's table: s[0..4] differ in their address, s[5..7] differ
    // from s[0] in rows, row bytes and stride only. The set holds 4; the least recently used
    // goes first.
    void table_accesses() {
        const shape first{1ull << 30, 3, 100, 1000};
        const std::size_t set =
            trn::router::decoded_set(first.addr, first.rows, first.row_bytes, first.stride);
        auto same_set = [&](shape s) {
            return trn::router::decoded_set(s.addr, s.rows, s.row_bytes, s.stride) == set;
        };
        constexpr std::size_t ways = trn::router::decoded_ways;
        std::vector<shape> s{first};
        for (std::uint64_t a = first.addr + 64; s.size() < ways + 1; a += 64)
            if (same_set({a, first.rows, first.row_bytes, first.stride}))
                s.push_back({a, first.rows, first.row_bytes, first.stride});
        for (std::uint32_t rows = first.rows + 1;; ++rows)
            if (same_set({first.addr, rows, first.row_bytes, first.stride})) {
                s.push_back({first.addr, rows, first.row_bytes, first.stride});
                break;
            }
        for (std::uint64_t bytes = first.row_bytes + 1;; ++bytes)
            if (same_set({first.addr, first.rows, bytes, first.stride})) {
                s.push_back({first.addr, first.rows, bytes, first.stride});
                break;
            }
        for (std::uint64_t stride = first.stride + 1;; ++stride)
            if (same_set({first.addr, first.rows, first.row_bytes, stride})) {
                s.push_back({first.addr, first.rows, first.row_bytes, stride});
                break;
            }
        // Fill the set (0 .. W-1, W ways), use 0, add W (evicts 1), use 0, 2 .. W-1 and W,
        // bring back 1 (evicts 0), use 2, bring back 0; then each one-field variant of 0 (W+1 ..
        // W+3), and 0 again after each.
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < ways; ++i)
            order.push_back(i);
        for (std::size_t i : {std::size_t{0}, ways, std::size_t{0}})
            order.push_back(i);
        for (std::size_t i = 2; i <= ways; ++i)
            order.push_back(i);
        for (std::size_t i : {std::size_t{1}, std::size_t{2}, std::size_t{0}, ways + 1,
                              std::size_t{0}, ways + 2, std::size_t{0}, ways + 3, std::size_t{0}})
            order.push_back(i);
        for (std::size_t i : order) {
            const access_ext e =
                ext_of(initiator_id::dma, s[i].rows, s[i].row_bytes, s[i].stride, 0);
            const std::uint64_t before = a.dut.decodings();
            table_results.push_back(access(to_a, a, tlm::TLM_READ_COMMAND, s[i].addr,
                                           static_cast<unsigned>(s[i].rows * s[i].row_bytes),
                                           nullptr, &e, 0));
            table_decodings.push_back(a.dut.decodings() - before);
            table_shapes.push_back(s[i]);
        }
    }

    template <typename Socket>
    unsigned debug(Socket& s, tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data,
                   unsigned len) {
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(data);
        t.set_data_length(len);
        return s->transport_dbg(t);
    }

    static access_ext ext_of(initiator_id who, std::uint32_t rows, std::uint64_t row_bytes,
                             std::uint64_t stride, double occ_ns) {
        access_ext e;
        e.initiator = who;
        e.rows = rows;
        e.row_bytes = row_bytes;
        e.row_stride = stride;
        e.occupancy = trn::ns(occ_ns);
        return e;
    }

    void run() {
        // --- HBM timing: 1-D (no extension) on A, 2-D on A and B.
        hbm1 = access(to_a, a, tlm::TLM_READ_COMMAND, t1_addr, t1_len, nullptr, nullptr, t1_in);
        const access_ext e2 = ext_of(initiator_id::dma, t2_rows, t2_row, t2_stride, 0);
        hbm2 = access(to_a, a, tlm::TLM_WRITE_COMMAND, t2_addr, t2_rows * t2_row, nullptr, &e2, 0);
        hbm2_b =
            access(to_b, b, tlm::TLM_WRITE_COMMAND, t2_addr, t2_rows * t2_row, nullptr, &e2, 0);
        const access_ext e3 = ext_of(initiator_id::dma, t3_rows, t3_row, t3_stride, 0);
        hbm3 = access(to_a, a, tlm::TLM_READ_COMMAND, t3_addr, t3_rows * t3_row, nullptr, &e3, 0);
        const access_ext e4 = ext_of(initiator_id::dma, t4_rows, t4_row, t4_stride, 0);
        hbm4 = access(to_a, a, tlm::TLM_READ_COMMAND, t4_addr, t4_rows * t4_row, nullptr, &e4, 0);
        // Each again: the second time a remembered decoding, or a fresh one if too large.
        hbm3_again =
            access(to_a, a, tlm::TLM_READ_COMMAND, t3_addr, t3_rows * t3_row, nullptr, &e3, 0);
        hbm5 = access(to_a, a, tlm::TLM_READ_COMMAND, t5_addr, t5_len, nullptr, nullptr, 0);
        const std::uint64_t a_before = a.dut.decodings();
        hbm5_again = access(to_a, a, tlm::TLM_READ_COMMAND, t5_addr, t5_len, nullptr, nullptr, 0);
        hbm5_again_decodings = a.dut.decodings() - a_before;
        hbm5_b = access(to_b, b, tlm::TLM_READ_COMMAND, t5_addr, t5_len, nullptr, nullptr, 0);
        hbm5_c = access(to_c, c, tlm::TLM_READ_COMMAND, t5_addr, t5_len, nullptr, nullptr, 0);
        const std::uint64_t c_before = c.dut.decodings();
        hbm5_c_again = access(to_c, c, tlm::TLM_READ_COMMAND, t5_addr, t5_len, nullptr, nullptr, 0);
        hbm5_c_again_decodings = c.dut.decodings() - c_before;
        for (std::uint64_t i = 0; i < 10000; ++i)  // more distinct shapes than remembered
            access(to_a, a, tlm::TLM_READ_COMMAND, 7 * i, 100 + i % 7, nullptr, nullptr, 0);
        // Overlapping rows: a bank touches a page again after other banks' pages (1 KiB rows
        // 256 B apart), or after another page of its own (8.5 KiB rows, pages 0 and 16 of a
        // channel in one bank of A's 16).
        const access_ext revisit = ext_of(initiator_id::dma, 2, 1024, 256, 0);
        hbm_revisit = access(to_a, a, tlm::TLM_READ_COMMAND, 0, 2 * 1024, nullptr, &revisit, 0);
        const access_ext back = ext_of(initiator_id::dma, 2, 8704, 256, 0);
        hbm_return = access(to_a, a, tlm::TLM_READ_COMMAND, 0, 2 * 8704, nullptr, &back, 0);
        hbm3_late =
            access(to_a, a, tlm::TLM_READ_COMMAND, t3_addr, t3_rows * t3_row, nullptr, &e3, 0);
        table_accesses();
        // Nothing to move: no rows, or rows of no bytes.
        const access_ext no_rows = ext_of(initiator_id::dma, 0, 64, 128, 0);
        hbm_empty.push_back(access(to_a, a, tlm::TLM_READ_COMMAND, 0, 0, nullptr, &no_rows, 3));
        const access_ext empty_rows = ext_of(initiator_id::dma, 4, 0, 128, 0);
        hbm_empty.push_back(access(to_a, a, tlm::TLM_READ_COMMAND, 0, 0, nullptr, &empty_rows, 3));
        std::uint8_t word[4] = {};
        doorbell_dbg = debug(to_a, tlm::TLM_READ_COMMAND, amap::doorbell_base + 1, word, 4);

        // --- HBM functional: written with b_transport, read back with transport_dbg.
        std::vector<std::uint8_t> w = f1_data;
        f1_seen =
            access(to_a, a, tlm::TLM_WRITE_COMMAND, f1_addr, f1_len, w.data(), nullptr, 0).seen;
        f1_back.assign(f1_len, 0);
        debug(to_a, tlm::TLM_READ_COMMAND, f1_addr, f1_back.data(), f1_len);
        a.take();
        w = f1_data;
        access(to_b, b, tlm::TLM_WRITE_COMMAND, f1_addr, f1_len, w.data(), nullptr, 0);
        f1_back_b.assign(f1_len, 0);
        debug(to_b, tlm::TLM_READ_COMMAND, f1_addr, f1_back_b.data(), f1_len);
        const access_ext ef2 = ext_of(initiator_id::dma, f2_rows, f2_row, f2_stride, 0);
        w = f2_data;
        access(to_a, a, tlm::TLM_WRITE_COMMAND, f2_addr, f2_rows * f2_row, w.data(), &ef2, 0);
        for (std::uint32_t r = 0; r < f2_rows; ++r) {
            f2_rows_back.emplace_back(f2_row, 0xee);
            debug(to_a, tlm::TLM_READ_COMMAND, f2_addr + r * f2_stride, f2_rows_back.back().data(),
                  f2_row);
        }
        f2_gap.assign(f2_stride - f2_row, 0xee);
        debug(to_a, tlm::TLM_READ_COMMAND, f2_addr + f2_row, f2_gap.data(),
              static_cast<unsigned>(f2_gap.size()));
        a.take();

        // --- routing of on-chip and doorbell addresses (timing-only, not on shared ports).
        const access_ext es = ext_of(initiator_id::act, 2, 32, amap::partition_stride, 10);
        sbuf_r = access(to_a, a, tlm::TLM_READ_COMMAND,
                        amap::sbuf_base + 5 * amap::partition_stride + 64, 64, nullptr, &es, 3);
        const std::uint64_t bank = config_a().size("core.psum.bank_size");
        const std::uint64_t psum_offsets[4] = {3 * bank + 100, bank - 1, bank,
                                               psum_banks * bank - 1};
        for (int i = 0; i < 4; ++i)
            psum_r[i] = access(to_a, a, tlm::TLM_WRITE_COMMAND,
                               amap::psum_base + 7 * amap::partition_stride + psum_offsets[i], 1,
                               nullptr, nullptr, 0);
        bell_r[0] = access(to_a, a, tlm::TLM_WRITE_COMMAND, amap::doorbell_base + 2, 0, nullptr,
                           nullptr, 4);
        bell_r[1] = access(to_a, a, tlm::TLM_WRITE_COMMAND, amap::doorbell_base + 0, 0, nullptr,
                           nullptr, 0);
        std::vector<std::uint8_t> v = pattern(16, 9);
        debug(to_a, tlm::TLM_WRITE_COMMAND, amap::sbuf_base + 2 * amap::partition_stride, v.data(),
              16);
        debug(to_a, tlm::TLM_READ_COMMAND, amap::sbuf_base + 2 * amap::partition_stride,
              sbuf_dbg.data(), 16);
        sbuf_dbg_calls = a.sbuf.dbg_calls.size();
        debug(to_a, tlm::TLM_WRITE_COMMAND, amap::psum_base + 5 * bank + 8, v.data(), 16);
        debug(to_a, tlm::TLM_READ_COMMAND, amap::psum_base + 5 * bank + 8, psum_dbg.data(), 16);
        psum5_dbg_calls = a.psum[5]->dbg_calls.size();
        a.take();

        const std::uint64_t span_at =
            amap::psum_base + 2 * amap::partition_stride + 2 * bank + 1000;
        const access_ext span = ext_of(initiator_id::pe, 3, 4000, amap::partition_stride, 30);
        auto probes = [&] {
            std::vector<call> out;
            for (auto& t : a.psum) {
                out.insert(out.end(), t->probes.begin(), t->probes.end());
                t->probes.clear();
            }
            return out;
        };
        a.psum[3]->probe_wait = trn::ns(5);  // bank 3 is busy 5 ns longer: every bank waits
        psum_span_w =
            access(to_a, a, tlm::TLM_WRITE_COMMAND, span_at, 3 * 4000, span_data.data(), &span, 7);
        span_probes_w = probes();
        a.psum[3]->probe_wait = SC_ZERO_TIME;
        psum_span_r =
            access(to_a, a, tlm::TLM_READ_COMMAND, span_at, 3 * 4000, span_back.data(), &span, 0);
        span_probes_r = probes();
        debug(to_a, tlm::TLM_READ_COMMAND, span_at, span_dbg.data(), 4000);
        a.take();

        // --- shared ports: the same overlapping sequence on A (shared) and B (none).
        sc_core::wait(trn::ns(10000));
        for (int i = 0; i < 2; ++i) {
            routed& r = i == 0 ? a : b;
            auto go = [&](initiator_id who, bool psum_side, double occ, double in) {
                const access_ext e = ext_of(who, 4, 64, amap::partition_stride, occ);
                const std::uint64_t base = psum_side ? amap::psum_base : amap::sbuf_base;
                return i == 0 ? access(to_a, r, tlm::TLM_READ_COMMAND, base, 256, nullptr, &e, in)
                              : access(to_b, r, tlm::TLM_READ_COMMAND, base, 256, nullptr, &e, in);
            };
            share[i][0] = go(initiator_id::dve, false, occ_dve, 0);
            share[i][1] = go(initiator_id::pool, false, occ_pool, in_pool);
            share[i][2] = go(initiator_id::act, false, occ_act, 0);
            share[i][3] = go(initiator_id::dve, true, occ_dve_psum, 0);
            share[i][4] = go(initiator_id::act, true, occ_act_psum, 0);
            share[i][5] = go(initiator_id::pool, true, occ_pool_psum, 0);
        }
        port_wait_a_sbuf = to_ns(a.dut.shared_port(false).wait_total());
        port_wait_a_psum = to_ns(a.dut.shared_port(true).wait_total());
        port_wait_b_sbuf = to_ns(b.dut.shared_port(false).wait_total());
        port_wait_b_psum = to_ns(b.dut.shared_port(true).wait_total());
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

// Checks that an HBM access reached exactly the channels with bytes, each once with its share,
// and that the router returned the latest completion among them.
void expect_hbm_split(routed& r, const result& res, const std::vector<std::uint64_t>& want,
                      double delay_in_ns) {
    double latest = delay_in_ns;
    for (std::size_t ch = 0; ch < want.size(); ++ch) {
        const auto& calls = res.seen.at(r.hbm[ch].get());
        if (want[ch] == 0) {
            EXPECT_TRUE(calls.empty()) << "channel " << ch;
            continue;
        }
        ASSERT_EQ(calls.size(), 1u) << "channel " << ch;
        EXPECT_EQ(calls[0].len, want[ch]) << "channel " << ch;
        EXPECT_FALSE(calls[0].has_data);
        EXPECT_NEAR(calls[0].delay_in_ns, delay_in_ns, tol_ns);
        latest = std::max(latest, delay_in_ns + to_ns(r.hbm[ch]->latency));
    }
    EXPECT_EQ(res.status, tlm::TLM_OK_RESPONSE);
    EXPECT_NEAR(res.delay_ns, latest, tol_ns);
    for (auto* t : r.all()) {
        const bool is_hbm = std::find_if(r.hbm.begin(), r.hbm.end(),
                                         [&](auto& p) { return p.get() == t; }) != r.hbm.end();
        if (!is_hbm) {
            EXPECT_TRUE(res.seen.at(t).empty()) << t->name();
        }
    }
}

TEST(Router, SplitHbmMatchesTheChannelMapByteByByte) {
    auto& b = bench();
    struct range {
        std::uint64_t addr, len;
    };
    for (routed* r : {&b.a, &b.b}) {
        const std::uint64_t g = granule(r->cfg), c = channels(r->cfg);
        const std::vector<range> ranges{
            {0, g},                      // one granule
            {0, g * c * 3},              // whole blocks, aligned
            {5 * g, 7 * g},              // granule-aligned, not block-aligned
            {10, g / 4},                 // inside one granule
            {g - 3, 10},                 // straddles a granule boundary
            {37, 1500},                  // unaligned start and end, many granules
            {g * c - 1, g * c * 5 + 2},  // unaligned, many blocks
            {123457, 1 << 20},           // large
            {64, 0},                     // empty
        };
        for (const auto& rg : ranges) {
            std::vector<std::uint64_t> got(c, 0);
            r->dut.split_hbm(rg.addr, rg.len, got);
            EXPECT_EQ(got, brute_split(*r, rg.addr, rg.len))
                << r->dut.name() << " addr " << rg.addr << " len " << rg.len;
            std::uint64_t sum = 0;
            for (auto v : got)
                sum += v;
            EXPECT_EQ(sum, rg.len);
        }
    }
}

TEST(Router, InterleaveSpreadsEachBlockOverAllChannels) {
    auto& b = bench();
    for (routed* r : {&b.a, &b.b}) {
        const std::uint64_t g = granule(r->cfg), c = channels(r->cfg);
        for (std::uint64_t block = 0; block < 300; ++block) {
            std::set<std::size_t> used;
            for (std::uint64_t k = 0; k < c; ++k) {
                const std::uint64_t first = (block * c + k) * g;
                const std::size_t ch = r->dut.hbm_channel_of(first);
                ASSERT_LT(ch, c);
                // A granule lies on one channel...
                EXPECT_EQ(r->dut.hbm_channel_of(first + g - 1), ch) << first;
                EXPECT_EQ(r->dut.hbm_channel_of(first + g / 2), ch) << first;
                used.insert(ch);
            }
            // ... and the granules of a block are a permutation of the channels.
            EXPECT_EQ(used.size(), c) << r->dut.name() << " block " << block;
        }
    }
}

TEST(Router, StridedAccessesAreSpreadOverChannels) {
    // One granule per block at the same position in every block: a plain modulo interleave
    // would put them all on one channel; the documented rotation spreads them.
    auto& b = bench();
    for (routed* r : {&b.a, &b.b}) {
        const std::uint64_t g = granule(r->cfg), c = channels(r->cfg);
        const auto split = brute_split(*r, 0, g, static_cast<std::uint32_t>(8 * c), g * c);
        for (std::size_t ch = 0; ch < c; ++ch)
            EXPECT_GT(split[ch], 0u) << r->dut.name() << " channel " << ch;
    }
}

TEST(Router, WholeBlocksGiveEveryChannelOneGranulePerBlock) {
    auto& b = bench();
    for (routed* r : {&b.a, &b.b}) {
        const std::uint64_t g = granule(r->cfg), c = channels(r->cfg);
        for (std::uint64_t first : {0ull, 7ull, 1000ull})
            for (std::uint64_t blocks : {1ull, 5ull, 64ull}) {
                std::vector<std::uint64_t> got(c, 0);
                r->dut.split_hbm(first * g * c, blocks * g * c, got);
                EXPECT_EQ(got, std::vector<std::uint64_t>(c, blocks * g))
                    << r->dut.name() << " from block " << first << ", " << blocks << " blocks";
            }
    }
}

TEST(Router, SplitHbmAccumulates) {
    auto& r = bench().b;
    const std::uint64_t c = channels(r.cfg);
    std::vector<std::uint64_t> got(c, 0);
    r.dut.split_hbm(37, 1500, got);
    r.dut.split_hbm(4000, 333, got);
    auto want = brute_split(r, 37, 1500);
    const auto more = brute_split(r, 4000, 333);
    for (std::size_t i = 0; i < c; ++i)
        want[i] += more[i];
    EXPECT_EQ(got, want);
}

TEST(Router, HbmLocalAddressesFollowTheBlockFormulaAndAreUnique) {
    auto& b = bench();
    for (routed* r : {&b.a, &b.b}) {
        const std::uint64_t g = granule(r->cfg), c = channels(r->cfg);
        std::set<std::pair<std::size_t, std::uint64_t>> seen;
        for (std::uint64_t a = 0; a < 4 * g * c + 17; ++a) {
            EXPECT_EQ(r->dut.hbm_local(a), local_of(r->cfg, a)) << a;
            seen.insert({r->dut.hbm_channel_of(a), r->dut.hbm_local(a)});
        }
        EXPECT_EQ(seen.size(), 4 * g * c + 17);  // one-to-one
        // Consecutive granules of one channel are contiguous in its local space.
        EXPECT_EQ(r->dut.hbm_local(g * c), g);
        EXPECT_EQ(r->dut.hbm_local(2 * g * c + g + 5), 2 * g + 5);
    }
}

TEST(Router, HbmAccessGoesToEveryTouchedChannelOnce) {
    auto& b = bench();
    expect_hbm_split(b.a, b.hbm1, brute_split(b.a, t1_addr, t1_len), t1_in);
    for (const auto& [t, calls] : b.hbm1.seen)
        for (const auto& c : calls)
            EXPECT_EQ(c.cmd, tlm::TLM_READ_COMMAND);
}

using page_list = std::vector<std::uint64_t>;

// The per-bank summary of a page sequence (hbm_pages_ext), straight from its definition.
struct bank_summary {
    std::vector<trn::hbm_bank_pages> banks;  // in the order of first touch
    std::uint64_t changes = 0;
};
bank_summary summarised(const page_list& pages, std::uint64_t bank_count) {
    bank_summary out;
    for (std::uint64_t p : pages) {
        auto same_bank = [&](const trn::hbm_bank_pages& b) {
            return b.first % bank_count == p % bank_count;
        };
        auto it = std::find_if(out.banks.begin(), out.banks.end(), same_bank);
        if (it == out.banks.end()) {
            out.banks.push_back({static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(p)});
        } else {
            out.changes += it->last != p;
            it->last = static_cast<std::uint32_t>(p);
        }
    }
    return out;
}

// Per channel, the pages each row touches there, in row order, and the bytes there, computed
// byte by byte (and checked to be contiguous: one local range per row and channel).
struct channel_share {
    page_list pages;
    std::uint64_t bytes = 0;
};
std::vector<channel_share> brute_pages(const routed& r, std::uint64_t a, std::uint64_t n,
                                       std::uint32_t rows, std::uint64_t stride) {
    const std::uint64_t c = channels(r.cfg), page = r.cfg.size("core.hbm.page_size");
    std::vector<channel_share> out(c);
    for (std::uint32_t row = 0; row < rows; ++row) {
        std::vector<std::uint64_t> lo(c, ~0ull), hi(c, 0), count(c, 0);
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t addr = a + row * stride + i;
            const std::size_t ch = r.dut.hbm_channel_of(addr);
            lo[ch] = std::min(lo[ch], local_of(r.cfg, addr));
            hi[ch] = std::max(hi[ch], local_of(r.cfg, addr));
            ++count[ch];
        }
        for (std::size_t ch = 0; ch < c; ++ch)
            if (count[ch]) {
                EXPECT_EQ(hi[ch] - lo[ch] + 1, count[ch]) << "not contiguous on channel " << ch;
                for (std::uint64_t p = lo[ch] / page; p <= hi[ch] / page; ++p)
                    out[ch].pages.push_back(p);
                out[ch].bytes += count[ch];
            }
    }
    return out;
}

void expect_pages(routed& r, const result& res, std::uint64_t a, std::uint64_t n,
                  std::uint32_t rows, std::uint64_t stride) {
    const auto want = brute_pages(r, a, n, rows, stride);
    for (std::size_t ch = 0; ch < want.size(); ++ch) {
        const auto& calls = res.seen.at(r.hbm[ch].get());
        if (want[ch].pages.empty()) continue;
        ASSERT_EQ(calls.size(), 1u);
        ASSERT_TRUE(calls[0].has_pages) << "channel " << ch;
        const auto bank_count = static_cast<std::uint64_t>(r.cfg.integer("core.hbm.banks"));
        bank_summary s = summarised(want[ch].pages, bank_count);
        // (few banks: the table form, the router's choice, in bank order)
        EXPECT_EQ(calls[0].table, trn::router::table_form(bank_count, want.size()))
            << r.dut.name() << " channel " << ch;
        if (calls[0].table)
            std::sort(s.banks.begin(), s.banks.end(),
                      [&](const trn::hbm_bank_pages& x, const trn::hbm_bank_pages& y) {
                          return x.first % bank_count < y.first % bank_count;
                      });
        EXPECT_EQ(calls[0].banks, s.banks) << r.dut.name() << " channel " << ch;
        EXPECT_EQ(calls[0].changes, s.changes) << r.dut.name() << " channel " << ch;
        EXPECT_EQ(calls[0].len, want[ch].bytes) << r.dut.name() << " channel " << ch;
    }
}

TEST(Router, HbmAccessTellsEachChannelThePagesItTouchesPerBank) {
    auto& b = bench();
    expect_pages(b.a, b.hbm1, t1_addr, t1_len, 1, 0);
    expect_pages(b.a, b.hbm2, t2_addr, t2_row, t2_rows, t2_stride);
    expect_pages(b.b, b.hbm2_b, t2_addr, t2_row, t2_rows, t2_stride);
    expect_pages(b.a, b.hbm3, t3_addr, t3_row, t3_rows, t3_stride);
    expect_pages(b.a, b.hbm4, t4_addr, t4_row, t4_rows, t4_stride);
    expect_pages(b.a, b.hbm_revisit, 0, 1024, 2, 256);
    expect_pages(b.a, b.hbm_return, 0, 8704, 2, 256);
    expect_pages(b.b, b.hbm5_b, t5_addr, t5_len, 1, 0);  // 6 banks: page % banks
    std::uint64_t returns = 0;  // the scenario is what it says: banks go back to a page
    for (const auto& [target, calls] : b.hbm_return.seen)
        for (const auto& c : calls)
            returns += c.changes;
    EXPECT_GE(returns, 3u * channels(b.a.cfg));
}

// The table form's memory is per bank of every channel, touched or not: a wide HBM (a sweep's
// 32 channels of 64 banks) gets the list, whose size follows what an access touches.
TEST(Router, TheTableFormIsForFewBanksOverAllChannels) {
    EXPECT_TRUE(trn::router::table_form(32, 8));    // trn1
    EXPECT_TRUE(trn::router::table_form(32, 16));   // trn2, trn3
    EXPECT_FALSE(trn::router::table_form(64, 32));  // 2048 banks in all
    EXPECT_FALSE(trn::router::table_form(128, 1));  // a channel's work per bank, touched or not
}

TEST(Router, EmptyHbmAccessCompletesAtOnceWithoutChannels) {
    auto& b = bench();
    ASSERT_EQ(b.hbm_empty.size(), 2u);
    for (const auto& res : b.hbm_empty) {
        EXPECT_EQ(res.status, tlm::TLM_OK_RESPONSE);
        EXPECT_NEAR(res.delay_ns, 3, 1e-9);
        for (const auto& ch : b.a.hbm)
            EXPECT_TRUE(res.seen.at(ch.get()).empty());
    }
}

TEST(Router, DebugAccessOfADoorbellMovesNothing) {
    EXPECT_EQ(bench().doorbell_dbg, 0u);
}

TEST(Router, RepeatedHbmAccessesAreDecodedAlike) {
    auto& b = bench();
    expect_pages(b.a, b.hbm3_again, t3_addr, t3_row, t3_rows, t3_stride);
    expect_pages(b.a, b.hbm5, t5_addr, t5_len, 1, 0);
    expect_pages(b.a, b.hbm5_again, t5_addr, t5_len, 1, 0);
    expect_pages(b.c, b.hbm5_c, t5_addr, t5_len, 1, 0);
    expect_pages(b.c, b.hbm5_c_again, t5_addr, t5_len, 1, 0);
    EXPECT_EQ(b.hbm5_again_decodings, 0u);    // A remembered it
    EXPECT_EQ(b.hbm5_c_again_decodings, 1u);  // too many bank entries for C to keep
    expect_pages(b.a, b.hbm3_late, t3_addr, t3_row, t3_rows, t3_stride);
}

TEST(Router, RemembersDecodedShapesAndEvictsTheLeastRecentlyUsed) {
    auto& b = bench();
    // (the order table_accesses() follows: W decodings, a hit, one, hits up to W, then 1 back,
    // a hit, 0 back, and each variant decoded with 0 hit after it)
    std::vector<std::uint64_t> want(trn::router::decoded_ways, 1);
    for (std::uint64_t d : {0, 1, 0})
        want.push_back(d);
    want.insert(want.end(), trn::router::decoded_ways - 1, 0);
    for (std::uint64_t d : {1, 0, 1, 1, 0, 1, 0, 1, 0})
        want.push_back(d);
    EXPECT_EQ(b.table_decodings, want);
    ASSERT_EQ(b.table_results.size(), b.table_shapes.size());
    for (std::size_t i = 0; i < b.table_results.size(); ++i) {
        const auto& s = b.table_shapes[i];
        expect_pages(b.a, b.table_results[i], s.addr, s.row_bytes, s.rows, s.stride);
    }
}

TEST(Router, TwoDimensionalHbmAccessSumsRowsPerChannel) {
    auto& b = bench();
    expect_hbm_split(b.a, b.hbm2, brute_split(b.a, t2_addr, t2_row, t2_rows, t2_stride), 0);
    expect_hbm_split(b.b, b.hbm2_b, brute_split(b.b, t2_addr, t2_row, t2_rows, t2_stride), 0);
}

TEST(Router, FunctionalHbmDataReassembles) {
    auto& b = bench();
    EXPECT_EQ(b.f1_back, b.f1_data);
    EXPECT_EQ(b.f1_back_b, b.f1_data);
    for (std::uint32_t r = 0; r < f2_rows; ++r)
        EXPECT_EQ(b.f2_rows_back[r],
                  std::vector<std::uint8_t>(b.f2_data.begin() + r * f2_row,
                                            b.f2_data.begin() + (r + 1) * f2_row))
            << "row " << r;
    for (auto v : b.f2_gap)
        EXPECT_EQ(v, 0);  // the row stride's gap was not written
}

TEST(Router, FunctionalHbmBytesLandOnTheirChannelAtTheLocalAddress) {
    auto& b = bench();
    for (routed* r : {&b.a, &b.b})
        for (std::uint64_t i = 0; i < f1_len; ++i) {
            const std::uint64_t a = f1_addr + i;
            const auto& mem = r->hbm[r->dut.hbm_channel_of(a)]->mem;
            auto it = mem.find(local_of(r->cfg, a));
            ASSERT_NE(it, mem.end()) << r->dut.name() << " byte " << i;
            EXPECT_EQ(it->second, b.f1_data[i]) << r->dut.name() << " byte " << i;
        }
    // However the data moved, the timing is one data-less b_transport per channel.
    for (std::size_t ch = 0; ch < b.a.hbm.size(); ++ch) {
        const auto& calls = b.f1_seen.at(b.a.hbm[ch].get());
        ASSERT_EQ(calls.size(), 1u);
        EXPECT_FALSE(calls[0].has_data);
        EXPECT_EQ(calls[0].len, brute_split(b.a, f1_addr, f1_len)[ch]);
    }
}

TEST(Router, SbufAccessReachesTheSbufUnchanged) {
    auto& b = bench();
    const auto& calls = b.sbuf_r.seen.at(&b.a.sbuf);
    ASSERT_EQ(calls.size(), 1u);
    const call& c = calls[0];
    EXPECT_EQ(c.addr, amap::sbuf_base + 5 * amap::partition_stride + 64);
    EXPECT_EQ(c.len, 64u);
    ASSERT_TRUE(c.has_ext);
    EXPECT_EQ(c.ext.initiator, initiator_id::act);
    EXPECT_EQ(c.ext.rows, 2u);
    EXPECT_EQ(c.ext.row_bytes, 32u);
    EXPECT_EQ(c.ext.occupancy, trn::ns(10));
    EXPECT_NEAR(c.delay_in_ns, 3, tol_ns);
    EXPECT_NEAR(b.sbuf_r.delay_ns, 3 + 10, tol_ns);  // the target's answer is passed back
    for (auto* t : b.a.all())
        if (t != &b.a.sbuf) {
            EXPECT_TRUE(b.sbuf_r.seen.at(t).empty()) << t->name();
        }
}

TEST(Router, PsumBankIsSelectedByOffsetWithinThePartition) {
    auto& b = bench();
    const std::uint64_t bank = config_a().size("core.psum.bank_size");
    const std::uint64_t offsets[4] = {3 * bank + 100, bank - 1, bank, psum_banks * bank - 1};
    for (int i = 0; i < 4; ++i) {
        const std::size_t want = offsets[i] / bank;
        for (std::size_t k = 0; k < psum_banks; ++k) {
            const auto& calls = b.psum_r[i].seen.at(b.a.psum[k].get());
            if (k != want) {
                EXPECT_TRUE(calls.empty()) << "offset " << offsets[i] << " bank " << k;
                continue;
            }
            ASSERT_EQ(calls.size(), 1u) << "offset " << offsets[i];
            EXPECT_EQ(calls[0].addr, amap::psum_base + 7 * amap::partition_stride + offsets[i]);
        }
        EXPECT_TRUE(b.psum_r[i].seen.at(&b.a.sbuf).empty());
    }
}

TEST(Router, PsumAccessSpanningBanksGoesToEachBankWithItsPartOfEveryRow) {
    // Rows of 4000 bytes from byte 1000 of bank 2 (2 KiB banks): 1048 bytes in bank 2, 2048 in
    // bank 3, 904 in bank 4; each bank probed for when it could start (no data), then each
    // booked from the latest of those starts for the access's occupancy: for the write bank 3
    // says 5 ns after the incoming 7, so every bank starts at 12.
    auto& b = bench();
    const std::uint64_t bank = config_a().size("core.psum.bank_size");
    const std::uint64_t first = amap::psum_base + 2 * amap::partition_stride + 2 * bank + 1000;
    const std::uint64_t want_at[3] = {first, first + 1048, first + 1048 + 2048};
    const std::uint64_t want_bytes[3] = {1048, 2048, 904};
    for (const result* r : {&b.psum_span_w, &b.psum_span_r}) {
        const bool write = r == &b.psum_span_w;
        for (std::size_t k = 0; k < psum_banks; ++k) {
            const auto& calls = r->seen.at(b.a.psum[k].get());
            if (k < 2 || k > 4) {
                EXPECT_TRUE(calls.empty()) << "bank " << k;
                continue;
            }
            ASSERT_EQ(calls.size(), 1u) << "bank " << k;
            const call& c = calls[0];
            EXPECT_EQ(c.addr, want_at[k - 2]) << "bank " << k;
            EXPECT_EQ(c.ext.rows, 3u);
            EXPECT_EQ(c.ext.row_bytes, want_bytes[k - 2]);
            EXPECT_EQ(c.ext.row_stride, amap::partition_stride);
            EXPECT_EQ(c.len, 3 * want_bytes[k - 2]);
            EXPECT_TRUE(c.has_data);
            EXPECT_NEAR(c.delay_in_ns, write ? 12 : 0, tol_ns);
            EXPECT_NEAR(to_ns(c.ext.occupancy), 30, tol_ns);
            EXPECT_FALSE(c.ext.probe);
        }
        const auto& probes = write ? b.span_probes_w : b.span_probes_r;
        ASSERT_EQ(probes.size(), 3u);
        for (std::size_t k = 0; k < 3; ++k) {
            EXPECT_EQ(probes[k].addr, want_at[k]);
            EXPECT_FALSE(probes[k].has_data);
            EXPECT_NEAR(probes[k].delay_in_ns, write ? 7 : 0, tol_ns);
        }
        EXPECT_EQ(r->status, tlm::TLM_OK_RESPONSE);
        EXPECT_NEAR(r->delay_ns, (write ? 12 : 0) + 30, tol_ns);
    }
    EXPECT_EQ(b.span_back, b.span_data);  // every row's pieces back in place
    EXPECT_EQ(b.span_dbg,
              std::vector<std::uint8_t>(b.span_data.begin(), b.span_data.begin() + 4000));
}

TEST(Router, DoorbellAddressSelectsTheQueue) {
    auto& b = bench();
    const std::size_t queue[2] = {2, 0};
    const double in[2] = {4, 0};
    for (int i = 0; i < 2; ++i) {
        for (std::size_t q = 0; q < doorbells; ++q) {
            const auto& calls = b.bell_r[i].seen.at(b.a.bell[q].get());
            if (q != queue[i]) {
                EXPECT_TRUE(calls.empty());
                continue;
            }
            ASSERT_EQ(calls.size(), 1u);
            EXPECT_EQ(calls[0].cmd, tlm::TLM_WRITE_COMMAND);
            EXPECT_NEAR(calls[0].delay_in_ns, in[i], tol_ns);
        }
        EXPECT_NEAR(b.bell_r[i].delay_ns, in[i], tol_ns);
    }
}

TEST(Router, DebugAccessesReachSbufAndPsum) {
    auto& b = bench();
    EXPECT_EQ(b.sbuf_dbg, pattern(16, 9));
    EXPECT_EQ(b.psum_dbg, pattern(16, 9));
    EXPECT_EQ(b.sbuf_dbg_calls, 2u);
    EXPECT_EQ(b.psum5_dbg_calls, 2u);
}

TEST(Router, SharedSbufPortSerialisesDveAndPool) {
    auto& b = bench();
    const auto& s = b.share[0];
    // The dve access holds the port [0, occ_dve); the pool one asks at in_pool and starts when
    // the dve one ends.
    EXPECT_NEAR(s[0].seen.at(&b.a.sbuf).at(0).delay_in_ns, 0, tol_ns);
    EXPECT_NEAR(s[0].delay_ns, occ_dve, tol_ns);
    ASSERT_LT(in_pool, occ_dve);
    EXPECT_NEAR(s[1].seen.at(&b.a.sbuf).at(0).delay_in_ns, occ_dve, tol_ns);
    EXPECT_NEAR(s[1].delay_ns, occ_dve + occ_pool, tol_ns);
    // act does not share the SBUF port.
    EXPECT_NEAR(s[2].seen.at(&b.a.sbuf).at(0).delay_in_ns, 0, tol_ns);
    EXPECT_NEAR(s[2].delay_ns, occ_act, tol_ns);
    EXPECT_NEAR(b.port_wait_a_sbuf, occ_dve - in_pool, tol_ns);
}

TEST(Router, SharedPsumPortSerialisesDveAndAct) {
    auto& b = bench();
    const auto& s = b.share[0];
    EXPECT_NEAR(s[3].delay_ns, occ_dve_psum, tol_ns);  // the SBUF port is a different port
    EXPECT_NEAR(s[4].seen.at(b.a.psum[0].get()).at(0).delay_in_ns, occ_dve_psum, tol_ns);
    EXPECT_NEAR(s[4].delay_ns, occ_dve_psum + occ_act_psum, tol_ns);
    EXPECT_NEAR(s[5].delay_ns, occ_pool_psum, tol_ns);  // pool does not share the PSUM port
    EXPECT_NEAR(b.port_wait_a_psum, occ_dve_psum, tol_ns);
}

TEST(Router, WithoutPortSharingAccessesOverlap) {
    auto& b = bench();
    const auto& s = b.share[1];
    EXPECT_NEAR(s[0].delay_ns, occ_dve, tol_ns);
    EXPECT_NEAR(s[1].seen.at(&b.b.sbuf).at(0).delay_in_ns, in_pool, tol_ns);
    EXPECT_NEAR(s[1].delay_ns, in_pool + occ_pool, tol_ns);
    EXPECT_NEAR(s[2].delay_ns, occ_act, tol_ns);
    EXPECT_NEAR(s[3].delay_ns, occ_dve_psum, tol_ns);
    EXPECT_NEAR(s[4].delay_ns, occ_act_psum, tol_ns);
    EXPECT_NEAR(s[5].delay_ns, occ_pool_psum, tol_ns);
    EXPECT_EQ(b.port_wait_b_sbuf, 0);
    EXPECT_EQ(b.port_wait_b_psum, 0);
}

}  // namespace

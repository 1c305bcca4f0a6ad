// hbm_channel: one channel's share of the HBM bandwidth served first come first served, plus a
// fixed latency. An access's service time is max(bytes / (bandwidth / channels), pages opened x
// activate_time), where each of `banks` banks keeps one page open (page p lives in bank
// p mod banks). Functional mode keeps the bytes. One bench: a fake initiator issues a scripted
// sequence of accesses from an SC_THREAD and records what the channel returned; every TEST
// checks a part of that record against the formula computed from the configured parameters.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <algorithm>
#include <vector>

#include "platforms/neuron_core.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

constexpr double tol_ns = 0.002;  // sc_time resolution is 1 ps; allow two roundings

using trn::testing::to_ns;

const trn::config& test_config() {
    static const trn::config cfg = [] {
        trn::config c(trn::testing::platform_registry());
        c.load_yaml_text(
            "core:\n"
            "  hbm:\n"
            "    bandwidth: 96GB/s\n"
            "    channels: 4\n"
            "    latency: 40ns\n"
            "    page_size: 1KiB\n"
            "    banks: 4\n"
            "    activate_time: 30ns\n",
            "hbm_channel_test");
        return c;
    }();
    return cfg;
}

double bytes_per_ns() {
    return test_config().bandwidth("core.hbm.bandwidth") /
           static_cast<double>(test_config().integer("core.hbm.channels"));
}
double latency_ns() {
    return test_config().time_ns("core.hbm.latency");
}
std::uint64_t page() {
    return test_config().size("core.hbm.page_size");
}
// The channel's service time for `bytes` that open `misses` pages.
double service_ns(double bytes, int misses) {
    return std::max(bytes / bytes_per_ns(),
                    misses * test_config().time_ns("core.hbm.activate_time"));
}

// What one access returned.
struct access_result {
    double now_ns = 0;       // simulation time of the call
    double delay_in_ns = 0;  // incoming delay
    double delay_out_ns = 0;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
};

// Bursts 1 and 2 (FCFS): sizes and addresses. Pages are 1 KiB in 4 banks (see test_config).
constexpr unsigned n1 = 960, n2 = 600, n3 = 240, n4 = 480, n5 = 96;
constexpr std::uint64_t data_addr = 0x40;   // access 1: bytes 64..1023, page 0 only
constexpr std::uint64_t far_addr = 0x9000;  // accesses 2..5: page 36 (bank 0)
constexpr double gap_ns = 50;               // incoming delay of access 3 past the port's busy-until
constexpr double later_ns = 1000;           // when burst 2 starts (port idle by then)
constexpr double access5_in_ns = 5;         // incoming delay of access 5 (before the port frees)
constexpr double burst3_ns = 2000, spacing_ns = 500, burst4_ns = 8000;

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>((i * 7 + seed) & 0xff);
    return v;
}

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> out{"out"};
    trn::hbm_channel dut;
    // Two fresh channels given the same page summaries: one through its socket, one through
    // time_pages (a router's direct call); what each returned, and its counters after.
    tlm_utils::simple_initiator_socket<harness> twin_out{"twin_out"};
    tlm_utils::simple_initiator_socket<harness> direct_out{"direct_out"};  // (bound, unused)
    trn::hbm_channel via_socket{"via_socket", test_config()}, direct{"direct", test_config()};
    std::vector<double> socket_delays, direct_delays;

    std::vector<access_result> timing;  // bursts 1 and 2: accesses 1..5
    std::vector<access_result> pages;   // burst 3: the row-buffer scenario
    double busy_after_burst2 = 0, wait_after_burst2 = 0;
    std::uint64_t misses_after_burst2 = 0, misses_after_burst3 = 0;
    std::uint64_t counted_read = 0, counted_write = 0;
    std::uint64_t read_before_dbg = 0, write_before_dbg = 0, misses_before_dbg = 0;
    std::uint64_t read_after_dbg = 0, write_after_dbg = 0, misses_after_dbg = 0;
    std::vector<std::uint8_t> written = pattern(n1, 3);
    std::vector<std::uint8_t> dbg_read;   // transport_dbg read of what access 1 wrote
    std::vector<std::uint8_t> tail_read;  // straddles the end of the written bytes
    std::vector<std::uint8_t> bt_read;    // b_transport read of the written bytes
    std::vector<std::uint8_t> dbg_written = pattern(64, 91);
    std::vector<std::uint8_t> bt_read_of_dbg;  // b_transport read of a transport_dbg write
    std::vector<std::uint8_t> untouched_read;  // a timing-only write must not change the data
    unsigned dbg_len = 0;
    double busy_until_before_dbg = 0, busy_until_after_dbg = 0;
    // reset_stats(): counters after it, and an access to a page that was open before it.
    std::uint64_t read_after_reset = 1, write_after_reset = 1, misses_after_reset = 1;
    double busy_total_after_reset = -1, busy_until_before_reset = 0, busy_until_after_reset = 0;
    access_result reopened;
    std::uint64_t misses_after_reopen = 0;

    explicit harness(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), dut("dut", test_config()) {
        out.bind(dut.in);
        twin_out.bind(via_socket.in);
        direct_out.bind(direct.in);
        SC_THREAD(run);
    }

    access_result access(tlm::tlm_command cmd, std::uint64_t addr, unsigned len, std::uint8_t* data,
                         const sc_time& delay, const trn::hbm_pages_ext* pages = nullptr) {
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(data);
        t.set_data_length(len);
        trn::hbm_pages_ext ext;
        if (pages) {
            ext.copy_from(*pages);
            t.set_extension(&ext);
        }
        sc_time d = delay;
        access_result r;
        r.now_ns = to_ns(sc_core::sc_time_stamp());
        r.delay_in_ns = to_ns(delay);
        out->b_transport(t, d);
        if (pages) t.clear_extension(&ext);
        r.delay_out_ns = to_ns(d);
        r.status = t.get_response_status();
        (cmd == tlm::TLM_READ_COMMAND ? counted_read : counted_write) += len;
        return r;
    }

    unsigned debug(tlm::tlm_command cmd, std::uint64_t addr, std::vector<std::uint8_t>& buf) {
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(buf.data());
        t.set_data_length(static_cast<unsigned>(buf.size()));
        return out->transport_dbg(t);
    }

    template <std::size_t N>
    static trn::hbm_pages_ext& summary(const trn::hbm_bank_pages (&banks)[N],
                                       std::uint64_t changes) {
        static trn::hbm_pages_ext ext;
        ext.banks = banks;
        ext.count = N;
        ext.changes = changes;
        return ext;
    }

    void page_access(std::uint64_t addr, unsigned len,
                     const trn::hbm_pages_ext* touched = nullptr) {
        pages.push_back(access(tlm::TLM_READ_COMMAND, addr, len, nullptr, SC_ZERO_TIME, touched));
        sc_core::wait(trn::ns(spacing_ns));  // the next one finds the port idle
    }

    void run() {
        const std::uint64_t pg = page();
        // Burst 1 at time 0: a functional write, then a timing-only read queued behind it,
        // then a write whose incoming delay starts after the port is free.
        timing.push_back(
            access(tlm::TLM_WRITE_COMMAND, data_addr, n1, written.data(), SC_ZERO_TIME));
        timing.push_back(access(tlm::TLM_READ_COMMAND, far_addr, n2, nullptr, SC_ZERO_TIME));
        const sc_time after_port = dut.port().busy_until() + trn::ns(gap_ns);
        timing.push_back(access(tlm::TLM_WRITE_COMMAND, far_addr + n2, n3, nullptr, after_port));
        // Burst 2 later: an idle port serves at once; a request with a small incoming delay
        // that arrives while access 4 is served queues behind it. Both hit the open page.
        sc_core::wait(trn::ns(later_ns));
        timing.push_back(access(tlm::TLM_READ_COMMAND, far_addr, n4, nullptr, SC_ZERO_TIME));
        timing.push_back(
            access(tlm::TLM_READ_COMMAND, far_addr + n4, n5, nullptr, trn::ns(access5_in_ns)));
        busy_after_burst2 = to_ns(dut.port().busy_total());
        wait_after_burst2 = to_ns(dut.port().wait_total());
        misses_after_burst2 = dut.misses();

        // Burst 3: row-buffer hits and misses, one access at a time. Open pages before it:
        // bank 0 holds page 36.
        sc_core::wait(trn::ns(burst3_ns) - sc_core::sc_time_stamp());
        page_access(8 * pg, 200);        // 0: page 8, bank 0: miss
        page_access(8 * pg + 200, 200);  // 1: page 8 again: hit
        page_access(12 * pg, 200);       // 2: page 12, bank 0: miss (closes page 8)
        page_access(9 * pg, 200);        // 3: page 9, bank 1: miss (first use of bank 1)
        page_access(8 * pg, 200);        // 4: page 8, bank 0: miss again
        page_access(40 * pg, 3 * 1024);  // 5: pages 40, 41, 42 in banks 0, 1, 2: 3 misses
        page_access(44 * pg - 50, 100);  // 6: pages 43 and 44 (banks 3, 0): 2 misses
        // 7: the extension, not the address, names the pages: 64 then 128 in bank 0 (one
        // change), 2 misses
        const trn::hbm_bank_pages bank0_64_128[] = {{64, 128}};
        page_access(0, 128, &summary(bank0_64_128, 1));
        // 8: page 128 is open now: a hit (page 0 would not be)
        const trn::hbm_bank_pages bank0_128[] = {{128, 128}};
        page_access(0, 64, &summary(bank0_128, 0));
        // 9: pages 41, 46, 45, 41: bank 1 starts on its open page (a hit) and changes twice;
        // bank 2 opens 46. 3 misses
        const trn::hbm_bank_pages two_banks[] = {{41, 41}, {46, 46}};
        page_access(0, 256, &summary(two_banks, 2));
        // 10: the table form (indexed by bank): bank 1 from its open page 41 to 45 (a hit and a
        // change), bank 2 to 50 (a miss); banks 0 and 3 untouched. 2 misses
        static const std::uint32_t none = trn::hbm_no_page;
        static const std::uint32_t table[8] = {none, 41, 50, none, none, 45, 50, none};
        static trn::hbm_pages_ext table_form;
        table_form.dense = table;
        table_form.count = 4;
        table_form.changes = 1;
        page_access(0, 256, &table_form);
        // 11: it left 45 open in bank 1 and bank 0's 128 alone: both hits
        const trn::hbm_bank_pages left_open[] = {{128, 128}, {45, 45}};
        page_access(0, 64, &summary(left_open, 0));
        misses_after_burst3 = dut.misses();

        // Burst 4, functional reads: debug and b_transport see what access 1 wrote.
        sc_core::wait(trn::ns(burst4_ns) - sc_core::sc_time_stamp());
        busy_until_before_dbg = to_ns(dut.port().busy_until());
        read_before_dbg = dut.read_bytes();
        write_before_dbg = dut.write_bytes();
        misses_before_dbg = dut.misses();
        dbg_read.assign(n1, 0);
        dbg_len = debug(tlm::TLM_READ_COMMAND, data_addr, dbg_read);
        tail_read.assign(20, 0xee);
        debug(tlm::TLM_READ_COMMAND, data_addr + n1 - 10, tail_read);
        std::vector<std::uint8_t> w = dbg_written;
        debug(tlm::TLM_WRITE_COMMAND, 0x5000, w);
        busy_until_after_dbg = to_ns(dut.port().busy_until());
        read_after_dbg = dut.read_bytes();
        write_after_dbg = dut.write_bytes();
        misses_after_dbg = dut.misses();
        bt_read.assign(n1, 0);
        access(tlm::TLM_READ_COMMAND, data_addr, n1, bt_read.data(), SC_ZERO_TIME);
        bt_read_of_dbg.assign(dbg_written.size(), 0);
        access(tlm::TLM_READ_COMMAND, 0x5000, static_cast<unsigned>(bt_read_of_dbg.size()),
               bt_read_of_dbg.data(), SC_ZERO_TIME);
        access(tlm::TLM_WRITE_COMMAND, data_addr, 100, nullptr, SC_ZERO_TIME);
        untouched_read.assign(100, 0);
        debug(tlm::TLM_READ_COMMAND, data_addr, untouched_read);

        // reset_stats(): counters restart, every page closes, the port booking stays.
        busy_until_before_reset = to_ns(dut.port().busy_until());
        dut.reset_stats();
        busy_until_after_reset = to_ns(dut.port().busy_until());
        read_after_reset = dut.read_bytes();
        write_after_reset = dut.write_bytes();
        misses_after_reset = dut.misses();
        busy_total_after_reset = to_ns(dut.port().busy_total());
        sc_core::wait(trn::ns(spacing_ns));
        reopened = access(tlm::TLM_READ_COMMAND, data_addr, 64, nullptr, SC_ZERO_TIME);
        misses_after_reopen = dut.misses();

        // The twins: a list, a table, a hit on what they left open and a write, back to back
        // (each queues behind the one before), then one after a pause.
        static const trn::hbm_bank_pages list[] = {{8, 12}, {9, 9}};
        static const std::uint32_t twin_table[8] = {12, none, 50, none, 16, none, 54, none};
        static const trn::hbm_bank_pages hit[] = {{16, 16}};
        trn::hbm_pages_ext forms[4];
        forms[0].banks = list;
        forms[0].count = 2;
        forms[0].changes = 1;
        forms[1].dense = twin_table;
        forms[1].count = 4;
        forms[1].changes = 2;
        forms[2].banks = hit;
        forms[2].count = 1;
        forms[3] = forms[0];
        const unsigned lengths[] = {2048, 700, 64, 300};
        for (int round = 0; round < 2; ++round) {
            for (int k = 0; k < 4; ++k) {
                const bool write = k == 3;
                tlm::tlm_generic_payload t;
                t.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
                t.set_address(0);
                t.set_data_ptr(nullptr);
                t.set_data_length(lengths[k]);
                trn::hbm_pages_ext ext;
                ext.copy_from(forms[k]);
                t.set_extension(&ext);
                sc_time a = trn::ns(k), b = trn::ns(k);
                twin_out->b_transport(t, a);
                t.clear_extension(&ext);
                direct.time_pages(write, lengths[k], forms[k], b);
                socket_delays.push_back(to_ns(a));
                direct_delays.push_back(to_ns(b));
            }
            sc_core::wait(trn::ns(later_ns));
        }
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

// Services of accesses 1..5: access 1 and 2 each open a page; 3, 4 and 5 hit page 36.
double s1() {
    return service_ns(n1, 1);
}
double s2() {
    return service_ns(n2, 1);
}

TEST(HbmChannel, ScenarioCoversBothServiceRegimes) {
    EXPECT_GT(n1 / bytes_per_ns(), service_ns(0, 1));  // access 1: bandwidth-bound
    EXPECT_LT(n2 / bytes_per_ns(), service_ns(0, 1));  // access 2: activation-bound
}

TEST(HbmChannel, SingleAccessCompletesAfterServiceAndLatency) {
    const auto& r = bench().timing.at(0);
    EXPECT_EQ(r.status, tlm::TLM_OK_RESPONSE);
    EXPECT_NEAR(r.delay_out_ns, n1 / bytes_per_ns() + latency_ns(), tol_ns);
}

TEST(HbmChannel, BackToBackAccessQueuesBehindTheFirst) {
    const auto& r = bench().timing.at(1);
    EXPECT_EQ(r.status, tlm::TLM_OK_RESPONSE);
    // Starts when access 1 frees the port, not at its own incoming delay of 0.
    EXPECT_NEAR(r.delay_out_ns, s1() + s2() + latency_ns(), tol_ns);
}

TEST(HbmChannel, AccessStartingAfterThePortFreesDoesNotQueue) {
    const auto& r = bench().timing.at(2);
    EXPECT_NEAR(r.delay_in_ns, s1() + s2() + gap_ns, tol_ns);
    EXPECT_NEAR(r.delay_out_ns, r.delay_in_ns + service_ns(n3, 0) + latency_ns(), tol_ns);
}

TEST(HbmChannel, DelayIsRelativeToTheCurrentTime) {
    const auto& r4 = bench().timing.at(3);
    EXPECT_NEAR(r4.now_ns, later_ns, tol_ns);
    EXPECT_NEAR(r4.delay_out_ns, n4 / bytes_per_ns() + latency_ns(), tol_ns);
    const auto& r5 = bench().timing.at(4);
    ASSERT_LT(access5_in_ns, n4 / bytes_per_ns());  // access 5 arrives while 4 is served
    EXPECT_NEAR(r5.delay_out_ns, (n4 + n5) / bytes_per_ns() + latency_ns(), tol_ns);
}

TEST(HbmChannel, PortAccountsBusyAndWaitTime) {
    const auto& b = bench();
    const double r = bytes_per_ns();
    EXPECT_NEAR(b.busy_after_burst2, s1() + s2() + (n3 + n4 + n5) / r, 5 * tol_ns);
    // Access 2 waited for access 1; access 5 waited for 4, less its incoming delay.
    EXPECT_NEAR(b.wait_after_burst2, s1() + (n4 / r - access5_in_ns), 2 * tol_ns);
    EXPECT_EQ(b.misses_after_burst2, 2u);
}

TEST(HbmChannel, OpenPagesHitAndNewPagesPayTheActivationTime) {
    const auto& p = bench().pages;
    ASSERT_EQ(p.size(), 12u);
    const int misses[12] = {1, 0, 1, 1, 1, 3, 2, 2, 0, 3, 2, 0};
    const double bytes[12] = {200, 200, 200, 200, 200, 3 * 1024, 100, 128, 64, 256, 256, 64};
    for (std::size_t i = 0; i < p.size(); ++i) {
        EXPECT_NEAR(p[i].delay_in_ns, 0, tol_ns);
        EXPECT_NEAR(p[i].delay_out_ns, service_ns(bytes[i], misses[i]) + latency_ns(), tol_ns)
            << "page access " << i;
    }
    EXPECT_EQ(bench().misses_after_burst3, 2u + 1 + 0 + 1 + 1 + 1 + 3 + 2 + 2 + 0 + 3 + 2 + 0);
}

TEST(HbmChannel, ByteCountersSplitReadsAndWrites) {
    const auto& b = bench();
    // Counted just before reset_stats(): everything but the last (64-byte) read.
    EXPECT_EQ(b.read_before_dbg + n1 + 64, b.counted_read - 64);
    const std::uint64_t burst3 = 5 * 200 + 3 * 1024 + 100 + 128 + 64 + 256 + 256 + 64;
    EXPECT_EQ(b.read_before_dbg, std::uint64_t{n2 + n4 + n5} + burst3);
    EXPECT_EQ(b.write_before_dbg, std::uint64_t{n1 + n3});
    EXPECT_EQ(b.counted_write, std::uint64_t{n1 + n3 + 100});
}

TEST(HbmChannel, ResetStatsRestartsCountersAndClosesPages) {
    const auto& b = bench();
    EXPECT_EQ(b.read_after_reset, 0u);
    EXPECT_EQ(b.write_after_reset, 0u);
    EXPECT_EQ(b.misses_after_reset, 0u);
    EXPECT_EQ(b.busy_total_after_reset, 0);
    EXPECT_EQ(b.busy_until_after_reset, b.busy_until_before_reset);
    // Page 0 was open (the last accesses used it); after the reset it must be opened again.
    EXPECT_NEAR(b.reopened.delay_out_ns, service_ns(64, 1) + latency_ns(), tol_ns);
    EXPECT_EQ(b.misses_after_reopen, 1u);
    EXPECT_EQ(b.dut.read_bytes(), 64u);
}

TEST(HbmChannel, DebugAccessesTakeNoTimeAndCountNothing) {
    const auto& b = bench();
    EXPECT_EQ(b.read_after_dbg, b.read_before_dbg);
    EXPECT_EQ(b.write_after_dbg, b.write_before_dbg);
    EXPECT_EQ(b.misses_after_dbg, b.misses_before_dbg);
    EXPECT_EQ(b.busy_until_after_dbg, b.busy_until_before_dbg);
    EXPECT_EQ(b.dbg_len, n1);
}

TEST(HbmChannel, FunctionalWriteThenDebugReadReturnsTheBytes) {
    const auto& b = bench();
    EXPECT_EQ(b.dbg_read, b.written);
}

TEST(HbmChannel, FunctionalReadBeyondWrittenBytesReturnsZeros) {
    const auto& b = bench();
    for (std::size_t i = 0; i < 10; ++i)
        EXPECT_EQ(b.tail_read[i], b.written[n1 - 10 + i]) << i;
    for (std::size_t i = 10; i < b.tail_read.size(); ++i)
        EXPECT_EQ(b.tail_read[i], 0) << i;
}

TEST(HbmChannel, FunctionalBTransportReadsReturnTheBytes) {
    const auto& b = bench();
    EXPECT_EQ(b.bt_read, b.written);
    EXPECT_EQ(b.bt_read_of_dbg, b.dbg_written);
}

TEST(HbmChannel, TimingOnlyWriteLeavesDataUnchanged) {
    const auto& b = bench();
    EXPECT_EQ(b.untouched_read,
              std::vector<std::uint8_t>(b.written.begin(), b.written.begin() + 100));
}

TEST(HbmChannel, ADirectCallTimesPagesAsTheSocketDoes) {
    auto& b = bench();
    ASSERT_EQ(b.socket_delays.size(), 8u);
    EXPECT_EQ(b.direct_delays, b.socket_delays);
    EXPECT_GT(b.socket_delays[1], b.socket_delays[0]);  // (the second queued behind the first)
    EXPECT_GT(b.via_socket.misses(), 0u);
    EXPECT_EQ(b.direct.misses(), b.via_socket.misses());
    EXPECT_EQ(b.direct.read_bytes(), b.via_socket.read_bytes());
    EXPECT_EQ(b.direct.write_bytes(), b.via_socket.write_bytes());
    EXPECT_EQ(b.direct.port().busy_total(), b.via_socket.port().busy_total());
    EXPECT_EQ(b.direct.activation_bound_ns(), b.via_socket.activation_bound_ns());
    EXPECT_EQ(b.direct.bandwidth_bound_ns(), b.via_socket.bandwidth_bound_ns());
}

}  // namespace

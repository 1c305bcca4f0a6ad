// onchip_bank: 2-D functional storage addressed by partition and offset, and the optional
// serialisation of accesses that occupy the bank. One bench holds two banks: `ser` (serialise
// on, an SBUF-like base) and `par` (serialise off, at the base of PSUM bank 2, so the bank-local
// offset arithmetic is exercised). A fake initiator drives both from one SC_THREAD.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <vector>

#include "platforms/neuron_core.h"
#include "support/platform_config.h"
#include "support/simulated_once.h"

namespace {

using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
using trn::address_map::partition_stride;

constexpr double tol_ns = 0.002;

using trn::testing::to_ns;

constexpr std::uint32_t partitions = 16;
constexpr std::uint64_t ser_bytes = 1024, par_bytes = 2048;
constexpr std::uint64_t ser_base = trn::address_map::sbuf_base;
constexpr std::uint64_t par_base = trn::address_map::psum_base + 2 * par_bytes;

// The 2-D functional access: `rows` partitions from `p0`, `row_bytes` at `off`.
constexpr std::uint32_t p0 = 3, rows = 5;
constexpr std::uint64_t off = 100, row_bytes = 40;

// Engine-style occupancies on the serialising bank.
constexpr double occ1 = 100, occ2 = 30, in2 = 10, occ3 = 20, in3 = 200, dma_in = 7;

std::uint64_t addr(std::uint64_t base, std::uint64_t p, std::uint64_t o) {
    return base + p * partition_stride + o;
}

struct result {
    double delay_ns = 0;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
};

class harness : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(harness);
    tlm_utils::simple_initiator_socket<harness> to_ser{"to_ser"}, to_par{"to_par"};
    trn::onchip_bank ser{"ser", ser_base, partitions, ser_bytes, true};
    trn::onchip_bank par{"par", par_base, partitions, par_bytes, false};

    // Functional part.
    std::vector<std::uint8_t> written, read_2d;
    std::vector<std::vector<std::uint8_t>> read_rows;       // per row, by transport_dbg
    std::vector<std::uint8_t> above, below, before, after;  // around the written block
    tlm::tlm_response_status write_status{}, read_status{};
    result bad_partition_bt, bad_offset_bt, edge_fit_bt;
    unsigned bad_offset_dbg_len = 99, good_dbg_len = 0;
    tlm::tlm_response_status bad_offset_dbg_status{};
    // Timing part.
    result ser1, ser2, ser3, ser_dma, ser_dma_in, par1, par2, par_dma;
    // probes (when an access could start): of the serialising bank while ser1 holds it, and
    // after; of the other bank
    result probe_busy, probe_free, probe_par;

    harness(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        to_ser.bind(ser.in);
        to_par.bind(par.in);
        SC_THREAD(run);
    }

    template <typename Socket>
    result access(Socket& s, tlm::tlm_command cmd, std::uint64_t a, std::uint32_t nrows,
                  std::uint64_t rbytes, std::uint8_t* data, trn::initiator_id who, double occ_ns,
                  double delay_ns, bool probe = false) {
        trn::access_ext ext;
        ext.probe = probe;
        ext.initiator = who;
        ext.rows = nrows;
        ext.row_bytes = rbytes;
        ext.row_stride = partition_stride;
        ext.occupancy = trn::ns(occ_ns);
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(a);
        t.set_data_ptr(data);
        t.set_data_length(static_cast<unsigned>(nrows * rbytes));
        t.set_extension(&ext);
        sc_time d = trn::ns(delay_ns);
        s->b_transport(t, d);
        t.clear_extension(&ext);
        return {to_ns(d), t.get_response_status()};
    }

    template <typename Socket>
    unsigned debug(Socket& s, tlm::tlm_command cmd, std::uint64_t a, std::vector<std::uint8_t>& buf,
                   tlm::tlm_response_status* status = nullptr) {
        tlm::tlm_generic_payload t;  // no access_ext: one row of the whole length
        t.set_command(cmd);
        t.set_address(a);
        t.set_data_ptr(buf.data());
        t.set_data_length(static_cast<unsigned>(buf.size()));
        const unsigned n = s->transport_dbg(t);
        if (status) *status = t.get_response_status();
        return n;
    }

    void run() {
        using trn::initiator_id;
        // --- functional: a 2-D write of 5 partitions at an offset, read back two ways.
        written.resize(rows * row_bytes);
        for (std::size_t i = 0; i < written.size(); ++i)
            written[i] = static_cast<std::uint8_t>(i * 13 + 1);
        std::vector<std::uint8_t> w = written;
        write_status = access(to_par, tlm::TLM_WRITE_COMMAND, addr(par_base, p0, off), rows,
                              row_bytes, w.data(), initiator_id::dma, 0, 0)
                           .status;
        read_2d.assign(written.size(), 0);
        read_status = access(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0, off), rows,
                             row_bytes, read_2d.data(), initiator_id::dve, 0, 0)
                          .status;
        for (std::uint32_t r = 0; r < rows; ++r) {
            read_rows.emplace_back(row_bytes, 0xee);
            good_dbg_len +=
                debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0 + r, off), read_rows.back());
        }
        above.assign(row_bytes, 0xee);
        debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0 - 1, off), above);
        below.assign(row_bytes, 0xee);
        debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0 + rows, off), below);
        before.assign(off, 0xee);
        debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0, 0), before);
        after.assign(64, 0xee);
        debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, p0 + rows - 1, off + row_bytes), after);

        // --- out of range: too many partitions; a row past the end of the partition.
        std::vector<std::uint8_t> buf(3 * row_bytes, 1);
        bad_partition_bt = access(to_par, tlm::TLM_WRITE_COMMAND, addr(par_base, partitions - 2, 0),
                                  3, row_bytes, buf.data(), initiator_id::dma, 0, 0);
        edge_fit_bt = access(to_par, tlm::TLM_WRITE_COMMAND,
                             addr(par_base, partitions - 3, par_bytes - row_bytes), 3, row_bytes,
                             buf.data(), initiator_id::dma, 0, 0);
        std::vector<std::uint8_t> tail(16, 0);
        bad_offset_dbg_len = debug(to_par, tlm::TLM_READ_COMMAND, addr(par_base, 0, par_bytes - 8),
                                   tail, &bad_offset_dbg_status);
        bad_offset_bt = access(to_par, tlm::TLM_READ_COMMAND, addr(par_base, 1, par_bytes - 8), 1,
                               16, tail.data(), initiator_id::dma, 0, 0);

        // --- timing, serialising bank: two overlapping engine accesses, then one that starts
        // after the port frees, then DMA-style accesses (no occupancy) while it is busy.
        ser1 = access(to_ser, tlm::TLM_READ_COMMAND, addr(ser_base, 0, 0), 4, 64, nullptr,
                      initiator_id::dve, occ1, 0);
        probe_busy = access(to_ser, tlm::TLM_WRITE_COMMAND, addr(ser_base, 8, 0), 4, 64, nullptr,
                            initiator_id::act, occ2, in2, true);
        probe_free = access(to_ser, tlm::TLM_WRITE_COMMAND, addr(ser_base, 8, 0), 4, 64, nullptr,
                            initiator_id::act, occ2, occ1 + 1, true);
        ser2 = access(to_ser, tlm::TLM_WRITE_COMMAND, addr(ser_base, 8, 0), 4, 64, nullptr,
                      initiator_id::act, occ2, in2);
        ser3 = access(to_ser, tlm::TLM_READ_COMMAND, addr(ser_base, 0, 512), 4, 64, nullptr,
                      initiator_id::pool, occ3, in3);
        ser_dma = access(to_ser, tlm::TLM_WRITE_COMMAND, addr(ser_base, 0, 0), 16, 1024, nullptr,
                         initiator_id::dma, 0, 0);
        ser_dma_in = access(to_ser, tlm::TLM_READ_COMMAND, addr(ser_base, 0, 0), 16, 1024, nullptr,
                            initiator_id::dma, 0, dma_in);
        // --- timing, non-serialising bank: the same overlapping pair does not queue.
        par1 = access(to_par, tlm::TLM_READ_COMMAND, addr(par_base, 0, 0), 4, 64, nullptr,
                      initiator_id::dve, occ1, 0);
        par2 = access(to_par, tlm::TLM_WRITE_COMMAND, addr(par_base, 8, 0), 4, 64, nullptr,
                      initiator_id::act, occ2, in2);
        par_dma = access(to_par, tlm::TLM_WRITE_COMMAND, addr(par_base, 0, 0), 4, 64, nullptr,
                         initiator_id::dma, 0, dma_in);
        probe_par = access(to_par, tlm::TLM_WRITE_COMMAND, addr(par_base, 0, 0), 4, 64, nullptr,
                           initiator_id::act, occ2, in2, true);
    }
};

harness& bench() {
    return trn::testing::simulated_once<harness>();
}

TEST(OnchipBank, TwoDimensionalWriteReadRoundTrips) {
    const auto& b = bench();
    EXPECT_EQ(b.write_status, tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(b.read_status, tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(b.read_2d, b.written);
}

TEST(OnchipBank, RowsArePackedOnePartitionEach) {
    const auto& b = bench();
    ASSERT_EQ(b.read_rows.size(), rows);
    for (std::uint32_t r = 0; r < rows; ++r)
        EXPECT_EQ(b.read_rows[r],
                  std::vector<std::uint8_t>(b.written.begin() + r * row_bytes,
                                            b.written.begin() + (r + 1) * row_bytes))
            << "row " << r;
    EXPECT_EQ(b.good_dbg_len, rows * row_bytes);
}

TEST(OnchipBank, WriteTouchesOnlyItsCells) {
    const auto& b = bench();
    for (const auto* v : {&b.above, &b.below, &b.before, &b.after})
        for (std::size_t i = 0; i < v->size(); ++i)
            EXPECT_EQ((*v)[i], 0) << i;
}

TEST(OnchipBank, OutOfRangeGivesAddressError) {
    const auto& b = bench();
    EXPECT_EQ(b.bad_partition_bt.status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.bad_offset_bt.status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.bad_offset_dbg_status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.bad_offset_dbg_len, 0u);
    // The last partitions and the last bytes of a partition are in range.
    EXPECT_EQ(b.edge_fit_bt.status, tlm::TLM_OK_RESPONSE);
}

TEST(OnchipBank, SerialisingBankQueuesOverlappingEngineAccesses) {
    const auto& b = bench();
    EXPECT_NEAR(b.ser1.delay_ns, occ1, tol_ns);
    // Arrives at in2 while the first holds the bank until occ1: starts at occ1.
    ASSERT_LT(in2, occ1);
    EXPECT_NEAR(b.ser2.delay_ns, occ1 + occ2, tol_ns);
    // Arrives after the bank is free: starts at its incoming delay.
    ASSERT_GT(in3, occ1 + occ2);
    EXPECT_NEAR(b.ser3.delay_ns, in3 + occ3, tol_ns);
    EXPECT_NEAR(to_ns(b.ser.port().busy_total()), occ1 + occ2 + occ3, tol_ns);
    EXPECT_NEAR(to_ns(b.ser.port().wait_total()), occ1 - in2, tol_ns);
}

TEST(OnchipBank, DmaStyleAccessAddsNoDelay) {
    const auto& b = bench();
    // The serialising bank is busy until in3 + occ3, yet occupancy-0 accesses pass through.
    EXPECT_NEAR(b.ser_dma.delay_ns, 0, tol_ns);
    EXPECT_NEAR(b.ser_dma_in.delay_ns, dma_in, tol_ns);
    EXPECT_NEAR(b.par_dma.delay_ns, dma_in, tol_ns);
}

TEST(OnchipBank, NonSerialisingBankOverlapsEngineAccesses) {
    const auto& b = bench();
    EXPECT_NEAR(b.par1.delay_ns, occ1, tol_ns);
    EXPECT_NEAR(b.par2.delay_ns, in2 + occ2, tol_ns);
    EXPECT_EQ(b.par.port().busy_total(), SC_ZERO_TIME);
}

TEST(OnchipBank, AProbeSaysWhenTheAccessCouldStartAndBooksNothing) {
    const auto& b = bench();
    EXPECT_NEAR(b.probe_busy.delay_ns, occ1, tol_ns);  // the bank is held until occ1
    EXPECT_NEAR(b.probe_free.delay_ns, occ1 + 1, tol_ns);
    EXPECT_NEAR(b.probe_par.delay_ns, in2, tol_ns);
    // nothing booked: ser2 still starts at occ1 (SerialisingBankQueuesOverlappingEngineAccesses),
    // and the byte counts have no probe (ByteCounters)
}

TEST(OnchipBank, ByteCounters) {
    const auto& b = bench();
    // ser: reads 4x64 (ser1), 4x64 (ser3), 16x1024 (ser_dma_in); writes 4x64, 16x1024.
    EXPECT_EQ(b.ser.read_bytes(), 4 * 64 + 4 * 64 + 16 * 1024u);
    EXPECT_EQ(b.ser.write_bytes(), 4 * 64 + 16 * 1024u);
    // par: every b_transport counts, including the failed ones; debug accesses do not.
    EXPECT_EQ(b.par.read_bytes(), rows * row_bytes + 16 + 4 * 64u);
    EXPECT_EQ(b.par.write_bytes(), rows * row_bytes + 2 * 3 * row_bytes + 4 * 64 + 4 * 64u);
}

}  // namespace

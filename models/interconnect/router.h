#pragma once
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <array>
#include <tlm>
#include <vector>

#include "core/access.h"
#include "core/params.h"
#include "core/port.h"

namespace trn {

// The address map and routing from initiators (engines, DMA engines) to targets (HBM channels,
// SBUF, PSUM banks, DMA queue doorbells). HBM addresses are interleaved over the channels; the
// access-port sharing rules of the generation are applied here, because a shared port spans
// every bank of a memory.
// Contract: b_transport forwards to the target(s) an access touches and returns the latest
// completion among them; functional data moves before timing is computed, so functional mode
// never changes timing.
class router : public sc_core::sc_module {
  public:
    tlm_utils::multi_passthrough_target_socket<router> in{"in"};
    tlm_utils::multi_passthrough_initiator_socket<router> hbm{"hbm"};
    tlm_utils::simple_initiator_socket<router> sbuf{"sbuf"};
    tlm_utils::multi_passthrough_initiator_socket<router> psum{"psum"};
    tlm_utils::multi_passthrough_initiator_socket<router> doorbell{"doorbell"};

    router(const sc_core::sc_module_name& name, const config& cfg);
    ~router() override;
    router(const router&) = delete;
    router& operator=(const router&) = delete;

    // HBM interleaving: granule g (of `interleave` bytes) lies in block g / channels; within a
    // block the granules are rotated over the channels by a hash of the block number, so that
    // strided accesses spread over all channels (a bijection: each channel holds one granule of
    // every block, at channel-local address block * interleave).
    std::size_t hbm_channel_of(std::uint64_t addr) const;
    std::uint64_t hbm_local(std::uint64_t addr) const;
    // Bytes of the range [addr, addr + len) that fall on each HBM channel (added to out).
    void split_hbm(std::uint64_t addr, std::uint64_t len, std::vector<std::uint64_t>& out) const;
    const busy_port& shared_port(bool psum_side) const {
        return psum_side ? m_psum_port : m_sbuf_port;
    }
    void reset_stats() {
        m_sbuf_port.reset_stats();
        m_psum_port.reset_stats();
    }

  private:
    void b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned transport_dbg(int id, tlm::tlm_generic_payload& trans);
    void hbm_access(tlm::tlm_generic_payload& trans, const access_ext* ext,
                    sc_core::sc_time& delay);
    void hbm_data(tlm::tlm_generic_payload& trans);
    void arbitrate(bool psum_side, initiator_id who, const sc_core::sc_time& occupancy,
                   sc_core::sc_time& delay);

    std::uint64_t m_granule;
    std::size_t m_channels;
    int m_granule_shift = -1, m_channel_shift = -1;  // log2, when a power of two (fast path)
    std::uint64_t m_psum_bank_bytes;
    std::array<bool, 6> m_shares_sbuf{}, m_shares_psum{};
    busy_port m_sbuf_port, m_psum_port;
    using range = std::pair<std::uint64_t, std::uint64_t>;  // (channel-local address, bytes)
    // Adds each channel's contiguous local ranges of `rows` rows of n bytes, row r at
    // addr + r * stride, to its slice of m_range_buf.
    void add_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n, std::uint64_t stride);
    // add_rows' fast path (granule and channel count powers of two): each row lies in one
    // block at the same offset, and two rows' blocks are at least two apart (one row, or a
    // stride of two or more whole blocks).
    void add_block_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n,
                        std::uint64_t stride);
    // Appends [lo, lo + bytes) to channel ch's ranges, extending the last one when contiguous.
    void add_range(std::size_t ch, std::uint64_t lo, std::uint64_t bytes) {
        range*& next = m_next[ch];
        if (next[-1].first + next[-1].second == lo)
            next[-1].second += bytes;
        else
            *next++ = {lo, bytes};
    }

    // Scratch of one HBM access: per channel a sentinel range that nothing extends, then room
    // for the channel's ranges (plain stores; copied into m_part_ranges when complete).
    std::vector<range> m_range_buf;
    std::vector<range*> m_next;       // per channel: where its next range goes
    tlm::tlm_generic_payload m_part;  // reused for the per-channel HBM accesses
    hbm_ranges_ext m_part_ranges;     // m_part's extension for the router's lifetime
};

}  // namespace trn

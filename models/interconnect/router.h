#pragma once
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <array>
#include <tlm>
#include <vector>

#include "core/hbm_address_map.h"
#include "core/lt_target.h"
#include "core/params.h"
#include "core/port.h"
#include "program/access.h"

namespace trn {

// The address map and routing from initiators (engines, DMA engines) to targets (HBM channels,
// SBUF, PSUM banks, DMA queue doorbells). HBM addresses are interleaved over the channels; the
// access-port sharing rules of the generation are applied here, because a shared port spans
// every bank of a memory.
// Contract: b_transport forwards to the target(s) an access touches and returns the latest
// completion among them; functional data moves before timing is computed, so functional mode
// never changes timing.
class router : public sc_core::sc_module, private lt_target {
  public:
    // Every initiator binds here; it calls the router directly (no per-binding callback).
    tlm::tlm_target_socket<32, tlm::tlm_base_protocol_types, 0> in{"in"};
    tlm_utils::multi_passthrough_initiator_socket<router> hbm{"hbm"};
    tlm_utils::simple_initiator_socket<router> sbuf{"sbuf"};
    tlm_utils::multi_passthrough_initiator_socket<router> psum{"psum"};
    tlm_utils::multi_passthrough_initiator_socket<router> doorbell{"doorbell"};

    router(const sc_core::sc_module_name& name, const config& cfg);
    ~router() override;
    router(const router&) = delete;
    router& operator=(const router&) = delete;

    // HBM interleaving (hbm_address_map): the channel of a global address, and its address there.
    std::size_t hbm_channel_of(std::uint64_t addr) const { return m_map.channel_of(addr); }
    std::uint64_t hbm_local(std::uint64_t addr) const { return m_map.local_of(addr); }
    // Bytes of the range [addr, addr + len) that fall on each HBM channel (added to out).
    void split_hbm(std::uint64_t addr, std::uint64_t len, std::vector<std::uint64_t>& out) const;
    const busy_port& shared_port(bool psum_side) const {
        return psum_side ? m_psum_port : m_sbuf_port;
    }
    // Adds the time engines queued on the shared SBUF and PSUM ports (sbuf.port_wait_ns,
    // psum.port_wait_ns).
    void report(stats_tree& s) const;
    void reset_stats() {
        m_sbuf_port.reset_stats();
        m_psum_port.reset_stats();
        m_hbm_read = m_hbm_write = 0;
    }
    // The channels bound to `hbm`, in binding order, to time their accesses directly
    // (hbm_pages_target::time_pages), without a payload, a virtual call through the socket and
    // an extension look-up each (none: through the socket).
    void set_hbm_channels(std::vector<hbm_pages_target*> channels) {
        m_channels = std::move(channels);
    }
    // Where this core's HBM address 0 lies in the stack it shares (a chip's second core of a
    // stack: its tensors are elsewhere in the stack than the first's).
    void set_hbm_base(std::uint64_t base) { m_hbm_base = base; }
    // HBM bytes this router's initiators read and wrote since reset_stats (timed accesses).
    std::uint64_t hbm_read_bytes() const { return m_hbm_read; }
    std::uint64_t hbm_write_bytes() const { return m_hbm_write; }
    // HBM accesses decoded so far (those not found in the table of decoded shapes), and the set
    // of that table a shape maps to: for tests of the table.
    std::uint64_t decodings() const { return m_decodings; }
    static std::size_t decoded_set(std::uint64_t addr, std::uint32_t rows, std::uint64_t row_bytes,
                                   std::uint64_t stride);
    // The table: 512 sets of 6 (the sets a power of two), about what M1 fills, so that a longer
    // kernel's memory grows little past it (4096 in 4-way sets: M1 1.9% faster, 10x M1 1.18x
    // its peak memory instead of 1.09x).
    static constexpr std::size_t decoded_slots = 3072;
    static constexpr std::size_t decoded_ways = 6;          // entries per set
    static constexpr std::size_t decoded_max_banks = 1024;  // larger entries are not kept
    // Whether channels are told their pages in hbm_pages_ext's table form: when each has at most
    // dense_max_banks banks (the work per access is per bank, touched or not) and the table of
    // every channel's banks fits a remembered entry's bound, decoded_max_banks (it costs 8 bytes
    // per bank and channel whatever the access touches; the list, 8 per bank touched).
    static constexpr std::size_t dense_max_banks = 64;
    static bool table_form(std::size_t banks, std::size_t channels) {
        return banks <= dense_max_banks && banks * channels <= decoded_max_banks;
    }

  private:
    std::uint64_t m_hbm_base = 0;
    std::uint64_t m_hbm_read = 0, m_hbm_write = 0;
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    unsigned transport_dbg(tlm::tlm_generic_payload& trans) override;
    void hbm_access(tlm::tlm_generic_payload& trans, const access_ext* ext,
                    sc_core::sc_time& delay);
    void hbm_data(tlm::tlm_generic_payload& trans);
    void arbitrate(bool psum_side, initiator_id who, const sc_core::sc_time& occupancy,
                   sc_core::sc_time& delay);
    // A PSUM access, forwarded to the bank its rows lie in, or split over the banks they span
    // (a tile of several banks, core.psum.tile_banks): each bank gets its part of every row at
    // the incoming delay, and the access completes with the last (into *delay). A null `delay`
    // is the debug path (transport_dbg, no timing). Returns the bytes moved.
    unsigned psum_access(tlm::tlm_generic_payload& trans, const access_ext* ext,
                         sc_core::sc_time* delay);

    hbm_address_map m_map;
    std::uint64_t m_psum_bank_bytes;
    std::array<bool, 6> m_shares_sbuf{}, m_shares_psum{};
    busy_port m_sbuf_port, m_psum_port;
    // Adds the pages and bytes each channel gets of `rows` rows of n bytes, row r at
    // addr + r * stride, to its slice of m_page_buf and to m_bytes.
    void add_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n, std::uint64_t stride);
    // add_rows' fast path (granule, channel count, page size and bank count powers of two, a
    // granule no larger than a page): each row lies in one block at the same offset, and two
    // rows' blocks are at least two apart (one row, or a stride of two or more whole blocks).
    void add_block_rows(std::uint64_t addr, std::uint32_t rows, std::uint64_t n,
                        std::uint64_t stride);
    // Adds the pages of channel-local range [lo, lo + bytes) to channel ch's, skipping a page
    // the channel has just touched (a repeat is a row-buffer hit either way).
    void add_range(std::size_t ch, std::uint64_t lo, std::uint64_t bytes) {
        std::uint64_t*& next = m_next[ch];
        const std::uint64_t last = m_map.page_of(lo + bytes - 1);
        for (std::uint64_t p = m_map.page_of(lo); p <= last; ++p)
            if (next[-1] != p) *next++ = p;
        m_bytes[ch] += bytes;
    }

    // Scratch of decode(): per channel a sentinel page that no page equals, then room for the
    // channel's pages (plain stores, summarised per bank into the decoded entry when complete).
    std::vector<std::uint64_t> m_page_buf;
    std::vector<std::uint64_t*> m_next;  // per channel: where its next page goes
    std::vector<std::uint64_t> m_bytes;  // per channel: bytes of the access there
    // add_block_rows' scratch, per channel: where its pages began, and the rows whose first
    // and last granule it holds.
    std::vector<std::uint64_t*> m_begin;
    std::vector<std::uint64_t> m_first_rows, m_last_rows;
    // Appends the per-bank summary (hbm_pages_ext) of the page sequence [page, end) to `out`
    // and returns its page changes. `out` must have room for one more entry per bank the pages
    // fall in (no reallocation); every m_bank_slot entry is ~0 before and after.
    std::uint64_t summarise(const std::uint64_t* page, const std::uint64_t* end,
                            std::vector<hbm_bank_pages>& out);
    // The same summary in the table form (`table`: a channel's, filled with hbm_no_page).
    std::uint64_t tabulate(const std::uint64_t* page, const std::uint64_t* end,
                           std::uint32_t* table) const;
    // summarise()'s scratch: per bank, its entry in the summary being built (~0: none).
    std::vector<std::uint32_t> m_bank_slot;
    // Decoded HBM accesses, remembered (decoding is a pure function of the access's shape, and
    // kernels load the same tiles again and again): a set-associative table with
    // least-recently-used replacement, each entry with every channel's pages summarised per bank
    // (channel after channel) and bytes.
    // An entry's key (m_keys), kept apart from its decoding (m_decoded) so that a look-up reads
    // a set's keys in a few cache lines.
    struct decoded_key {
        std::uint64_t addr = 0, row_bytes = 0, stride = 0;
        std::uint32_t rows = 0;  // 0: empty
        bool operator==(const decoded_key& o) const {
            return rows == o.rows && addr == o.addr && row_bytes == o.row_bytes &&
                   stride == o.stride;
        }
    };
    struct decoded {
        std::vector<hbm_bank_pages> banks;
        std::vector<std::uint32_t> begin;  // channel ch's banks: [begin[ch], begin[ch + 1])
        // Or, where table_form() says, the table form of hbm_pages_ext:
        // channel ch's at [2 * banks * ch, 2 * banks * (ch + 1)) (banks and begin empty).
        std::vector<std::uint32_t> dense;
        std::vector<std::uint64_t> changes, bytes;  // per channel
    };
    std::vector<decoded> m_decoded;     // set s: [s * decoded_ways, (s + 1) * decoded_ways)
    std::vector<decoded_key> m_keys;    // each entry's key
    std::vector<std::uint64_t> m_used;  // when each entry was last looked up (m_lookups)
    std::uint64_t m_lookups = 0, m_decodings = 0;
    decoded m_uncached;  // the last decoding not kept in the table (or the next entry's buffers)
    // The decoding of an access with at least one row of at least one byte: remembered, or
    // decoded now (and remembered unless its channels touch more than decoded_max_banks banks
    // in all).
    const decoded& decoded_of(std::uint64_t addr, std::uint32_t rows, std::uint64_t row_bytes,
                              std::uint64_t stride);
    // Decodes an access into `into`, through the scratch buffers.
    void decode(std::uint64_t addr, std::uint32_t rows, std::uint64_t row_bytes,
                std::uint64_t stride, decoded& into);
    tlm::tlm_generic_payload m_psum_part;       // a bank's part of a PSUM access spanning banks
    access_ext m_psum_ext;                      // its extension for the router's lifetime
    std::vector<std::uint8_t> m_psum_data;      // its rows, packed
    std::vector<hbm_pages_target*> m_channels;  // set_hbm_channels
    tlm::tlm_generic_payload m_part;            // reused for the per-channel HBM accesses
    hbm_pages_ext m_part_pages;                 // m_part's extension for the router's lifetime
};

}  // namespace trn

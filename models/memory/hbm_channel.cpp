#include "memory/hbm_channel.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace trn {

void hbm_channel::declare_params(param_registry& r) {
    r.add({"core.hbm.size", param_kind::size, "16GiB", "HBM capacity visible to this NeuronCore",
           "hardware-facts 1d (32 GiB per Trn1 chip, 2 NCs)", 1, 1e15});
    r.add({"core.hbm.channels", param_kind::integer, "8",
           "number of HBM channel modules the bandwidth is spread over",
           "model choice: hardware-facts 1d gives stacks, not channels", 1, 256});
    r.add({"core.hbm.bandwidth", param_kind::bandwidth, "410GB/s",
           "HBM bandwidth available to this NeuronCore, summed over channels",
           "hardware-facts 1d (820 GB/s per Trn1 chip / 2 NCs)", 1e-3, 1e6});
    r.add({"core.hbm.latency", param_kind::time, "100ns",
           "fixed access latency added to every HBM read or write",
           "not published (hardware-facts 5); typical HBM2e page-hit latency", 0, 1e6});
    r.add({"core.hbm.interleave", param_kind::size, "256B",
           "address interleaving granule across channels", "model choice", 1, 1ull << 30});
    r.add({"core.hbm.channel_hash", param_kind::boolean, "true",
           "rotate each block's granules over the channels by a hash of the block number "
           "(strided accesses spread over every channel); false: plain modulo interleaving, "
           "where accesses at a power-of-two stride fall on the same few channels",
           "Neuron docs, HBM CRC-Based Hashing (nki/deep-dives/nki-hbm-crc-hashing, Trn1-Trn3): "
           "a CRC of the address picks the channel and bank; the hash here stands in for it"});
    r.add({"core.hbm.page_size", param_kind::size, "2KiB",
           "row-buffer (page) size of a bank, in channel-local bytes",
           "model choice: HBM2/HBM2e page size", 1, 1ull << 30});
    r.add({"core.hbm.banks", param_kind::integer, "16",
           "banks per channel, each keeping one page open", "model choice: HBM2 bank count", 1,
           1024});
    r.add(param_decl{"core.hbm.activate_time", param_kind::time, "20ns",
                     "minimum channel time per page opened (the activation-rate limit): an "
                     "access takes max(bytes / channel bandwidth, pages opened x activate_time)",
                     "calibrated", 0, 1e6}
              .calibrated(2, 48,
                          "from activations overlapped across banks at the row-to-row limit "
                          "(HBM2E/HBM3 tRRD about 2-4 ns) to one full row cycle per page "
                          "serialised (tRC = tRAS + tRP, about 45-48 ns; JEDEC JESD235/238 "
                          "class parts)"));
}

hbm_channel::hbm_channel(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      m_bytes_per_ns(cfg.bandwidth("core.hbm.bandwidth") /
                     static_cast<double>(cfg.integer("core.hbm.channels"))),
      m_latency(ns(cfg.time_ns("core.hbm.latency"))),
      m_map(cfg),
      m_activate_ns(cfg.time_ns("core.hbm.activate_time")),
      m_open(m_map.banks(), hbm_no_page) {
    in.bind(*this);
}

void hbm_channel::copy(tlm::tlm_generic_payload& trans) {
    const std::uint64_t addr = trans.get_address();
    const std::uint64_t len = trans.get_data_length();
    if (trans.is_write()) {
        if (m_data.size() < addr + len) m_data.resize(addr + len, 0);
        std::memcpy(&m_data[addr], trans.get_data_ptr(), len);
    } else {
        std::uint8_t* out = trans.get_data_ptr();
        for (std::uint64_t i = 0; i < len; ++i)
            out[i] = addr + i < m_data.size() ? m_data[addr + i] : 0;
    }
}

namespace {

// Applies a page summary in the table form to the open pages of a channel's n banks, every bank
// at once without branches (the compiler vectorises it, with AVX2 where the machine has it): a
// touched bank misses unless its first page is open, and is left with its last open. Returns
// the pages opened.
[[gnu::target_clones("avx2", "default")]] std::uint32_t apply_table(
    const std::uint32_t* __restrict first, const std::uint32_t* __restrict last,
    std::uint32_t* __restrict open, std::size_t n) {
    std::uint32_t opened = 0;
    for (std::size_t b = 0; b < n; ++b) {
        const std::uint32_t touched = 0u - std::uint32_t{first[b] != hbm_no_page};
        opened += std::uint32_t{first[b] != open[b]} & touched;
        open[b] = (last[b] & touched) | (open[b] & ~touched);
    }
    return opened;
}

}  // namespace

std::uint64_t hbm_channel::page_misses(const hbm_pages_ext* ext, std::uint64_t address,
                                       std::uint64_t length) {
    std::uint64_t misses = 0;
    if (ext) {
        misses = ext->changes;
        std::uint32_t* open = m_open.data();
        if (const std::uint32_t* first = ext->dense) {
            if (ext->count != m_open.size())
                throw std::logic_error("hbm_channel: a page table of " +
                                       std::to_string(ext->count) + " banks for a channel of " +
                                       std::to_string(m_open.size()));
            misses += apply_table(first, first + ext->count, open, ext->count);
        } else {
            const hbm_address_map map = m_map;  // a local copy: the stores below cannot change it
            for (const hbm_bank_pages *b = ext->banks, *end = b + ext->count; b != end; ++b) {
                std::uint32_t& bank = open[map.bank_of(b->first)];
                misses += bank != b->first;
                bank = b->last;
            }
        }
    } else if (length) {
        const std::uint64_t last = m_map.page_of(address + length - 1);
        for (std::uint64_t p = m_map.page_of(address); p <= last; ++p) {
            // (channel-local page numbers fit in 32 bits: hbm_address_map)
            std::uint32_t& open = m_open[m_map.bank_of(p)];
            misses += open != static_cast<std::uint32_t>(p);
            open = static_cast<std::uint32_t>(p);
        }
    }
    m_misses += misses;
    return misses;
}

void hbm_channel::book(bool write, std::uint64_t len, std::uint64_t misses,
                       sc_core::sc_time& delay) {
    (write ? m_write_bytes : m_read_bytes) += len;
    const sc_core::sc_time now = sim_time();
    const double transfer_ns = static_cast<double>(len) / m_bytes_per_ns;
    const double activate_ns = static_cast<double>(misses) * m_activate_ns;
    (activate_ns > transfer_ns ? m_activation_ns : m_bandwidth_ns) +=
        std::max(transfer_ns, activate_ns);
    const sc_core::sc_time service = ns(std::max(transfer_ns, activate_ns));
    const sc_core::sc_time start = m_port.reserve(now + delay, service);
    delay = start + service + m_latency - now;
}

void hbm_channel::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::uint64_t len = trans.get_data_length();
    if (trans.get_data_ptr()) copy(trans);
    const std::uint64_t misses =
        page_misses(trans.get_extension<hbm_pages_ext>(), trans.get_address(), len);
    book(trans.is_write(), len, misses, delay);
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void hbm_channel::time_pages(bool write, std::uint64_t bytes, const hbm_pages_ext& pages,
                             sc_core::sc_time& delay) {
    book(write, bytes, page_misses(&pages, 0, bytes), delay);
}

unsigned hbm_channel::transport_dbg(tlm::tlm_generic_payload& trans) {
    copy(trans);
    return trans.get_data_length();
}

void hbm_channel::report(stats_tree& s, const std::string& prefix, const std::string& of) const {
    report_port(s, prefix, m_port, "time serving accesses" + of,
                "accesses' time waiting for the channel (summed over accesses)" + of);
    s.add(prefix + ".activation_bound_ns", activation_bound_ns(), "ns",
          "service time set by page activations rather than bandwidth" + of);
}

}  // namespace trn

#pragma once
#include <algorithm>
#include <tlm>
#include <vector>

#include "core/hbm_address_map.h"
#include "core/lt_target.h"
#include "core/params.h"
#include "core/port.h"
#include "core/stats.h"
#include "program/access.h"

namespace trn {

// One HBM channel: serves reads and writes at its share of the HBM bandwidth, first come first
// served, plus a fixed access latency. Each bank keeps one page open; an access that opens
// pages is limited by the activation rate as well as by bandwidth. Addresses are channel-local (the
// router de-interleaves); the pages an access touches are those its hbm_pages_ext summarises,
// else those of [address, address + length). In functional mode it holds the bytes.
class hbm_channel : public sc_core::sc_module, public hbm_pages_target, private lt_target {
  public:
    // The routers of every core of the stack bind here; it calls the channel directly.
    tlm::tlm_target_socket<32, tlm::tlm_base_protocol_types, 0> in{"in"};

    static void declare_params(param_registry& r);
    hbm_channel(const sc_core::sc_module_name& name, const config& cfg);
    hbm_channel(const hbm_channel&) = delete;
    hbm_channel& operator=(const hbm_channel&) = delete;

    std::uint64_t read_bytes() const { return m_read_bytes; }
    std::uint64_t write_bytes() const { return m_write_bytes; }
    std::uint64_t misses() const { return m_misses; }
    // Service time set by page activations (misses x activate_time above bytes / bandwidth),
    // and by bandwidth, in ns.
    double activation_bound_ns() const { return m_activation_ns; }
    double bandwidth_bound_ns() const { return m_bandwidth_ns; }
    // Restarts the statistics and closes every page (each program starts alike).
    void reset_stats() {
        m_port.reset_stats();
        m_read_bytes = m_write_bytes = m_misses = 0;
        m_activation_ns = m_bandwidth_ns = 0;
        std::fill(m_open.begin(), m_open.end(), hbm_no_page);
    }
    const busy_port& port() const { return m_port; }
    // Adds its port's statistics and the service time set by page activations under `prefix`
    // ("hbm.channels.c5"), each description followed by `of` (whose accesses they count).
    void report(stats_tree& s, const std::string& prefix, const std::string& of) const;
    void time_pages(bool write, std::uint64_t bytes, const hbm_pages_ext& pages,
                    sc_core::sc_time& delay) override;

  private:
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    unsigned transport_dbg(tlm::tlm_generic_payload& trans) override;
    void copy(tlm::tlm_generic_payload& trans);

    // Row-buffer misses of the pages an access touches (updating the open pages): those
    // `pages` summarises, else (null) those of [address, address + length).
    std::uint64_t page_misses(const hbm_pages_ext* pages, std::uint64_t address,
                              std::uint64_t length);
    // Books an access of `length` bytes opening `misses` pages, from `delay` on.
    void book(bool write, std::uint64_t length, std::uint64_t misses, sc_core::sc_time& delay);

    double m_bytes_per_ns;
    sc_core::sc_time m_latency;
    hbm_address_map m_map;
    double m_activate_ns;
    // Open page of each bank (hbm_no_page: none); page numbers fit in 32 bits (hbm_address_map).
    std::vector<std::uint32_t> m_open;
    std::uint64_t m_misses = 0;
    double m_activation_ns = 0, m_bandwidth_ns = 0;
    busy_port m_port;
    std::vector<std::uint8_t> m_data;
    std::uint64_t m_read_bytes = 0, m_write_bytes = 0;
};

}  // namespace trn

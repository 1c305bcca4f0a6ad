#pragma once
#include <tlm_utils/simple_target_socket.h>
#include <tlm>
#include <vector>

#include "core/params.h"
#include "core/port.h"

namespace trn {

// A bank of on-chip memory (all of SBUF, or one PSUM bank): `partitions` rows of
// `bytes_per_partition`, addressed as base + partition * partition_stride + offset. Holds the
// bytes in functional mode. With `serialise` set, accesses that occupy the bank (engine
// instructions) are served one at a time, the same-bank collision rule of NeuronCore-v3 PSUM.
// A probe (access_ext::probe) books, moves and counts nothing: `delay` says when it could start.
class onchip_bank : public sc_core::sc_module {
  public:
    tlm_utils::simple_target_socket<onchip_bank> in{"in"};

    static void declare_params(param_registry& r);
    onchip_bank(const sc_core::sc_module_name& name, std::uint64_t base, std::uint32_t partitions,
                std::uint64_t bytes_per_partition, bool serialise);
    onchip_bank(const onchip_bank&) = delete;
    onchip_bank& operator=(const onchip_bank&) = delete;

    std::uint64_t read_bytes() const { return m_read_bytes; }
    std::uint64_t write_bytes() const { return m_write_bytes; }
    const busy_port& port() const { return m_port; }
    void reset_stats() {
        m_port.reset_stats();
        m_read_bytes = m_write_bytes = 0;
    }

  private:
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned transport_dbg(tlm::tlm_generic_payload& trans);
    void copy(tlm::tlm_generic_payload& trans);

    std::uint64_t m_base;
    std::uint32_t m_partitions;
    std::uint64_t m_bytes_per_partition;
    bool m_serialise;
    busy_port m_port;
    std::vector<std::uint8_t> m_data;  // allocated on the first functional access
    std::uint64_t m_read_bytes = 0, m_write_bytes = 0;
};

}  // namespace trn

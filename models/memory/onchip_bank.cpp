#include "memory/onchip_bank.h"

#include <cstring>

#include "program/access.h"

namespace trn {

void onchip_bank::declare_params(param_registry& r) {
    r.add({"core.sbuf.partitions", param_kind::integer, "128",
           "partitions of SBUF and PSUM (the P dimension of every tile)", "hardware-facts 1c", 1,
           1024});
    r.add({"core.sbuf.partition_size", param_kind::size, "192KiB", "SBUF bytes per partition",
           "hardware-facts 1c (24 MiB = 128 x 192 KiB on NC-v2)", 1, 1ull << 20});
    r.add({"core.sbuf.port_sharing",
           param_kind::text,
           "dve+pool",
           "engines that share one SBUF access port and so cannot access SBUF in parallel",
           "hardware-facts 1c (NC-v2: DVE and Pool; NC-v3: none)",
           0,
           0,
           {"dve+pool", "none"}});
    r.add({"core.sbuf.indirect", param_kind::boolean, "false",
           "tensor indirection: the engines gather and scatter columns of SBUF and PSUM tiles at "
           "offsets held in SBUF (NKI's .indirect()); timed as a direct access of the columns "
           "accessed, the offsets' read riding along (model choice: no cost is published)",
           "hardware-facts 1f (NC-v4: SBUF/PSUM indirect access by every engine; before: none)"});
    r.add({"core.psum.banks", param_kind::integer, "8", "PSUM banks per partition",
           "hardware-facts 1c", 1, 64});
    r.add({"core.psum.bank_size", param_kind::size, "2KiB", "PSUM bytes per bank per partition",
           "hardware-facts 1c (8 x 2 KiB = 16 KiB per partition)", 1, 1ull << 20});
    r.add({"core.psum.tile_banks", param_kind::integer, "1",
           "PSUM banks one tile, and one matmul's destination, may span: a PSUM tile holds up "
           "to tile_banks x bank_size bytes per partition, and a matmul's moving free size goes "
           "up to that many elements of its dst's dtype (or core.pe.moving_max)",
           "hardware-facts 1f (NC-v4: a moving free size up to 4096 fp32 or 8192 bf16, the 8 "
           "PSUM banks; one bank before)",
           1, 64});
    r.add({"core.psum.port_sharing",
           param_kind::text,
           "dve+act",
           "engines that share one PSUM access port and so cannot access PSUM in parallel",
           "hardware-facts 1c (NC-v2: DVE and ACT; NC-v3: none)",
           0,
           0,
           {"dve+act", "none"}});
    r.add({"core.psum.bank_conflicts", param_kind::boolean, "false",
           "engine accesses to the same PSUM bank are served one at a time",
           "hardware-facts 1c (NC-v3 rule; NC-v2 serialises by port instead)"});
}

onchip_bank::onchip_bank(const sc_core::sc_module_name& name, std::uint64_t base,
                         std::uint32_t partitions, std::uint64_t bytes_per_partition,
                         bool serialise)
    : sc_core::sc_module(name),
      m_base(base),
      m_partitions(partitions),
      m_bytes_per_partition(bytes_per_partition),
      m_serialise(serialise) {
    in.register_b_transport(this, &onchip_bank::b_transport);
    in.register_transport_dbg(this, &onchip_bank::transport_dbg);
}

void onchip_bank::copy(tlm::tlm_generic_payload& trans) {
    auto* ext = trans.get_extension<access_ext>();
    const std::uint32_t rows = ext ? ext->rows : 1;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t local = trans.get_address() - m_base;
    const std::uint64_t p0 = local / address_map::partition_stride;
    const std::uint64_t off = local % address_map::partition_stride;
    if (p0 + rows > m_partitions || off + row_bytes > m_bytes_per_partition) {
        trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    if (m_data.empty()) m_data.assign(m_partitions * m_bytes_per_partition, 0);
    std::uint8_t* data = trans.get_data_ptr();
    for (std::uint32_t r = 0; r < rows; ++r) {
        std::uint8_t* cell = &m_data[(p0 + r) * m_bytes_per_partition + off];
        if (trans.is_write())
            std::memcpy(cell, data + r * row_bytes, row_bytes);
        else
            std::memcpy(data + r * row_bytes, cell, row_bytes);
    }
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void onchip_bank::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    if (auto* probe = trans.get_extension<access_ext>(); probe && probe->probe) {
        const sc_core::sc_time now = sim_time();
        if (m_serialise && probe->occupancy > sc_core::SC_ZERO_TIME &&
            m_port.busy_until() > now + delay)
            delay = m_port.busy_until() - now;
        return;
    }
    if (trans.get_data_ptr()) copy(trans);
    (trans.is_write() ? m_write_bytes : m_read_bytes) += trans.get_data_length();
    auto* ext = trans.get_extension<access_ext>();
    const sc_core::sc_time occupancy = ext ? ext->occupancy : sc_core::SC_ZERO_TIME;
    if (m_serialise && occupancy > sc_core::SC_ZERO_TIME) {
        const sc_core::sc_time now = sim_time();
        const sc_core::sc_time start = m_port.reserve(now + delay, occupancy);
        delay = start - now;
    }
    delay += occupancy;
}

unsigned onchip_bank::transport_dbg(tlm::tlm_generic_payload& trans) {
    copy(trans);
    return trans.is_response_ok() ? trans.get_data_length() : 0;
}

}  // namespace trn

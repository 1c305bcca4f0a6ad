#include "interconnect/router.h"

namespace trn {

router::router(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      m_granule(cfg.size("core.hbm.interleave")),
      m_channels(static_cast<std::size_t>(cfg.integer("core.hbm.channels"))),
      m_psum_bank_bytes(cfg.size("core.psum.bank_size")),
      m_split(m_channels, 0),
      m_ranges(m_channels) {
    auto log2_exact = [](std::uint64_t v) { return v && !(v & (v - 1)) ? __builtin_ctzll(v) : -1; };
    m_granule_shift = log2_exact(m_granule);
    m_channel_shift = log2_exact(m_channels);
    in.register_b_transport(this, &router::b_transport);
    in.register_transport_dbg(this, &router::transport_dbg);
    if (cfg.text("core.sbuf.port_sharing") == "dve+pool")
        m_shares_sbuf[std::size_t(initiator_id::dve)] =
            m_shares_sbuf[std::size_t(initiator_id::pool)] = true;
    if (cfg.text("core.psum.port_sharing") == "dve+act")
        m_shares_psum[std::size_t(initiator_id::dve)] =
            m_shares_psum[std::size_t(initiator_id::act)] = true;
}

namespace {

std::uint64_t block_hash(std::uint64_t b) {
    return b ^ (b >> 3) ^ (b >> 7) ^ (b >> 13);
}

}  // namespace

std::size_t router::hbm_channel_of(std::uint64_t addr) const {
    const std::uint64_t g = addr / m_granule;
    return static_cast<std::size_t>((g % m_channels + block_hash(g / m_channels)) % m_channels);
}

std::uint64_t router::hbm_local(std::uint64_t addr) const {
    return (addr / (m_granule * m_channels)) * m_granule + addr % m_granule;
}

void router::split_hbm(std::uint64_t a, std::uint64_t n, std::vector<std::uint64_t>& out) const {
    for (std::uint64_t left = n; left;) {
        const std::uint64_t piece = std::min(left, m_granule - a % m_granule);
        out[hbm_channel_of(a)] += piece;
        a += piece;
        left -= piece;
    }
}

void router::add_row(std::uint64_t a, std::uint64_t n) {
    // Each channel's share of a row is contiguous in its local space: one range per channel.
    // Walks the row block by block (one hash per block of `channels` granules).
    const std::uint64_t g = m_granule, c = m_channels, block_bytes = g * c;
    if (m_granule_shift >= 0 && m_channel_shift >= 0) {  // powers of two: shifts and masks
        const int gs = m_granule_shift, bs = m_granule_shift + m_channel_shift;
        for (std::uint64_t left = n; left;) {
            const std::uint64_t off = a & (g - 1);
            const std::uint64_t piece = std::min(left, g - off);
            const std::uint64_t block = a >> bs;
            const auto ch = static_cast<std::size_t>(((a >> gs) + block_hash(block)) & (c - 1));
            const std::uint64_t lo = (block << gs) + off;
            auto& ranges = m_ranges[ch].ranges;
            if (!ranges.empty() && ranges.back().first + ranges.back().second == lo)
                ranges.back().second += piece;
            else
                ranges.emplace_back(lo, piece);
            m_split[ch] += piece;
            a += piece;
            left -= piece;
        }
        return;
    }
    for (std::uint64_t left = n; left;) {
        const std::uint64_t piece = std::min(left, g - a % g);
        const std::uint64_t block = a / block_bytes;
        const std::uint64_t pos = (a / g) % c;
        const std::size_t ch = static_cast<std::size_t>((pos + block_hash(block)) % c);
        const std::uint64_t lo = block * g + a % g;
        auto& ranges = m_ranges[ch].ranges;
        if (!ranges.empty() && ranges.back().first + ranges.back().second == lo)
            ranges.back().second += piece;
        else
            ranges.emplace_back(lo, piece);
        m_split[ch] += piece;
        a += piece;
        left -= piece;
    }
}

void router::hbm_data(tlm::tlm_generic_payload& trans) {
    auto* ext = trans.get_extension<access_ext>();
    const std::uint32_t rows = ext ? ext->rows : 1;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t stride = ext ? ext->row_stride : 0;
    for (std::uint32_t r = 0; r < rows; ++r) {
        std::uint64_t a = trans.get_address() + r * stride;
        std::uint8_t* data = trans.get_data_ptr() + r * row_bytes;
        for (std::uint64_t left = row_bytes; left;) {
            const std::uint64_t piece = std::min(left, m_granule - a % m_granule);
            tlm::tlm_generic_payload part;
            part.set_command(trans.get_command());
            part.set_address(hbm_local(a));
            part.set_data_ptr(data);
            part.set_data_length(static_cast<unsigned>(piece));
            hbm[static_cast<int>(hbm_channel_of(a))]->transport_dbg(part);
            a += piece;
            data += piece;
            left -= piece;
        }
    }
}

void router::hbm_access(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    if (trans.get_data_ptr()) hbm_data(trans);
    auto* ext = trans.get_extension<access_ext>();
    const std::uint32_t rows = ext ? ext->rows : 1;
    const std::uint64_t row_bytes = ext ? ext->row_bytes : trans.get_data_length();
    const std::uint64_t stride = ext ? ext->row_stride : 0;
    for (auto& r : m_ranges)
        r.ranges.clear();
    std::fill(m_split.begin(), m_split.end(), 0);
    for (std::uint32_t r = 0; r < rows; ++r)
        add_row(trans.get_address() + r * stride, row_bytes);
    sc_core::sc_time done = delay;
    for (std::size_t ch = 0; ch < m_channels; ++ch) {
        if (!m_split[ch]) continue;
        m_part.set_extension(&m_ranges[ch]);
        m_part.set_command(trans.get_command());
        m_part.set_address(0);
        m_part.set_data_ptr(nullptr);
        m_part.set_data_length(static_cast<unsigned>(m_split[ch]));
        sc_core::sc_time d = delay;
        hbm[static_cast<int>(ch)]->b_transport(m_part, d);
        m_part.clear_extension(&m_ranges[ch]);
        if (d > done) done = d;
    }
    delay = done;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void router::arbitrate(bool psum_side, initiator_id who, const sc_core::sc_time& occupancy,
                       sc_core::sc_time& delay) {
    const auto& shares = psum_side ? m_shares_psum : m_shares_sbuf;
    if (!shares[std::size_t(who)] || occupancy == sc_core::SC_ZERO_TIME) return;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time start =
        (psum_side ? m_psum_port : m_sbuf_port).reserve(now + delay, occupancy);
    delay = start - now;
}

void router::b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::uint64_t addr = trans.get_address();
    auto* ext = trans.get_extension<access_ext>();
    const initiator_id who = ext ? ext->initiator : initiator_id::dma;
    const sc_core::sc_time occupancy = ext ? ext->occupancy : sc_core::SC_ZERO_TIME;
    if (addr < address_map::sbuf_base) {
        hbm_access(trans, delay);
    } else if (addr < address_map::psum_base) {
        arbitrate(false, who, occupancy, delay);
        sbuf->b_transport(trans, delay);
    } else if (addr < address_map::doorbell_base) {
        arbitrate(true, who, occupancy, delay);
        const std::uint64_t off = (addr - address_map::psum_base) % address_map::partition_stride;
        const auto bank = static_cast<int>(off / m_psum_bank_bytes);
        psum[bank]->b_transport(trans, delay);
    } else {
        doorbell[static_cast<int>(addr - address_map::doorbell_base)]->b_transport(trans, delay);
    }
}

unsigned router::transport_dbg(int, tlm::tlm_generic_payload& trans) {
    const std::uint64_t addr = trans.get_address();
    if (addr < address_map::sbuf_base) {
        hbm_data(trans);
        return trans.get_data_length();
    }
    if (addr < address_map::psum_base) return sbuf->transport_dbg(trans);
    const std::uint64_t off = (addr - address_map::psum_base) % address_map::partition_stride;
    return psum[static_cast<int>(off / m_psum_bank_bytes)]->transport_dbg(trans);
}

}  // namespace trn

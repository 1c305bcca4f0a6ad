#include "core/hbm_address_map.h"

#include <string>

#include "core/error.h"

namespace trn {

namespace {

int log2_exact(std::uint64_t v) {
    return v && !(v & (v - 1)) ? __builtin_ctzll(v) : -1;
}

}  // namespace

hbm_address_map::hbm_address_map(const config& cfg)
    : m_granule(cfg.size("core.hbm.interleave")),
      m_channels(static_cast<std::size_t>(cfg.integer("core.hbm.channels"))),
      m_page_size(cfg.size("core.hbm.page_size")),
      m_banks(static_cast<std::size_t>(cfg.integer("core.hbm.banks"))),
      m_hash(cfg.boolean("core.hbm.channel_hash")) {
    // Page numbers are kept in 32 bits (hbm_bank_pages): a channel's pages must fit, with room
    // for the stacks several cores share (a core's view is core.hbm.size; 8x that is allowed).
    if (m_page_size > 0 && m_channels > 0 &&
        cfg.size("core.hbm.size") / m_channels / m_page_size >= (std::uint64_t{1} << 32) / 8)
        throw user_error("core.hbm.page_size " + std::to_string(m_page_size) +
                         " B: too small for core.hbm.size over core.hbm.channels (a channel's "
                         "pages are numbered in 32 bits, with room for 8 cores' HBM)");
    m_granule_shift = log2_exact(m_granule);
    m_channel_shift = log2_exact(m_channels);
    if (log2_exact(m_banks) >= 0) m_page_shift = log2_exact(m_page_size);
}

std::size_t hbm_address_map::channel_of(std::uint64_t addr) const {
    const std::uint64_t g = addr / m_granule;
    return static_cast<std::size_t>((g % m_channels + block_hash(g / m_channels)) % m_channels);
}

std::uint64_t hbm_address_map::local_of(std::uint64_t addr) const {
    return (addr / (m_granule * m_channels)) * m_granule + addr % m_granule;
}

}  // namespace trn

#pragma once
#include <cstddef>
#include <cstdint>

#include "core/params.h"

namespace trn {

// HBM address decoding, shared by the router (which channel each byte goes to) and the channels
// (which bank and page a channel-local address falls in), like a memory controller's address
// decoder. Interleaving: granule g (of `interleave` bytes) lies in block g / channels; within a
// block the granules are rotated over the channels by a hash of the block number (when
// core.hbm.channel_hash is set), so that strided accesses spread over all channels (a bijection:
// each channel holds one granule of every block, at channel-local address block * interleave).
// Pages are numbered in channel-local space (page = local address / page size) and page p lies in
// bank p % banks.
class hbm_address_map {
  public:
    explicit hbm_address_map(const config& cfg);

    std::uint64_t granule() const { return m_granule; }
    std::size_t channels() const { return m_channels; }
    std::uint64_t page_size() const { return m_page_size; }
    std::size_t banks() const { return m_banks; }
    // log2 of the granule and of the channel count (-1 unless a power of two), and of the page
    // size (-1 unless it and the bank count are powers of two): the shift-and-mask fast paths.
    int granule_shift() const { return m_granule_shift; }
    int channel_shift() const { return m_channel_shift; }
    int page_shift() const { return m_page_shift; }

    // The rotation of a block's granules over the channels: a hash of the block number with
    // core.hbm.channel_hash, else none (plain modulo interleaving, where power-of-two strides
    // fall on the same channels).
    std::uint64_t block_hash(std::uint64_t block) const {
        return m_hash ? block ^ (block >> 3) ^ (block >> 7) ^ (block >> 13) : 0;
    }
    std::size_t channel_of(std::uint64_t addr) const;
    std::uint64_t local_of(std::uint64_t addr) const;
    std::uint64_t page_of(std::uint64_t local) const {
        return m_page_shift >= 0 ? local >> m_page_shift : local / m_page_size;
    }
    std::size_t bank_of(std::uint64_t page) const {
        return static_cast<std::size_t>(m_page_shift >= 0 ? page & (m_banks - 1) : page % m_banks);
    }

  private:
    std::uint64_t m_granule;
    std::size_t m_channels;
    std::uint64_t m_page_size;
    std::size_t m_banks;
    bool m_hash;
    int m_granule_shift = -1, m_channel_shift = -1, m_page_shift = -1;
};

}  // namespace trn

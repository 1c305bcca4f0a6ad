#pragma once
#include <cstddef>
#include <cstdint>
#include <systemc>
#include <tlm>

namespace trn {

// Who issues a memory access; engines by kind, DMA engines as one class.
enum class initiator_id : std::uint8_t { pe, dve, act, pool, sp, dma };

// The global address map: HBM from 0, SBUF and PSUM partitions at fixed strides, one doorbell
// word per DMA queue.
namespace address_map {
constexpr std::uint64_t sbuf_base = 1ull << 44;
constexpr std::uint64_t psum_base = 2ull << 44;
constexpr std::uint64_t doorbell_base = 3ull << 44;
constexpr std::uint64_t partition_stride = 1ull << 20;  // bytes between partitions
}  // namespace address_map

// A 2-D access carried with every transaction: `rows` rows of `row_bytes`, row r at
// address + r * row_stride. The generic payload's data pointer, when set, holds the rows packed
// (rows * row_bytes); when null the access is timing-only. `occupancy` is how long the initiator
// holds the target's port (engines: the instruction's duration; DMA: zero, the target's own
// bandwidth decides).
// Contract for every target: on return, `delay` is the offset from now at which the access
// completes, given that it may start at the incoming `delay`.
struct access_ext : tlm::tlm_extension<access_ext> {
    initiator_id initiator = initiator_id::dma;
    std::uint32_t rows = 1;
    std::uint64_t row_bytes = 0;
    std::uint64_t row_stride = 0;
    sc_core::sc_time occupancy = sc_core::SC_ZERO_TIME;
    // A probe: the target says when the access could start (in `delay`) and books, moves and
    // counts nothing (a router finding one start for the banks an access spans).
    bool probe = false;

    tlm::tlm_extension_base* clone() const override { return new access_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const access_ext&>(other);
    }
};

// The pages (DRAM rows) one bank of an HBM channel sees during an access: the first and the
// last it touches, numbered as hbm_address_map numbers them (channel-local; both in one bank).
struct hbm_bank_pages {
    std::uint32_t first = 0,
                  last = 0;  // channel-local page numbers (hbm_address_map checks they fit)
    bool operator==(const hbm_bank_pages& o) const { return first == o.first && last == o.last; }
};

// The pages an HBM access touches on one channel, summarised per bank: one entry per bank it
// touches, in the order of first touch, and `changes`, how many times a bank moves on to a page
// other than the one the access last touched in it. That is all a row-buffer model needs: banks
// are independent, so the access opens `changes` pages plus one per bank whose open page is not
// its first, and leaves each bank with its last page open. Decoded by the router, which
// de-interleaves, so that a channel sees its row-buffer locality without decoding again.
// The summary comes in one of two forms: a list (`banks`, `count` entries), or, for a channel
// of few banks, a table indexed by bank (`dense`, `count` the channel's banks: dense[b] the first
// page the access touches in bank b, dense[count + b] the last, first = hbm_no_page where it
// touches none), which a channel applies without an indexed load per entry.
// Non-owning: the entries belong to the initiator and stay valid for the duration of the
// (blocking) call only.
constexpr std::uint32_t hbm_no_page = ~std::uint32_t{0};  // (no page number: hbm_address_map)
struct hbm_pages_ext : tlm::tlm_extension<hbm_pages_ext> {
    const hbm_bank_pages* banks = nullptr;
    std::size_t count = 0;
    const std::uint32_t* dense = nullptr;  // non-null: the table form (`banks` unused)
    std::uint64_t changes = 0;

    tlm::tlm_extension_base* clone() const override { return new hbm_pages_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const hbm_pages_ext&>(other);
    }
};

// An HBM channel's timing of an access without data, called by a router directly rather than
// through the socket. Contract: the same booking, statistics and `delay` as a b_transport of
// `bytes` bytes with no data pointer and `pages` as its hbm_pages_ext.
class hbm_pages_target {
  public:
    virtual void time_pages(bool write, std::uint64_t bytes, const hbm_pages_ext& pages,
                            sc_core::sc_time& delay) = 0;

  protected:
    ~hbm_pages_target() = default;
};

}  // namespace trn

#include "program/program.h"

namespace trn {

// Global address of row `row` of an operand.
inline std::uint64_t address_of(const operand& op, std::uint32_t row = 0) {
    switch (op.space) {
        case mem_space::hbm:
            return op.offset + row * op.row_stride;
        case mem_space::sbuf:
            return address_map::sbuf_base + (op.partition + row) * address_map::partition_stride +
                   op.offset;
        case mem_space::psum:
            return address_map::psum_base + (op.partition + row) * address_map::partition_stride +
                   op.offset;
    }
    return 0;
}

// Row stride of an operand in the global address map.
inline std::uint64_t row_stride_of(const operand& op) {
    return op.space == mem_space::hbm ? op.row_stride : address_map::partition_stride;
}

}  // namespace trn

#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "isa/instruction.h"

namespace trn {

// One DMA transfer: dst and src have the same number of rows and elements per row; when their
// dtypes differ, the DMA casts each element through fp32. `rmw` add: a read-add-write, dst =
// dst + src computed in fp32 (nisa.dma_copy's dst_rmw_op, nisa.dma_compute); bypass: a copy.
// `priority`: its DMA quality-of-service level, 0 the highest (NeuronCore-v4's strict priority,
// nki.isa.dma_copy's priority=; below core.dma.priority_levels). `transpose`: a DMA transpose
// into SBUF, dst[c, r] = src[r, c] (dst's rows are src's elements and its elements src's rows;
// nl.load_transpose2d, nisa.dma_transpose), its rows (dst's) at core.dma.transpose_rate of a
// copy's rate into the same tile.
struct dma_transfer {
    operand dst, src;
    alu_op rmw = alu_op::bypass;
    std::uint8_t priority = 0;
    // Which transfer it is of one DMA whose access pattern has more runs a partition than an
    // operand holds, split into one transfer per run (0: the first, or a DMA of one transfer):
    // such a DMA's runs spread over the DMA engines, part k beginning on the engines after
    // those of part k - 1 (dma_queue).
    std::uint8_t part = 0;
    bool transpose = false;
    bool operator==(const dma_transfer& o) const {
        return dst == o.dst && src == o.src && rmw == o.rmw && priority == o.priority &&
               part == o.part && transpose == o.transpose;
    }
    // The rows the DMA engines split among them: the partitions of the on-chip side (dst's of
    // a transpose, src's of a copy, the same as dst's).
    std::uint32_t rows() const { return transpose ? dst.partitions : src.partitions; }
    // The bytes read for each of those rows: a transpose reads one element of each source row.
    std::uint64_t row_bytes() const {
        return transpose ? std::uint64_t{src.partitions} * dtype_size(src.type) : src.row_bytes();
    }
};
static_assert(sizeof(dma_transfer) == 72,
              "a transfer is two packed operands, its operation, its priority, its part and "
              "whether it transposes");

// A named HBM region; inputs carry how functional mode initialises them.
struct hbm_region {
    std::string name;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    dtype type = dtype::float32;
    bool input = false;
    float lo = 0, hi = 1;  // uniform [lo, hi)
    std::uint32_t seed = 0;
    bool operator==(const hbm_region& o) const;
};

// What every stream executes, the unit the platform runs and a trace file holds.
// Where a program read from a trace file came from: the line of every instruction, transfer
// and region, so that validation names FILE:LINE rather than a stream and an index.
struct program_origin {
    std::string file;
    std::array<std::vector<std::size_t>, engine_count> engine_lines;
    std::vector<std::vector<std::size_t>> queue_lines;
    std::vector<std::size_t> region_lines;
};

// Where each instruction and transfer came from in the kernel's source ("FILE:LINE", trace
// format 3's at=): entry i of a stream's list is one plus the index in `names` of its
// instruction i's place, 0 for none. A stream's list is empty when none of its entries has one.
struct program_sources {
    std::vector<std::string> names;
    std::array<std::vector<std::uint32_t>, engine_count> engines;
    std::vector<std::vector<std::uint32_t>> queues;

    // The place of entry i of a stream ("" when none), and its id (0 when none).
    const std::string& of_engine(engine_kind e, std::size_t i) const;
    const std::string& of_queue(std::size_t q, std::size_t i) const;
    std::uint32_t engine_id(engine_kind e, std::size_t i) const;
    std::uint32_t queue_id(std::size_t q, std::size_t i) const;
    const std::string& name(std::uint32_t id) const;  // "" for 0
    // The id of `place` in names (added if new), one-based.
    std::uint32_t intern(const std::string& place);
    bool empty() const { return names.empty(); }
};

struct program {
    std::array<std::vector<instruction>, engine_count> engines;
    std::vector<std::vector<dma_transfer>> queues;
    std::vector<hbm_region> regions;
    std::uint64_t hbm_bytes = 0;  // the HBM the program declares; its accesses stay inside
    std::shared_ptr<const program_origin> origin;  // set by the trace reader; not compared
    program_sources sources;                       // compared by the places, not their ids

    std::size_t instruction_count() const;
    std::size_t transfer_count() const;
    bool operator==(const program& o) const;
};

// The same checks of one DMA transfer alone (its operands, shapes, memories and priority).
void check_transfer(const dma_transfer& t, const program_limits& limits, std::uint64_t hbm_bytes,
                    const std::function<std::string()>& where);
// Throws user_error naming the stream and instruction index (FILE:LINE for a program read from a
// trace) of the first violation: operands out of bounds or past the declared hbm_bytes,
// mismatched DMA shapes, triggers without transfers, waits on semaphores that never reach the
// value waited for. (A program read from a trace is also checked for races, program/race_check.h,
// by the platform that runs it.)
void validate_program(const program& p, const program_limits& limits);

}  // namespace trn

namespace trn {
// The initial contents of an input region: uniform [lo, hi) from a fixed-seed generator, the
// same on every platform and build (functional mode and the golden references both use it).
std::vector<std::uint8_t> region_initial_bytes(const hbm_region& r);
}  // namespace trn

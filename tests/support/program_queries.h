#pragma once
// Queries on built programs for the workload tests: instruction counts, HBM regions, and the
// DMA transfers that load or store a region.
#include <stdexcept>
#include <string>
#include <utility>

#include "program/program.h"

namespace trn::testing {

inline std::size_t count(const program& p, engine_kind e, opcode op) {
    std::size_t n = 0;
    for (const auto& ins : p.engines[std::size_t(e)])
        n += ins.op == op;
    return n;
}

inline const hbm_region& region(const program& p, const std::string& name) {
    for (const auto& r : p.regions)
        if (r.name == name) return r;
    throw std::logic_error("no region " + name);
}

// The transfers that read (loads) or write (stores) a region, and their bytes.
inline std::pair<std::size_t, std::uint64_t> region_transfers(const program& p,
                                                              const std::string& name, bool load) {
    const hbm_region& r = region(p, name);
    std::size_t n = 0;
    std::uint64_t bytes = 0;
    for (const auto& q : p.queues)
        for (const auto& t : q) {
            const operand& h = load ? t.src : t.dst;
            if (h.space == mem_space::hbm && h.offset >= r.offset &&
                h.offset < r.offset + r.bytes) {
                ++n;
                bytes += h.bytes();
            }
        }
    return {n, bytes};
}

}  // namespace trn::testing

#include "program/program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/saturating.h"

namespace trn {

std::uint32_t program_sources::engine_id(engine_kind e, std::size_t i) const {
    const auto& ids = engines[std::size_t(e)];
    return i < ids.size() ? ids[i] : 0;
}

std::uint32_t program_sources::queue_id(std::size_t q, std::size_t i) const {
    return q < queues.size() && i < queues[q].size() ? queues[q][i] : 0;
}

const std::string& program_sources::name(std::uint32_t id) const {
    static const std::string none;
    return id ? names[id - 1] : none;
}

const std::string& program_sources::of_engine(engine_kind e, std::size_t i) const {
    return name(engine_id(e, i));
}

const std::string& program_sources::of_queue(std::size_t q, std::size_t i) const {
    return name(queue_id(q, i));
}

std::uint32_t program_sources::intern(const std::string& place) {
    for (std::size_t i = names.size(); i-- > 0;)  // the latest is the likeliest
        if (names[i] == place) return static_cast<std::uint32_t>(i + 1);
    names.push_back(place);
    return static_cast<std::uint32_t>(names.size());
}

namespace {

// Two programs' places agree entry by entry.
bool same_places(const program& a, const program& b) {
    for (auto e : all_engines)
        for (std::size_t i = 0; i < a.engines[std::size_t(e)].size(); ++i)
            if (a.sources.of_engine(e, i) != b.sources.of_engine(e, i)) return false;
    for (std::size_t q = 0; q < a.queues.size(); ++q)
        for (std::size_t i = 0; i < a.queues[q].size(); ++i)
            if (a.sources.of_queue(q, i) != b.sources.of_queue(q, i)) return false;
    return true;
}

}  // namespace

bool hbm_region::operator==(const hbm_region& o) const {
    return name == o.name && offset == o.offset && bytes == o.bytes && type == o.type &&
           input == o.input && lo == o.lo && hi == o.hi && seed == o.seed;
}

std::size_t program::instruction_count() const {
    std::size_t n = transfer_count();
    for (const auto& s : engines)
        n += s.size();
    return n;
}

std::size_t program::transfer_count() const {
    std::size_t n = 0;
    for (const auto& q : queues)
        n += q.size();
    return n;
}

bool program::operator==(const program& o) const {
    return engines == o.engines && queues == o.queues && regions == o.regions &&
           hbm_bytes == o.hbm_bytes && same_places(*this, o);
}

void check_transfer(const dma_transfer& t, const program_limits& lim, std::uint64_t hbm_bytes,
                    const std::function<std::string()>& where) {
    check_operand(t.dst, "dst", lim, hbm_bytes, where);
    check_operand(t.src, "src", lim, hbm_bytes, where);
    if (t.priority >= lim.dma_priority_levels)
        throw user_error(where() + ": priority " + std::to_string(t.priority) +
                         (lim.dma_priority_levels > 1
                              ? " is not a DMA quality-of-service level of this core: 0 to " +
                                    std::to_string(lim.dma_priority_levels - 1) +
                                    " (core.dma.priority_levels " +
                                    std::to_string(lim.dma_priority_levels) + ")"
                              : " needs DMA quality-of-service levels, which this core has not "
                                "(core.dma.priority_levels 1; NeuronCore-v4 has 4: --config "
                                "trn3)"));
    if (t.dst.space == mem_space::psum || t.src.space == mem_space::psum)
        throw user_error(where() + ": DMA cannot reach PSUM");
    if (t.dst.elem_stride != 1 || t.src.elem_stride != 1)
        throw user_error(where() + ": DMA operands must be contiguous in each row");
    if (t.transpose) {
        // dst[c, r] = src[r, c], into SBUF (nki.isa.dma_transpose: "the source of transpose,
        // must be a tile in HBM or SBUF"; the result a tile on chip)
        if (t.dst.space != mem_space::sbuf || t.src.space != mem_space::hbm)
            throw user_error(where() +
                             ": a DMA transpose reads HBM and writes into SBUF (from SBUF, up "
                             "to 50% of a copy's rate on NeuronCore-v3, is not modelled)");
        for (const dtype d : {t.src.type, t.dst.type})
            if (dtype_size(d) != 2 && dtype_size(d) != 4)
                throw user_error(where() + ": a DMA transpose moves 2- or 4-byte elements, not " +
                                 dtype_name(d));
        if (t.rmw != alu_op::bypass)
            throw user_error(where() + ": a DMA transpose cannot read-add-write");
        if (t.dst.partitions != t.src.elems || t.dst.elems != t.src.partitions)
            throw user_error(
                where() +
                ": a DMA transpose's dst has src's elements as rows and "
                "its rows as elements (dst " +
                std::to_string(t.dst.partitions) + " x " + std::to_string(t.dst.elems) + ", src " +
                std::to_string(t.src.partitions) + " x " + std::to_string(t.src.elems) + ")");
    } else if (t.dst.partitions != t.src.partitions || t.dst.elems != t.src.elems) {
        throw user_error(where() + ": dst and src differ in rows or elements per row");
    }
    // An MX type moves as its bits: to and from itself, or an integer type of its size.
    for (const auto& [a, b] :
         {std::pair{t.dst.type, t.src.type}, std::pair{t.src.type, t.dst.type}})
        if (is_mx(a) && a != b && !(is_integer(b) && dtype_size(a) == dtype_size(b)))
            throw user_error(where() + ": a DMA moves " + dtype_name(a) +
                             " as its bits: to and from itself or an integer type of its size, "
                             "not " +
                             dtype_name(b));
    if (t.rmw == alu_op::bypass) return;
    // A read-add-write: B += A, B in SBUF, A in HBM or SBUF, both bf16 or both fp32 (the
    // Trainium3 guide; nki.isa.dma_copy's dst_rmw_op: only add)
    if (t.rmw != alu_op::add)
        throw user_error(where() + ": a DMA read-add-write adds (op=add), not " + alu_name(t.rmw));
    if (t.dst.space != mem_space::sbuf)
        throw user_error(where() + ": a DMA read-add-write adds into SBUF");
    if (t.dst.type != t.src.type || (t.dst.type != dtype::float32 && t.dst.type != dtype::bfloat16))
        throw user_error(where() +
                         ": a DMA read-add-write takes bf16 or fp32, the same for dst "
                         "and src (got " +
                         dtype_name(t.dst.type) + " and " + dtype_name(t.src.type) + ")");
}

void validate_program(const program& p, const program_limits& lim) {
    if (p.queues.size() > lim.dma_queues)
        throw user_error("program uses " + std::to_string(p.queues.size()) +
                         " DMA queues; the platform has " + std::to_string(lim.dma_queues));
    if (p.hbm_bytes > lim.hbm_bytes)
        throw user_error("program needs " + std::to_string(p.hbm_bytes) +
                         " bytes of HBM; the platform has " + std::to_string(lim.hbm_bytes));
    // "FILE:LINE: " of a trace's line, when the program came from one.
    auto line_of = [&](const std::vector<std::size_t>* lines, std::size_t i) {
        if (!p.origin || !lines || i >= lines->size()) return std::string();
        return p.origin->file + ":" + std::to_string((*lines)[i]) + ": ";
    };
    for (std::size_t r = 0; r < p.regions.size(); ++r) {
        const hbm_region& g = p.regions[r];
        if (sat_add(g.offset, g.bytes) > p.hbm_bytes)
            throw user_error(
                line_of(p.origin ? &p.origin->region_lines : nullptr, r) + "region '" + g.name +
                "' ends at HBM byte " + std::to_string(sat_add(g.offset, g.bytes)) +
                ", beyond the program's declared hbm_bytes " + std::to_string(p.hbm_bytes));
    }
    std::vector<std::uint64_t> sem_total(engine_count + p.queues.size(), 0);
    std::vector<std::size_t> triggers(p.queues.size(), 0);
    for (std::size_t q = 0; q < p.queues.size(); ++q) {
        sem_total[semaphore_of_queue(q)] = p.queues[q].size();
        for (std::size_t i = 0; i < p.queues[q].size(); ++i) {
            const auto& t = p.queues[q][i];
            auto where = [&] {
                return line_of(p.origin && q < p.origin->queue_lines.size()
                                   ? &p.origin->queue_lines[q]
                                   : nullptr,
                               i) +
                       "q" + std::to_string(q) + " transfer " + std::to_string(i);
            };
            check_transfer(t, lim, p.hbm_bytes, std::cref(where));
        }
    }
    for (auto e : all_engines)
        sem_total[semaphore_of_engine(e)] = p.engines[std::size_t(e)].size();
    for (auto e : all_engines) {
        const auto& stream = p.engines[std::size_t(e)];
        for (std::size_t i = 0; i < stream.size(); ++i) {
            const auto& ins = stream[i];
            auto where = [&] {
                return line_of(p.origin ? &p.origin->engine_lines[std::size_t(e)] : nullptr, i) +
                       engine_name(e) + " instruction " + std::to_string(i) + " (" +
                       opcode_name(ins.op) + ")";
            };
            for (const auto& w : ins.waits) {
                if (w.sem >= sem_total.size())
                    throw user_error(where() + ": waits on unknown semaphore " +
                                     semaphore_name(w.sem));
                if (w.value > sem_total[w.sem])
                    throw user_error(where() + ": deadlock: waits for " + semaphore_name(w.sem) +
                                     ">=" + std::to_string(w.value) + " but " +
                                     semaphore_name(w.sem) + " only ever reaches " +
                                     std::to_string(sem_total[w.sem]));
            }
            if (ins.op == opcode::dma_trigger) {
                if (ins.queue >= p.queues.size() ||
                    triggers[ins.queue] >= p.queues[ins.queue].size())
                    throw user_error(where() + ": triggers q" + std::to_string(ins.queue) +
                                     ", which has no transfer left to start");
                ++triggers[ins.queue];
            }
            check_instruction(ins, e, lim, p.hbm_bytes, std::cref(where));
        }
    }
    for (std::size_t q = 0; q < p.queues.size(); ++q)
        if (triggers[q] != p.queues[q].size())
            throw user_error("q" + std::to_string(q) + " has " +
                             std::to_string(p.queues[q].size()) + " transfers but " +
                             std::to_string(triggers[q]) + " dma_trigger instructions");
}

}  // namespace trn

#include <random>

namespace trn {

std::vector<std::uint8_t> region_initial_bytes(const hbm_region& r) {
    std::vector<std::uint8_t> out(r.bytes);
    std::mt19937 gen(r.seed);
    const std::size_t size = dtype_size(r.type);
    auto uniform = [&] {
        const double u = static_cast<double>(gen() >> 8) / 16777216.0;  // 24 bits in [0,1)
        return static_cast<float>(r.lo + (r.hi - r.lo) * u);
    };
    for (std::size_t i = 0; i + size <= r.bytes; i += size) {
        if (is_packed(r.type)) {  // each packed value drawn alone
            for (int k = 0; k < 4; ++k)
                store_packed_value(&out[i], r.type, k, uniform());
        } else {
            store_element(&out[i], r.type, uniform());
        }
    }
    return out;
}

}  // namespace trn

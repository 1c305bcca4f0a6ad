#include "program/program_source.h"

#include <algorithm>

namespace trn {

std::uint64_t sbuf_reach(const instruction& ins) {
    const std::uint64_t reach =
        std::max({sbuf_reach(ins.dst), sbuf_reach(ins.src0), sbuf_reach(ins.src1),
                  sbuf_reach(ins.src2), sbuf_reach(ins.dst1), sbuf_reach(ins.src3)});
    if (ins.indirect.empty()) return reach;
    std::uint64_t indexed = reach;  // all of each indexed tile, and the offsets
    for (const auto& t : ins.indirect)
        indexed = std::max({indexed, sbuf_reach(ins.reach(t.slot)), sbuf_reach(t.index)});
    return indexed;
}

std::uint64_t sbuf_reach(const dma_transfer& t) {
    return std::max(sbuf_reach(t.dst), sbuf_reach(t.src));
}

whole_program::whole_program(const program& p) : m_program(p) {
    for (const auto& s : p.engines)
        for (const auto& ins : s)
            m_sbuf_high_water = std::max(m_sbuf_high_water, sbuf_reach(ins));
    for (const auto& q : p.queues)
        for (const auto& t : q)
            m_sbuf_high_water = std::max(m_sbuf_high_water, sbuf_reach(t));
}

const std::uint32_t* whole_program::places(const std::vector<std::uint32_t>& ids,
                                           std::size_t count) {
    if (ids.empty() || count == 0) return nullptr;
    if (ids.size() >= count) return ids.data();
    m_padded.emplace_back(ids);
    m_padded.back().resize(count, 0);
    return m_padded.back().data();
}

bool whole_program::fetch_instruction(engine_kind e, std::size_t i, stream_window<instruction>& w) {
    const auto& s = m_program.engines[std::size_t(e)];
    if (i >= s.size()) return false;
    const auto& ids = m_program.sources.engines[std::size_t(e)];
    w = {s.data(), places(ids, s.size()), 0, s.size()};
    return true;
}

bool whole_program::fetch_transfer(std::size_t q, std::size_t k, stream_window<dma_transfer>& w) {
    if (q >= m_program.queues.size() || k >= m_program.queues[q].size()) return false;
    const auto& s = m_program.queues[q];
    const auto* ids = q < m_program.sources.queues.size() ? &m_program.sources.queues[q] : nullptr;
    w = {s.data(), ids ? places(*ids, s.size()) : nullptr, 0, s.size()};
    return true;
}

}  // namespace trn

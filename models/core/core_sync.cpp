#include "core/core_sync.h"

#include "core/port.h"

namespace trn {

void core_sync::reset(std::size_t cores) {
    m_arrivals.assign(cores, {});
    m_waiting.assign(cores, "");
}

std::size_t core_sync::arrive(std::size_t core) {
    m_arrivals[core].push_back(sim_time());
    m_arrived.notify(sc_core::SC_ZERO_TIME);
    return m_arrivals[core].size();
}

void core_sync::wait_all(std::size_t core, std::size_t n) {
    for (std::size_t other = 0; other < m_arrivals.size(); ++other) {
        if (other == core) continue;
        while (m_arrivals[other].size() < n) {
            m_waiting[core] = "core " + std::to_string(core) + " waits at its core_barrier " +
                              std::to_string(n) + " for core " + std::to_string(other) +
                              ", which has reached " + std::to_string(m_arrivals[other].size());
            sc_core::wait(m_arrived);
        }
        m_waiting[core].clear();
        const sc_core::sc_time seen = m_arrivals[other][n - 1] + m_latency;
        if (seen > sim_time()) sc_core::wait(seen - sim_time());
    }
}

std::vector<std::string> core_sync::waiting() const {
    std::vector<std::string> out;
    for (const auto& w : m_waiting)
        if (!w.empty()) out.push_back(w);
    return out;
}

}  // namespace trn

#include "core/core_sync.h"

#include "core/port.h"

namespace trn {

void core_sync::reset(std::size_t cores) {
    m_arrivals.assign(cores, {});
    m_waiting.assign(cores, "");
}

namespace {
const sc_core::sc_time never = sc_core::sc_max_time();
}  // namespace

void core_sync::arrive(std::size_t core, std::size_t n) {
    auto& a = m_arrivals[core];
    if (a.size() < n) a.resize(n, never);
    a[n - 1] = sim_time();
    m_arrived.notify(sc_core::SC_ZERO_TIME);
}

void core_sync::wait_all(std::size_t core, std::size_t n) {
    for (std::size_t other = 0; other < m_arrivals.size(); ++other) {
        if (other == core) continue;
        auto arrived = [&] {
            return m_arrivals[other].size() >= n && m_arrivals[other][n - 1] != never;
        };
        while (!arrived()) {
            m_waiting[core] = "core " + std::to_string(core) + " waits at its core_barrier " +
                              std::to_string(n) + " for core " + std::to_string(other) +
                              ", which never reaches it";
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

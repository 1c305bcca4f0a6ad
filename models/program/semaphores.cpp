#include "program/semaphores.h"

#include "core/port.h"

#include <algorithm>

namespace trn {

semaphore_bank::semaphore_bank(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_METHOD(fire);
    sensitive << m_wake;
    dont_initialize();
}

void semaphore_bank::resize(std::size_t count) {
    m_values.assign(count, 0);
    m_waiting.assign(count, 0);
    m_changed.clear();
    for (std::size_t i = 0; i < count; ++i)
        m_changed.push_back(std::make_unique<sc_core::sc_event>());
}

void semaphore_bank::signal_at(sem_id s, const sc_core::sc_time& at) {
    const sc_core::sc_time now = sim_time();
    const sc_core::sc_time when = at < now ? now : at;
    // (fire() is due no later than the first pending signal: a later one needs no notice)
    const bool due = !m_pending.empty() && m_pending.top().at <= when;
    m_pending.push({when, m_seq++, s});
    if (!due) m_wake.notify(when - now);
}

void semaphore_bank::fire() {
    const sc_core::sc_time now = sim_time();
    while (!m_pending.empty() && m_pending.top().at <= now) {
        const sem_id s = m_pending.top().sem;
        m_pending.pop();
        ++m_values[s];
        if (m_waiting[s]) m_changed[s]->notify(sc_core::SC_ZERO_TIME);  // else nobody to wake
    }
    if (!m_pending.empty()) m_wake.notify(m_pending.top().at - now);
}

void semaphore_bank::wait_for(sem_id s, std::uint32_t value, const char* stream,
                              std::size_t index) {
    if (m_values[s] >= value) return;
    m_blocked.push_back({stream, index, s, value});
    ++m_waiting[s];
    while (m_values[s] < value)
        sc_core::wait(*m_changed[s]);
    --m_waiting[s];
    auto it = std::find_if(m_blocked.begin(), m_blocked.end(),
                           [&](const blocked& b) { return b.stream == stream; });
    if (it != m_blocked.end()) m_blocked.erase(it);
}

std::vector<std::string> semaphore_bank::blocked_waiters() const {
    std::vector<std::string> out;
    for (const auto& b : m_blocked)
        out.push_back(std::string(b.stream) + " instruction " + std::to_string(b.index) +
                      " waits for " + semaphore_name(b.sem) + ">=" + std::to_string(b.value) +
                      " (" + semaphore_name(b.sem) + " is at " + std::to_string(m_values[b.sem]) +
                      ")");
    return out;
}

}  // namespace trn

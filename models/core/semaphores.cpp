#include "core/semaphores.h"

#include "core/port.h"

#include <algorithm>

namespace trn {

semaphore_bank::semaphore_bank(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {}

void semaphore_bank::resize(std::size_t count) {
    m_sems.clear();
    for (std::size_t i = 0; i < count; ++i)
        m_sems.push_back(std::make_unique<semaphore>());
    m_waiting.assign(count, 0);
    m_last_signal = sim_time();
}

std::uint32_t semaphore_bank::value(sem_id s) const {
    const semaphore& m = *m_sems.at(s);
    const auto first = m.ahead.begin() + static_cast<std::ptrdiff_t>(m.head);
    return m.passed +
           static_cast<std::uint32_t>(std::upper_bound(first, m.ahead.end(), sim_time()) - first);
}

void semaphore_bank::catch_up(semaphore& m, const sc_core::sc_time& now) {
    while (m.head < m.ahead.size() && m.ahead[m.head] <= now) {
        ++m.head;
        ++m.passed;
    }
    if (m.head == m.ahead.size()) {
        m.ahead.clear();
        m.head = 0;
    } else if (m.head >= 64 && m.head * 2 >= m.ahead.size()) {
        m.ahead.erase(m.ahead.begin(), m.ahead.begin() + static_cast<std::ptrdiff_t>(m.head));
        m.head = 0;
    }
}

void semaphore_bank::signal_at(sem_id s, const sc_core::sc_time& at) {
    const sc_core::sc_time& now = sim_time();
    semaphore& m = *m_sems[s];
    catch_up(m, now);
    if (at <= now) {
        ++m.passed;
    } else {  // in time order: usually the latest (an engine's or queue's completions are)
        auto it = m.ahead.end();
        while (it != m.ahead.begin() + static_cast<std::ptrdiff_t>(m.head) && *(it - 1) > at)
            --it;
        m.ahead.insert(it, at);
    }
    const sc_core::sc_time& when = at < now ? now : at;
    if (when > m_last_signal) m_last_signal = when;
    if (m_waiting[s]) notify_reached(s, now);
}

void semaphore_bank::notify_reached(sem_id s, const sc_core::sc_time& now) {
    std::uint32_t least = 0;
    for (const auto& b : m_blocked)
        if (b.sem == s && (least == 0 || b.value < least)) least = b.value;
    semaphore& m = *m_sems[s];
    if (least == 0 || least > m.passed + (m.ahead.size() - m.head)) return;  // not signalled yet
    if (least <= m.passed) {
        m.reached.notify(sc_core::SC_ZERO_TIME);
    } else {
        m.reached.notify(m.ahead[m.head + (least - m.passed - 1)] - now);
    }
}

void semaphore_bank::wait_for(sem_id s, std::uint32_t value, const char* stream,
                              std::size_t index) {
    semaphore& m = *m_sems[s];
    catch_up(m, sim_time());
    if (m.passed >= value) return;
    m_blocked.push_back({stream, index, s, value});
    ++m_waiting[s];
    do {
        notify_reached(s, sim_time());
        sc_core::wait(m.reached);
        catch_up(m, sim_time());
    } while (m.passed < value);
    --m_waiting[s];
    auto it = std::find_if(m_blocked.begin(), m_blocked.end(), [&](const blocked& b) {
        return b.stream == stream && b.index == index && b.sem == s && b.value == value;
    });
    if (it != m_blocked.end()) m_blocked.erase(it);
}

std::vector<std::string> semaphore_bank::blocked_waiters() const {
    std::vector<std::string> out;
    for (const auto& b : m_blocked)
        out.push_back(std::string(b.stream) + " instruction " + std::to_string(b.index) +
                      " waits for " + semaphore_name(b.sem) + ">=" + std::to_string(b.value) +
                      " (" + semaphore_name(b.sem) + " is at " + std::to_string(value(b.sem)) +
                      ")");
    return out;
}

}  // namespace trn

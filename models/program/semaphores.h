#pragma once
#include <memory>
#include <queue>
#include <string>
#include <systemc>
#include <vector>

#include "program/program.h"

namespace trn {

// The core's hardware semaphores: counters that instructions wait on and signal at completion.
// Contract: signal_at(s, t) adds one to s at time t (never earlier than now); waiters blocked in
// wait_for() wake in the delta cycle after the count reaches their value. Blocked waits are
// recorded so that a deadlock can be reported by name.
class semaphore_bank : public sc_core::sc_module {
  public:
    SC_HAS_PROCESS(semaphore_bank);
    explicit semaphore_bank(const sc_core::sc_module_name& name);
    semaphore_bank(const semaphore_bank&) = delete;
    semaphore_bank& operator=(const semaphore_bank&) = delete;

    void resize(std::size_t count);
    std::size_t size() const { return m_values.size(); }
    std::uint32_t value(sem_id s) const { return m_values.at(s); }

    void signal_at(sem_id s, const sc_core::sc_time& at);
    // Blocks the calling SC_THREAD until semaphore s >= value; `stream` and `index` name the
    // waiting instruction for a deadlock report.
    void wait_for(sem_id s, std::uint32_t value, const char* stream, std::size_t index);
    // "dve waits for q1>=3 (q1 is at 2)" for every thread blocked now; empty if none.
    std::vector<std::string> blocked_waiters() const;

  private:
    struct pending {
        sc_core::sc_time at;
        std::uint64_t seq;
        sem_id sem;
        bool operator>(const pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };
    struct blocked {
        const char* stream;
        std::size_t index;
        sem_id sem;
        std::uint32_t value;
    };
    void fire();

    std::vector<std::uint32_t> m_values;
    std::vector<std::unique_ptr<sc_core::sc_event>> m_changed;
    std::vector<std::uint32_t> m_waiting;  // threads blocked on each semaphore now
    std::priority_queue<pending, std::vector<pending>, std::greater<pending>> m_pending;
    std::uint64_t m_seq = 0;
    sc_core::sc_event m_wake;
    std::vector<blocked> m_blocked;
};

}  // namespace trn

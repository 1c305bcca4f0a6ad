#pragma once
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "core/program.h"

namespace trn {

// The core's hardware semaphores: counters that instructions wait on and signal at completion.
// Contract: signal_at(s, t) adds one to s at time t (now, if t is earlier); a signal's time is
// known when it is given, so the bank runs no process of its own: a waiter blocked in
// wait_for() wakes at the time its value is reached (at once if it already is), by a timed
// notification of the semaphore's event. Blocked waits are recorded so that a deadlock can be
// reported by name.
class semaphore_bank : public sc_core::sc_module {
  public:
    explicit semaphore_bank(const sc_core::sc_module_name& name);
    semaphore_bank(const semaphore_bank&) = delete;
    semaphore_bank& operator=(const semaphore_bank&) = delete;

    void resize(std::size_t count);
    std::size_t size() const { return m_sems.size(); }
    // The value of s now: the signals whose time has come.
    std::uint32_t value(sem_id s) const;

    void signal_at(sem_id s, const sc_core::sc_time& at);
    // Blocks the calling SC_THREAD until semaphore s >= value; `stream` and `index` name the
    // waiting instruction for a deadlock report.
    void wait_for(sem_id s, std::uint32_t value, const char* stream, std::size_t index);
    // The latest time a signal takes effect at (since resize()): the simulation has not ended
    // before it, though no process need run then.
    const sc_core::sc_time& last_signal() const { return m_last_signal; }
    // "dve waits for q1>=3 (q1 is at 2)" for every thread blocked now; empty if none.
    std::vector<std::string> blocked_waiters() const;

  private:
    // One semaphore: the signals whose time had come when last looked at, and the times of the
    // others, in time order (the value reaches passed + k + 1 at ahead[head + k]).
    struct semaphore {
        std::uint32_t passed = 0;
        std::vector<sc_core::sc_time> ahead;
        std::size_t head = 0;
        sc_core::sc_event reached;  // a blocked waiter's value is reached
    };
    struct blocked {
        const char* stream;
        std::size_t index;
        sem_id sem;
        std::uint32_t value;
    };
    // Drops the signals whose time has come from m's times ahead.
    static void catch_up(semaphore& m, const sc_core::sc_time& now);
    // Notifies s's event for the time the least value its blocked waiters wait for is reached,
    // if a signal for it was given.
    void notify_reached(sem_id s, const sc_core::sc_time& now);

    std::vector<std::unique_ptr<semaphore>> m_sems;
    std::vector<std::uint32_t> m_waiting;  // threads blocked on each semaphore now
    std::vector<blocked> m_blocked;
    sc_core::sc_time m_last_signal = sc_core::SC_ZERO_TIME;
};

}  // namespace trn

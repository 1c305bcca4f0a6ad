// trn::semaphore_bank in a SystemC bench: waiters wake exactly when the signalled time is
// reached, whether they blocked before or after the signal was given; signals apply in time
// order, and waits that can never be satisfied are reported.
// SystemC elaborates once per process: the bench is built and run once, on first use, and each
// TEST checks what it recorded.
#include "program/semaphores.h"

#include <gtest/gtest.h>

#include <memory>
#include <systemc>

#include "support/expect_error.h"

namespace {

using sc_core::SC_NS;
using sc_core::sc_time;
using trn::sem_id;
using trn::testing::contains;

// Semaphores of the bench (a bank of engine_count + 4 queue semaphores).
const sem_id s_single = trn::semaphore_of_queue(0);     // one signal at t_single
const sem_id s_unordered = trn::semaphore_of_queue(1);  // signals scheduled out of order
const sem_id s_twice = trn::semaphore_of_queue(2);      // needs two signals
const sem_id s_stuck = trn::semaphore_of_queue(3);      // one signal, waited for twice
const sem_id s_late = trn::semaphore_of_engine(trn::engine_kind::act);  // signalled "in the past"
const sem_id s_before = trn::semaphore_of_engine(trn::engine_kind::pool);  // waited on, then given

const sc_time t_single(25, SC_NS);
const sc_time t_unordered[3] = {sc_time(30, SC_NS), sc_time(10, SC_NS), sc_time(20, SC_NS)};
const sc_time t_twice[2] = {sc_time(15, SC_NS), sc_time(40, SC_NS)};
const sc_time t_late_call(50, SC_NS), t_late_at(5, SC_NS);
// s_before: two waiters block at 0 (for 2, then for 1; each a stream of its own, as the bank
// tells its waiters apart by stream); both signals are given at 10 ns.
const sc_time t_before_call(10, SC_NS), t_before[2] = {sc_time(35, SC_NS), sc_time(45, SC_NS)};

struct bench : sc_core::sc_module {
    SC_HAS_PROCESS(bench);
    trn::semaphore_bank sems{"sems"};

    sc_time woke_single = sc_core::SC_ZERO_TIME;
    std::uint32_t value_at_single_wake = 0;
    std::vector<sc_time> woke_unordered;
    std::vector<std::uint32_t> values_unordered;
    sc_time woke_twice = sc_core::SC_ZERO_TIME;
    std::uint32_t twice_value_at_15ns = 0;
    sc_time woke_late = sc_core::SC_ZERO_TIME;
    sc_time woke_immediate = sc_time(1, SC_NS);  // not zero until measured
    bool stuck_passed = false;
    sc_time woke_before_for_1 = sc_core::SC_ZERO_TIME, woke_before_for_2 = sc_core::SC_ZERO_TIME;

    explicit bench(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        sems.resize(trn::engine_count + 4);
        SC_THREAD(signaller);
        SC_THREAD(wait_single);
        SC_THREAD(wait_unordered);
        SC_THREAD(wait_twice);
        SC_THREAD(wait_stuck);
        SC_THREAD(late_signaller);
        SC_THREAD(wait_late);
        SC_THREAD(before_signaller);
        SC_THREAD(wait_before_for_2);
        SC_THREAD(wait_before_for_1);
    }

    // Schedules every signal at time 0.
    void signaller() {
        sems.signal_at(s_single, t_single);
        for (const auto& t : t_unordered)
            sems.signal_at(s_unordered, t);
        for (const auto& t : t_twice)
            sems.signal_at(s_twice, t);
        sems.signal_at(s_stuck, sc_time(5, SC_NS));
        sc_core::wait(sc_time(15, SC_NS) + sc_time(1, SC_NS));
        twice_value_at_15ns = sems.value(s_twice);
    }
    void wait_single() {
        sems.wait_for(s_single, 1, "single", 0);
        woke_single = sc_core::sc_time_stamp();
        value_at_single_wake = sems.value(s_single);
    }
    void wait_unordered() {
        for (std::uint32_t v = 1; v <= 3; ++v) {
            sems.wait_for(s_unordered, v, "unordered", v);
            woke_unordered.push_back(sc_core::sc_time_stamp());
            values_unordered.push_back(sems.value(s_unordered));
        }
        // Already satisfied: returns at once.
        const sc_time before = sc_core::sc_time_stamp();
        sems.wait_for(s_unordered, 2, "unordered", 4);
        woke_immediate = sc_core::sc_time_stamp() - before;
    }
    void wait_twice() {
        sems.wait_for(s_twice, 2, "twice", 0);
        woke_twice = sc_core::sc_time_stamp();
    }
    void wait_stuck() {
        sems.wait_for(s_stuck, 1, "stuck_stream", 6);
        sems.wait_for(s_stuck, 2, "stuck_stream", 7);  // never signalled a second time
        stuck_passed = true;
    }
    // Signals at t=50ns for a time already past: applied at once.
    void late_signaller() {
        sc_core::wait(t_late_call);
        sems.signal_at(s_late, t_late_at);
    }
    void wait_late() {
        sems.wait_for(s_late, 1, "late", 0);
        woke_late = sc_core::sc_time_stamp();
    }
    void before_signaller() {
        sc_core::wait(t_before_call);
        for (const auto& t : t_before)
            sems.signal_at(s_before, t);
    }
    void wait_before_for_2() {
        sems.wait_for(s_before, 2, "before_for_2", 0);
        woke_before_for_2 = sc_core::sc_time_stamp();
    }
    void wait_before_for_1() {
        sems.wait_for(s_before, 1, "before_for_1", 0);
        woke_before_for_1 = sc_core::sc_time_stamp();
    }
};

bench& ran_bench() {
    static std::unique_ptr<bench> b = [] {
        auto p = std::make_unique<bench>("bench");
        sc_core::sc_start();
        return p;
    }();
    return *b;
}

TEST(SemaphoreBank, WaiterWakesAtSignalTime) {
    bench& b = ran_bench();
    EXPECT_EQ(b.woke_single, t_single);
    EXPECT_EQ(b.value_at_single_wake, 1u);
    EXPECT_EQ(b.sems.value(s_single), 1u);
}

TEST(SemaphoreBank, OutOfOrderSignalsApplyInTimeOrder) {
    bench& b = ran_bench();
    ASSERT_EQ(b.woke_unordered.size(), 3u);
    // Sorted signal times: the k-th count is reached at the k-th earliest time.
    std::vector<sc_time> sorted(std::begin(t_unordered), std::end(t_unordered));
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(b.woke_unordered[k], sorted[k]) << "count " << k + 1;
        EXPECT_EQ(b.values_unordered[k], k + 1) << "count " << k + 1;
    }
    EXPECT_EQ(b.woke_immediate, sc_core::SC_ZERO_TIME);
}

TEST(SemaphoreBank, WakesOnlyWhenValueReached) {
    bench& b = ran_bench();
    EXPECT_EQ(b.twice_value_at_15ns, 1u);  // one signal applied, the waiter still blocked
    EXPECT_EQ(b.woke_twice, t_twice[1]);
    EXPECT_EQ(b.sems.value(s_twice), 2u);
}

TEST(SemaphoreBank, SignalInThePastAppliesNow) {
    bench& b = ran_bench();
    EXPECT_EQ(b.woke_late, t_late_call);
}

TEST(SemaphoreBank, WaitersBlockedBeforeTheSignalWakeAtItsTime) {
    bench& b = ran_bench();
    EXPECT_EQ(b.woke_before_for_1, t_before[0]);
    EXPECT_EQ(b.woke_before_for_2, t_before[1]);
}

TEST(SemaphoreBank, BlockedWaitersNameStreamIndexAndSemaphore) {
    bench& b = ran_bench();
    EXPECT_FALSE(b.stuck_passed);
    const std::vector<std::string> blocked = b.sems.blocked_waiters();
    ASSERT_EQ(blocked.size(), 1u);  // every other waiter was satisfied and removed
    const std::string& msg = blocked[0];
    EXPECT_PRED2(contains, msg, "stuck_stream");
    EXPECT_PRED2(contains, msg, "instruction 7");
    EXPECT_PRED2(contains, msg, "q3>=2");
    EXPECT_PRED2(contains, msg, "q3 is at 1");
    // The simulation ran to the end of all activity.
    EXPECT_EQ(sc_core::sc_time_stamp(), t_late_call);
}

}  // namespace

// The activity log summed while a program runs gives the critical path of the whole log.
#include "analysis/critical_path.h"

#include <gtest/gtest.h>

#include <functional>

using trn::activity_log;
using trn::engine_kind;
using trn::instruction_activity;
using trn::tick;
using trn::transfer_activity;
using trn::wait_list;

namespace {

// Feeds the same records to a log that sums as it goes and to one that keeps them all (ticks of
// 1 ps, so eps is 10 ticks) and expects the same analysis.
void expect_same_path(const std::function<void(activity_log&)>& feed) {
    activity_log summed, whole;
    for (activity_log* log : {&summed, &whole}) {
        log->launch_begin = 0;
        log->launch_end = 100;
        log->reset(2, log == &summed, 1e-3);
        feed(*log);
    }
    EXPECT_LT(summed.held(), whole.held()) << "it did not sum";
    const trn::critical_path a = analyse_critical_path(summed, 0),
                             b = analyse_critical_path(whole, 0);
    EXPECT_EQ(a.total_ns, b.total_ns);
    EXPECT_EQ(a.ns_by_resource, b.ns_by_resource);
    EXPECT_EQ(a.steps, b.steps);
}

wait_list on(trn::sem_id s, std::uint32_t value) {
    wait_list w;
    w.push_back({s, value});
    return w;
}

// n Sync-engine instructions of 1 ns each from `from` on, no waits (a summary every 8192).
void sync_run(activity_log& log, tick from, int n) {
    for (int i = 0; i < n; ++i) {
        const tick t = from + 1000 * i;
        log.add_instruction(engine_kind::sp,
                            instruction_activity(t, t, t, 0, t, t + 1000, t + 1000, 0), {}, t);
    }
}

// n Sync-engine instructions all at 100 ps, done at 101.
void early_run(activity_log& log, int n) {
    for (int i = 0; i < n; ++i)
        log.add_instruction(engine_kind::sp,
                            instruction_activity(100, 100, 100, 0, 100, 101, 101, 0), {}, 100);
}

}  // namespace

TEST(ActivityLog, AnEngineIdleSinceAnEarlierSummaryKeepsItsStep) {
    // The Scalar engine's last instruction waited on the Sync engine's 100th, long before the
    // summaries: the step it leads to names a record they dropped.
    expect_same_path([](activity_log& log) {
        sync_run(log, 100, 100);
        const tick ready = 100 + 1000 * 100;
        log.add_instruction(
            engine_kind::act,
            instruction_activity(100, ready, ready, 0, ready, ready + 500, ready + 500, 0),
            on(trn::semaphore_of_engine(engine_kind::sp), 100), ready);
        sync_run(log, 200000, 30000);
    });
}

TEST(ActivityLog, ASuccessorReachedWithinEpsBeforeASummaryFindsItsStep) {
    // The Tensor engine reaches its next instruction when its stationary is loaded, before the
    // previous one's data path starts; the next one, released 8 ps later (within eps: it did not
    // wait), enters its predecessor at its `reached`, 8 ps before the summary the release made.
    expect_same_path([](activity_log& log) {
        early_run(log, 8186);
        log.add_instruction(engine_kind::pe,
                            instruction_activity(100, 100, 100, 100, 200, 314, 314, 0), {}, 100);
        log.add_instruction(engine_kind::pe,
                            instruction_activity(200, 200, 200, 100, 300, 4859, 4859, 0), {}, 200);
        log.add_transfer(0, transfer_activity(500, 600, 1000, 1000, trn::mem_space::hbm, 1000, 0));
        log.add_instruction(engine_kind::pe,
                            instruction_activity(300, 1000, 2900, 1895, 4795, 4959, 4959, 0),
                            on(trn::semaphore_of_queue(0), 1), 1000);
        log.add_transfer(1,
                         transfer_activity(1500, 1600, 2903, 2903, trn::mem_space::hbm, 2903, 0));
        log.add_instruction(engine_kind::act,
                            instruction_activity(100, 2903, 2903, 0, 2903, 3000, 3000, 0),
                            on(trn::semaphore_of_queue(1), 1), 2903);  // (a summary here)
        log.add_instruction(engine_kind::pe,
                            instruction_activity(2895, 2903, 2903, 2000, 4903, 5967, 5967, 0),
                            on(trn::semaphore_of_queue(1), 1), 2903);
    });
}

// A queue that holds a transfer (DMA priorities) records it after its doorbell was noted: the
// path from it still goes back to the trigger that rang it, as when it was recorded at once.
TEST(ActivityLog, ATransferRecordedAfterItsRingLeadsToItsTrigger) {
    const auto path = [](bool held) {
        activity_log log;
        log.launch_begin = 0;
        log.launch_end = 100;
        log.reset(1, false, 1e-3);
        const transfer_activity t(1100, 2400, 5000, 5000, trn::mem_space::hbm, 5000, 0);
        if (!held) log.add_transfer(0, t);
        if (held) log.note_held(0, 0, 1100);
        log.note_ring(0, engine_kind::sp, 0);
        log.add_instruction(engine_kind::sp,
                            instruction_activity(100, 100, 100, 0, 100, 1100, 1100, 0), {}, 100);
        if (held) log.add_transfer(0, t);
        return analyse_critical_path(log, 0);
    };
    const trn::critical_path now = path(false), later = path(true);
    EXPECT_EQ(later.ns_by_resource, now.ns_by_resource);
    EXPECT_EQ(later.steps, now.steps);
    EXPECT_EQ(later.total_ns, 5.0);
    EXPECT_EQ(later.ns_by_resource.count("sp"), 1u);
}

// A transfer held across summaries (DMA priorities, rung early and recorded late) is analysed
// as if nothing had been summed: the summaries keep the walk from the trigger that rang for it.
TEST(ActivityLog, ATransferHeldAcrossSummariesKeepsItsTrigger) {
    expect_same_path([](activity_log& log) {
        sync_run(log, 100, 10);  // Sync instruction 9 rings q0 at 10100
        log.note_held(0, 0, 10100);
        log.note_ring(0, engine_kind::sp, 10);
        log.add_instruction(engine_kind::sp,
                            instruction_activity(10100, 10100, 10100, 0, 10100, 10109, 10109, 0),
                            {}, 10100);
        sync_run(log, 20000, 20000);  // the Sync engine goes on, across summaries
        // q0's transfer starts at last and completes after everything else
        log.add_transfer(0, transfer_activity(10100, 30000000, 40000000, 40000000,
                                              trn::mem_space::hbm, 40000000, 0));
    });
}

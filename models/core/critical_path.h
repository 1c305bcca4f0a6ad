#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/program.h"

namespace trn {

// Below this (ns), two times of an activity log are taken as equal (its float offsets keep less).
constexpr double activity_eps = 0.01;

// When one engine instruction waited, ran and released its successors (ns of simulated time),
// its source place, and the wait that released it. Kept in 48 bytes (a log holds one per
// instruction): `ready` in full, the other times as offsets from it (a float offset is exact to
// well under a nanosecond over milliseconds).
class instruction_activity {
  public:
    instruction_activity() = default;
    instruction_activity(double reached, double ready, double free, double lead, double begin,
                         double own_complete, double complete, std::uint32_t place)
        : m_ready(ready),
          m_reached(static_cast<float>(ready - reached)),
          m_free(static_cast<float>(free - ready)),
          m_lead(static_cast<float>(lead)),
          m_begin(static_cast<float>(begin - ready)),
          m_own_complete(static_cast<float>(own_complete - ready)),
          m_complete(static_cast<float>(complete - ready)),
          m_place(place) {}

    double reached() const { return m_ready - m_reached; }  // the stream got to it
    double ready() const { return m_ready; }                // its semaphore waits were satisfied
    double free() const { return m_ready + m_free; }    // earlier instructions let its engine go
    double lead() const { return m_lead; }              // its own time from then to its data path
    double begin() const { return m_ready + m_begin; }  // its data path started
    double own_complete() const { return m_ready + m_own_complete; }  // its result committed
    // Its semaphore counted it (results commit in program order).
    double complete() const { return m_ready + m_complete; }
    std::uint32_t place() const { return m_place; }  // program_sources id (0: none)
    // It waited on a semaphore (ready after the stream reached it).
    bool waited() const { return ready() > reached() + activity_eps; }
    // The wait that released it: the event (entry `releaser_index()` of the stream of semaphore
    // `releaser_sem()`) whose completion satisfied the last of its waits; none when it did not
    // wait (activity_log::note_releaser).
    bool has_releaser() const { return m_releaser_sem != no_releaser; }
    sem_id releaser_sem() const { return m_releaser_sem; }
    std::uint32_t releaser_index() const { return m_releaser_index; }
    void set_releaser(sem_id s, std::uint32_t index) {
        m_releaser_sem = s;
        m_releaser_index = index;
    }

  private:
    static constexpr sem_id no_releaser = 0xffff;
    double m_ready = 0;
    float m_reached = 0, m_free = 0, m_lead = 0, m_begin = 0, m_own_complete = 0, m_complete = 0;
    std::uint32_t m_place = 0;
    std::uint32_t m_releaser_index = 0;
    sem_id m_releaser_sem = no_releaser;
};

// When one DMA transfer was rung, started and finished, and its source place (32 bytes, times
// as offsets from `rung`).
class transfer_activity {
  public:
    transfer_activity() = default;
    transfer_activity(double rung, double started, double chunks_end, double memory_end,
                      mem_space memory, double done, std::uint32_t place)
        : m_rung(rung),
          m_started(static_cast<float>(started - rung)),
          m_chunks_end(static_cast<float>(chunks_end - rung)),
          m_memory_end(static_cast<float>(memory_end - rung)),
          m_done(static_cast<float>(done - rung)),
          m_place(place),
          m_memory(memory) {}

    double rung() const { return m_rung; }  // its trigger rang the queue's doorbell
    // After the queue's fixed latency, its first chunk could start.
    double started() const { return m_rung + m_started; }
    double chunks_end() const { return m_rung + m_chunks_end; }  // the DMA engines were done
    double memory_end() const { return m_rung + m_memory_end; }  // its memory sides were done
    mem_space memory() const { return m_memory; }                // the side that finished last
    double own_end() const { return m_rung + std::max(m_chunks_end, m_memory_end); }
    // Its semaphore counted it (transfers complete in queue order).
    double done() const { return m_rung + m_done; }
    std::uint32_t place() const { return m_place; }  // program_sources id (0: none)

  private:
    double m_rung = 0;
    float m_started = 0, m_chunks_end = 0, m_memory_end = 0, m_done = 0;
    std::uint32_t m_place = 0;
    mem_space m_memory = mem_space::hbm;
};
static_assert(sizeof(transfer_activity) == 32, "a log holds one per transfer");

// What the modules record while a program runs, for the critical-path analysis. Contract:
// reset(queues) empties it for a program of that many DMA queues; engines append to
// `instructions` in program order (each record's releaser noted by note_releaser) and append
// the doorbells they ring to `rings` (the k-th ring of a queue starts its k-th transfer),
// queues append to `transfers`.
struct activity_log {
    std::vector<std::vector<instruction_activity>> instructions;          // [engine][index]
    std::vector<std::vector<transfer_activity>> transfers;                // [queue][index]
    std::vector<std::vector<std::pair<engine_kind, std::size_t>>> rings;  // [queue][k]
    double launch_begin = 0, launch_end = 0;

    void reset(std::size_t queues);
    // Notes on `a` (a record about to be appended, of an instruction with these waits) the wait
    // that released it, if it waited: of the events its waits name, the one that completed last
    // (the first such in the list on a tie), all of them already in the log.
    void note_releaser(instruction_activity& a, const wait_list& waits) const;
};

// The chain of waits that set the kernel's time, walked back from its last completion: each
// step is the event that released the next one last. Its time split by resource: an engine's
// name for its instructions running, "<engine> port" for port queueing, "dma fixed latency"
// (doorbell to first chunk), "dma engines" (rows through the DMA engines), "hbm", "sbuf",
// "psum" (a transfer's memory side finishing last), "launch", and "sync" for gaps between an
// event and the one it released (semaphore and doorbell hand-offs).
struct critical_path {
    std::map<std::string, double> ns_by_resource;
    // The same split for each source place (program_sources id; 0: the launch and events
    // without a place): its instructions' and transfers' time on the path. Empty when the
    // program has no sources. The places' times add up to total_ns.
    std::vector<std::map<std::string, double>> ns_by_place;
    double total_ns = 0;  // the path's length: launch to the last completion
    std::size_t steps = 0;
    // The resource with the most time on the path, and its share of the path in percent.
    std::string bound() const;
    double bound_pct() const;
};

// One stretch of the critical path: [from_ns, to_ns) spent on `resource` by `event` ("pe
// instruction 12", "q3 transfer 5").
struct critical_segment {
    std::string resource, event;
    double from_ns, to_ns;
};

// The critical path of a program from its log; split by place too when the program has
// `places` source places (program_sources names, 0: none); with `segments`, also each stretch of
// it, latest first.
critical_path analyse_critical_path(const activity_log& log, std::size_t places,
                                    std::vector<critical_segment>* segments = nullptr);

}  // namespace trn

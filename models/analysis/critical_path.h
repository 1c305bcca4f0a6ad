#pragma once
#include <algorithm>
#include <array>
#include <boost/circular_buffer.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "program/program.h"

namespace trn {

// Simulated time in the kernel's ticks (SystemC's time resolution): the activity log keeps times
// exactly, so that the same instant read from two records is the same number.
using tick = std::int64_t;

// When one engine instruction waited, ran and released its successors (ticks), its source place,
// and the wait that released it.
class instruction_activity {
  public:
    instruction_activity() = default;
    instruction_activity(tick reached, tick ready, tick free, tick lead, tick begin,
                         tick own_complete, tick complete, std::uint32_t place)
        : m_reached(reached),
          m_ready(ready),
          m_free(free),
          m_lead(lead),
          m_begin(begin),
          m_own_complete(own_complete),
          m_complete(complete),
          m_place(place) {}

    tick reached() const { return m_reached; }            // the stream got to it
    tick ready() const { return m_ready; }                // its semaphore waits were satisfied
    tick free() const { return m_free; }                  // earlier instructions let its engine go
    tick lead() const { return m_lead; }                  // its own time from then to its data path
    tick begin() const { return m_begin; }                // its data path started
    tick own_complete() const { return m_own_complete; }  // its result committed
    // Its semaphore counted it (results commit in program order).
    tick complete() const { return m_complete; }
    std::uint32_t place() const { return m_place; }  // program_sources id (0: none)
    // It waited on a semaphore (ready more than `eps` after the stream reached it).
    bool waited(tick eps) const { return m_ready > m_reached + eps; }
    // The wait that released it: the event (entry `releaser_index()` of the stream of semaphore
    // `releaser_sem()`) whose completion satisfied the last of its waits; none when it did not
    // wait (activity_log::add_instruction).
    bool has_releaser() const { return m_releaser_sem != no_releaser; }
    sem_id releaser_sem() const { return m_releaser_sem; }
    std::uint32_t releaser_index() const { return m_releaser_index; }
    tick released_at() const { return m_released_at; }  // the releaser's completion
    void set_releaser(sem_id s, std::uint32_t index, tick completed) {
        m_releaser_sem = s;
        m_releaser_index = index;
        m_released_at = completed;
    }

  private:
    static constexpr sem_id no_releaser = 0xffff;
    tick m_reached = 0, m_ready = 0, m_free = 0, m_lead = 0, m_begin = 0, m_own_complete = 0,
         m_complete = 0, m_released_at = 0;
    std::uint32_t m_place = 0;
    std::uint32_t m_releaser_index = 0;
    sem_id m_releaser_sem = no_releaser;
};

// When one DMA transfer was rung, started and finished (ticks), its source place, and the
// instruction that rang for it.
class transfer_activity {
  public:
    transfer_activity() = default;
    transfer_activity(tick rung, tick started, tick chunks_end, tick memory_end, mem_space memory,
                      tick done, std::uint32_t place)
        : m_rung(rung),
          m_started(started),
          m_chunks_end(chunks_end),
          m_memory_end(memory_end),
          m_done(done),
          m_place(place),
          m_memory(memory) {}

    tick rung() const { return m_rung; }  // its trigger rang the queue's doorbell
    // After the queue's fixed latency, its first chunk could start.
    tick started() const { return m_started; }
    tick chunks_end() const { return m_chunks_end; }  // the DMA engines were done
    tick memory_end() const { return m_memory_end; }  // its memory sides were done
    mem_space memory() const { return m_memory; }     // the side that finished last
    tick own_end() const { return std::max(m_chunks_end, m_memory_end); }
    // Its semaphore counted it (transfers complete in queue order).
    tick done() const { return m_done; }
    std::uint32_t place() const { return m_place; }  // program_sources id (0: none)
    // The instruction whose doorbell started it (activity_log::note_ring), if an engine did.
    bool has_trigger() const { return m_has_trigger; }
    engine_kind trigger_engine() const { return m_trigger_engine; }
    std::uint32_t trigger_index() const { return m_trigger_index; }
    void set_trigger(engine_kind e, std::uint32_t index) {
        m_trigger_engine = e;
        m_trigger_index = index;
        m_has_trigger = true;
    }

  private:
    tick m_rung = 0, m_started = 0, m_chunks_end = 0, m_memory_end = 0, m_done = 0;
    std::uint32_t m_place = 0;
    std::uint32_t m_trigger_index = 0;
    mem_space m_memory = mem_space::hbm;
    engine_kind m_trigger_engine = engine_kind::sp;
    bool m_has_trigger = false;
};

// A step of the critical-path walk: an instruction or a transfer, entered at `arrival` (the time
// its successor needed from it), through its semaphore or not (program order); or none (the
// walk has ended).
struct path_step {
    enum kind_t : std::uint8_t { none, instruction, transfer } kind = none;
    bool through_semaphore = false;
    std::uint32_t stream = 0;
    std::size_t index = 0;
    tick arrival = 0;
    bool operator==(const path_step& o) const {
        return kind == o.kind && through_semaphore == o.through_semaphore && stream == o.stream &&
               index == o.index && arrival == o.arrival;
    }
};
struct path_step_hash {
    std::size_t operator()(const path_step& s) const {
        return std::hash<std::uint64_t>()((std::uint64_t{s.kind} << 62) ^
                                          (std::uint64_t{s.through_semaphore} << 61) ^
                                          (std::uint64_t{s.stream} << 40) ^ s.index) ^
               std::hash<tick>()(s.arrival) * 31;
    }
};

// The critical path's time from a step back to the launch, by resource and by place and
// resource (ticks; resources as the analysis numbers them), and its steps.
struct path_sums {
    std::vector<tick> by_resource;
    std::vector<std::vector<tick>> by_place;  // [place id][resource]
    std::size_t steps = 0;
    void add(std::size_t resource, std::uint32_t place, tick t);
    void add(const path_sums& o);
};

// One stream's records, the oldest ones dropped once no walk can reach them (a ring that grows
// as needed: indexing without a division, no allocation per record).
template <class T>
class stream_records {
  public:
    std::size_t begin() const { return m_base; }  // the first index still held
    std::size_t end() const { return m_base + m_items.size(); }
    bool holds(std::size_t i) const { return i >= m_base && i < end(); }
    const T& operator[](std::size_t i) const { return m_items[i - m_base]; }
    T& back() { return m_items.back(); }
    void push_back(const T& x) {
        if (m_items.full()) m_items.set_capacity(std::max<std::size_t>(64, 2 * m_items.size()));
        m_items.push_back(x);
    }
    // Drops the records before index i; returns how many.
    std::size_t drop_before(std::size_t i) {
        const std::size_t n = i > m_base ? std::min(i - m_base, m_items.size()) : 0;
        m_items.erase_begin(n);
        m_base += n;
        return n;
    }

  private:
    boost::circular_buffer<T> m_items;
    std::size_t m_base = 0;
};

// What the modules record while a program runs, for the critical-path analysis. Contract:
// reset() empties it for a program of that many DMA queues; engines append their instructions
// in program order (add_instruction), after noting each doorbell they ring (note_ring: the k-th
// ring of a queue starts its k-th transfer); queues append their transfers (add_transfer).
// With `summarise`, every so many records it sums, for each step at which a walk from an event
// still to come can enter the log (a later wait on the semaphore of an event that completes
// from now on; the step each engine's last instruction leads to), the path from that step back,
// and drops every record only those walks visit: it holds a bounded number of records, and the
// analysis, which stops at such a step and adds its sums, is exactly that of every record kept.
// Summarising assumes a core alone (a core_barrier of a chip waits on other cores, not only on
// semaphores).
class activity_log {
  public:
    tick launch_begin = 0, launch_end = 0;

    // `ns_per_tick`: the length of a tick. Below activity_eps_ns, two times are taken as equal.
    void reset(std::size_t queues, bool summarise, double ns_per_tick);
    tick eps() const { return m_eps; }
    double ns_per_tick() const { return m_ns_per_tick; }
    // Keeps every record from now on (a timeline draws the whole path).
    void keep_all() { m_summarise = false; }
    // Appends instruction `a` of engine e (with these waits), issued at `now`, noting the wait
    // that released it: of the events its waits name, the one that completed last (the first
    // such in the list on a tie).
    void add_instruction(engine_kind e, instruction_activity a, const wait_list& waits, tick now);
    void add_transfer(std::size_t q, const transfer_activity& t);
    // Queue q holds its transfer k, rung at `rung` (DMA priorities): it is recorded when it
    // starts, and walks from it lead to the instruction that rang for it, kept until then.
    void note_held(std::size_t q, std::size_t k, tick rung);
    // Engine e's instruction `index` rang queue q's doorbell: the queue's k-th ring starts (or
    // holds) its k-th transfer.
    void note_ring(std::size_t q, engine_kind e, std::size_t index);

    const stream_records<instruction_activity>& instructions(std::size_t e) const {
        return m_instructions[e];
    }
    const stream_records<transfer_activity>& transfers(std::size_t q) const {
        return m_transfers[q];
    }
    std::size_t events() const { return m_events; }
    // The last completion so far (launch_end if none is later) and its event (the first in
    // engine, then queue, then index order on a tie; kind none: no event).
    tick last_completion() const { return m_last; }
    const path_step& last_event() const { return m_last_event; }
    // The sums of the path from a step back, where summarised (else null).
    const path_sums* summed(const path_step& s) const {
        const auto it = m_summed.find(s);
        return it == m_summed.end() ? nullptr : &it->second;
    }
    // Records held now, and the most held at once.
    std::size_t held() const { return m_held; }
    std::size_t most_held() const { return m_most_held; }

  private:
    // Sums the walks from where a walk from an event still to come can enter the log (its
    // frontier), keeps the records the frontier needs, and drops every other record.
    void summarise(tick now);
    // summarise()'s steps. frontier_of: the frontier steps and, per engine and queue, the first
    // record to keep (false: a record it needs is no longer held, which cannot happen).
    bool frontier_of(tick now, std::vector<path_step>& frontier, std::vector<std::size_t>& keep_i,
                     std::vector<std::size_t>& keep_t);
    // Marks the held records that have a summed step, and clears where each step was met.
    void prepare_walks();
    // The walks back from the frontier, as chains of nodes [first, end), each ending where an
    // earlier chain or a summed step (or the walk's end) is met; frontier_node[f]: the node
    // of frontier step f (-1: none). False when a walk does not end (cannot happen).
    bool walk_chains(const std::vector<path_step>& frontier,
                     std::vector<std::pair<std::size_t, std::size_t>>& chains,
                     std::vector<long>& frontier_node);
    // The sums of the path back from each frontier step, from the chains' nodes.
    std::unordered_map<path_step, path_sums, path_step_hash> sum_chains(
        const std::vector<path_step>& frontier,
        const std::vector<std::pair<std::size_t, std::size_t>>& chains,
        const std::vector<long>& frontier_node) const;
    // A step's stream (engines first, then queues) and the index of its stream's first record
    // held; where a walk met it (its node number + 1, 0: not met; null: its record is no
    // longer held); the node it was met at (-1: none); and its sums when summed before.
    std::size_t stream_of(const path_step& at) const;
    std::size_t first_held(const path_step& at) const;
    std::uint32_t* seen_slot(const path_step& at);
    long seen_node(const path_step& at);
    void remember(const path_step& at, std::size_t node);
    const path_sums* summed_step(const path_step& at) const;
    void counted(tick complete, const path_step& event);

    std::vector<stream_records<instruction_activity>> m_instructions;  // [engine]
    std::vector<stream_records<transfer_activity>> m_transfers;        // [queue]
    // Rings noted per queue, and the transfers held, not recorded yet, with their triggers.
    struct held_transfer {
        std::size_t transfer;
        tick rung;
        bool has_trigger = false;
        engine_kind engine = engine_kind::sp;
        std::uint32_t index = 0;
    };
    std::vector<std::size_t> m_rings;
    std::vector<std::deque<held_transfer>> m_held_transfers;
    bool m_summarise = false;
    tick m_eps = 0;
    double m_ns_per_tick = 1e-3;
    std::size_t m_events = 0, m_held = 0, m_most_held = 0, m_next_summary = 0;
    tick m_last = 0;
    path_step m_last_event;
    std::unordered_map<path_step, path_sums, path_step_hash> m_summed;
    // summarise()'s walks, kept for the next one (no memory churned): the steps, the time each
    // gives a resource and place, and where each was met.
    struct summary_node {
        path_step at;
        std::size_t first, count;  // its stretches
        long next;                 // the node it leads to; -1: `ends` (a summed step, or none)
        const path_sums* ends = nullptr;
        bool needed = false;  // its sums are kept (a frontier step) or met by a later chain
    };
    struct summary_stretch {
        std::uint8_t resource;
        std::uint32_t place;
        tick t;
    };
    std::vector<summary_node> m_nodes;
    std::vector<summary_stretch> m_stretches;
    std::vector<std::array<std::vector<std::uint32_t>, 2>> m_seen_at;  // [stream][mode][index]
    std::vector<std::vector<bool>> m_summed_at;  // [stream][index]: a summed step there
    std::unordered_map<path_step, std::size_t, path_step_hash> m_seen;  // steps met twice
};

// Below this (ns), two times of an activity log are taken as equal.
constexpr double activity_eps_ns = 0.01;

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
// `places` source places (program_sources names, 0: none); with `segments` (of a log that kept
// every record), also each stretch of it, latest first.
critical_path analyse_critical_path(const activity_log& log, std::size_t places,
                                    std::vector<critical_segment>* segments = nullptr);

}  // namespace trn

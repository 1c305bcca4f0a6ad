#pragma once
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <deque>
#include <tlm>
#include <vector>
#include "analysis/critical_path.h"
#include "program/access.h"

#include "core/params.h"
#include "core/port.h"
#include "core/timeline.h"
#include "dma/dma_arbiter.h"
#include "dma/dma_engine.h"
#include "program/program.h"
#include "program/program_source.h"
#include "program/semaphores.h"

namespace trn {

// One DMA queue: starts its transfers in order when an engine rings its doorbell, splits each
// over the DMA engines by groups of partitions (the parts of one DMA of several runs a
// partition beginning on the engines after the previous part's), times both memory sides of the
// whole transfer (HBM, SBUF or PSUM) from when its first chunk starts, and signals its semaphore
// when a transfer has completed (transfers complete in queue order). Contract (doorbell socket):
// each b_transport starts the next transfer at the incoming delay; it returns at once (the transfer
// runs in the background) with delay unchanged.
class dma_queue final : public sc_core::sc_module, public held_transfers {
  public:
    tlm_utils::simple_target_socket<dma_queue> doorbell{"doorbell"};
    tlm_utils::multi_passthrough_initiator_socket<dma_queue> engines{"engines"};
    tlm_utils::simple_initiator_socket<dma_queue> mem{"mem"};  // both sides of transfers

    dma_queue(const sc_core::sc_module_name& name, const config& cfg, semaphore_bank& sems,
              std::size_t index, bool functional);
    ~dma_queue() override;
    dma_queue(const dma_queue&) = delete;
    dma_queue& operator=(const dma_queue&) = delete;

    // The program whose stream of this queue's transfers to run (null: none).
    void load(program_source* program);
    // Every engine bound to `engines`, in binding order, in groups of core.dma.engines: a
    // transfer goes to the group whose engines it would use free first (the lowest such group
    // on a tie). A core whose transfers use its own engines only (hardware DGE) binds one group.
    // The queue then books the engines' chunks itself (dma_engine::book: timed as a whole, one
    // service time per chunk shape), or, with functional data or a timeline, hands the engines
    // their chunks directly (dma_engine::serve), not through the socket (whose b_transport
    // does the same).
    void set_engines(std::vector<dma_engine*> engines) { m_bound = std::move(engines); }
    void set_timeline(timeline* t);
    // The arbiter of this core's transfer priorities (null: every transfer starts when rung).
    void set_arbiter(dma_arbiter* a) {
        m_arbiter = a;
        if (a) a->add(*this);
    }
    // The arbiter's view (held_transfers).
    const dma_transfer* first_held() const override {
        return m_held.empty() ? nullptr : &m_held.front().transfer;
    }
    sc_core::sc_time first_held_ready() const override {
        return m_held.front().rung + m_fixed_latency;
    }
    std::uint64_t first_held_ring() const override { return m_held.front().ring; }
    void first_held_engines(std::vector<const busy_port*>& out) const override;
    void start_held() override;
    // Records when each transfer was rung, started and finished (analysis/critical_path.h).
    void set_activity_log(activity_log* log) { m_log = log; }
    std::uint64_t transfers() const { return m_started; }
    std::uint64_t bytes() const { return m_bytes; }
    // Adds its transfers and bytes under `prefix` ("dma.queues.q2").
    void report(stats_tree& s, const std::string& prefix) const;
    // Transfers started and bytes moved per source place (indexed by place id, 0: none; places
    // past its end moved nothing).
    std::pair<std::uint64_t, std::uint64_t> by_place(std::size_t place) const {
        return place < m_by_place.size() ? m_by_place[place]
                                         : std::pair<std::uint64_t, std::uint64_t>{};
    }

  private:
    // Where a transfer's chunks go: partition group `group` (of the on-chip side's first
    // partition `first`) to engine `engine` of the engine group at `base`, `used` engines in all
    // (0, not counted, on a core of one engine group without an arbiter).
    struct placement {
        std::uint32_t first = 0, group = 0;
        std::size_t engine = 0, used = 0, base = 0;
    };
    struct held_transfer {
        dma_transfer transfer;  // a copy: the program's window may move on
        std::uint32_t place;
        std::size_t number;     // in the queue
        sc_core::sc_time rung;  // when its doorbell rang
        std::uint64_t ring;     // dma_arbiter::ring()
    };

    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    placement place_of(const dma_transfer& t, const sc_core::sc_time& from) const;
    // Books transfer `number` of the queue on the engines and memories from `start` (an offset
    // from now) and signals its completion; `rung` is when its doorbell rang (an absolute time,
    // for the activity log, which also takes it to have been able to start a fixed latency on).
    void begin(const dma_transfer& t, std::uint32_t place, std::size_t number,
               const sc_core::sc_time& rung, const sc_core::sc_time& start);
    // Times both memory sides of transfer t from `first_chunk` (offsets from now), raising
    // `done` to each side's end, and `memory_end` to the later side's (whose space `last_side`
    // becomes).
    void time_memory_sides(const dma_transfer& t, const sc_core::sc_time& first_chunk,
                           sc_core::sc_time& done, sc_core::sc_time& memory_end,
                           mem_space& last_side);
    // Draws transfer `number` (started `start` after now, done at `at`) on the timeline: its
    // bytes in flight and its slice.
    void draw(const dma_transfer& t, std::size_t number, std::uint32_t place,
              const sc_core::sc_time& start, const sc_core::sc_time& at);

    semaphore_bank& m_sems;
    std::size_t m_index;
    bool m_functional;
    std::size_t m_engine_count;  // per group
    std::vector<dma_engine*> m_bound;
    std::uint32_t m_partitions_per_engine;
    sc_core::sc_time m_fixed_latency;
    program_source* m_program = nullptr;
    stream_window<dma_transfer> m_window;  // the program's transfers in memory
    std::size_t m_started = 0;
    std::uint64_t m_bytes = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> m_by_place;
    sc_core::sc_time m_last_done = sc_core::SC_ZERO_TIME;
    timeline* m_timeline = nullptr;
    activity_log* m_log = nullptr;
    dma_arbiter* m_arbiter = nullptr;
    std::deque<held_transfer> m_held;
    std::size_t m_track = 0, m_counter = 0;
    tlm::tlm_generic_payload m_chunk;  // reused: a payload allocates its extension array
    tlm::tlm_generic_payload m_mem;
    access_ext m_ext;  // m_mem's extension for the queue's lifetime
};

}  // namespace trn

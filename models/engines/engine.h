#pragma once
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm>
#include <vector>

#include "core/access.h"
#include "core/params.h"
#include "core/port.h"
#include "core/semaphores.h"
#include "core/timeline.h"
#include "engines/cost_table.h"

namespace trn {

// An in-order engine (Vector, Scalar, GpSimd or Sync): waits for each instruction's semaphores,
// occupies its data path for the cost-table time (queueing first on shared memory ports), and
// signals its semaphore when the result is committed, `latency` cycles after the data path
// frees. A dma_trigger rings the doorbell of a DMA queue.
class engine : public sc_core::sc_module {
  public:
    tlm_utils::simple_initiator_socket<engine> out{"out"};

    SC_HAS_PROCESS(engine);
    static void declare_params(param_registry& r);
    engine(const sc_core::sc_module_name& name, engine_kind kind, const config& cfg,
           semaphore_bank& sems, bool functional);
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    // The stream to run, and when the first instruction may issue (the launch overhead).
    void load(const std::vector<instruction>* stream, const sc_core::sc_time& start);
    // Records one slice per instruction on the timeline (optional).
    void set_timeline(timeline* t);
    bool finished() const { return !m_stream || m_next == m_stream->size(); }
    const cost_table& costs() const { return m_costs; }
    engine_kind engine_type() const { return m_kind; }

    std::uint64_t instructions() const { return m_next; }
    const sc_core::sc_time& busy() const { return m_busy; }
    const sc_core::sc_time& stall_semaphore() const { return m_stall_sem; }
    const sc_core::sc_time& stall_port() const { return m_stall_port; }
    // Time one instruction occupies the engine.
    sc_core::sc_time duration(const instruction& ins) const;

  private:
    void run();
    // One operand access starting no earlier than `at`; returns the start the port granted.
    sc_core::sc_time access(tlm::tlm_command cmd, const operand& op, std::uint8_t* data,
                            const sc_core::sc_time& at, const sc_core::sc_time& occupancy);

    engine_kind m_kind;
    semaphore_bank& m_sems;
    bool m_functional;
    cost_table m_costs;
    double m_clock_ghz;
    sc_core::sc_time m_latency;
    sc_core::sc_time m_trigger_time;
    const std::vector<instruction>* m_stream = nullptr;
    sc_core::sc_time m_start;
    std::size_t m_next = 0;
    sc_core::sc_time m_busy, m_stall_sem, m_stall_port;
    std::vector<std::uint8_t> m_a, m_b, m_d;  // functional staging
    timeline* m_timeline = nullptr;
    std::size_t m_track = 0;
    tlm::tlm_generic_payload m_trans;  // reused: a payload allocates its extension array
    access_ext m_ext;
};

}  // namespace trn

#pragma once
#include <tlm_utils/simple_initiator_socket.h>
#include <array>
#include <map>
#include <tlm>
#include <vector>
#include "analysis/critical_path.h"
#include "core/core_sync.h"

#include "core/params.h"
#include "core/port.h"
#include "core/stats.h"
#include "core/timeline.h"
#include "engines/cost_table.h"
#include "program/access.h"
#include "program/program_source.h"
#include "program/semaphores.h"

namespace trn {

// When an issued instruction runs, as offsets from the moment its waits were satisfied.
struct issue_timing {
    sc_core::sc_time start;     // the data path starts (after port queueing or pipelining)
    sc_core::sc_time busy;      // how long it occupies the data path
    sc_core::sc_time advance;   // when the stream may take its next instruction
    sc_core::sc_time complete;  // when the result is committed and the semaphore signalled
    // Until when earlier instructions held the engine's pipeline (relative to the call), and
    // the instruction's own lead from then to its data path (the Tensor engine's stationary
    // load); the rest of `start` is queueing on shared ports.
    sc_core::sc_time held = sc_core::SC_ZERO_TIME;
    sc_core::sc_time lead = sc_core::SC_ZERO_TIME;
    // A second data path beside the engine's own (NC-v4's background transpose lane): its time
    // counts as busy only where the engine's own path is idle, and it has a timeline track of
    // its own.
    bool background = false;
};

// What one source place's instructions cost an engine: how many ran, their data-path busy time
// and the data-path idle time waiting on semaphores before them (ns).
struct place_cost {
    std::uint64_t instructions = 0;
    double busy_ns = 0, wait_ns = 0;
};

// What every engine shares: an in-order instruction stream, semaphore waits, statistics, the
// timeline, and operand accesses through the initiator socket.
// Contract for subclasses: execute() performs the instruction's memory accesses (and, in
// functional mode, its computation) at the current time and returns its timing; check() names
// why an instruction cannot run on this engine, or returns "" when it can.
class engine_base : public sc_core::sc_module {
  public:
    tlm_utils::simple_initiator_socket<engine_base> out{"out"};

    SC_HAS_PROCESS(engine_base);
    engine_base(const sc_core::sc_module_name& name, engine_kind kind, const config& cfg,
                semaphore_bank& sems, bool functional);
    ~engine_base() override;
    engine_base(const engine_base&) = delete;
    engine_base& operator=(const engine_base&) = delete;

    // The program whose stream of this engine's instructions to run (null: none), and how long
    // after now the first instruction may issue (the launch overhead). Restarts the
    // statistics; callable again once the previous stream finished.
    void load(program_source* program, const sc_core::sc_time& start);
    // Records one slice per instruction on the timeline (optional).
    void set_timeline(timeline* t);
    // Records when each instruction waited, ran and released (analysis/critical_path.h).
    void set_activity_log(activity_log* log) { m_log = log; }
    // The barrier this engine's core_barrier instructions meet the other cores of its HBM stack
    // at, and its core's index there (none: a core alone passes its barriers at once).
    void set_core_sync(core_sync* sync, std::size_t core) {
        m_sync = sync;
        m_sync_core = core;
    }
    // Per opcode (indexed by opcode): instructions executed and data-path busy time (ns).
    const std::array<std::pair<std::uint64_t, double>, opcode_count>& by_opcode() const {
        return m_by_opcode;
    }
    // Data-path busy time (ns) by the dtype the instruction computes on (indexed by dtype: its
    // first input's, or its output's when it has none).
    const std::array<double, dtype_count>& busy_by_dtype() const { return m_busy_by_dtype; }
    // Data-path idle time (ns) waiting on each semaphore (indexed by semaphore): the wait that
    // released the instruction.
    const std::vector<double>& stall_by_semaphore() const { return m_stall_by_sem; }
    // What the instructions of each source place cost (indexed by place id, 0: none; places
    // past its end cost nothing).
    place_cost by_place(std::size_t place) const {
        return place < m_by_place.size() ? m_by_place[place] : place_cost{};
    }
    virtual std::string check(const instruction& ins) const = 0;
    // Adds its statistics under `prefix` ("engines.dve"): data-path busy and stall times,
    // instructions, utilisation over `active_ns` (the kernel time after launch), and busy time
    // by opcode, by dtype and stalls by the semaphore waited on.
    virtual void report(stats_tree& s, const std::string& prefix, double active_ns) const;

    bool finished() const { return !m_program || m_ended; }
    // The first run-time fault of the program (an indirect offset outside its tile), "" if none.
    const std::string& fault() const { return m_fault; }
    engine_kind engine_type() const { return m_kind; }
    double clock_ghz() const { return m_clock_ghz; }
    std::uint64_t instructions() const { return m_next; }
    const sc_core::sc_time& busy() const { return m_busy; }
    const sc_core::sc_time& stall_semaphore() const { return m_stall_sem; }
    const sc_core::sc_time& stall_port() const { return m_stall_port; }

  protected:
    virtual issue_timing execute(const instruction& ins) = 0;
    // Clears per-program state and statistics of a subclass (called by load()).
    virtual void reset() {}
    // One operand access starting no earlier than `at`; returns the start the port granted.
    sc_core::sc_time access(tlm::tlm_command cmd, const operand& op, std::uint8_t* data,
                            const sc_core::sc_time& at, const sc_core::sc_time& occupancy);
    sc_core::sc_time cycles(double n) const { return ns(n / m_clock_ghz); }
    // A timed operand access that also moves functional data: `data` (null in timing mode)
    // holds the operand's elements packed, whatever its element stride.
    sc_core::sc_time access_operand(tlm::tlm_command cmd, const operand& op,
                                    std::vector<std::uint8_t>* data, const sc_core::sc_time& at,
                                    const sc_core::sc_time& occupancy);
    // The timed access of the operand in `slot` of `ins`, as access_operand; an indirect one
    // (tensor indirection) also reads its offsets, riding along, and gathers (reads) or
    // scatters (writes) the indexed tile's columns. Model choice (no cost is published): it
    // takes the time of a direct access of its view. An offset outside the indexed tile is
    // a fault (fault()): its element reads as 0, its write is dropped.
    sc_core::sc_time access_slot(tlm::tlm_command cmd, const instruction& ins, operand_slot slot,
                                 std::vector<std::uint8_t>* data, const sc_core::sc_time& at,
                                 const sc_core::sc_time& occupancy) {
        return ins.indirect.empty() ? access_operand(cmd, ins.at(slot), data, at, occupancy)
                                    : access_indirect(cmd, ins, slot, data, at, occupancy);
    }
    // Reads the operand in `slot` of `ins` (gathered, when indirect), packed, without timing.
    void peek_slot(const instruction& ins, operand_slot slot, std::vector<std::uint8_t>& out);
    // Why an instruction with tensor indirection cannot run on this core (core.sbuf.indirect).
    static std::string indirect_refused(const instruction& ins);
    // Reads an operand's elements, packed (functional mode), without timing.
    void peek(const operand& op, std::vector<std::uint8_t>& out);
    // Writes an operand's elements from their packed form (functional mode), without timing.
    void poke(const operand& op, const std::vector<std::uint8_t>& in);

    engine_kind m_kind;
    bool m_functional;
    double m_clock_ghz;
    sc_core::sc_time m_latency;
    bool m_indirect;  // core.sbuf.indirect: tensor indirection

  private:
    void run();
    void run_stream();
    sc_core::sc_time access_indirect(tlm::tlm_command cmd, const instruction& ins,
                                     operand_slot slot, std::vector<std::uint8_t>* data,
                                     const sc_core::sc_time& at, const sc_core::sc_time& occupancy);
    // Moves an operand's rows, as they lie in memory, between memory and m_span (untimed).
    void debug_rows(tlm::tlm_command cmd, const operand& op);
    // The functional gather (read) or scatter (write) of an indirect operand's packed view.
    void move_indirect(tlm::tlm_command cmd, const instruction& ins, const indirection& t,
                       std::vector<std::uint8_t>& view);

    semaphore_bank& m_sems;
    program_source* m_program = nullptr;
    stream_window<instruction> m_window;  // the program's instructions in memory
    bool m_ended = false;                 // the stream has ended
    sc_core::sc_event m_go;
    std::size_t m_next = 0;
    sc_core::sc_time m_busy, m_stall_sem, m_stall_port, m_last_complete;
    sc_core::sc_time m_busy_end;  // when the last instruction's data path frees
    timeline* m_timeline = nullptr;
    activity_log* m_log = nullptr;
    core_sync* m_sync = nullptr;
    std::size_t m_sync_core = 0;
    std::array<std::pair<std::uint64_t, double>, opcode_count> m_by_opcode{};
    std::array<double, dtype_count> m_busy_by_dtype{};
    std::vector<double> m_stall_by_sem;
    std::vector<place_cost> m_by_place;
    std::size_t m_track = 0, m_background_track = 0;
    tlm::tlm_generic_payload m_trans;            // reused: a payload allocates its extension array
    access_ext m_ext;                            // m_trans's extension for the engine's lifetime
    std::vector<std::uint8_t> m_span;            // a strided operand's rows as they lie in memory
    std::vector<std::uint8_t> m_index, m_whole;  // an indirection's offsets and indexed tile
    std::string m_fault;
};

// A data-path engine (Vector, Scalar, GpSimd or Sync): occupies its data path for the cost-table
// time (queueing first on shared memory ports) and commits its result `latency` cycles after
// the data path frees. A dma_trigger rings the doorbell of a DMA queue.
class engine : public engine_base {
  public:
    static void declare_params(param_registry& r);
    engine(const sc_core::sc_module_name& name, engine_kind kind, const config& cfg,
           semaphore_bank& sems, bool functional);

    const cost_table& costs() const { return m_costs; }
    std::string check(const instruction& ins) const override;
    // Time one instruction occupies the engine.
    sc_core::sc_time duration(const instruction& ins) const;

  protected:
    issue_timing execute(const instruction& ins) override;
    void reset() override { m_reduce_regs.clear(); }  // a new program: registers at zero

  private:
    cost_table m_costs;
    sc_core::sc_time m_trigger_time;
    std::vector<std::uint8_t> m_a, m_b, m_c, m_d, m_d1;  // functional staging
    std::vector<float> m_reduce_regs;  // the reduce registers (activation_reduce), functional
    tlm::tlm_generic_payload m_ring;   // doorbell writes
};

}  // namespace trn

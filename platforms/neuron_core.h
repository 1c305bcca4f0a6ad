#pragma once
#include <memory>
#include <vector>

#include "analysis/critical_path.h"
#include "analysis/limiter.h"
#include "core/params.h"
#include "core/stats.h"
#include "dma/dma_engine.h"
#include "dma/dma_queue.h"
#include "engines/engine.h"
#include "engines/tensor_engine.h"
#include "interconnect/router.h"
#include "memory/hbm_channel.h"
#include "memory/onchip_bank.h"
#include "program/program.h"
#include "program/program_source.h"
#include "program/semaphores.h"

namespace trn {

// How a core sits in a chip (platforms/chip.h): the HBM channels of its stack, which the
// stack's other cores share, and where its HBM address 0 lies in that stack.
struct core_wiring {
    std::vector<hbm_channel*> hbm;
    std::uint64_t hbm_base = 0;
};

// One NeuronCore assembled from the config: engines, DMA queues and engines, the router, HBM
// channels, SBUF and the PSUM banks, bound by TLM sockets.
// Contract: load() validates the program against the platform (user_error on violation), run()
// simulates it to the end and throws deadlock_error naming the blocked streams if it cannot
// finish. SystemC allows one elaboration per process, so one neuron_core per process; it runs
// any number of programs in turn (load, run, report; simulated time keeps going, and each
// program's statistics and time are measured from its load()).
class neuron_core : public sc_core::sc_module {
  public:
    // Without `wiring` the core has HBM channels of its own (a chip of one core).
    neuron_core(const sc_core::sc_module_name& name, const config& cfg, bool functional,
                const core_wiring* wiring = nullptr);
    neuron_core(const neuron_core&) = delete;
    // Every parameter a core and its kernel builder read (core.*, runtime.*, builder.*).
    static void declare_params(param_registry& r);
    neuron_core& operator=(const neuron_core&) = delete;

    program_limits limits() const;
    // Throws user_error naming the stream and instruction when `p` does not fit this core's
    // limits or an engine cannot execute one of its instructions (what load() checks first).
    void check(const program& p) const;
    // What check() checks of one instruction or transfer alone, `index` its place in its stream
    // (the HBM it may reach: the platform's), for a program checked as it is built
    // (program_stream). It reads only the platform's configuration, so the stream's producer
    // thread may call it while the core simulates.
    void check_entry(engine_kind e, std::size_t index, const instruction& ins) const;
    void check_entry(std::size_t q, std::size_t index, const dma_transfer& t) const;
    // The same for one instruction or transfer alone, as it is built (the NKI recording's
    // expansion): the message starts with the opcode and engine, or "a DMA transfer".
    void check_alone(engine_kind e, const instruction& ins) const;
    void check_alone(const dma_transfer& t) const;
    void load(const program& p);
    // A program delivered while it runs (it must outlive the run): each entry it delivers was
    // checked as check() would (program_stream's producer does it); its regions are ignored
    // (no functional mode).
    void load(program_source& source);
    void run();
    // What run() does once the simulation has stopped, for a chip that simulates several cores
    // at once: the kernel ends at `end` (its last completion, last_completion()).
    void finish(const sc_core::sc_time& end);
    sc_core::sc_time last_completion() const;
    // After a simulation: tells the address sanitizer, if any, which stack this is.
    static void back_on_main_stack();
    // A deadlock left its engines mid-program (it takes no program any more).
    void stop() { m_stopped = true; }
    // Before a simulation: writes the inputs of the loaded program (functional mode) where the
    // start of simulation has passed (every program but the process's first).
    void prepare_run() {
        if (m_elaborated) write_inputs();
    }
    // Whether the next programs' transfers come from hardware descriptor generation (DGE),
    // which feeds the core's own engines only, or from static descriptor rings, placed on any
    // of core.dma.engine_groups (neuronx-cc --disable-dge); core.dma.hardware_dge until set.
    void set_hardware_dge(bool on);
    bool hardware_dge() const { return m_hardware_dge; }
    std::size_t dma_engine_count() const { return m_dma_engines.size(); }
    dma_engine& dma_engine_at(std::size_t i) { return *m_dma_engines[i]; }
    // The barrier its engines' core_barrier instructions meet the stack's other cores at.
    void set_core_sync(core_sync* sync, std::size_t index_in_stack) {
        for (auto& e : m_engines)
            e->set_core_sync(sync, index_in_stack);
    }
    // Reads HBM bytes (functional mode), without timing; only once elaboration has ended.
    std::vector<std::uint8_t> read_hbm(std::uint64_t offset, std::uint64_t bytes);
    void write_hbm(std::uint64_t offset, const std::vector<std::uint8_t>& bytes);
    // Statistics of the last program run.
    void report(stats_tree& stats) const;
    // Progress on stderr (instructions retired, simulated time, rate) for runs over 2 s.
    void set_progress(bool on) { m_progress = on; }
    // Records every instruction, transfer and DMA chunk on `t` (call before run()), and the
    // critical path as a track of its own.
    void set_timeline(timeline* t);
    // Keeps every activity record of the programs it runs (the critical path is then walked
    // over the whole log, not partly summed as it runs: the same result, for checking it).
    void keep_whole_log() { m_keep_log = true; }
    // From load() to the last completion of the last program run (includes the launch).
    double kernel_time_ns() const { return (m_end - m_begin).to_seconds() * 1e9; }

  private:
    // The dma.* and hbm.* statistics: the totals over the DMA engines and queues, or the HBM
    // channels, and each one's own under its key; `total` the kernel time (ns).
    void report_dma(stats_tree& stats, double total) const;
    void report_hbm(stats_tree& stats, double total) const;
    // The limit.* statistics: what would speed the kernel up most (analysis/limiter.h), from the
    // critical path and the busy times report() has added to `stats`.
    void add_limiter_stats(stats_tree& stats) const;
    // The lines.* statistics: per source place of the program (program_sources), what its
    // instructions and transfers cost and its share of the critical path.
    void add_line_stats(stats_tree& stats) const;
    // Throws user_error when engine `e` cannot run `ins` (entry `index` of its stream).
    void check_on_engine(engine_kind e, std::size_t index, const instruction& ins) const;
    void start_of_simulation() override;
    void write_inputs();

    tlm_utils::simple_initiator_socket<neuron_core> m_debug{"debug"};
    bool m_functional;
    bool m_in_chip;           // it shares HBM with other cores of a chip
    bool m_keep_log = false;  // keep_whole_log()
    sc_core::sc_time m_launch;
    program_limits m_limits;
    semaphore_bank m_sems{"semaphores"};
    router m_router;
    std::vector<std::unique_ptr<hbm_channel>> m_hbm;  // its own (none: it sits in a chip)
    std::vector<hbm_channel*> m_stack;                // those it reaches: its own, or its stack's
    std::unique_ptr<onchip_bank> m_sbuf;
    std::vector<std::unique_ptr<onchip_bank>> m_psum;
    std::vector<std::unique_ptr<dma_engine>> m_dma_engines;  // every group's
    std::size_t m_dma_groups;                                // core.dma.engine_groups
    bool m_hardware_dge = false;
    std::size_t m_dma_in_use = 0;  // the first engines, those the programs use (DGE: one group)
    std::vector<std::unique_ptr<dma_queue>> m_dma_queues;
    std::unique_ptr<dma_arbiter> m_dma_arbiter;           // with core.dma.priority_levels > 1
    std::vector<std::unique_ptr<engine_base>> m_engines;  // pe, dve, act, pool, sp
    tensor_engine* m_pe = nullptr;
    std::unique_ptr<whole_program> m_whole;  // the last whole program loaded, as a source
    program_source* m_program = nullptr;     // the program of the last load()
    sc_core::sc_time m_begin, m_end;
    bool m_elaborated = false;  // the first run has started: sockets are bound
    bool m_progress = false;
    bool m_stopped = false;    // a deadlock left its engines mid-program: it runs no more
    activity_log m_activity;   // for the critical path of the last program
    critical_path m_critical;  // that path, analysed when the program ends
    timeline* m_timeline = nullptr;
    std::size_t m_timeline_group = 0;
};

}  // namespace trn

#pragma once
#include <memory>
#include <vector>

#include "core/core_sync.h"
#include "core/params.h"
#include "core/stats.h"
#include "memory/hbm_channel.h"
#include "platforms/neuron_core.h"
#include "program/program.h"

namespace trn {

// Every parameter the platform (a chip of cores) and the kernel builder read, declared once.
void declare_platform_params(param_registry& r);

// What the chip's keys say: its cores, how many share an HBM stack, and how many run.
struct chip_shape {
    std::size_t cores = 1, cores_per_stack = 1, active = 1;
    double barrier_ns = 0;  // chip.barrier_latency
    std::size_t lnc = 1;    // chip.lnc: physical cores of a logical one (NKI kernels)
    static void declare_params(param_registry& r);
    // Reads chip.*; user_error when active exceeds cores or cores do not fill whole stacks.
    static chip_shape of(const config& cfg);
    std::size_t stacks_used() const { return (active + cores_per_stack - 1) / cores_per_stack; }
};

// A chip of NeuronCores over shared HBM stacks: chip.active_cores cores (the physical cores
// 0, 1, ... in order), each the full core model, the cores of a stack (chip.cores_per_stack)
// sharing its channels, and, where their transfers may use their HBM pair's DMA engines
// (core.dma.engine_groups with static descriptors), each booking those engines on the other
// core's. Every core runs the same program, each in its own part of its stack.
// Contract: load() checks and loads the program on every core; run() simulates them together to
// the end (deadlock_error as neuron_core::run); report() gives the chip's figures and each
// core's under cores.cN. One chip per process (one SystemC elaboration).
class chip : public sc_core::sc_module {
  public:
    // `cores`: how many to build (0: chip.active_cores); `shared_address_space`: every core
    // sees the same HBM addresses (a logical core of two, LNC=2: one kernel's instances on the
    // two cores of a stack), else each its own part of its stack.
    chip(const sc_core::sc_module_name& name, const config& cfg, bool functional = false,
         std::size_t cores = 0, bool shared_address_space = false);
    chip(const chip&) = delete;
    chip& operator=(const chip&) = delete;

    neuron_core& core(std::size_t i) { return *m_cores[i]; }
    std::size_t active() const { return m_cores.size(); }
    const chip_shape& shape() const { return m_shape; }
    void load(const program& p);
    // A program of its own on each of the first programs.size() cores (the others idle).
    void load(const std::vector<const program*>& programs);
    void run();
    void report(stats_tree& stats) const;
    // Core 0 runs a program alone (loaded by itself): its barriers wait for no one.
    void alone() {
        m_loaded.assign(m_cores.size(), false);
        m_loaded[0] = true;
        reset_syncs();
    }
    // Records every core's activity on `t`, each core's tracks in a group of its own ("NeuronCore
    // N"), or none (nullptr). Call before run().
    void set_timeline(timeline* t);

  private:
    void reset_syncs();
    chip_shape m_shape;
    std::vector<bool> m_loaded;                       // which cores run a program this time
    std::vector<std::unique_ptr<core_sync>> m_syncs;  // one per stack (nisa.core_barrier)
    std::vector<std::vector<std::unique_ptr<hbm_channel>>> m_stacks;
    std::vector<std::unique_ptr<neuron_core>> m_cores;
};

}  // namespace trn

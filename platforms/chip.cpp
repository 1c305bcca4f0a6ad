#include "platforms/chip.h"

#include <algorithm>

#include "core/error.h"

namespace trn {

void declare_platform_params(param_registry& r) {
    r.add({"name", param_kind::text, "trn1", "name of the platform, shown in the summary", "-"});
    neuron_core::declare_params(r);
    chip_shape::declare_params(r);
}

void chip_shape::declare_params(param_registry& r) {
    r.add({"chip.cores", param_kind::integer, "2", "physical NeuronCores of the chip",
           "hardware-facts 1d (Trn1: 2 NC-v2; Trn2: 8 NC-v3)", 1, 64});
    r.add({"chip.cores_per_stack", param_kind::integer, "1",
           "NeuronCores sharing one HBM stack (its channels and, core.dma.engine_groups, their "
           "DMA engines); core.hbm.bandwidth is the stack's",
           "hardware-facts 1d (Trn1: one stack per core; Trn2: each of 4 stacks shared by 2 cores)",
           1, 64});
    r.add({"chip.barrier_latency", param_kind::time, "1.3us",
           "from one core's nisa.core_barrier to the other cores of its stack seeing it (a remote "
           "semaphore update)",
           "model choice: not published; the DMA's documented semaphore-to-start latency "
           "(hardware-facts 1d), the nearest published cross-engine figure",
           0, 1e9});
    r.add({"chip.lnc", param_kind::integer, "1",
           "logical NeuronCore degree of NKI 0.x kernels launched without brackets: 2 runs one "
           "instance on each core of an HBM stack (as NEURON_LOGICAL_NC_CONFIG=2; kernel[n] and "
           "nl.nc say it per launch); sim's drivers run on one core whatever it says",
           "hardware-facts 1d (LNC guide: LNC=1 or 2; a kernel defaults to LNC=1)", 1, 2});
    r.add({"chip.active_cores", param_kind::integer, "1",
           "cores that run the kernel, each its own copy at once (cores 0, 1, ... in order: the "
           "first two of a Trn2 chip share a stack); 1: one core alone",
           "model choice (what an architect varies)", 1, 64});
}

chip_shape chip_shape::of(const config& cfg) {
    chip_shape s;
    s.cores = static_cast<std::size_t>(cfg.integer("chip.cores"));
    s.cores_per_stack = static_cast<std::size_t>(cfg.integer("chip.cores_per_stack"));
    s.active = static_cast<std::size_t>(cfg.integer("chip.active_cores"));
    s.barrier_ns = cfg.time_ns("chip.barrier_latency");
    s.lnc = static_cast<std::size_t>(cfg.integer("chip.lnc"));
    if (s.lnc > s.cores_per_stack)
        throw user_error(
            "config: chip.lnc " + std::to_string(s.lnc) +
            ": a logical NeuronCore is the cores of one HBM stack (chip.cores_per_stack " +
            std::to_string(s.cores_per_stack) + ")");
    if (s.cores % s.cores_per_stack != 0)
        throw user_error("config: chip.cores (" + std::to_string(s.cores) +
                         ") is not a whole number of stacks of chip.cores_per_stack (" +
                         std::to_string(s.cores_per_stack) + ")");
    if (s.active > s.cores)
        throw user_error("config: chip.active_cores (" + std::to_string(s.active) +
                         ") exceeds the chip's chip.cores (" + std::to_string(s.cores) + ")");
    return s;
}

namespace {

// A second core of a stack keeps its tensors this far into the stack (timing only: the bytes
// are not held, a chip of several cores runs without --functional).
constexpr std::uint64_t stack_slice = 1ull << 34;

}  // namespace

chip::chip(const sc_core::sc_module_name& name, const config& cfg, bool functional,
           std::size_t cores, bool shared_address_space)
    : sc_core::sc_module(name), m_shape(chip_shape::of(cfg)) {
    if (cores) {
        if (cores > m_shape.cores)
            throw user_error("the chip has " + std::to_string(m_shape.cores) + " cores, not " +
                             std::to_string(cores));
        m_shape.active = cores;
    }
    const auto channels = static_cast<std::size_t>(cfg.integer("core.hbm.channels"));
    const sc_core::sc_time barrier_latency = ns(m_shape.barrier_ns);
    for (std::size_t s = 0; s < m_shape.stacks_used(); ++s) {
        m_syncs.push_back(std::make_unique<core_sync>(barrier_latency));
        m_stacks.emplace_back();
        for (std::size_t c = 0; c < channels; ++c)
            m_stacks.back().push_back(std::make_unique<hbm_channel>(
                ("stack" + std::to_string(s) + "_hbm" + std::to_string(c)).c_str(), cfg));
    }
    for (std::size_t i = 0; i < m_shape.active; ++i) {
        core_wiring w;
        for (auto& c : m_stacks[i / m_shape.cores_per_stack])
            w.hbm.push_back(c.get());
        w.hbm_base = shared_address_space ? 0 : (i % m_shape.cores_per_stack) * stack_slice;
        m_cores.push_back(std::make_unique<neuron_core>(("core" + std::to_string(i)).c_str(), cfg,
                                                        functional, &w));
        m_cores.back()->set_core_sync(m_syncs[i / m_shape.cores_per_stack].get(),
                                      i % m_shape.cores_per_stack);
    }
    // The engine groups past a core's own are its stack partners' engines: book them there.
    const auto per_group = static_cast<std::size_t>(cfg.integer("core.dma.engines"));
    for (std::size_t i = 0; i < m_cores.size(); ++i) {
        const std::size_t first = i - i % m_shape.cores_per_stack;
        for (std::size_t e = per_group; e < m_cores[i]->dma_engine_count(); ++e) {
            const std::size_t group = e / per_group;  // 1, 2, ...: the next cores of the stack
            const std::size_t other = first + (i - first + group) % m_shape.cores_per_stack;
            if (other != i && other < m_cores.size() &&
                e % per_group < m_cores[other]->dma_engine_count())
                m_cores[i]->dma_engine_at(e).book_on(m_cores[other]->dma_engine_at(e % per_group));
        }
    }
}

void chip::load(const program& p) {
    for (auto& c : m_cores)
        c->load(p);
    m_loaded.assign(m_cores.size(), true);
    reset_syncs();
}

void chip::reset_syncs() {
    for (std::size_t s = 0; s < m_syncs.size(); ++s) {
        std::size_t running = 0;  // the stack's cores run in order: 0, 1, ...
        for (std::size_t i = s * m_shape.cores_per_stack;
             i < m_cores.size() && i < (s + 1) * m_shape.cores_per_stack; ++i)
            running += m_loaded[i] ? 1 : 0;
        m_syncs[s]->reset(running);
    }
}

void chip::load(const std::vector<const program*>& programs) {
    if (programs.size() > m_cores.size())
        throw user_error(std::to_string(programs.size()) + " programs for a chip of " +
                         std::to_string(m_cores.size()) + " cores");
    for (std::size_t i = 0; i < programs.size(); ++i)
        m_cores[i]->check(*programs[i]);
    m_loaded.assign(m_cores.size(), false);
    for (std::size_t i = 0; i < programs.size(); ++i) {
        m_cores[i]->load(*programs[i]);
        m_loaded[i] = true;
    }
    reset_syncs();
}

void chip::set_timeline(timeline* t) {
    for (std::size_t i = 0; i < m_cores.size(); ++i) {
        if (t) t->group("NeuronCore " + std::to_string(i));
        m_cores[i]->set_timeline(t);
    }
}

void chip::run() {
    for (std::size_t i = 0; i < m_cores.size(); ++i)
        if (m_loaded[i]) m_cores[i]->prepare_run();
    sc_core::sc_start();
    neuron_core::back_on_main_stack();
    std::vector<std::string> stuck;  // cores at a barrier others never reach
    for (const auto& s : m_syncs)
        for (const auto& w : s->waiting())
            stuck.push_back(w);
    if (!stuck.empty()) {
        std::string msg = "deadlock: the cores' core_barrier counts differ:";
        for (const auto& w : stuck)
            msg += "\n  " + w;
        for (auto& c : m_cores)
            c->stop();
        throw deadlock_error(msg);
    }
    for (std::size_t i = 0; i < m_cores.size(); ++i)
        if (m_loaded[i]) m_cores[i]->finish(m_cores[i]->last_completion());
}

void chip::report(stats_tree& stats) const {
    std::vector<std::size_t> ran;
    for (std::size_t i = 0; i < m_cores.size(); ++i)
        if (m_loaded[i]) ran.push_back(i);
    std::vector<stats_tree> each(m_cores.size());
    std::size_t slowest = ran.front();
    for (const std::size_t i : ran) {
        m_cores[i]->report(each[i]);
        if (each[i].get("total_time_ns") > each[slowest].get("total_time_ns")) slowest = i;
    }
    stats.add_all(each[slowest], "");  // the chip's time is its slowest core's
    stats.add("chip.active_cores", static_cast<double>(ran.size()), "count",
              "cores that ran the kernel at once");
    stats.add("chip.slowest_core", static_cast<double>(slowest), "index",
              "the core whose kernel ended last: the top-level figures are its");
    const double total = each[slowest].get("total_time_ns");
    for (std::size_t s = 0; s < m_stacks.size(); ++s) {
        std::uint64_t rd = 0, wr = 0;
        double busiest = 0;
        for (const auto& c : m_stacks[s]) {
            rd += c->read_bytes();
            wr += c->write_bytes();
            busiest = std::max(busiest, in_ns(c->port().busy_total()));
        }
        const std::string k = "chip.stacks.s" + std::to_string(s);
        stats.add(k + ".bytes", static_cast<double>(rd + wr), "B",
                  "bytes read and written on the stack by all its cores");
        stats.add(k + ".bandwidth_gbps", total > 0 ? (rd + wr) / total : 0, "GB/s",
                  "those bytes over the chip's kernel time");
        stats.add(k + ".busiest_channel_ns", busiest, "ns", "busy time of its busiest channel");
    }
    for (const std::size_t i : ran)
        stats.add_all(each[i], "cores.c" + std::to_string(i) + ".");
}

}  // namespace trn

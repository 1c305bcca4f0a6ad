#include "platforms/neuron_core.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include "core/error.h"
#include "program/race_check.h"
#include "workloads/builder/kernel_builder.h"

namespace trn {

namespace {

// The kernel launch's keys: the runtime's cost before the first instruction, by SDK (read by
// neuron_core alone).
void declare_launch_params(param_registry& r) {
    r.add({"runtime.sdk", param_kind::integer, "2025",
           "year of the Neuron SDK whose runtime launches the kernel: 2024 or earlier pays "
           "core.launch_overhead_2024, a later one core.launch_overhead (neuron-bench's latency "
           "includes the runtime's launch)",
           "nki.benchmark API reference (neuron-bench measures more than the device latency)", 2019,
           2100});
    r.add(param_decl{"core.launch_overhead", param_kind::time, "15us",
                     "fixed kernel launch cost before the first instruction issues, under the "
                     "2025 Neuron SDK's runtime and later",
                     "calibrated", 0, 1e12}
              .calibrated(1e3, 30e3,
                          "at most the smallest measured kernel (AP6 14 us, W4 15 us), at least "
                          "a semaphore round trip"));
    r.add(param_decl{"core.launch_overhead_2024", param_kind::time, "15us",
                     "fixed kernel launch cost before the first instruction issues, under the "
                     "2024 Neuron SDK's runtime (runtime.sdk 2024 or earlier)",
                     "calibrated", 0, 1e12}
              .calibrated(1e3, 30e3,
                          "at most the smallest measured kernel (V4 19 us, a single "
                          "load-add-store), at least a semaphore round trip"));
}

}  // namespace

void neuron_core::declare_params(param_registry& r) {
    declare_launch_params(r);
    engine::declare_params(r);
    tensor_engine::declare_params(r);
    dma_engine::declare_params(r);
    hbm_channel::declare_params(r);
    onchip_bank::declare_params(r);
    kernel_builder::declare_params(r);
}

namespace {

// The launch cost of the runtime of the SDK the config names (both keys are read, so each is
// checked whichever applies).
double launch_overhead(const config& cfg) {
    const double current = cfg.time_ns("core.launch_overhead");
    const double before_2025 = cfg.time_ns("core.launch_overhead_2024");
    return cfg.integer("runtime.sdk") <= 2024 ? before_2025 : current;
}

}  // namespace

neuron_core::neuron_core(const sc_core::sc_module_name& name, const config& cfg, bool functional,
                         const core_wiring* wiring)
    : sc_core::sc_module(name),
      m_functional(functional),
      m_in_chip(wiring != nullptr),
      m_launch(ns(launch_overhead(cfg))),
      m_router("router", cfg) {
    cfg.text("name");
    m_limits.partitions = static_cast<std::uint32_t>(cfg.integer("core.sbuf.partitions"));
    m_limits.sbuf_partition_bytes = cfg.size("core.sbuf.partition_size");
    const auto psum_banks = static_cast<std::size_t>(cfg.integer("core.psum.banks"));
    const std::uint64_t bank_bytes = cfg.size("core.psum.bank_size");
    m_limits.psum_partition_bytes = psum_banks * bank_bytes;
    if (static_cast<std::size_t>(cfg.integer("core.psum.tile_banks")) > psum_banks)
        throw user_error("config: core.psum.tile_banks (" +
                         std::to_string(cfg.integer("core.psum.tile_banks")) +
                         ") must be at most core.psum.banks (" + std::to_string(psum_banks) + ")");
    m_limits.hbm_bytes = cfg.size("core.hbm.size");
    m_limits.dma_queues = static_cast<std::size_t>(cfg.integer("core.dma.queues"));
    m_limits.isa_version = static_cast<int>(cfg.integer("core.isa_version"));
    m_limits.dma_priority_levels =
        static_cast<std::uint32_t>(cfg.integer("core.dma.priority_levels"));
    if (m_limits.sbuf_partition_bytes > address_map::partition_stride ||
        m_limits.psum_partition_bytes > address_map::partition_stride)
        throw user_error(
            "config: core.sbuf.partition_size and core.psum.banks x "
            "core.psum.bank_size must be at most 1MiB (the address map's partition "
            "stride)");

    m_debug.bind(m_router.in);
    const auto channels = static_cast<std::size_t>(cfg.integer("core.hbm.channels"));
    if (wiring) {
        m_stack = wiring->hbm;
        m_router.set_hbm_base(wiring->hbm_base);
    } else {
        for (std::size_t c = 0; c < channels; ++c) {
            m_hbm.push_back(
                std::make_unique<hbm_channel>(("hbm" + std::to_string(c)).c_str(), cfg));
            m_stack.push_back(m_hbm.back().get());
        }
    }
    for (hbm_channel* c : m_stack)
        m_router.hbm.bind(c->in);
    m_router.set_hbm_channels({m_stack.begin(), m_stack.end()});
    m_sbuf = std::make_unique<onchip_bank>("sbuf", address_map::sbuf_base, m_limits.partitions,
                                           m_limits.sbuf_partition_bytes, false);
    m_router.sbuf.bind(m_sbuf->in);
    const bool conflicts = cfg.boolean("core.psum.bank_conflicts");
    for (std::size_t b = 0; b < psum_banks; ++b) {
        m_psum.push_back(std::make_unique<onchip_bank>(("psum" + std::to_string(b)).c_str(),
                                                       address_map::psum_base + b * bank_bytes,
                                                       m_limits.partitions, bank_bytes, conflicts));
        m_router.psum.bind(m_psum.back()->in);
    }
    // Every engine group a transfer of this core can be placed on; with hardware DGE only the
    // first, its own, is used (set_hardware_dge): the others are its HBM-stack partner's.
    m_dma_groups = static_cast<std::size_t>(cfg.integer("core.dma.engine_groups"));
    const auto dma_engines =
        static_cast<std::size_t>(cfg.integer("core.dma.engines")) * m_dma_groups;
    for (std::size_t e = 0; e < dma_engines; ++e) {
        m_dma_engines.push_back(
            std::make_unique<dma_engine>(("dma" + std::to_string(e)).c_str(), cfg));
        m_dma_engines.back()->out.bind(m_router.in);
    }
    for (std::size_t q = 0; q < m_limits.dma_queues; ++q) {
        m_dma_queues.push_back(std::make_unique<dma_queue>(("q" + std::to_string(q)).c_str(), cfg,
                                                           m_sems, q, functional));
        m_router.doorbell.bind(m_dma_queues.back()->doorbell);
        m_dma_queues.back()->mem.bind(m_router.in);
        for (auto& e : m_dma_engines)
            m_dma_queues.back()->engines.bind(e->in);
    }
    set_hardware_dge(cfg.boolean("core.dma.hardware_dge"));
    if (m_limits.dma_priority_levels > 1) {  // DMA quality of service: strict priority
        m_dma_arbiter = std::make_unique<dma_arbiter>("dma_arbiter");
        for (auto& q : m_dma_queues)
            q->set_arbiter(m_dma_arbiter.get());
    }
    auto pe = std::make_unique<tensor_engine>("pe", cfg, m_sems, functional);
    m_pe = pe.get();
    m_engines.push_back(std::move(pe));
    for (auto kind : {engine_kind::dve, engine_kind::act, engine_kind::pool, engine_kind::sp})
        m_engines.push_back(
            std::make_unique<engine>(engine_name(kind), kind, cfg, m_sems, functional));
    for (auto& e : m_engines)
        e->out.bind(m_router.in);
    if (m_pe->rows() > m_limits.partitions)
        throw user_error("config: core.pe.rows (" + std::to_string(m_pe->rows()) +
                         ") cannot exceed core.sbuf.partitions (" +
                         std::to_string(m_limits.partitions) +
                         "): the array contracts over SBUF partitions");
}

void neuron_core::set_timeline(timeline* t) {
    m_timeline = t;
    if (t) {
        m_timeline_group = t->current_group();
        m_activity.keep_all();  // the path's every stretch is drawn
    }
    for (auto& e : m_engines)
        e->set_timeline(t);
    for (auto& q : m_dma_queues)
        q->set_timeline(t);
    for (std::size_t e = 0; e < m_dma_engines.size(); ++e)
        m_dma_engines[e]->set_timeline(e < m_dma_in_use ? t : nullptr);
}

void neuron_core::set_hardware_dge(bool on) {
    const auto per_group = m_dma_engines.size() / m_dma_groups;
    m_hardware_dge = on;
    m_dma_in_use = on ? per_group : m_dma_engines.size();
    std::vector<dma_engine*> engines;
    for (std::size_t e = 0; e < m_dma_in_use; ++e)
        engines.push_back(m_dma_engines[e].get());
    for (auto& q : m_dma_queues)
        q->set_engines(engines);
}

program_limits neuron_core::limits() const {
    return m_limits;
}

void neuron_core::check(const program& p) const {
    validate_program(p, m_limits);
    // A hand-written trace must order every pair of accesses to shared memory itself.
    if (p.origin) check_no_races(p);
    for (const auto e : all_engines) {
        const auto& stream = p.engines[std::size_t(e)];
        for (std::size_t i = 0; i < stream.size(); ++i)
            check_on_engine(e, i, stream[i]);
    }
}

void neuron_core::check_on_engine(engine_kind e, std::size_t index, const instruction& ins) const {
    const std::string why = m_engines[std::size_t(e)]->check(ins);
    if (!why.empty())
        throw user_error(std::string(engine_name(e)) + " instruction " + std::to_string(index) +
                         " (" + opcode_name(ins.op) + "): " + why);
}

void neuron_core::check_entry(engine_kind e, std::size_t index, const instruction& ins) const {
    const auto where = [&] {
        return std::string(engine_name(e)) + " instruction " + std::to_string(index) + " (" +
               opcode_name(ins.op) + ")";
    };
    check_instruction(ins, e, m_limits, m_limits.hbm_bytes, std::cref(where));
    check_on_engine(e, index, ins);
}

void neuron_core::check_alone(engine_kind e, const instruction& ins) const {
    const auto where = [&] { return std::string(opcode_name(ins.op)) + " on " + engine_name(e); };
    check_instruction(ins, e, m_limits, m_limits.hbm_bytes, std::cref(where));
    const std::string why = m_engines[std::size_t(e)]->check(ins);
    if (!why.empty()) throw user_error(where() + ": " + why);
}

void neuron_core::check_alone(const dma_transfer& t) const {
    check_transfer(t, m_limits, m_limits.hbm_bytes, [] { return std::string("a DMA transfer"); });
}

void neuron_core::check_entry(std::size_t q, std::size_t index, const dma_transfer& t) const {
    const auto where = [&] {
        return "q" + std::to_string(q) + " transfer " + std::to_string(index);
    };
    check_transfer(t, m_limits, m_limits.hbm_bytes, std::cref(where));
}

void neuron_core::load(const program& p) {
    if (m_stopped)
        throw user_error(
            "a deadlock stopped this platform's engines in the middle of a program: run the "
            "next kernel in a new process");
    check(p);
    m_whole = std::make_unique<whole_program>(p);
    load(*m_whole);
}

void neuron_core::load(program_source& source) {
    if (m_stopped)
        throw user_error(
            "a deadlock stopped this platform's engines in the middle of a program: run the "
            "next kernel in a new process");
    if (&source != m_whole.get()) m_whole.reset();
    m_program = &source;
    m_begin = sc_core::sc_time_stamp();
    m_router.reset_stats();
    for (hbm_channel* c : m_stack)
        c->reset_stats();
    m_sbuf->reset_stats();
    for (auto& b : m_psum)
        b->reset_stats();
    for (auto& e : m_dma_engines)
        e->reset_stats();
    m_sems.resize(engine_count + source.queue_count());
    m_activity.launch_begin = tick(m_begin.value());
    m_activity.launch_end = tick((m_begin + m_launch).value());
    // (a core of a chip meets the others at its barriers: its log keeps every record)
    m_activity.reset(source.queue_count(), !m_in_chip && !m_timeline && !m_keep_log,
                     sc_core::sc_get_time_resolution().to_seconds() * 1e9);
    for (auto& e : m_engines) {
        e->set_activity_log(&m_activity);
        e->load(&source, m_launch);
    }
    for (auto& q : m_dma_queues) {
        q->set_activity_log(&m_activity);
        q->load(&source);
    }
}

void neuron_core::write_inputs() {
    if (m_functional && m_program)
        for (const auto& r : m_program->regions())
            if (r.input) write_hbm(r.offset, region_initial_bytes(r));
}

void neuron_core::start_of_simulation() {
    // The router's multi-passthrough initiator sockets resolve their targets only at the end of
    // elaboration: the first program's inputs are written here, later programs' in run().
    write_inputs();
    m_elaborated = true;
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
// Debian's SystemC tells ASan when it switches to a process's coroutine stack, but its switch back
// to the main stack passes no stack (the main coroutine has none of its own), and a process that
// ends switches away unannounced: after a simulation ASan does not know it is on the main stack
// again, and an exception thrown then is reported as a stack overflow. This tells it the truth.
void announce_main_stack() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* base = nullptr;
    std::size_t size = 0;
    const bool known = pthread_attr_getstack(&attr, &base, &size) == 0;
    pthread_attr_destroy(&attr);
    if (!known) return;
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, base, size);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}
#else
void announce_main_stack() {}
#endif

}  // namespace

void neuron_core::run() {
    prepare_run();
    if (!m_progress) {
        sc_core::sc_start();
    } else {
        // Simulate in slices so that long runs can report progress on stderr.
        using clock = std::chrono::steady_clock;
        const auto t0 = clock::now();
        auto next = t0 + std::chrono::seconds(2);
        bool shown = false;
        while (sc_core::sc_pending_activity()) {
            sc_core::sc_start(ns(100e3), sc_core::SC_EXIT_ON_STARVATION);
            const auto now = clock::now();
            if (now < next) continue;
            next = now + std::chrono::milliseconds(500);
            std::uint64_t done = 0;
            for (const auto& e : m_engines)
                done += e->instructions();
            for (const auto& q : m_dma_queues)
                done += q->transfers();
            const double wall = std::chrono::duration<double>(now - t0).count();
            const std::size_t total = m_program->size_hint();
            std::fprintf(
                stderr, "\rsim: %llu of %s instructions, %.3f us simulated, %.2f M/s ",
                static_cast<unsigned long long>(done), total ? std::to_string(total).c_str() : "?",
                (sc_core::sc_time_stamp() - m_begin).to_seconds() * 1e6, done / wall / 1e6);
            shown = true;
        }
        if (shown) std::fprintf(stderr, "\r%*s\r", 72, "");
    }
    announce_main_stack();
    finish(sc_core::sc_time_stamp());
}

void neuron_core::back_on_main_stack() {
    announce_main_stack();
}

sc_core::sc_time neuron_core::last_completion() const {
    return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(m_activity.last_completion()));
}

void neuron_core::finish(const sc_core::sc_time& end) {
    m_end = end;
    if (m_program) m_program->end_of_run();
    if (m_program) {
        std::vector<critical_segment> segments;
        m_critical = analyse_critical_path(m_activity, m_program->sources().names.size(),
                                           m_timeline ? &segments : nullptr);
        if (m_timeline) {  // the path as a track: what held the kernel, when
            std::sort(segments.begin(), segments.end(),
                      [](const auto& a, const auto& b) { return a.from_ns < b.from_ns; });
            const std::size_t track = m_timeline->track("critical path", m_timeline_group);
            for (const auto& seg : segments)
                m_timeline->slice(track, seg.resource, seg.from_ns, seg.to_ns - seg.from_ns,
                                  "{\"event\":\"" + seg.event + "\"}");
        }
    }
    for (const auto& e : m_engines)
        if (!e->fault().empty())  // (the engines finished: the platform can run again)
            throw user_error(name() + std::string(": ") + e->fault());
    std::vector<std::string> stuck = m_sems.blocked_waiters();
    bool unfinished = !stuck.empty();
    for (const auto& e : m_engines)
        unfinished |= !e->finished();
    if (unfinished) {
        std::string msg = "deadlock: the program cannot finish; blocked at " +
                          std::to_string(m_end.to_seconds() * 1e6) + " us:";
        for (const auto& s : stuck)
            msg += "\n  " + s;
        m_stopped = true;
        throw deadlock_error(msg);
    }
}

std::vector<std::uint8_t> neuron_core::read_hbm(std::uint64_t offset, std::uint64_t bytes) {
    std::vector<std::uint8_t> out(bytes);
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(offset);
    t.set_data_ptr(out.data());
    t.set_data_length(static_cast<unsigned>(bytes));
    m_debug->transport_dbg(t);
    return out;
}

void neuron_core::write_hbm(std::uint64_t offset, const std::vector<std::uint8_t>& bytes) {
    std::vector<std::uint8_t> copy = bytes;
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_address(offset);
    t.set_data_ptr(copy.data());
    t.set_data_length(static_cast<unsigned>(copy.size()));
    m_debug->transport_dbg(t);
}

void neuron_core::report(stats_tree& s) const {
    const double total = kernel_time_ns();
    s.add("total_time_ns", total, "ns", "kernel time: launch overhead to last completion");
    s.add("total_time_us", total / 1e3, "us", "kernel time in microseconds");
    s.add("launch_overhead_ns", m_launch.to_seconds() * 1e9, "ns",
          "fixed launch cost included in total_time_ns");
    std::uint64_t simulated = 0;
    for (const auto& e : m_engines)
        simulated += e->instructions();
    for (const auto& q : m_dma_queues)
        simulated += q->transfers();
    s.add("instructions", static_cast<double>(simulated), "count",
          "engine instructions plus DMA transfers simulated");
    const double peak = m_pe->peak_flops_per_ns();
    s.add("mfu_pct", total > 0 ? 100.0 * m_pe->matmul_flops() / (total * peak) : 0, "%",
          "Tensor-engine matmul FLOPs / (kernel time x bf16 peak)");
    s.add("mfu_dtype_pct", total > 0 ? 100.0 * m_pe->ideal_ns() / total : 0, "%",
          "Tensor-engine matmul FLOPs / (kernel time x peak of the operands' dtype)");
    const double active = total - m_launch.to_seconds() * 1e9;
    for (const auto& e : m_engines)
        e->report(s, std::string("engines.") + engine_name(e->engine_type()), active);
    report_dma(s, total);
    report_hbm(s, total);
    s.add("sbuf.high_water_bytes",
          static_cast<double>(m_program ? m_program->sbuf_high_water() : 0), "B",
          "highest SBUF byte used in any partition");
    m_router.report(s);
    if (m_program) {
        const critical_path& cp = m_critical;
        s.add("critical_path.total_ns", cp.total_ns, "ns",
              "length of the chain of waits that set the kernel time");
        for (const auto& [r, ns_on] : cp.ns_by_resource) {
            std::string key = r;
            std::replace(key.begin(), key.end(), ' ', '_');
            s.add("critical_path." + key + "_ns", ns_on, "ns",
                  "time of the critical path spent on " + r);
        }
        s.add_text("critical_path.bound", cp.bound(), "the resource with most critical-path time");
        s.add("critical_path.bound_pct", cp.bound_pct(), "%",
              "that resource's share of the critical path");
        add_limiter_stats(s);
        if (!m_program->sources().empty()) add_line_stats(s);
    }
}

void neuron_core::report_dma(stats_tree& s, double total) const {
    std::uint64_t transfers = 0, bytes = 0, rows = 0;
    for (const auto& q : m_dma_queues) {
        transfers += q->transfers();
        bytes += q->bytes();
    }
    double dma_busy = 0, dma_busy_max = 0;
    for (std::size_t i = 0; i < m_dma_in_use; ++i) {
        const dma_engine* e = m_dma_engines[i].get();
        const double b = e->port().busy_total().to_seconds() * 1e9;
        dma_busy += b;
        dma_busy_max = std::max(dma_busy_max, b);
        rows += e->rows();
    }
    s.add("dma.transfers", static_cast<double>(transfers), "count",
          "DMA transfers (one per load, store or copy)");
    s.add("dma.bytes", static_cast<double>(bytes), "B", "bytes moved by DMA");
    s.add("dma.descriptors", static_cast<double>(rows), "count",
          "rows (descriptors) processed by the DMA engines");
    s.add("dma.bandwidth_gbps", total > 0 ? bytes / total : 0, "GB/s",
          "achieved DMA bandwidth over the kernel time");
    s.add("dma.engine_busy_ns", dma_busy, "ns", "busy time summed over DMA engines");
    s.add("dma.busiest_engine_ns", dma_busy_max, "ns", "busy time of the busiest DMA engine");
    for (std::size_t i = 0; i < m_dma_in_use; ++i)
        m_dma_engines[i]->report(s, "dma.engines.e" + std::to_string(i));
    for (std::size_t q = 0; q < m_dma_queues.size() && m_program && q < m_program->queue_count();
         ++q)
        m_dma_queues[q]->report(s, "dma.queues.q" + std::to_string(q));
}

void neuron_core::report_hbm(stats_tree& s, double total) const {
    std::uint64_t rd = 0, wr = 0, misses = 0;
    double hbm_busy = 0, act_ns = 0, bw_ns = 0;
    for (const hbm_channel* c : m_stack) {
        rd += c->read_bytes();
        wr += c->write_bytes();
        misses += c->misses();
        hbm_busy = std::max(hbm_busy, c->port().busy_total().to_seconds() * 1e9);
        act_ns += c->activation_bound_ns();
        bw_ns += c->bandwidth_bound_ns();
    }
    const bool shared_hbm = m_hbm.empty();  // a chip's stack, serving other cores too
    if (shared_hbm) {                       // this core's own bytes
        rd = m_router.hbm_read_bytes();
        wr = m_router.hbm_write_bytes();
    }
    // With a stack shared by several running cores, the channels' figures are the stack's.
    const std::string of = shared_hbm ? " (of the core's HBM stack: every core on it)" : "";
    s.add("hbm.page_misses", static_cast<double>(misses), "count",
          "accesses to a page not open in its bank" + of);
    s.add("hbm.busiest_channel_ns", hbm_busy, "ns", "busy time of the busiest HBM channel" + of);
    for (std::size_t i = 0; i < m_stack.size(); ++i)
        m_stack[i]->report(s, "hbm.channels.c" + std::to_string(i), of);
    s.add("hbm.read_bytes", static_cast<double>(rd), "B", "bytes read from HBM");
    s.add("hbm.write_bytes", static_cast<double>(wr), "B", "bytes written to HBM");
    s.add("hbm.bandwidth_gbps", total > 0 ? (rd + wr) / total : 0, "GB/s",
          "achieved HBM bandwidth over the kernel time");
    s.add("hbm.activation_bound_pct", act_ns + bw_ns > 0 ? 100.0 * act_ns / (act_ns + bw_ns) : 0,
          "%", "share of HBM channel service time set by page activations, not bandwidth" + of);
}

namespace {

// A place's key in the stats: its text without folders, each character other than a letter,
// digit, '-' or '_' made '_' ("kernels/matmul.py:147" -> "matmul_py_147", "load lhsT_tile" ->
// "load_lhsT_tile"), so that two runs' lines match by what they are, not by the order their
// places were met; a place whose key is taken (or empty) gets the first free "_2", "_3"...
std::string place_key(const std::string& place, std::set<std::string>& used) {
    const auto colon = place.rfind(':');
    const auto slash = place.rfind('/', colon == std::string::npos ? place.npos : colon);
    std::string key = slash == std::string::npos ? place : place.substr(slash + 1);
    for (char& c : key)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    if (key.empty()) key = "place";
    std::string out = key;
    for (int n = 2; used.count(out); ++n)
        out = key + "_" + std::to_string(n);
    used.insert(out);
    return out;
}

// A place as the stats show it: a FILE:LINE whose file lies below the current folder relative
// to it ("/home/me/k/matmul.py:147" run from /home/me -> "k/matmul.py:147"), so that stats
// files hold no path of the machine that made them where they need not; others as they are.
std::string portable_place(const std::string& place) {
    namespace fs = std::filesystem;
    const auto colon = place.rfind(':');
    if (colon == std::string::npos || place.empty() || place[0] != '/') return place;
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (ec) return place;
    const fs::path rel = fs::path(place.substr(0, colon)).lexically_relative(cwd);
    if (rel.empty() || *rel.begin() == "..") return place;
    return rel.generic_string() + place.substr(colon);
}

}  // namespace

void neuron_core::add_line_stats(stats_tree& s) const {
    const program_sources& src = m_program->sources();
    const std::size_t places = src.names.size() + 1;
    const double total = s.get("total_time_ns");
    std::size_t shown = 0;
    std::set<std::string> used{"none", "count"};
    // What bounds the kernel without a line's work: each throughput resource's busy time less
    // the line's part of it (an engine's own figure; for the busiest DMA engine and HBM channel,
    // their busy time in proportion to the line's DMA bytes).
    std::map<std::string, double> busy_of;
    for (const auto& e : m_engines)
        busy_of[engine_name(e->engine_type())] = e->busy().to_seconds() * 1e9;
    busy_of["dma engines"] = s.get("dma.busiest_engine_ns");
    busy_of["hbm"] = s.get("hbm.busiest_channel_ns");
    const double dma_bytes = s.get("dma.bytes"), launch = s.get("launch_overhead_ns");
    for (std::size_t at = 0; at < places; ++at) {
        std::uint64_t instructions = 0, transfers = 0, bytes = 0;
        double busy = 0, wait = 0;
        for (const auto& e : m_engines) {
            const place_cost c = e->by_place(at);
            instructions += c.instructions;
            busy += c.busy_ns;
            wait += c.wait_ns;
        }
        for (const auto& q : m_dma_queues) {
            transfers += q->by_place(at).first;
            bytes += q->by_place(at).second;
        }
        double path = 0, most = 0;
        std::string bound;
        if (at < m_critical.ns_by_place.size())
            for (const auto& [r, ns] : m_critical.ns_by_place[at]) {
                path += ns;
                if (ns > most) {
                    most = ns;
                    bound = r;
                }
            }
        if (instructions == 0 && transfers == 0 && path <= 0) continue;
        ++shown;
        const std::string k = "lines." + (at == 0 ? "none" : place_key(src.names[at - 1], used));
        s.add_text(k + ".place", at == 0 ? "(none)" : portable_place(src.names[at - 1]),
                   at == 0 ? "the launch, and instructions and transfers with no source line"
                           : "the kernel's source line (FILE:LINE) or the driver's step");
        s.add(k + ".instructions", static_cast<double>(instructions), "count",
              "engine instructions from it (a loop body's line: all its iterations)");
        s.add(k + ".busy_ns", busy, "ns", "their data-path time, summed over engines");
        s.add(k + ".wait_ns", wait, "ns",
              "engines' idle time waiting on semaphores before them, summed over engines (it "
              "can exceed the kernel time; per engine: engines.E.wait_ns)");
        double most_wait = 0;
        std::string most_engine = "-";
        for (const auto& e : m_engines) {
            const place_cost c = e->by_place(at);
            if (c.instructions == 0) continue;
            const std::string ek = k + ".engines." + engine_name(e->engine_type());
            s.add(ek + ".instructions", static_cast<double>(c.instructions), "count",
                  "instructions on that engine");
            s.add(ek + ".busy_ns", c.busy_ns, "ns", "their data-path time");
            s.add(ek + ".wait_ns", c.wait_ns, "ns",
                  "that engine's idle time waiting on semaphores before them");
            if (c.wait_ns > most_wait) {
                most_wait = c.wait_ns;
                most_engine = engine_name(e->engine_type());
            }
        }
        s.add(k + ".wait_most_ns", most_wait, "ns",
              "the longest of its engines' waits (at most the kernel time)");
        s.add_text(k + ".wait_most_engine", most_engine, "the engine that waited longest");
        s.add(k + ".dma_transfers", static_cast<double>(transfers), "count", "DMA transfers");
        s.add(k + ".dma_bytes", static_cast<double>(bytes), "B", "bytes they moved");
        s.add(k + ".critical_path_ns", path, "ns", "its time on the critical path");
        s.add(k + ".critical_path_pct", total > 0 ? 100.0 * path / total : 0, "%",
              "its share of the kernel time (the lines' shares add up to 100)");
        double floor = 0;  // the busiest resource left without this line's work
        for (const auto& [r, ns] : busy_of) {
            double mine = 0;
            if (r == "dma engines" || r == "hbm")
                mine = dma_bytes > 0 ? ns * static_cast<double>(bytes) / dma_bytes : 0;
            else
                for (const auto& e : m_engines)
                    if (r == engine_name(e->engine_type())) mine = e->by_place(at).busy_ns;
            floor = std::max(floor, ns - mine);
        }
        const double saving =
            at == 0 ? std::min(path, launch) : total - std::max(total - path, launch + floor);
        s.add(k + ".saving_pct", total > 0 ? 100.0 * std::max(saving, 0.0) / total : 0, "%",
              "the kernel time that would save were its work free, at most (as limit.*: its "
              "critical-path time, bounded by the busiest resource left)");
        if (bound == "hbm")  // set by page activations or by bandwidth (the kernel's HBM)
            bound += s.get("hbm.activation_bound_pct") > 50 ? " (activations)" : " (bandwidth)";
        if (!bound.empty())
            s.add_text(k + ".bound", bound, "the resource with most of its critical-path time");
    }
    s.add("lines.count", static_cast<double>(shown), "count",
          "source lines (or driver steps) with instructions, transfers or critical-path time");
}

void neuron_core::add_limiter_stats(stats_tree& s) const {
    std::map<std::string, double> busy;
    for (const auto& e : m_engines) {
        const char* name = engine_name(e->engine_type());
        busy[name] = s.get(std::string("engines.") + name + ".busy_ns");
    }
    busy["dma engines"] = s.get("dma.busiest_engine_ns");
    busy["hbm"] = s.get("hbm.busiest_channel_ns");
    const double total = s.get("total_time_ns");
    const limiter_estimate lim =
        estimate_limiter(total, s.get("launch_overhead_ns"), m_critical.ns_by_resource, busy);
    // HBM time is set by page activations or by bandwidth: say which, where HBM limits.
    std::string by = lim.by;
    std::string hbm_part = lim.by;
    if (lim.by == "data movement") {  // the group's largest share of the critical path
        double most = 0;
        for (const auto& [r, ns] : m_critical.ns_by_resource)
            if (moves_data(r) && ns > most) {
                most = ns;
                hbm_part = r;
            }
        by += " (" + hbm_part + ")";
    }
    if (hbm_part == "hbm") {
        const char* why = s.get("hbm.activation_bound_pct") > 50 ? "activations" : "bandwidth";
        by = lim.by == "hbm" ? std::string("hbm (") + why + ")"
                             : std::string("data movement (hbm ") + why + ")";
    }
    s.add_text("limit.by", by,
               "what would speed the kernel up most, were it free (an estimate from the critical "
               "path and each resource's busy time; docs/architecture.md)");
    s.add("limit.saving_pct", total > 0 ? 100.0 * lim.saving_ns / total : 0, "%",
          "the kernel time that would save, at most");
    for (const auto& [r, ns] : lim.savings) {
        std::string key = r;
        std::replace(key.begin(), key.end(), ' ', '_');
        s.add("limit.savings." + key + "_pct", total > 0 ? 100.0 * ns / total : 0, "%",
              "the kernel time freeing " + r + " would save, at most");
    }
}

}  // namespace trn

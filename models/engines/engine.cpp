#include "engines/engine.h"

#include <nlohmann/json.hpp>

#include "program/trace.h"

#include <cstring>

#include "isa/opcode_row.h"
#include "isa/semantics.h"

namespace trn {

namespace {

struct engine_defaults {
    const char* name;
    const char* clock;
    const char* clock_source;
    const char* latency;
    const char* latency_source;
};

const engine_defaults defaults[] = {
    {"dve", "1.12GHz", "hardware-facts 1a (VectorE 1.12 GHz NC-v2, 0.96 GHz NC-v3)", "100",
     "hardware-facts 2 (static instruction overhead of 100 engine cycles)"},
    {"act", "1.4GHz", "hardware-facts 1a (ScalarE 1.4 GHz NC-v2, 1.2 GHz NC-v3)", "200",
     "hardware-facts 3.1 (dependent ACTIVATE start-to-start 264 cycles = MIN_II 64 + 200)"},
    {"pool", "1.4GHz", "hardware-facts 1a (GpSimdE 1.4 GHz NC-v2, 1.2 GHz NC-v3)", "0",
     "hardware-facts 2 (GPSIMD_START 150 cycles is in the cost table)"},
    {"sp", "1.4GHz", "hardware-facts 1a (base clock 1.4 GHz NC-v2, 1.2 GHz NC-v3)", "0",
     "hardware-facts 1e (control instructions only)"},
};

}  // namespace

void engine::declare_params(param_registry& r) {
    r.add({"core.isa_version", param_kind::integer, "2",
           "NeuronCore version whose instruction costs apply (2: Trn1, 3: Trn2, 4: Trn3, which "
           "takes NC-v3's costs at its own clocks)",
           "hardware-facts 2, 1f", 2, 4});
    r.add({"core.min_ii", param_kind::real, "64",
           "minimum instruction initiation interval of DVE/ACT/Pool, in engine cycles",
           "hardware-facts 2 (MIN_II ~ 64 cycles)", 1, 1e6});
    r.add(param_decl{"core.dve.reciprocal_cycles", param_kind::real, "8",
                     "Vector-engine cycles per element of nisa.reciprocal (the reference: "
                     "max(MIN_II, 8N))",
                     "hardware-facts 2", 0.1, 64}
              .calibrated(1, 8,
                          "at least the Scalar engine's rate of one element a cycle, at most the "
                          "reference's 8"));
    for (const auto& d : defaults) {
        const std::string base = std::string("core.") + d.name;
        r.add({base + ".clock", param_kind::frequency, d.clock,
               std::string("clock of the ") + d.name + " engine", d.clock_source, 1e-6, 100});
        r.add({base + ".latency", param_kind::real, d.latency,
               "cycles from the data path freeing to the result being committed (semaphore "
               "signalled); hidden unless the next instruction depends on this one",
               d.latency_source, 0, 1e6});
    }
}

engine_base::engine_base(const sc_core::sc_module_name& name, engine_kind kind, const config& cfg,
                         semaphore_bank& sems, bool functional)
    : sc_core::sc_module(name),
      m_kind(kind),
      m_functional(functional),
      m_indirect(cfg.boolean("core.sbuf.indirect")),
      m_sems(sems) {
    const std::string base = std::string("core.") + engine_name(kind);
    m_clock_ghz = cfg.frequency_ghz(base + ".clock");
    m_latency = ns(cfg.real(base + ".latency") / m_clock_ghz);
    m_trans.set_extension(&m_ext);
    SC_THREAD(run);
}

engine_base::~engine_base() {
    m_trans.clear_extension(&m_ext);  // a payload frees the extensions it still holds
}

void engine_base::report(stats_tree& s, const std::string& base, double active) const {
    const double busy = m_busy.to_seconds() * 1e9;
    s.add(base + ".busy_ns", busy, "ns", "time the data path was occupied");
    s.add(base + ".instructions", static_cast<double>(instructions()), "count",
          "instructions executed");
    s.add(base + ".utilisation_pct", active > 0 ? 100.0 * busy / active : 0, "%",
          "busy time over kernel time after launch");
    s.add(base + ".stall_semaphore_ns", m_stall_sem.to_seconds() * 1e9, "ns",
          "data-path idle time waiting on semaphores (data dependencies)");
    s.add(base + ".stall_port_ns", m_stall_port.to_seconds() * 1e9, "ns",
          "data-path idle time waiting for a shared port or the pipeline");
    for (std::size_t op = 0; op < opcode_count; ++op) {
        const auto& n = m_by_opcode[op];
        if (n.first == 0) continue;
        const std::string k = base + ".opcodes." + opcode_name(static_cast<opcode>(op));
        s.add(k + ".count", static_cast<double>(n.first), "count", "instructions");
        s.add(k + ".busy_ns", n.second, "ns", "data-path time of those instructions");
    }
    for (std::size_t t = 0; t < dtype_count; ++t)
        if (m_busy_by_dtype[t] > 0)
            s.add(base + ".dtypes." + dtype_name(static_cast<dtype>(t)) + ".busy_ns",
                  m_busy_by_dtype[t], "ns",
                  "data-path time of the instructions computing on that dtype (their first "
                  "input's)");
    for (std::size_t sem = 0; sem < m_stall_by_sem.size(); ++sem)
        if (m_stall_by_sem[sem] > 0)
            s.add(base + ".stall_on." + semaphore_name(static_cast<sem_id>(sem)) + "_ns",
                  m_stall_by_sem[sem], "ns",
                  "data-path idle time waiting for that engine or DMA queue");
}

void engine_base::load(program_source* program, const sc_core::sc_time& start) {
    m_program = program;
    m_window = {};
    m_ended = false;
    m_by_place.assign(program ? program->sources().names.size() + 1 : 1, place_cost{});
    m_next = 0;
    m_busy = m_stall_sem = m_stall_port = sc_core::SC_ZERO_TIME;
    m_by_opcode.fill({0, 0.0});
    m_busy_by_dtype.fill(0.0);
    m_stall_by_sem.assign(m_sems.size(), 0.0);
    m_fault.clear();
    m_last_complete = m_busy_end = sim_time();
    reset();
    m_go.notify(start);
}

void engine_base::set_timeline(timeline* t) {
    m_timeline = t;
    if (t) m_track = t->track(engine_name(m_kind));
    m_background_track = 0;
}

sc_core::sc_time engine_base::access(tlm::tlm_command cmd, const operand& op, std::uint8_t* data,
                                     const sc_core::sc_time& at,
                                     const sc_core::sc_time& occupancy) {
    m_ext.initiator = static_cast<initiator_id>(m_kind);
    m_ext.rows = op.partitions;
    m_ext.row_bytes = op.span_bytes();
    m_ext.row_stride = row_stride_of(op);
    m_ext.occupancy = occupancy;
    m_trans.set_command(cmd);
    m_trans.set_address(address_of(op));
    m_trans.set_data_ptr(data);
    m_trans.set_data_length(static_cast<unsigned>(op.span_bytes() * op.partitions));
    sc_core::sc_time d = at;
    out->b_transport(m_trans, d);
    return d - occupancy;  // the start offset the port granted
}

namespace {

// Moves elements between an operand's packed form and its rows as they lie in memory.
void gather(const operand& op, const std::vector<std::uint8_t>& span, std::uint8_t* packed) {
    const std::size_t size = dtype_size(op.type), span_row = op.span_bytes();
    for (std::uint32_t r = 0; r < op.partitions; ++r)
        for (std::uint32_t e = 0; e < op.elems; ++e)
            std::memcpy(packed + (std::size_t{r} * op.elems + e) * size,
                        &span[r * span_row + std::size_t{e} * op.elem_stride * size], size);
}

void scatter(const operand& op, const std::uint8_t* packed, std::vector<std::uint8_t>& span) {
    const std::size_t size = dtype_size(op.type), span_row = op.span_bytes();
    for (std::uint32_t r = 0; r < op.partitions; ++r)
        for (std::uint32_t e = 0; e < op.elems; ++e)
            std::memcpy(&span[r * span_row + std::size_t{e} * op.elem_stride * size],
                        packed + (std::size_t{r} * op.elems + e) * size, size);
}

}  // namespace

void engine_base::debug_rows(tlm::tlm_command cmd, const operand& op) {
    m_ext.initiator = static_cast<initiator_id>(m_kind);
    m_ext.rows = op.partitions;
    m_ext.row_bytes = op.span_bytes();
    m_ext.row_stride = row_stride_of(op);
    m_ext.occupancy = sc_core::SC_ZERO_TIME;
    m_trans.set_command(cmd);
    m_trans.set_address(address_of(op));
    m_trans.set_data_ptr(m_span.data());
    m_trans.set_data_length(static_cast<unsigned>(m_span.size()));
    out->transport_dbg(m_trans);
}

void engine_base::peek(const operand& op, std::vector<std::uint8_t>& bytes) {
    m_span.resize(op.span_bytes() * op.partitions);
    debug_rows(tlm::TLM_READ_COMMAND, op);
    bytes.resize(op.bytes());
    gather(op, m_span, bytes.data());
}

void engine_base::poke(const operand& op, const std::vector<std::uint8_t>& bytes) {
    m_span.resize(op.span_bytes() * op.partitions);
    if (op.elem_stride != 1) debug_rows(tlm::TLM_READ_COMMAND, op);  // the rows between kept
    scatter(op, bytes.data(), m_span);
    debug_rows(tlm::TLM_WRITE_COMMAND, op);
}

std::string engine_base::indirect_refused(const instruction& ins) {
    return std::string("tensor indirection (") + operand_slot_name(ins.indirect[0].slot) +
           "_index=) needs NeuronCore-v4 (core.sbuf.indirect=false)";
}

sc_core::sc_time engine_base::access_indirect(tlm::tlm_command cmd, const instruction& ins,
                                              operand_slot slot, std::vector<std::uint8_t>* data,
                                              const sc_core::sc_time& at,
                                              const sc_core::sc_time& occupancy) {
    const operand& op = ins.at(slot);
    const indirection* t = ins.indirection_of(slot);
    if (!t) return access_operand(cmd, op, data, at, occupancy);
    const sc_core::sc_time offsets =
        access(tlm::TLM_READ_COMMAND, t->index, nullptr, at, sc_core::SC_ZERO_TIME);
    const sc_core::sc_time start = access(cmd, op, nullptr, std::max(at, offsets), occupancy);
    if (data) move_indirect(cmd, ins, *t, *data);
    return start;
}

void engine_base::peek_slot(const instruction& ins, operand_slot slot,
                            std::vector<std::uint8_t>& out) {
    if (const indirection* t = ins.indirection_of(slot))
        move_indirect(tlm::TLM_READ_COMMAND, ins, *t, out);
    else
        peek(ins.at(slot), out);
}

void engine_base::move_indirect(tlm::tlm_command cmd, const instruction& ins, const indirection& t,
                                std::vector<std::uint8_t>& view) {
    // element i of each row is column offset(i) of the indexed tile
    const operand& op = ins.at(t.slot);
    peek(t.index, m_index);
    operand whole = op;
    whole.elems = t.extent;
    peek(whole, m_whole);
    const std::size_t size = dtype_size(op.type), index_size = dtype_size(t.index.type);
    const std::uint32_t group = indirection_group(m_kind);
    if (cmd == tlm::TLM_READ_COMMAND) view.assign(op.bytes(), 0);
    for (std::uint32_t i = 0; i < op.elems; ++i) {
        const auto [row, col] = indirection_position(i, group, t.index.elems);
        const double offset = load_element(
            &m_index[(std::size_t{row} * t.index.elems + col) * index_size], t.index.type);
        if (offset < 0 || offset >= t.extent) {
            if (m_fault.empty())
                m_fault = std::string(engine_name(m_kind)) + " instruction " +
                          std::to_string(m_next) + " (" + opcode_name(ins.op) + "): offset " +
                          std::to_string(static_cast<long long>(offset)) + " of its indirect " +
                          operand_slot_name(t.slot) + " (element " + std::to_string(i) +
                          ") is outside its " + std::to_string(t.extent) + " columns";
            continue;
        }
        const auto c = static_cast<std::size_t>(offset);
        for (std::uint32_t r = 0; r < op.partitions; ++r) {
            std::uint8_t* in_tile = &m_whole[(std::size_t{r} * t.extent + c) * size];
            std::uint8_t* in_view = &view[(std::size_t{r} * op.elems + i) * size];
            if (cmd == tlm::TLM_READ_COMMAND)
                std::memcpy(in_view, in_tile, size);
            else
                std::memcpy(in_tile, in_view, size);
        }
    }
    if (cmd == tlm::TLM_WRITE_COMMAND) poke(whole, m_whole);
}

sc_core::sc_time engine_base::access_operand(tlm::tlm_command cmd, const operand& op,
                                             std::vector<std::uint8_t>* data,
                                             const sc_core::sc_time& at,
                                             const sc_core::sc_time& occupancy) {
    if (!data) return access(cmd, op, nullptr, at, occupancy);
    if (cmd == tlm::TLM_READ_COMMAND) data->resize(op.bytes());
    if (op.elem_stride == 1) return access(cmd, op, data->data(), at, occupancy);
    std::vector<std::uint8_t> span(op.span_bytes() * op.partitions);
    if (cmd == tlm::TLM_WRITE_COMMAND) {  // read-modify-write of the rows between the elements
        std::vector<std::uint8_t> unused;
        peek(op, unused);
        span = m_span;
        scatter(op, data->data(), span);
    }
    const sc_core::sc_time start = access(cmd, op, span.data(), at, occupancy);
    if (cmd == tlm::TLM_READ_COMMAND) gather(op, span, data->data());
    return start;
}

void engine_base::run() {
    for (;;) {  // one program per go event: the platform can run several programs in turn
        sc_core::wait(m_go);
        if (m_program) run_stream();
    }
}

void engine_base::run_stream() {
    const char* stream_name = engine_name(m_kind);
    const sem_id own = semaphore_of_engine(m_kind);
    for (;;) {
        if (!m_window.holds(m_next) && !m_program->fetch_instruction(m_kind, m_next, m_window)) {
            m_ended = true;
            break;
        }
        const instruction& ins = m_window.at(m_next);
        m_window.prefetch(m_next + 1);
        const sc_core::sc_time t0 = sim_time();
        sem_id released_by = 0;
        bool waited = false;
        for (const auto& w : ins.waits) {
            if (m_sems.value(w.sem) < w.value) {  // it blocks: the latest so far released it
                released_by = w.sem;
                waited = true;
            }
            m_sems.wait_for(w.sem, w.value, stream_name, m_next);
        }
        // a core_barrier, once what it waits for is done (the writes it guards), signals the
        // other cores of the stack, then waits for theirs
        if (ins.op == opcode::core_barrier && m_sync) {
            const auto n = static_cast<std::size_t>(ins.imm);
            m_sync->arrive(m_sync_core, n);
            m_sync->wait_all(m_sync_core, n);
        }
        const sc_core::sc_time now = sim_time();
        // Data-path idle time: waiting for semaphores once the previous instruction's data path
        // had freed (a pipelined engine's thread may wait while that is still busy), then for
        // ports or the pipeline.
        const sc_core::sc_time free = std::max(t0, m_busy_end);
        const std::uint32_t at = m_window.place(m_next);
        if (at >= m_by_place.size()) m_by_place.resize(at + 1);  // a place named since load()
        place_cost& here = m_by_place[at];
        if (now > free) {
            here.wait_ns += in_ns(now - free);
            m_stall_sem += now - free;
            if (waited && released_by < m_stall_by_sem.size())
                m_stall_by_sem[released_by] += in_ns(now - free);
        }
        const issue_timing t = execute(ins);
        if (m_timeline) {
            std::string name = opcode_name(ins.op);
            if (ins.op == opcode::dma_trigger) name += " q" + std::to_string(ins.queue);
            if (ins.alu != alu_op::bypass) name += std::string(" ") + alu_name(ins.alu);
            std::string args = "{\"index\":" + std::to_string(m_next);
            if (at != 0)
                args += ",\"line\":" + nlohmann::json(m_program->sources().name(at)).dump();
            if (ins.op == opcode::dma_trigger) args += ",\"queue\":" + std::to_string(ins.queue);
            for (const auto& [key, op] : {std::pair<const char*, const operand*>{"dst", &ins.dst},
                                          {"src0", &ins.src0},
                                          {"src1", &ins.src1},
                                          {"src2", &ins.src2},
                                          {"src3", &ins.src3},
                                          {"dst1", &ins.dst1}})
                if (op->valid())
                    args += std::string(",\"") + key + "\":\"" + format_operand(*op) + "\"";
            if (t.background && m_background_track == 0)
                m_background_track =
                    m_timeline->track(std::string(engine_name(m_kind)) + " background");
            m_timeline->slice(t.background ? m_background_track : m_track, name,
                              (now + t.start).to_seconds() * 1e9, t.busy.to_seconds() * 1e9,
                              args + "}");
        }
        const sc_core::sc_time busy_before = m_busy_end;
        const sc_core::sc_time begin = now + t.start, ready = std::max(now, m_busy_end);
        if (begin > ready) m_stall_port += begin - ready;
        // a background lane's time counts only where it runs past the engine's own path
        const sc_core::sc_time counted = !t.background ? t.busy
                                         : begin + t.busy <= m_busy_end
                                             ? sc_core::SC_ZERO_TIME
                                             : begin + t.busy - std::max(begin, m_busy_end);
        m_busy_end = std::max(m_busy_end, begin + t.busy);
        m_busy += counted;
        const double counted_ns = in_ns(counted);
        auto& per_op = m_by_opcode[static_cast<std::size_t>(ins.op)];
        ++per_op.first;
        per_op.second += counted_ns;
        if (ins.src0.valid() || ins.dst.valid())  // (not a control instruction's)
            m_busy_by_dtype[static_cast<std::size_t>(
                ins.src0.valid() ? ins.src0.type : ins.dst.type)] += counted_ns;
        ++here.instructions;
        here.busy_ns += counted_ns;
        // Results commit in program order.
        m_last_complete = std::max(m_last_complete, now + t.complete);
        if (m_log) {
            const auto ticks = [](const sc_core::sc_time& x) { return tick(x.value()); };
            instruction_activity a(
                ticks(t0), ticks(now),
                ticks(t.background ? now + t.held : std::max(now + t.held, busy_before)),
                ticks(t.lead), ticks(begin), ticks(now + t.complete), ticks(m_last_complete), at);
            if (ins.op == opcode::dma_trigger) m_log->note_ring(ins.queue, m_kind, m_next);
            m_log->add_instruction(m_kind, a, ins.waits, ticks(now));
        }
        ++m_next;
        m_sems.signal_at(own, m_last_complete);
        sc_core::wait(t.advance);
    }
}

engine::engine(const sc_core::sc_module_name& name, engine_kind kind, const config& cfg,
               semaphore_bank& sems, bool functional)
    : engine_base(name, kind, cfg, sems, functional),
      m_costs(static_cast<int>(cfg.integer("core.isa_version")), cfg.real("core.min_ii"),
              cfg.real("core.dve.reciprocal_cycles")),
      m_trigger_time(ns(cfg.time_ns("core.dma.trigger_time"))) {}

std::string engine::check(const instruction& ins) const {
    if (!ins.indirect.empty() && !m_indirect) return indirect_refused(ins);
    if (ins.flags & (flag::stationary_onezero | flag::moving_onezero))
        return std::string(
                   "operands declared ones and zeros (flags=stationary_onezero, "
                   "moving_onezero) are the Tensor engine's, not the ") +
               engine_name(m_kind) + " engine's";
    if (!m_costs.supports(m_kind, ins.op) && ins.op != opcode::dma_trigger) {
        // an instruction of a later NeuronCore: say so, from its first version on this engine
        int first = 0;
        for (const auto& r : row(ins.op).costs)
            if (r.engine == m_kind && r.isa > m_costs.isa() && (first == 0 || r.isa < first))
                first = r.isa;
        if (first) {
            const char* before = row(ins.op).before;
            return std::string(opcode_name(ins.op)) + " runs on NeuronCore-v" +
                   std::to_string(first) + " and newer (this core is v" +
                   std::to_string(m_costs.isa()) + ": core.isa_version)" +
                   (before ? std::string("; before it: ") + before : std::string());
        }
    }
    if (!m_costs.supports(m_kind, ins.op) ||
        (ins.op != opcode::dma_trigger && !m_costs.match(m_kind, ins)))
        return std::string("the ") + engine_name(m_kind) + " engine cannot execute " +
               opcode_name(ins.op) + " with these operands";
    return "";
}

sc_core::sc_time engine::duration(const instruction& ins) const {
    if (ins.op == opcode::dma_trigger) return m_trigger_time;
    // An access whose innermost stride exceeds 16 bytes runs at half rate (hardware-facts 1c).
    bool wide = false;
    for (const operand* o : {&ins.dst, &ins.src0, &ins.src1, &ins.src2})
        wide |= o->valid() && o->elem_stride > 1 && o->elem_stride * dtype_size(o->type) > 16;
    return cycles(m_costs.cycles(m_kind, ins) * (wide ? 2.0 : 1.0));
}

issue_timing engine::execute(const instruction& ins) {
    const sc_core::sc_time busy = duration(ins);
    sc_core::sc_time start = sc_core::SC_ZERO_TIME;
    if (ins.op == opcode::core_barrier) return {start, busy, busy, busy};
    if (ins.op == opcode::dma_trigger) {
        m_ring.set_command(tlm::TLM_WRITE_COMMAND);
        m_ring.set_address(address_map::doorbell_base + ins.queue);
        m_ring.set_data_length(0);
        sc_core::sc_time d = busy;
        out->b_transport(m_ring, d);
        return {start, busy, busy, busy};
    }
    // The instruction holds each memory's port once for its whole duration: the first operand
    // in a memory reserves it, the others ride along at the granted start.
    bool held[3] = {false, false, false};
    auto touch = [&](tlm::tlm_command cmd, operand_slot slot, std::vector<std::uint8_t>* data) {
        bool& h = held[std::size_t(ins.at(slot).space)];
        const sc_core::sc_time occupancy = h ? sc_core::SC_ZERO_TIME : busy;
        h = true;
        start = std::max(
            start, access_slot(cmd, ins, slot, m_functional ? data : nullptr, start, occupancy));
    };
    if (ins.src0.valid()) touch(tlm::TLM_READ_COMMAND, operand_slot::src0, &m_a);
    if (ins.src1.valid()) touch(tlm::TLM_READ_COMMAND, operand_slot::src1, &m_b);
    if (ins.src2.valid()) touch(tlm::TLM_READ_COMMAND, operand_slot::src2, &m_c);
    // quantize_mx writes 4 of each 32 partitions of its scale operand: the others keep theirs
    if (m_functional && ins.op == opcode::quantize_mx) peek(ins.dst1, m_d1);
    if (m_functional) execute_alu(ins, m_a, m_b, m_c, m_d, m_d1, &m_reduce_regs);
    touch(tlm::TLM_WRITE_COMMAND, operand_slot::dst, &m_d);
    if (ins.dst1.valid()) touch(tlm::TLM_WRITE_COMMAND, operand_slot::dst1, &m_d1);
    return {start, busy, start + busy, start + busy + m_latency};
}

}  // namespace trn

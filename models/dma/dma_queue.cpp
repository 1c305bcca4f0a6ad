#include "dma/dma_queue.h"

#include <nlohmann/json.hpp>

#include "core/port.h"
#include "core/stats.h"

namespace trn {

dma_queue::dma_queue(const sc_core::sc_module_name& name, const config& cfg, semaphore_bank& sems,
                     std::size_t index, bool functional)
    : sc_core::sc_module(name),
      m_sems(sems),
      m_index(index),
      m_functional(functional),
      m_engine_count(static_cast<std::size_t>(cfg.integer("core.dma.engines"))),
      // Each engine takes an equal group of partitions, so that every engine is used: 128
      // partitions over 16 engines is 8 per engine (hardware-facts 1d, fan-out).
      m_partitions_per_engine(static_cast<std::uint32_t>(
          (cfg.integer("core.sbuf.partitions") + cfg.integer("core.dma.engines") - 1) /
          cfg.integer("core.dma.engines"))),
      m_fixed_latency(ns(cfg.time_ns("core.dma.fixed_latency"))) {
    doorbell.register_b_transport(this, &dma_queue::b_transport);
    m_mem.set_extension(&m_ext);
}

dma_queue::~dma_queue() {
    m_mem.clear_extension(&m_ext);  // a payload frees the extensions it still holds
}

void dma_queue::load(program_source* program) {
    m_program = program;
    m_window = {};
    m_by_place.assign(program ? program->sources().names.size() + 1 : 1, {0, 0});
    m_started = 0;
    m_held.clear();
    m_bytes = 0;
    m_last_done = sim_time();
}

void dma_queue::set_timeline(timeline* t) {
    m_timeline = t;
    if (t) {
        m_track = t->track("dma " + std::string(basename()));
        m_counter = t->counter("dma bytes in flight");
    }
}

void dma_queue::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    // Validation saw to it that every doorbell has a transfer to start; a program built while
    // it runs can still run out (its build failed): nothing starts, and the source says why when
    // the run ends (program_source::end_of_run).
    if (!m_window.holds(m_started) &&
        (!m_program || !m_program->fetch_transfer(m_index, m_started, m_window)))
        return;
    const std::uint32_t place = m_window.place(m_started);
    const std::size_t number = m_started++;
    const dma_transfer& t = m_window.at(number);
    m_window.prefetch(m_started);
    const sc_core::sc_time rung = sim_time() + delay;
    if (m_arbiter && (t.priority > 0 || !m_held.empty())) {  // a lower level, or behind one
        m_held.push_back({t, place, number, rung, m_arbiter->ring()});
        m_arbiter->wake_at(rung + m_fixed_latency);
        if (m_log) m_log->note_held(m_index, number, tick(rung.value()));
        return;
    }
    begin(t, place, number, rung, delay + m_fixed_latency);
}

void dma_queue::start_held() {
    // the first (its fixed latency behind it: its chunks may start now), then the transfers of
    // level 0 it held back, which start as when rung, from the end of their fixed latency
    do {
        const held_transfer h = m_held.front();
        m_held.pop_front();
        const sc_core::sc_time ready = h.rung + m_fixed_latency, &now = sim_time();
        begin(h.transfer, h.place, h.number, h.rung,
              ready > now ? ready - now : sc_core::SC_ZERO_TIME);
    } while (!m_held.empty() && m_held.front().transfer.priority == 0);
}

dma_queue::placement dma_queue::place_of(const dma_transfer& t,
                                         const sc_core::sc_time& from) const {
    const operand& chip = t.dst.space != mem_space::hbm ? t.dst : t.src;
    const std::uint32_t first = chip.space == mem_space::hbm ? 0 : chip.partition;
    placement at;
    at.group = first / m_partitions_per_engine;
    at.first = first;
    const std::size_t used = std::min<std::size_t>(
        m_engine_count, (first % m_partitions_per_engine + t.rows() + m_partitions_per_engine - 1) /
                            m_partitions_per_engine);
    // part k of a DMA split into one transfer a run begins on the engines after part k - 1's
    at.engine = (at.group + std::size_t{t.part} * used) % m_engine_count;
    if (m_bound.size() <= m_engine_count && !m_arbiter) return at;
    at.used = used;
    if (m_bound.size() <= m_engine_count) return at;
    // the engine group whose engines the transfer uses free first (free by `from` is a tie)
    sc_core::sc_time best;
    for (std::size_t b = 0; b + m_engine_count <= m_bound.size(); b += m_engine_count) {
        sc_core::sc_time free = from;
        for (std::size_t k = 0; k < at.used; ++k) {
            const sc_core::sc_time& busy =
                m_bound[b + (at.engine + k) % m_engine_count]->booking().busy_until();
            if (busy > free) free = busy;
        }
        if (b == 0 || free < best) {
            best = free;
            at.base = b;
        }
    }
    return at;
}

void dma_queue::first_held_engines(std::vector<const busy_port*>& out) const {
    out.clear();
    const dma_transfer& t = m_held.front().transfer;
    const placement at = place_of(t, sim_time());
    for (std::size_t k = 0; k < at.used; ++k)
        out.push_back(&m_bound[at.base + (at.engine + k) % m_engine_count]->booking());
}

void dma_queue::draw(const dma_transfer& t, std::size_t number, std::uint32_t place,
                     const sc_core::sc_time& start, const sc_core::sc_time& at) {
    m_timeline->counter_delta(m_counter, (sim_time() + start).to_seconds() * 1e9,
                              static_cast<double>(t.src.bytes()));
    m_timeline->counter_delta(m_counter, at.to_seconds() * 1e9,
                              -static_cast<double>(t.src.bytes()));
    // (a queue's slices never overlap: clip at the previous completion)
    sc_core::sc_time from = sim_time() + start;
    if (from < m_last_done) from = m_last_done;
    const sc_core::sc_time end = at > m_last_done ? at : m_last_done;
    m_timeline->slice(
        m_track, "transfer " + std::to_string(number), from.to_seconds() * 1e9,
        (end - from).to_seconds() * 1e9,
        "{\"bytes\":" + std::to_string(t.src.bytes()) + ",\"rows\":" + std::to_string(t.rows()) +
            (place != 0 ? ",\"line\":" + nlohmann::json(m_program->sources().name(place)).dump()
                        : std::string()) +
            "}");
}

void dma_queue::time_memory_sides(const dma_transfer& t, const sc_core::sc_time& first_chunk,
                                  sc_core::sc_time& done, sc_core::sc_time& memory_end,
                                  mem_space& last_side) {
    // Both memory sides of the whole transfer, from when its first chunk starts (a
    // read-add-write's read of dst is not timed apart: its engines' rate, core.dma.rmw_rate,
    // stands for it, as the documented rates are whole-transfer throughputs).
    for (const operand* op : {&t.src, &t.dst}) {
        m_ext.initiator = initiator_id::dma;
        m_ext.rows = op->partitions;
        m_ext.row_bytes = op->row_bytes();
        m_ext.row_stride = row_stride_of(*op);
        m_mem.set_command(op == &t.src ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        m_mem.set_address(address_of(*op));
        m_mem.set_data_ptr(nullptr);
        m_mem.set_data_length(static_cast<unsigned>(op->bytes()));
        sc_core::sc_time d = first_chunk;
        mem->b_transport(m_mem, d);
        if (d > done) done = d;
        if (d >= memory_end) {
            memory_end = d;
            last_side = op->space;
        }
    }
}

void dma_queue::begin(const dma_transfer& t, std::uint32_t place, std::size_t number,
                      const sc_core::sc_time& rung, const sc_core::sc_time& start) {
    sc_core::sc_time done = start, first_chunk = sc_core::SC_ZERO_TIME;
    bool any = false;
    dma_job job;
    job.transfer = &t;
    job.functional = m_functional;
    // The engine group that frees first.
    const sc_core::sc_time now = sim_time(), from = now + start;
    const placement where = place_of(t, from);
    // With its engines held, it hands them their chunks itself; else through the socket, whose
    // engines find their job in the payload.
    const bool direct = m_bound.size() >= where.base + m_engine_count;
    if (!direct) m_chunk.set_extension(&job);
    // (every engine's booking state is fetched at once, rather than one engine's at a time)
    if (direct)
        for (std::size_t k = 0; k < m_engine_count; ++k)
            m_bound[where.base + k]->prefetch();
    const std::uint32_t rows = t.rows();
    // Calls chunk(engine, first row, end row) for each partition group in turn: group g to
    // engine g % engines (no division per chunk) of the group `where` chose.
    const auto each_chunk = [&](auto&& chunk) {
        std::uint32_t group = where.group;
        std::size_t engine = where.engine;
        for (std::uint32_t r = 0; r < rows; ++group) {
            const std::uint32_t end =
                std::min(rows, (group + 1) * m_partitions_per_engine - where.first);
            chunk(where.base + engine, r, end);
            r = end;
            if (++engine == m_engine_count) engine = 0;
        }
    };
    // A chunk that started at `began` and ends at `end` (offsets from now).
    const auto ran = [&](const sc_core::sc_time& began, const sc_core::sc_time& end) {
        if (end > done) done = end;
        if (!any || began < first_chunk) first_chunk = began;
        any = true;
    };
    if (direct && !m_functional && !m_timeline) {
        // Timed as a whole: the queue books the chunks on the engines itself, without a job
        // each (a transfer's chunks have one shape but for the first and last: one service time
        // per shape).
        const std::uint64_t row_bytes = t.row_bytes();
        std::uint32_t shape_rows = 0;
        sc_core::sc_time service;
        each_chunk([&](std::size_t e, std::uint32_t r, std::uint32_t end) {
            dma_engine& engine = *m_bound[e];
            if (end - r != shape_rows) {
                shape_rows = end - r;
                service = engine.chunk_time(t, shape_rows, row_bytes);
            }
            const sc_core::sc_time began = engine.book(from, service, shape_rows, row_bytes) - now;
            ran(began, began + service);
        });
    } else {  // each engine serves its chunk (moving its data, drawing it)
        each_chunk([&](std::size_t e, std::uint32_t r, std::uint32_t end) {
            job.row_begin = r;
            job.row_end = end;
            sc_core::sc_time d = start;
            if (direct)
                m_bound[e]->serve(job, d);
            else
                engines[static_cast<int>(e)]->b_transport(m_chunk, d);
            ran(job.start, d);
        });
    }
    if (!direct) m_chunk.clear_extension(&job);
    const sc_core::sc_time chunks_end = done;
    sc_core::sc_time memory_end = sc_core::SC_ZERO_TIME;
    mem_space last_side = t.src.space;
    time_memory_sides(t, first_chunk, done, memory_end, last_side);
    m_bytes += t.src.bytes();
    if (place >= m_by_place.size()) m_by_place.resize(place + 1);  // a place named since load()
    auto& here = m_by_place[place];
    ++here.first;
    here.second += t.src.bytes();
    const sc_core::sc_time at = sim_time() + done;
    if (m_timeline) draw(t, number, place, start, at);
    m_last_done = at > m_last_done ? at : m_last_done;
    if (m_log) {
        const sc_core::sc_time now = sim_time();
        const auto ticks = [](const sc_core::sc_time& x) { return tick(x.value()); };
        m_log->add_transfer(
            m_index,
            transfer_activity(ticks(rung), ticks(rung + m_fixed_latency), ticks(now + chunks_end),
                              ticks(now + memory_end), last_side, ticks(m_last_done), place));
    }
    m_sems.signal_at(semaphore_of_queue(m_index), m_last_done);
}

void dma_queue::report(stats_tree& s, const std::string& prefix) const {
    s.add(prefix + ".transfers", static_cast<double>(m_started), "count", "transfers run");
    s.add(prefix + ".bytes", static_cast<double>(m_bytes), "B", "bytes moved");
}

}  // namespace trn

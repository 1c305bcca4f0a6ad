#include "workloads/builder/kernel_builder.h"

#include "program/race_check.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.h"

namespace trn {

kernel_style parse_style(const std::string& s) {
    if (s == "nl") return kernel_style::nl;
    if (s == "isa") return kernel_style::isa;
    throw user_error("workload parameter 'style': '" + s + "' is not one of: nl, isa");
}

void kernel_builder::declare_params(param_registry& r) {
    r.add({"compiler.nl_buffers", param_kind::integer, "4",
           "physical buffers the compiler rotates a loop-local tile over, in loops it unrolls "
           "(style=nl; style=isa too when the backend unrolls the loop)",
           "calibrated: V7, V8 (compiler-allocated stream as fast as direct_alloc with "
           "buffers=4), W7; a count, chosen among 2..8, not fitted by least squares",
           1, 64});
    r.add({"compiler.nl_rewrite_buffers", param_kind::integer, "2",
           "physical copies, at least, the compiler gives a tile that a DMA rewrites (all the "
           "kernel reads of it before its next write; NKI beta 1, style=nl): the rewrite goes "
           "to the tile's next copy, so it need not wait for the readers of the value before "
           "(docs/nki.md)",
           "model choice: the block dimension migration guide's example of the compiler "
           "allocating 2 physical tiles to a reused tile so that the DMA overlaps the compute; "
           "checked, not fitted, by the adaptive average pooling points (AP1-AP9)",
           1, 64});
    r.add({"compiler.nl_unroll_limit", param_kind::integer, "4096",
           "longest loop (trip count of the innermost loop around a tile) the compiler's "
           "middle-end unrolls and pipelines (style=nl); a longer loop stays a hardware loop "
           "with one buffer per tile, so its iterations run one after another",
           "calibrated: bracketed by V2 (200 iterations, pipelined) and V1 (25600, serial on "
           "hardware): any value in [200, 25599] fits them",
           1, 1e9});
    r.add({"compiler.isa_unroll_limit", param_kind::integer, "64",
           "longest loop the backend unrolls when the middle-end is skipped (style=isa, "
           "skip_middle_end_transformations); unrolled loop-local tiles rotate over "
           "compiler.nl_buffers, longer loops keep one buffer per tile",
           "calibrated: bracketed by W7 (8x8 nest of 128x128 transposes, overlapped on "
           "hardware) and W3 (100 iterations, serial): any value in [8, 99] fits them",
           1, 1e9});
    r.add({"compiler.schedule_window", param_kind::integer, "128",
           "instructions and DMA triggers the compiler's scheduler looks over at once "
           "(style=nl): it places each where its estimated start is earliest (the cost table's "
           "engine times, a transfer's core.dma.fixed_latency plus its bytes at the core's DMA "
           "rate), never before one it depends on, so that an engine does not idle in program "
           "order while later independent work waits; 0 keeps program order",
           "model choice: the NKI scheduling guide's automatic instruction scheduling "
           "(nl.no_reorder turns it off); a window of about three iterations of the public "
           "points' loop bodies",
           0, 1e6});
    r.add({"compiler.schedule_unroll_limit", param_kind::integer, "2",
           "longest loop the compiler's scheduler unrolls into the body around it (style=nl, "
           "NKI kernels); the iterations of a longer loop are scheduled one body at a time, "
           "so nothing of iteration i + 1 moves before iteration i's instructions",
           "model choice, bracketed by NS2 (adamw: its two-iteration loops scheduled as one "
           "body, or its Vector and Scalar engines wait on each other, +43% at 1) and NS1 (silu: "
           "its 7-iteration loop one block at a time, or the Scalar engine's stores no longer "
           "wait for the Vector engine, -16% at 7): any value in [2, 6] fits them",
           1, 1e9});
    r.add({"compiler.hoist_sbuf_share", param_kind::real, "0.25",
           "share of an SBUF partition the compiler may give the transposes it hoists out of "
           "loops (nl.matmul without transpose_x, style=nl); past it, x is transposed at every "
           "call",
           "model choice: a bound, so that no kernel runs out of SBUF for tiles it did not "
           "declare (the public conv2d of docs/results.md needs 0.05 in fp16, 0.09 in fp32)",
           0, 1});
    r.add({"compiler.hoist_loads", param_kind::boolean, "true",
           "the compiler hoists an nl.load of an input tensor out of the loops its address does "
           "not use when the whole tensor fits in SBUF (style=nl NKI kernels): loaded in their "
           "first iteration, kept in SBUF; when the kernel's tiles then do not fit, the load "
           "line whose hoisted tiles take the most SBUF stays where written, one at a time "
           "(docs/nki.md)",
           "model choice: AccelOpt's NKIBench profiles give each kernel's HBM bytes read: "
           "add_rmsnorm_matmul's 8 MB weight and mamba's 7.3 MB inputs read once, M1n's 64 MB "
           "and fp32_matmul's 84 MB operands re-read for every tile (docs/results.md)"});
}

builder_options kernel_builder::options(const config& cfg, const program_limits& limits,
                                        kernel_style style) {
    builder_options o;
    o.style = style;
    o.limits = limits;
    o.nl_buffers = static_cast<std::uint32_t>(cfg.integer("compiler.nl_buffers"));
    o.nl_rewrite_buffers = static_cast<std::uint32_t>(cfg.integer("compiler.nl_rewrite_buffers"));
    o.nl_unroll_limit = static_cast<std::uint64_t>(cfg.integer("compiler.nl_unroll_limit"));
    o.isa_unroll_limit = static_cast<std::uint64_t>(cfg.integer("compiler.isa_unroll_limit"));
    o.pe_rows = static_cast<std::uint32_t>(cfg.integer("core.pe.rows"));
    o.pe_cols = static_cast<std::uint32_t>(cfg.integer("core.pe.cols"));
    o.moving_max = static_cast<std::uint32_t>(cfg.integer("core.pe.moving_max"));
    o.psum_bank_bytes = cfg.size("core.psum.bank_size");
    o.isa_version = static_cast<int>(cfg.integer("core.isa_version"));
    o.min_ii = cfg.real("core.min_ii");
    o.reciprocal_cycles = cfg.real("core.dve.reciprocal_cycles");
    o.dve_clock_ghz = cfg.frequency_ghz("core.dve.clock");
    o.act_clock_ghz = cfg.frequency_ghz("core.act.clock");
    o.pool_clock_ghz = cfg.frequency_ghz("core.pool.clock");
    o.trigger_ns = cfg.time_ns("core.dma.trigger_time");
    o.hoist_sbuf_share = cfg.real("compiler.hoist_sbuf_share");
    o.hoist_loads = cfg.boolean("compiler.hoist_loads");
    o.schedule_window = static_cast<std::uint32_t>(cfg.integer("compiler.schedule_window"));
    o.schedule_unroll_limit =
        static_cast<std::uint64_t>(cfg.integer("compiler.schedule_unroll_limit"));
    o.dma_fixed_ns = cfg.time_ns("core.dma.fixed_latency");
    o.dma_bytes_per_ns = std::min(
        cfg.bandwidth("core.hbm.bandwidth"),
        double(cfg.integer("core.dma.engines")) * cfg.bandwidth("core.dma.engine_bandwidth"));
    return o;
}

kernel_builder::kernel_builder(const builder_options& opt)
    : m_opt(opt),
      m_costs(opt.isa_version, opt.min_ii, opt.reciprocal_cycles),
      m_stream(program_stream::producing()) {
    m_waited.assign(engine_count,
                    std::vector<std::uint32_t>(engine_count + opt.limits.dma_queues, 0));
}

hbm_tensor kernel_builder::input(const std::string& name, std::uint64_t elems, dtype type, float lo,
                                 float hi, std::uint32_t seed) {
    hbm_tensor t = output(name, elems, type);
    m_prog.regions.back().input = true;
    m_prog.regions.back().lo = lo;
    m_prog.regions.back().hi = hi;
    m_prog.regions.back().seed = seed;
    return t;
}

hbm_tensor kernel_builder::output(const std::string& name, std::uint64_t elems, dtype type) {
    hbm_tensor t;
    t.id = m_tensor_dep.size();
    t.name = name;
    t.offset = m_hbm_used;
    t.elems = elems;
    t.type = type;
    const std::uint64_t bytes = elems * dtype_size(type);
    m_hbm_used += (bytes + 4095) / 4096 * 4096;
    if (m_hbm_used > m_opt.limits.hbm_bytes)
        throw user_error("HBM tensor '" + name + "' (" + std::to_string(bytes) +
                         " bytes) does not fit in the " + std::to_string(m_opt.limits.hbm_bytes) +
                         " bytes of HBM");
    hbm_region r;
    r.name = name;
    r.offset = t.offset;
    r.bytes = bytes;
    r.type = type;
    m_prog.regions.push_back(r);
    m_tensor_dep.push_back(m_deps.size());
    m_deps.emplace_back();
    m_dep_is_hbm.push_back(true);
    return t;
}

operand kernel_builder::view(const hbm_tensor& t, std::uint64_t first, std::uint32_t rows,
                             std::uint32_t elems, std::uint64_t row_stride) const {
    const std::uint64_t last = first + (rows - 1) * row_stride + elems;
    if (rows == 0 || elems == 0 || last > t.elems)
        throw std::logic_error("view outside HBM tensor " + t.name);
    operand op;
    op.space = mem_space::hbm;
    op.type = t.type;
    op.partitions = rows;
    op.elems = elems;
    op.offset = t.offset + first * dtype_size(t.type);
    op.row_stride = row_stride * dtype_size(t.type);
    return op;
}

void kernel_builder::check_tile(const std::string& name, std::uint32_t partitions,
                                std::uint32_t elems) const {
    if (partitions > m_opt.limits.partitions)
        throw user_error("tile '" + name + "': number of partitions " + std::to_string(partitions) +
                         " exceed architecture limitation of " +
                         std::to_string(m_opt.limits.partitions));
    if (partitions == 0 || elems == 0)
        throw user_error("tile '" + name + "' is empty (" + std::to_string(partitions) + " x " +
                         std::to_string(elems) + ")");
}

std::uint64_t kernel_builder::allocate(mem_space space, std::uint64_t bytes,
                                       const std::string& name, std::uint32_t buffers,
                                       bool may_shrink, std::uint32_t& granted) {
    std::uint64_t& used = space == mem_space::sbuf ? m_sbuf_used : m_psum_used;
    const std::uint64_t cap = space == mem_space::sbuf ? m_opt.limits.sbuf_partition_bytes
                                                       : m_opt.limits.psum_partition_bytes;
    const std::uint64_t aligned = aligned_bytes(space, bytes);
    for (granted = buffers; granted >= 1; --granted) {
        if (used + aligned * granted <= cap) {
            const std::uint64_t at = used;
            used += aligned * granted;
            return at;
        }
        if (!may_shrink) break;
    }
    throw user_error(
        std::string(mem_space_name(space)) + " allocation of tile '" + name + "' (" +
        (may_shrink ? std::string("at least one buffer") : std::to_string(buffers) + " buffers") +
        " of " + std::to_string(bytes) +
        " bytes per partition) does not fit: " + std::to_string(used) + " of " +
        std::to_string(cap) + " bytes per partition are already allocated");
}

std::size_t kernel_builder::new_buffer() {
    m_buffer_dep.push_back(m_deps.size());
    m_deps.push_back(m_freed);
    m_dep_is_hbm.push_back(false);
    return m_buffer_dep.size() - 1;
}

std::size_t kernel_builder::push_decl(decl d, std::uint64_t at, std::uint64_t stride,
                                      std::uint32_t buffers) {
    for (std::uint32_t b = 0; b < buffers; ++b) {
        d.buffers.push_back(new_buffer());
        d.offsets.push_back(at + b * stride);
        m_buffer_decl.resize(d.buffers.back() + 1);
        m_buffer_decl[d.buffers.back()] = m_decls.size();
    }
    m_decls.push_back(std::move(d));
    return m_decls.size() - 1;
}

kernel_builder::decl kernel_builder::tile_decl(const std::string& name, mem_space space,
                                               std::uint32_t partitions, std::uint32_t elems,
                                               dtype type, std::uint32_t first_partition) {
    decl d;
    d.name = name;
    d.shape.space = space;
    d.shape.type = type;
    d.shape.partitions = partitions;
    d.shape.partition = static_cast<std::uint16_t>(first_partition);
    d.shape.elems = elems;
    return d;
}

std::uint64_t kernel_builder::aligned_bytes(mem_space space, std::uint64_t bytes) const {
    const std::uint64_t unit = space == mem_space::psum ? m_opt.psum_bank_bytes : 64;
    return (bytes + unit - 1) / unit * unit;
}

std::size_t kernel_builder::declare_tile(const std::string& name, mem_space space,
                                         std::uint32_t partitions, std::uint32_t elems, dtype type,
                                         std::uint32_t buffers, std::uint64_t loop_trips) {
    check_tile(name, partitions, elems);
    const bool policy = buffers == 0;
    if (policy) buffers = policy_buffers(loop_trips);
    const std::uint64_t bytes = std::uint64_t{elems} * dtype_size(type);
    std::uint32_t granted = 0;
    const std::uint64_t at = allocate(space, bytes, name, buffers, policy, granted);
    return push_decl(tile_decl(name, space, partitions, elems, type), at,
                     aligned_bytes(space, bytes), granted);
}

std::size_t kernel_builder::reserve(const std::string& name, mem_space space, std::uint64_t bytes,
                                    std::uint32_t buffers) {
    const std::uint64_t aligned = aligned_bytes(space, bytes);
    std::uint32_t granted = 0;
    const std::uint64_t at = allocate(space, aligned, name, buffers, false, granted);
    decl d;
    d.name = name;
    d.shape.space = space;
    d.reserved = aligned;
    return push_decl(std::move(d), at, aligned, granted);
}

std::size_t kernel_builder::declare_tile_in(const std::string& name, std::size_t reservation,
                                            std::uint32_t partitions, std::uint32_t elems,
                                            dtype type, std::uint32_t buffers,
                                            std::uint64_t offset) {
    check_tile(name, partitions, elems);
    const decl& r = m_decls.at(reservation);
    if (!r.reserved || offset + std::uint64_t{elems} * dtype_size(type) > r.reserved ||
        buffers == 0 || buffers > r.buffers.size())
        throw std::logic_error("tile '" + name + "' does not fit the reservation '" + r.name + "'");
    decl d = tile_decl(name, r.shape.space, partitions, elems, type);
    d.buffers.assign(r.buffers.begin(), r.buffers.begin() + buffers);
    d.offsets.assign(r.offsets.begin(), r.offsets.begin() + buffers);
    for (auto& at : d.offsets)
        at += offset;
    m_decls.push_back(std::move(d));
    return m_decls.size() - 1;
}

std::size_t kernel_builder::declare_tile_at(const std::string& name, mem_space space,
                                            std::uint32_t partitions, std::uint32_t elems,
                                            dtype type, std::uint64_t offset, std::uint32_t buffers,
                                            std::uint32_t first_partition) {
    if (m_stream)
        throw std::logic_error("tile '" + name +
                               "' placed by the kernel (declare_tile_at) in a streamed build: its "
                               "races are found over the whole program, so its workload must "
                               "not stream (workload::may_stream)");
    // (tiles the kernel places may share bytes the builder does not know are shared: their
    // accesses keep program order, as the scheduler could not see the conflict)
    drain();
    m_direct = true;
    check_tile(name, first_partition + partitions, elems);
    const std::uint64_t bytes = std::uint64_t{elems} * dtype_size(type);
    const std::uint64_t cap = space == mem_space::sbuf ? m_opt.limits.sbuf_partition_bytes
                                                       : m_opt.limits.psum_partition_bytes;
    if (buffers == 0 || offset + bytes * buffers > cap)
        throw user_error(std::string(mem_space_name(space)) + " allocation of tile '" + name +
                         "' at byte " + std::to_string(offset) + " (" + std::to_string(buffers) +
                         " x " + std::to_string(bytes) + " bytes per partition) does not fit in " +
                         std::to_string(cap) + " bytes per partition");
    return push_decl(tile_decl(name, space, partitions, elems, type, first_partition), offset,
                     bytes, buffers);
}

tile kernel_builder::next(std::size_t id) {
    decl& d = m_decls.at(id);
    if (id < m_decl_freed.size() && m_decl_freed[id])
        throw std::logic_error("tile '" + d.name + "' used after its phase ended");
    const std::size_t b = d.next++ % d.buffers.size();
    tile t;
    t.buffer = d.buffers[b];
    t.op = d.shape;
    t.op.offset = d.offsets[b];
    return t;
}

namespace {

// Adds "wait for m" to waits, or raises the value already waited for on m's semaphore.
void require(std::vector<sem_wait>& waits, const sem_wait& m) {
    for (auto& w : waits)
        if (w.sem == m.sem) {
            w.value = std::max(w.value, m.value);
            return;
        }
    waits.push_back(m);
}

// Bound on the accesses kept per buffer and kind before they merge (kept small: each
// instruction scans the lists of what it touches).
constexpr std::size_t max_accesses = 24;

}  // namespace

kernel_builder::region kernel_builder::region_of(const operand& op) {
    region r;
    r.p0 = op.partition;
    r.p1 = std::uint32_t{op.partition} + op.partitions;
    r.lo = op.offset;
    r.hi = op.offset + (op.elems ? op.span_bytes() : 0);
    return r;
}

void kernel_builder::note(std::vector<access_rec>& recs, const access_rec& a) {
    for (auto& r : recs)
        if (r.done.sem == a.done.sem && r.where.covers(a.where) && a.where.covers(r.where)) {
            r.done.value = std::max(r.done.value, a.done.value);
            return;
        }
    recs.push_back(a);
    if (recs.size() <= max_accesses) return;
    std::vector<access_rec> merged;
    for (const auto& r : recs) {
        auto m = std::find_if(merged.begin(), merged.end(),
                              [&](const access_rec& x) { return x.done.sem == r.done.sem; });
        if (m == merged.end()) {
            merged.push_back(r);
            continue;
        }
        m->done.value = std::max(m->done.value, r.done.value);
        m->where.p0 = std::min(m->where.p0, r.where.p0);
        m->where.p1 = std::max(m->where.p1, r.where.p1);
        m->where.lo = std::min(m->where.lo, r.where.lo);
        m->where.hi = std::max(m->where.hi, r.where.hi);
    }
    recs = std::move(merged);
}

void kernel_builder::absorb(std::vector<access_rec>& into, const std::vector<access_rec>& from) {
    for (const auto& r : from)
        note(into, {region{}, r.done});
}

void kernel_builder::issue(engine_kind issuer, instruction&& ins, sem_id done,
                           std::uint32_t done_value, const touch* reads, std::size_t read_count,
                           const touch* writes, std::size_t write_count, bool in_order_writes,
                           const sem_wait* also) {
    if (m_continues && ins.op != opcode::dma_trigger) {  // (next_instruction_continues)
        ins.flags |= flag::continues;
        m_continues = false;
    }
    if (m_checking) m_checks.instruction(issuer, ins);
    const std::uint64_t bytes = m_next_transfer_bytes;
    m_next_transfer_bytes = 0;
    estimate(issuer, ins);  // (the compiler's running estimate, in program order)
    if (!scheduling()) {
        emit(issuer, std::move(ins), done, done_value, reads, read_count, writes, write_count,
             in_order_writes, also);
        return;
    }
    held h;
    h.issuer = issuer;
    h.ins = std::move(ins);
    h.done = done;
    h.done_value = done_value;
    h.reads.assign(reads, reads + read_count);
    h.writes.assign(writes, writes + write_count);
    h.in_order_writes = in_order_writes;
    h.has_also = also != nullptr;
    if (also) h.also = *also;
    h.place = m_place;
    h.transfer_bytes = bytes;
    if (h.ins.op == opcode::core_barrier) {  // (the cores meet in the order they are written)
        drain();
        emit_held(h);
        return;
    }
    if ((h.ins.flags & flag::continues) && !m_held_order.empty() &&
        m_held.at(m_held_order.back()).issuer == issuer) {
        // A continuation run follows its instruction, the latest entry held (on the same
        // engine), at once: the held entries before it that it conflicts with hold back the
        // instruction too. (A run the compiler put on another engine than its instruction's,
        // or whose instruction is out already, is held as an entry of its own.)
        held& head = m_held.at(m_held_order.back());
        for (const std::uint64_t s : m_held_order) {
            if (s == head.seq) break;
            held& e = m_held.at(s);
            if (!conflicts(e, h) ||
                std::find(e.after.begin(), e.after.end(), head.seq) != e.after.end())
                continue;
            ++head.blockers;
            e.after.push_back(head.seq);
        }
        head.continued.push_back(std::move(h));
        return;
    }
    while (m_held_order.size() >= m_opt.schedule_window)
        emit_one();
    hold(std::move(h));
}

namespace {

// Instructions that keep state in their engine (the reduce registers, the register file): two
// of them on one engine keep their order.
bool uses_engine_state(const instruction& ins) {
    switch (ins.op) {
        case opcode::activation_reduce:
        case opcode::exponential:
        case opcode::register_load:
        case opcode::register_store:
        case opcode::register_move:
            return true;
        default:
            return (ins.flags & (flag::reduce_accumulate | flag::reduce_reset)) != 0;
    }
}

}  // namespace

bool kernel_builder::conflicts(const held& a, const held& b) const {
    if (conflicts_one(a, b)) return true;
    for (const held& x : a.continued) {
        if (conflicts_one(x, b)) return true;
        for (const held& y : b.continued)
            if (conflicts_one(x, y)) return true;
    }
    for (const held& y : b.continued)
        if (conflicts_one(a, y)) return true;
    return false;
}

bool kernel_builder::conflicts_one(const held& a, const held& b) const {
    if (a.ins.op == opcode::dma_trigger && b.ins.op == opcode::dma_trigger &&
        a.ins.queue == b.ins.queue)
        return true;  // a queue starts its transfers in the order they were rung for
    if (a.issuer == b.issuer && uses_engine_state(a.ins) && uses_engine_state(b.ins)) return true;
    for (const touch& w : a.writes) {
        for (const touch& r : b.reads)
            if (r.dep == w.dep && r.where.overlaps(w.where)) return true;
        for (const touch& x : b.writes)  // (two stores to a tensor: disjoint, as issue() takes)
            if (x.dep == w.dep && !m_dep_is_hbm[w.dep] && x.where.overlaps(w.where)) return true;
    }
    for (const touch& r : a.reads)
        for (const touch& x : b.writes)
            if (x.dep == r.dep && x.where.overlaps(r.where)) return true;
    return false;
}

void kernel_builder::hold(held h) {
    h.seq = ++m_seq;
    for (const std::uint64_t s : m_held_order) {
        held& e = m_held.at(s);
        if (conflicts(e, h)) {
            ++h.blockers;
            e.after.push_back(h.seq);
        }
    }
    m_held_order.push_back(h.seq);
    m_held.emplace(h.seq, std::move(h));
}

double kernel_builder::finish_ns(const sem_wait& w) const {
    if (w.value == 0 || w.sem >= m_finish.size()) return 0;
    const std::uint32_t count = m_finish_count[w.sem];
    if (w.value > count || count - w.value >= finish_ring) return 0;  // (long done)
    return m_finish[w.sem][w.value & (finish_ring - 1)];
}

void kernel_builder::record_finish(sem_id s, std::uint32_t value, double ns) {
    if (s >= m_finish.size()) {
        m_finish.resize(s + 1);
        m_finish_count.resize(s + 1, 0);
    }
    if (m_finish[s].empty()) m_finish[s].assign(finish_ring, 0.0);
    m_finish[s][value & (finish_ring - 1)] = ns;
    m_finish_count[s] = value;
}

void kernel_builder::emit_one() {
    // The entry that can start first by the estimates (the earliest in program order at a tie)
    // among those no held entry before them conflicts with.
    std::size_t best = m_held_order.size();
    double best_start = 0;
    for (std::size_t i = 0; i < m_held_order.size(); ++i) {
        held& h = m_held.at(m_held_order[i]);
        if (h.blockers) continue;
        const double start = std::max(m_free_ns[std::size_t(h.issuer)], ready_ns(h));
        if (best == m_held_order.size() || start < best_start) {
            best = i;
            best_start = start;
        }
    }
    const std::uint64_t seq = m_held_order[best];
    m_held_order.erase(m_held_order.begin() + static_cast<std::ptrdiff_t>(best));
    held h = std::move(m_held.at(seq));
    m_held.erase(seq);
    for (const std::uint64_t s : h.after)
        --m_held.at(s).blockers;
    emit_held(h);
}

void kernel_builder::drain() {
    while (!m_held_order.empty())
        emit_one();
}

void kernel_builder::set_reorder(bool on) {
    if (!on) drain();
    m_reorder = on;
    m_reordered = m_reordered || scheduling();
}

double kernel_builder::ready_ns(held& h) {
    if (!h.ready_known) {  // (fixed once nothing held before it conflicts with it)
        needed_waits(h.reads.data(), h.reads.size(), h.writes.data(), h.writes.size(),
                     h.in_order_writes, h.done, h.has_also ? &h.also : nullptr, m_need);
        h.ready_ns = 0;
        for (const auto& w : m_need)
            h.ready_ns = std::max(h.ready_ns, finish_ns(w));
        h.ready_known = true;
    }
    return h.ready_ns;
}

void kernel_builder::emit_held(held& h) {
    const std::size_t e = std::size_t(h.issuer);
    double at = std::max(m_free_ns[e], ready_ns(h));
    const std::uint32_t keep = m_place;
    const auto one = [&](held& x, double start) {
        const double end = start + cost_ns(x.issuer, x.ins);
        const bool trigger = x.ins.op == opcode::dma_trigger;
        const std::uint64_t bytes = x.transfer_bytes;
        const sem_id done = x.done;
        const std::uint32_t value = x.done_value;
        m_place = x.place;
        emit(x.issuer, std::move(x.ins), x.done, x.done_value, x.reads.data(), x.reads.size(),
             x.writes.data(), x.writes.size(), x.in_order_writes, x.has_also ? &x.also : nullptr);
        record_finish(semaphore_of_engine(x.issuer),
                      static_cast<std::uint32_t>(m_emitted[std::size_t(x.issuer)]), end);
        if (trigger) {  // its transfer: after the transfers before it, at the DMA's rate
            m_dma_free_ns = std::max(m_dma_free_ns, end) + double(bytes) / m_opt.dma_bytes_per_ns;
            record_finish(done, value, m_dma_free_ns + m_opt.dma_fixed_ns);
        }
        return end;
    };
    at = one(h, at);
    for (held& c : h.continued)
        at = one(c, at);
    m_free_ns[e] = at;
    m_place = keep;
}

void kernel_builder::needed_waits(const touch* reads, std::size_t read_count, const touch* writes,
                                  std::size_t write_count, bool in_order_writes, sem_id done,
                                  const sem_wait* also, std::vector<sem_wait>& need) const {
    need.clear();
    if (also) require(need, *also);
    for (const touch* r = reads; r != reads + read_count; ++r)
        for (const auto& w : m_deps[r->dep].writers)
            if (w.where.overlaps(r->where)) require(need, w.done);
    for (const touch* write = writes; write != writes + write_count; ++write) {
        const dep_state& target = m_deps[write->dep];
        if (!m_dep_is_hbm[write->dep]) {
            for (const auto& w : target.writers)
                if (w.where.overlaps(write->where) && !(in_order_writes && w.done.sem == done))
                    require(need, w.done);
        }
        for (const auto& r : target.readers)
            if (r.where.overlaps(write->where)) require(need, r.done);
    }
}

void kernel_builder::emit(engine_kind issuer, instruction&& ins, sem_id done,
                          std::uint32_t done_value, const touch* reads, std::size_t read_count,
                          const touch* writes, std::size_t write_count, bool in_order_writes,
                          const sem_wait* also) {
    if (done < engine_count)  // (an engine's count: where it is emitted)
        done_value = static_cast<std::uint32_t>(m_emitted[std::size_t(issuer)] + 1);
    if (m_stream && m_stream->counting() && !m_reordered) {  // its waits: the build that runs
        m_stream->put_instruction(issuer, std::move(ins), m_place);
        ++m_emitted[std::size_t(issuer)];
        grew();
        return;
    }
    const touch* reads_end = reads + read_count;
    const touch* writes_end = writes + write_count;
    std::vector<sem_wait>& need = m_need;
    needed_waits(reads, read_count, writes, write_count, in_order_writes, done, also, need);
    std::sort(need.begin(), need.end(),
              [](const sem_wait& a, const sem_wait& b) { return a.sem < b.sem; });
    auto& waited = m_waited[std::size_t(issuer)];
    // Keeps only the waits not implied by the issuer's earlier ones, then stores them at once.
    auto kept = need.begin();
    for (const auto& w : need) {
        if (w.sem == done && w.value >= done_value) continue;  // never wait on itself
        if (waited[w.sem] >= w.value) continue;                // implied by an earlier wait
        waited[w.sem] = w.value;
        *kept++ = w;
    }
    ins.waits.assign(need.begin(), kept);
    const sem_wait me{done, done_value};
    for (const touch* r = reads; r != reads_end; ++r)
        note(m_deps[r->dep].readers, {r->where, me});
    for (const touch* write = writes; write != writes_end; ++write) {
        dep_state& target = m_deps[write->dep];
        if (m_dep_is_hbm[write->dep]) {
            note(target.writers, {region{}, me});
            continue;
        }
        // Accesses this write covers are implied by it: it waited for them (or, for in-order
        // writes, follows them on its own semaphore).
        const auto covered = [&](const access_rec& a) { return write->where.covers(a.where); };
        target.writers.erase(std::remove_if(target.writers.begin(), target.writers.end(), covered),
                             target.writers.end());
        target.readers.erase(std::remove_if(target.readers.begin(), target.readers.end(), covered),
                             target.readers.end());
        note(target.writers, {write->where, me});
    }
    const std::size_t e = std::size_t(issuer);
    ++m_emitted[e];
    if (m_stream) {  // (counted and checked by the first build)
        m_stream->put_instruction(issuer, std::move(ins), m_place);
        if (m_stream->counting()) grew();
        return;
    }
    placed(m_prog.sources.engines[e], m_prog.engines[e].size() + 1);
    m_prog.engines[e].push_back(std::move(ins));
    grew();
}

namespace {

struct growth_watch {
    std::function<void(std::uint64_t)> observer;
    std::uint64_t step = kernel_builder::default_growth_step;
};

growth_watch& growth() {
    static growth_watch w;
    return w;
}

}  // namespace

void kernel_builder::on_growth(std::function<void(std::uint64_t)> observer, std::uint64_t step) {
    growth() = {std::move(observer), step ? step : default_growth_step};
}

void kernel_builder::grew() {
    const growth_watch& w = growth();
    if (++m_grown % w.step == 0 && w.observer) w.observer(m_grown);
}

std::size_t kernel_builder::queue_for(const hbm_tensor& t, std::uint8_t priority) {
    const std::size_t queues = m_opt.limits.dma_queues;
    std::size_t q = t.id % queues;
    if (priority != 0 && m_opt.limits.dma_priority_levels > 1) {  // (else validation refuses it)
        // A level is a queue's (hardware-facts 1f), and a queue starts its transfers in order: a
        // tensor's DMAs of a level above 0 get a queue of their own, the highest that no tensor
        // declared so far uses for its level-0 DMAs, no other level's DMAs use and that carries
        // no transfer yet (below the last, sendrecv's); failing that, the tensor's own.
        const std::uint64_t key = (std::uint64_t{t.id} << 8) | priority;
        const auto it = m_level_queue.find(key);
        if (it != m_level_queue.end()) {
            q = it->second;
        } else {
            for (std::size_t c = queues >= 2 ? queues - 1 : 0; c-- > 0;) {
                // (tensors 0 .. n - 1 use queues id % queues for level 0: c >= n is none's; a
                // queue given to a level carries its transfer at once)
                if (c >= m_tensor_dep.size() && (c >= m_transfers.size() || m_transfers[c] == 0)) {
                    q = c;
                    break;
                }
            }
            m_level_queue.emplace(key, q);
        }
    }
    if (m_prog.queues.size() <= q) m_prog.queues.resize(q + 1);
    return q;
}

// Sets a driver's step as the place while it lives, when no place is set.
class kernel_builder::step_scope {
  public:
    step_scope(kernel_builder& b, std::uint32_t id) : m_b(b), m_set(b.m_place == 0 && id != 0) {
        if (m_set) m_b.m_place = id;
    }
    ~step_scope() {
        if (m_set) m_b.m_place = 0;
    }
    step_scope(const step_scope&) = delete;
    step_scope& operator=(const step_scope&) = delete;

  private:
    kernel_builder& m_b;
    bool m_set;
};

std::uint32_t kernel_builder::step_place(std::uint32_t kind, std::size_t id, const char* what,
                                         const std::string& name) {
    const std::uint64_t key = (std::uint64_t{kind} << 40) | id;
    const auto it = m_steps.find(key);
    if (it != m_steps.end()) return it->second;
    // A tile of an array ("lhsT_tiles[3]") is its array's step.
    const std::string base = name.substr(0, name.find('['));
    return m_steps[key] = place_id(std::string(what) + " " + base);
}

std::uint32_t kernel_builder::buffer_step(std::uint32_t kind, const char* what,
                                          std::size_t buffer) {
    if (buffer >= m_buffer_decl.size()) return 0;  // (not a declared tile's buffer)
    const std::size_t d = m_buffer_decl[buffer];
    return step_place(kind, d, what, m_decls[d].name);
}

void kernel_builder::dma(bool is_load, const hbm_tensor& t, const operand& hbm_side,
                         const tile& chip, alu_op rmw, std::uint8_t priority, const tile* offset,
                         bool transpose) {
    if (transpose ? hbm_side.partitions != chip.op.elems || hbm_side.elems != chip.op.partitions
                  : hbm_side.partitions != chip.op.partitions || hbm_side.elems != chip.op.elems)
        throw std::logic_error("DMA shape mismatch on tensor " + t.name);  // (a cast may differ)
    if (chip.extent)
        throw user_error("a DMA of tensor " + t.name +
                         " with an indirect tile view "
                         "(tensor indirection is the engines')");
    if (offset && (offset->extent || offset->op.partitions != 1 || offset->op.elems != 1))
        throw user_error("a DMA of tensor " + t.name +
                         " at a run-time offset: the offset must be a tile of one element");
    const touch tensor{m_tensor_dep[t.id], region{}},
        buf{m_buffer_dep[chip.buffer], region_of(chip.op)};
    std::optional<touch> at;  // the offset's value, read when the transfer is described
    if (offset) at.emplace(touch{m_buffer_dep[offset->buffer], region_of(offset->op)});
    const touch* also = at ? &*at : nullptr;
    constexpr auto load_kind = static_cast<std::uint32_t>(opcode_count), store_kind = load_kind + 1;
    const step_scope step(
        *this, m_place   ? 0
               : is_load ? buffer_step(load_kind + (rmw == alu_op::bypass ? 0 : 2),
                                       rmw == alu_op::bypass ? "load" : "load_add", chip.buffer)
                         : step_place(store_kind, t.id, "store", t.name));
    // Loads are triggered from the Sync engine and stores from the Scalar engine (hardware DGE
    // on both), so a store waiting for its data never holds back the next loads.
    if (is_load) {
        dma_transfer d{chip.op, hbm_side, rmw, priority};
        d.transpose = transpose;
        transfer(queue_for(t, priority), d, engine_kind::sp, tensor, buf, also);
    } else {
        transfer(queue_for(t, priority), dma_transfer{hbm_side, chip.op, alu_op::bypass, priority},
                 engine_kind::act, buf, tensor, also);
    }
}

std::uint32_t kernel_builder::transfer(std::size_t q, const dma_transfer& given, engine_kind by,
                                       const touch& from, const touch& into,
                                       const touch* also_read) {
    dma_transfer t = given;
    t.part = m_part;  // (next_transfer_part: this transfer's alone)
    m_part = 0;
    if (m_checking) m_checks.transfer(t);
    if (m_prog.queues.size() <= q) m_prog.queues.resize(q + 1);
    if (m_prog.sources.queues.size() < m_prog.queues.size())
        m_prog.sources.queues.resize(m_prog.queues.size());
    if (m_transfers.size() <= q) m_transfers.resize(q + 1, 0);
    const auto n = static_cast<std::uint32_t>(++m_transfers[q]);
    if (m_stream) {
        m_stream->put_transfer(q, t, m_place);
        if (m_stream->counting()) grew();
    } else {
        m_prog.queues[q].push_back(t);
        placed(m_prog.sources.queues[q], m_prog.queues[q].size());
        grew();
    }
    instruction ins;
    ins.op = opcode::dma_trigger;
    ins.queue = static_cast<std::uint16_t>(q);
    // A doorbell starts the queue's next transfer, whoever rings it: when the previous transfer
    // is the other engine's, this trigger first waits for it to complete (so it has started).
    if (m_queue_trigger.size() <= q) m_queue_trigger.resize(q + 1, engine_kind::sp);
    const bool other = n > 1 && m_queue_trigger[q] != by;
    m_queue_trigger[q] = by;
    const sem_wait previous{semaphore_of_queue(q), n - 1};
    m_next_transfer_bytes = t.src.bytes();
    if (also_read) {
        const touch reads[2] = {from, *also_read};
        issue(by, std::move(ins), semaphore_of_queue(q), n, reads, 2, &into, 1, false,
              other ? &previous : nullptr);
    } else if (t.rmw == alu_op::bypass) {
        issue(by, std::move(ins), semaphore_of_queue(q), n, &from, 1, &into, 1, false,
              other ? &previous : nullptr);
    } else {
        const touch reads[2] = {from, into};  // a read-add-write reads what it writes
        issue(by, std::move(ins), semaphore_of_queue(q), n, reads, 2, &into, 1, false,
              other ? &previous : nullptr);
    }
    return n;
}

void kernel_builder::load(const tile& dst, const hbm_tensor& t, const operand& src,
                          std::uint8_t priority, const tile* offset) {
    dma(true, t, src, dst, alu_op::bypass, priority, offset);
}

void kernel_builder::gather(const tile& dst, const hbm_tensor& t, const operand& src,
                            const tile& index) {
    indirect_dma(true, t, src, dst, index);
}

void kernel_builder::scatter(const hbm_tensor& t, const operand& dst, const tile& src,
                             const tile& index) {
    indirect_dma(false, t, dst, src, index);
}

void kernel_builder::indirect_dma(bool is_load, const hbm_tensor& t, const operand& hbm_side,
                                  const tile& chip, const tile& index) {
    const std::string what =
        is_load ? "an indirect load of tensor " + t.name : "an indirect store to tensor " + t.name;
    if (hbm_side.partitions != chip.op.partitions || hbm_side.elems != chip.op.elems)
        throw std::logic_error(what + ": shape mismatch");
    if (chip.extent || index.extent)
        throw user_error(what + " with an indirect tile view (tensor indirection is the engines')");
    if (index.op.partitions < chip.op.partitions || index.op.elems != 1)
        throw user_error(what + ": its index must be a tile of one element per row moved");
    const touch tensor{m_tensor_dep[t.id], region{}},
        offsets{m_buffer_dep[index.buffer], region_of(index.op)},
        buf{m_buffer_dep[chip.buffer], region_of(chip.op)};
    constexpr auto load_kind = static_cast<std::uint32_t>(opcode_count), store_kind = load_kind + 1;
    const step_scope step(*this, m_place   ? 0
                                 : is_load ? buffer_step(load_kind, "load", chip.buffer)
                                           : step_place(store_kind, t.id, "store", t.name));
    if (is_load)
        transfer(queue_for(t, 0), dma_transfer{chip.op, hbm_side, alu_op::bypass, 0},
                 engine_kind::pool, tensor, buf, &offsets);
    else
        transfer(queue_for(t, 0), dma_transfer{hbm_side, chip.op, alu_op::bypass, 0},
                 engine_kind::pool, buf, tensor, &offsets);
}

void kernel_builder::load_add(const tile& dst, const hbm_tensor& t, const operand& src,
                              std::uint8_t priority) {
    dma(true, t, src, dst, alu_op::add, priority);
}

void kernel_builder::load_transposed(const tile& dst, const hbm_tensor& t, const operand& src,
                                     std::uint8_t priority) {
    dma(true, t, src, dst, alu_op::bypass, priority, nullptr, true);
}

void kernel_builder::store(const hbm_tensor& t, const operand& dst, const tile& src,
                           std::uint8_t priority, const tile* offset) {
    dma(false, t, dst, src, alu_op::bypass, priority, offset);
}

void kernel_builder::sendrecv(const tile& dst, const tile& src) {
    if (dst.extent || src.extent)
        throw user_error(
            "sendrecv with an indirect tile view (tensor indirection is the engines')");
    if (dst.op.partitions != src.op.partitions || dst.op.elems != src.op.elems)
        throw std::logic_error("sendrecv: src and dst differ in shape");
    const std::size_t q = m_opt.limits.dma_queues - 1;
    const touch from{m_buffer_dep[src.buffer], region_of(src.op)},
        into{m_buffer_dep[dst.buffer], region_of(dst.op)};
    const std::uint32_t n = transfer(q, dma_transfer{dst.op, src.op}, engine_kind::sp, from, into);
    instruction meet;
    meet.op = opcode::core_barrier;
    meet.imm = static_cast<float>(++m_barriers);
    const sem_wait sent{semaphore_of_queue(q), n};
    issue(engine_kind::sp, std::move(meet), semaphore_of_engine(engine_kind::sp), 0, nullptr, 0,
          &into, 1, false, &sent);
}

void kernel_builder::sbuf_dma(const tile& dst, const tile& src) {
    if (dst.extent || src.extent)
        throw user_error(
            "a DMA between tiles with an indirect tile view (tensor indirection is "
            "the engines')");
    if (dst.op.partitions != src.op.partitions || dst.op.elems != src.op.elems)
        throw std::logic_error("sbuf_dma: src and dst differ in shape");
    const touch from{m_buffer_dep[src.buffer], region_of(src.op)},
        into{m_buffer_dep[dst.buffer], region_of(dst.op)};
    constexpr auto load_kind = static_cast<std::uint32_t>(opcode_count);
    const step_scope step(*this, m_place ? 0 : buffer_step(load_kind, "load", dst.buffer));
    const std::size_t q = dst.buffer % m_opt.limits.dma_queues;
    if (m_prog.queues.size() <= q) m_prog.queues.resize(q + 1);
    transfer(q, dma_transfer{dst.op, src.op}, engine_kind::sp, from, into);
}

void kernel_builder::hbm_dma(const hbm_tensor& dt, const operand& dst, const hbm_tensor& st,
                             const operand& src) {
    if (dst.partitions != src.partitions || dst.elems != src.elems)
        throw std::logic_error("hbm_dma: src and dst differ in shape");
    const touch from{m_tensor_dep[st.id], region{}}, into{m_tensor_dep[dt.id], region{}};
    transfer(queue_for(dt), dma_transfer{dst, src}, engine_kind::sp, from, into);
}

void kernel_builder::core_barrier(engine_kind on, const hbm_tensor& t) {
    meet(on, touch{m_tensor_dep[t.id], region{}});
}

void kernel_builder::core_barrier(engine_kind on, const tile& t) {
    if (t.extent) throw user_error("a core_barrier over an indirect tile view");
    meet(on, touch{m_buffer_dep[t.buffer], region_of(t.op)});
}

void kernel_builder::meet(engine_kind on, const touch& data) {
    instruction ins;
    ins.op = opcode::core_barrier;
    ins.imm = static_cast<float>(++m_barriers);  // the cores meet at barriers of one number
    issue(on, std::move(ins), semaphore_of_engine(on), 0, &data, 1, &data, 1);
}

namespace {

// Sets the operand in `slot` of `ins` to tile `t` (and its indirection, if any).
inline void set_operand(instruction& ins, operand_slot slot, const tile& t) {
    ins.at(slot) = t.op;
    if (t.extent) ins.indirect.push_back(indirection{slot, t.extent, t.index});
}

instruction make(opcode op, alu_op alu, const tile& dst, const tile* a, const tile* b, float imm) {
    instruction ins;
    ins.op = op;
    ins.alu = alu;
    ins.dst = dst.op;
    if (a) ins.src0 = a->op;
    if (b) ins.src1 = b->op;
    if (dst.extent || (a && a->extent) || (b && b->extent)) {  // (tensor indirection: rare)
        for (const auto& [t, slot] :
             {std::pair{&dst, operand_slot::dst}, std::pair{a, operand_slot::src0},
              std::pair{b, operand_slot::src1}})
            if (t && t->extent) ins.indirect.push_back(indirection{slot, t->extent, t->index});
    }
    ins.imm = imm;
    return ins;
}

// tensor_scalar's optional second operation (op1 with immediate imm1; bypass: none).
instruction second_op(instruction ins, alu_op op1, float imm1) {
    ins.alu1 = op1;
    ins.imm1 = op1 == alu_op::bypass ? 0.0f : imm1;
    return ins;
}

}  // namespace

void kernel_builder::engine_op(engine_kind on, instruction ins,
                               std::initializer_list<const tile*> reads, const tile& dst,
                               bool in_order_writes, const tile* dst1) {
    const step_scope step(*this, m_place ? 0
                                         : buffer_step(static_cast<std::uint32_t>(ins.op),
                                                       opcode_name(ins.op), dst.buffer));
    touch r[9];  // (the reads, and the offsets of the indirect operands)
    if (reads.size() > 4) throw std::logic_error("engine_op: too many operands");
    std::size_t n = 0;
    for (const tile* t : reads) {
        r[n++] = {m_buffer_dep[t->buffer], region_of(*t)};
        if (t->extent) r[n++] = {m_buffer_dep[t->index_buffer], region_of(t->index)};
    }
    if (dst.extent) r[n++] = {m_buffer_dep[dst.index_buffer], region_of(dst.index)};
    const touch w[2] = {{m_buffer_dep[dst.buffer], region_of(dst)},
                        dst1 ? touch{m_buffer_dep[dst1->buffer], region_of(dst1->op)} : touch{}};
    issue(on, std::move(ins), semaphore_of_engine(on), 0, r, n, w, dst1 ? 2 : 1, in_order_writes);
}

void kernel_builder::instruction_op(engine_kind on, instruction ins, const tile* dst_or_none,
                                    const tile* src0, const tile* src1, const tile* src2,
                                    const tile* dst1) {
    if (!dst_or_none) {  // (the register instructions without dst: they read src0 at most)
        const step_scope step(*this, m_place || !src0
                                         ? 0
                                         : buffer_step(static_cast<std::uint32_t>(ins.op),
                                                       opcode_name(ins.op), src0->buffer));
        touch r[1];
        if (src0) {
            set_operand(ins, operand_slot::src0, *src0);
            r[0] = {m_buffer_dep[src0->buffer], region_of(*src0)};
        }
        issue(on, std::move(ins), semaphore_of_engine(on), 0, r, src0 ? 1 : 0, nullptr, 0);
        return;
    }
    const tile& dst = *dst_or_none;
    set_operand(ins, operand_slot::dst, dst);
    const tile* reads[3] = {};
    std::size_t n = 0;
    for (const auto& [t, slot] : {std::pair<const tile*, operand_slot>{src0, operand_slot::src0},
                                  {src1, operand_slot::src1},
                                  {src2, operand_slot::src2}})
        if (t) {
            set_operand(ins, slot, *t);
            reads[n++] = t;
        }
    if (dst1) ins.dst1 = dst1->op;
    switch (n) {
        case 0:
            engine_op(on, std::move(ins), {}, dst, false, dst1);
            break;
        case 1:
            engine_op(on, std::move(ins), {reads[0]}, dst, false, dst1);
            break;
        case 2:
            engine_op(on, std::move(ins), {reads[0], reads[1]}, dst, false, dst1);
            break;
        default:
            engine_op(on, std::move(ins), {reads[0], reads[1], reads[2]}, dst, false, dst1);
    }
}

void kernel_builder::placed(std::vector<std::uint32_t>& ids, std::size_t count) {
    if (!m_place && ids.empty()) return;  // no place yet: the list stays empty
    ids.resize(count, 0);
    ids.back() = m_place;
}

void kernel_builder::tensor_tensor(const tile& dst, const tile& a, const tile& b, alu_op op,
                                   engine_kind on) {
    engine_op(on, make(opcode::tensor_tensor, op, dst, &a, &b, 0), {&a, &b}, dst);
}

void kernel_builder::tensor_scalar(const tile& dst, const tile& a, alu_op op, float imm,
                                   engine_kind on, alu_op op1, float imm1) {
    engine_op(on, second_op(make(opcode::tensor_scalar, op, dst, &a, nullptr, imm), op1, imm1),
              {&a}, dst);
}

void kernel_builder::tensor_copy(const tile& dst, const tile& a, engine_kind on) {
    engine_op(on, make(opcode::tensor_copy, alu_op::bypass, dst, &a, nullptr, 0), {&a}, dst);
}

void kernel_builder::copy(const tile& dst, const tile& src) {
    // The Scalar engine copies through fp32: int32 data stays on the Vector engine.
    const bool ints = dst.op.type == dtype::int32 || src.op.type == dtype::int32;
    if (m_opt.style == kernel_style::nl && !ints) {
        // NeuronCore-v4's Scalar engine copies natively (2x for bf16/fp16); before, an identity
        // activation
        instruction on_act = m_opt.isa_version >= 4
                                 ? make(opcode::tensor_copy, alu_op::bypass, dst, &src, nullptr, 0)
                                 : make(opcode::activation, alu_op::bypass, dst, &src, nullptr, 0);
        if (on_act.op == opcode::activation) on_act.func = act_func::identity;
        const instruction on_dve = make(opcode::tensor_copy, alu_op::bypass, dst, &src, nullptr, 0);
        if (compiler_engine(on_dve, on_act) == engine_kind::act) {
            engine_op(engine_kind::act, on_act, {&src}, dst);
            return;
        }
    }
    tensor_copy(dst, src, engine_kind::dve);
}

engine_kind kernel_builder::compiler_engine(const instruction& on_dve,
                                            const instruction& on_act) const {
    const double dve = cost_ns(engine_kind::dve, on_dve), act = cost_ns(engine_kind::act, on_act);
    if (std::abs(dve - act) > 1e-9 * std::max(dve, act))
        return act < dve ? engine_kind::act : engine_kind::dve;
    return m_estimated_ns[std::size_t(engine_kind::act)] <
                   m_estimated_ns[std::size_t(engine_kind::dve)]
               ? engine_kind::act
               : engine_kind::dve;
}

void kernel_builder::instruction_either(instruction ins, const tile& dst, const tile& src0,
                                        const tile* src1, const tile* src2) {
    instruction costed = ins;
    set_operand(costed, operand_slot::dst, dst);
    set_operand(costed, operand_slot::src0, src0);
    if (src1) set_operand(costed, operand_slot::src1, *src1);
    if (src2) set_operand(costed, operand_slot::src2, *src2);
    instruction_op(compiler_engine(costed, costed), std::move(ins), &dst, &src0, src1, src2);
}

double kernel_builder::cost_ns(engine_kind e, const instruction& ins) const {
    if (ins.op == opcode::dma_trigger) return m_opt.trigger_ns;
    const double ghz = e == engine_kind::dve   ? m_opt.dve_clock_ghz
                       : e == engine_kind::act ? m_opt.act_clock_ghz
                                               : m_opt.pool_clock_ghz;
    return m_costs.cycles(e, ins) / ghz;
}

void kernel_builder::estimate(engine_kind e, const instruction& ins) {
    if (e == engine_kind::dve || e == engine_kind::act || e == engine_kind::pool ||
        (e == engine_kind::sp && ins.op == opcode::dma_trigger))
        m_estimated_ns[std::size_t(e)] += cost_ns(e, ins);
}

void kernel_builder::memset(const tile& dst, float value, engine_kind on) {
    engine_op(on, make(opcode::memset, alu_op::bypass, dst, nullptr, nullptr, value), {}, dst);
}

void kernel_builder::activation(const tile& dst, const tile& src, act_func func, float scale,
                                engine_kind on, const tile* bias) {
    instruction ins =
        make(opcode::activation, alu_op::bypass, dst, &src, bias, scale == 1.0f ? 0.0f : scale);
    ins.func = func;
    if (bias)
        engine_op(on, ins, {&src, bias}, dst);
    else
        engine_op(on, ins, {&src}, dst);
}

void kernel_builder::tensor_scalar_ap(const tile& dst, const tile& src, alu_op op,
                                      const tile& scalar, engine_kind on, alu_op op1, float imm1) {
    engine_op(on, second_op(make(opcode::tensor_scalar, op, dst, &src, &scalar, 0), op1, imm1),
              {&src, &scalar}, dst);
}

void kernel_builder::tensor_scalar_open(const tile& dst, const tile& src, alu_op op,
                                        const tile& scalar) {
    instruction_either(make(opcode::tensor_scalar, op, dst, &src, &scalar, 0), dst, src, &scalar);
}

void kernel_builder::scalar_tensor_tensor(const tile& dst, const tile& a, alu_op op0, float imm,
                                          alu_op op1, const tile& b) {
    instruction ins = make(opcode::scalar_tensor_tensor, op0, dst, &a, &b, imm);
    ins.alu1 = op1;
    engine_op(engine_kind::dve, ins, {&a, &b}, dst);
}

void kernel_builder::tensor_tensor_scan(const tile& dst, const tile& a, const tile& b,
                                        float initial, alu_op op0, alu_op op1) {
    instruction ins = make(opcode::tensor_tensor_scan, op0, dst, &a, &b, initial);
    ins.alu1 = op1;
    engine_op(engine_kind::dve, ins, {&a, &b}, dst);
}

void kernel_builder::iota(const tile& dst, float offset, float partition_step) {
    instruction ins = make(opcode::iota, alu_op::bypass, dst, nullptr, nullptr, offset);
    ins.imm1 = partition_step;
    engine_op(engine_kind::pool, ins, {}, dst);
}

void kernel_builder::max8(const tile& dst, const tile& src) {
    engine_op(engine_kind::dve, make(opcode::max8, alu_op::bypass, dst, &src, nullptr, 0), {&src},
              dst);
}

void kernel_builder::find_index8(const tile& dst, const tile& src, const tile& values) {
    engine_op(engine_kind::dve, make(opcode::find_index8, alu_op::bypass, dst, &src, &values, 0),
              {&src, &values}, dst);
}

void kernel_builder::tensor_reduce(const tile& dst, const tile& src, alu_op op, engine_kind on) {
    engine_op(on, make(opcode::tensor_reduce, op, dst, &src, nullptr, 0), {&src}, dst);
}

void kernel_builder::matmul(const tile& dst, const tile& stationary, const tile& moving,
                            bool accumulate, bool double_row, std::uint16_t onezero) {
    instruction ins = make(opcode::matmul, alu_op::bypass, dst, &stationary, &moving, 0);
    ins.flags = static_cast<std::uint16_t>(
        (accumulate ? flag::accumulate : 0) | (double_row ? flag::double_row : 0) |
        (onezero & (flag::stationary_onezero | flag::moving_onezero)));
    m_flops += 2.0 * stationary.op.partitions * stationary.op.elems * moving.op.elems;
    // Accumulation into PSUM is ordered by the Tensor engine itself: no wait on its own earlier
    // matmuls into dst (other writers and readers of dst are still waited for).
    engine_op(engine_kind::pe, ins, {&stationary, &moving}, dst, accumulate);
}

void kernel_builder::matmul_mx(const tile& dst, const tile& stationary, const tile& moving,
                               const tile& stationary_scale, const tile& moving_scale,
                               bool accumulate) {
    for (const tile* t : {&dst, &stationary, &moving, &stationary_scale, &moving_scale})
        if (t->extent) throw user_error("matmul_mx with an indirect tile view (not modelled)");
    instruction ins = make(opcode::matmul_mx, alu_op::bypass, dst, &stationary, &moving, 0);
    ins.src2 = stationary_scale.op;
    ins.src3 = moving_scale.op;
    ins.flags = accumulate ? flag::accumulate : 0;
    // four values a packed element: a contraction of 4 x the partitions
    m_flops += 2.0 * 4 * stationary.op.partitions * stationary.op.elems * moving.op.elems;
    engine_op(engine_kind::pe, ins, {&stationary, &moving, &stationary_scale, &moving_scale}, dst,
              accumulate);
}

void kernel_builder::transpose(const tile& dst, const tile& src, std::uint16_t onezero) {
    instruction ins = make(opcode::transpose, alu_op::bypass, dst, &src, nullptr, 0);
    ins.flags = onezero & flag::moving_onezero;
    engine_op(engine_kind::pe, ins, {&src}, dst);
}

tile kernel_builder::slice(const tile& t, std::uint32_t first, std::uint32_t count) {
    return strided(t, first, count, 1);
}

tile kernel_builder::strided(const tile& t, std::uint32_t first, std::uint32_t count,
                             std::uint32_t step) {
    const bool fits = count == 0 ? first <= t.op.elems
                                 : step > 0 && first < t.op.elems &&
                                       (count - 1) <= (t.op.elems - 1 - first) / step;
    if (!fits) throw std::logic_error("tile slice out of range");
    tile s = t;
    s.op.offset += std::uint64_t{first} * t.op.elem_stride * dtype_size(t.op.type);
    s.op.elems = count;
    if (count > 1) s.op.elem_stride = t.op.elem_stride * step;
    return s;
}

tile kernel_builder::partitions_of(const tile& t, std::uint32_t first, std::uint32_t count) {
    if (count > t.op.partitions || first > t.op.partitions - count)
        throw std::logic_error("partition slice out of range");
    tile s = t;
    s.op.partition = static_cast<std::uint16_t>(s.op.partition + first);  // within the tile
    s.op.partitions = count;
    return s;
}

tile kernel_builder::part(const tile& t, std::uint32_t p0, std::uint32_t pc, std::uint32_t f0,
                          std::uint32_t fc, std::uint32_t elem_stride) {
    if (pc == 0 || pc > t.op.partitions || p0 > t.op.partitions - pc)
        throw std::logic_error("partition slice out of range");
    const std::uint32_t step = fc > 1 ? elem_stride : 1;
    if (fc == 0 || step == 0 || f0 >= t.op.elems || (fc - 1) > (t.op.elems - 1 - f0) / step)
        throw std::logic_error("tile slice out of range");
    tile s = t;
    s.op.partition = static_cast<std::uint16_t>(s.op.partition + p0);
    s.op.partitions = pc;
    s.op.offset += std::uint64_t{f0} * t.op.elem_stride * dtype_size(t.op.type);
    s.op.elems = fc;
    s.op.elem_stride = elem_stride;
    return s;
}

std::uint32_t kernel_builder::policy_buffers(std::uint64_t loop_trips) const {
    const bool nl = m_opt.style == kernel_style::nl;
    if (loop_trips == 0) return nl ? m_opt.nl_buffers : 1;
    // A loop the compiler unrolls: each instance is a value of its own, and the allocator
    // rotates them over nl_buffers buffers (no more than there are instances). A longer loop
    // stays a hardware loop whose single body reuses one buffer per tile.
    if (loop_trips > (nl ? m_opt.nl_unroll_limit : m_opt.isa_unroll_limit)) return 1;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(m_opt.nl_buffers, loop_trips));
}

std::uint32_t kernel_builder::buffers_that_fit(std::uint64_t bytes,
                                               std::uint64_t loop_trips) const {
    std::uint32_t b = policy_buffers(loop_trips);
    while (b > 1 && m_sbuf_used + b * bytes > m_opt.limits.sbuf_partition_bytes)
        --b;
    return b;
}

std::uint64_t kernel_builder::unrolled_trips(const std::vector<std::uint64_t>& loops) const {
    const std::uint64_t limit =
        m_opt.style == kernel_style::nl ? m_opt.nl_unroll_limit : m_opt.isa_unroll_limit;
    std::uint64_t trips = 0;
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
        if (*it <= 1) continue;
        if (trips == 0) {
            trips = *it;  // the innermost loop, unrolled or not
            if (trips > limit) break;
        } else if (trips * *it <= limit) {
            trips *= *it;
        } else {
            break;
        }
    }
    return trips;
}

std::vector<std::uint32_t> kernel_builder::plan_buffers(
    const std::vector<tile_request>& requests) const {
    std::vector<std::uint32_t> out(requests.size(), 1), policy(requests.size(), 1);
    for (const mem_space space : {mem_space::sbuf, mem_space::psum}) {
        const bool sbuf = space == mem_space::sbuf;
        const std::uint64_t cap =
            sbuf ? m_opt.limits.sbuf_partition_bytes : m_opt.limits.psum_partition_bytes;
        std::uint64_t fixed = sbuf ? m_sbuf_used : m_psum_used;
        std::vector<std::pair<std::uint64_t, std::size_t>> rotors;  // (bytes per buffer, index)
        std::uint32_t shared = 1;
        for (std::size_t i = 0; i < requests.size(); ++i) {
            const tile_request& r = requests[i];
            if (r.space != space) continue;
            const std::uint64_t bytes = aligned_bytes(space, r.bytes) * r.count;
            policy[i] = r.single ? 1 : policy_buffers(unrolled_trips(r.loops));
            if (policy[i] == 1) {
                fixed += bytes;
            } else {
                rotors.emplace_back(bytes, i);
                shared = std::max(shared, policy[i]);
            }
        }
        auto need = [&](std::uint32_t b) {
            std::uint64_t total = fixed;
            for (const auto& [bytes, i] : rotors)
                total += bytes * std::min(b, policy[i]);
            return total;
        };
        while (shared > 1 && need(shared) > cap)
            --shared;
        // What is left goes to the smallest single-tile declarations first, each up to its
        // policy; tile arrays (operands hoisted together) keep the shared count.
        std::uint64_t left = need(shared) < cap ? cap - need(shared) : 0;
        std::stable_sort(rotors.begin(), rotors.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [bytes, i] : rotors) {
            out[i] = std::min(shared, policy[i]);
            while (requests[i].count == 1 && out[i] < policy[i] && bytes <= left) {
                ++out[i];
                left -= bytes;
            }
        }
    }
    return out;
}

std::vector<std::size_t> kernel_builder::declare_tile_array(
    const std::string& name, std::size_t count, mem_space space, std::uint32_t partitions,
    std::uint32_t elems, dtype type, std::uint32_t buffers, std::uint64_t loop_trips) {
    check_tile(name, partitions, elems);
    if (buffers == 0) {
        buffers = policy_buffers(loop_trips);
        const std::uint64_t bytes = aligned_bytes(space, std::uint64_t{elems} * dtype_size(type));
        const std::uint64_t used = space == mem_space::sbuf ? m_sbuf_used : m_psum_used;
        const std::uint64_t cap = space == mem_space::sbuf ? m_opt.limits.sbuf_partition_bytes
                                                           : m_opt.limits.psum_partition_bytes;
        while (buffers > 1 && used + count * buffers * bytes > cap)
            --buffers;
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < count; ++i)
        out.push_back(declare_tile(name + "[" + std::to_string(i) + "]", space, partitions, elems,
                                   type, buffers));
    return out;
}

void kernel_builder::begin_phase() {
    drain();
    m_phases.push_back({m_sbuf_used, m_psum_used, m_decls.size(), m_buffer_dep.size()});
}

void kernel_builder::end_phase() {
    if (m_phases.empty()) throw std::logic_error("end_phase without begin_phase");
    drain();
    const phase ph = m_phases.back();
    m_phases.pop_back();
    for (std::size_t b = ph.first_buffer; b < m_buffer_dep.size(); ++b) {
        absorb(m_freed.writers, m_deps[m_buffer_dep[b]].writers);
        absorb(m_freed.readers, m_deps[m_buffer_dep[b]].readers);
    }
    m_decl_freed.resize(m_decls.size(), false);
    for (std::size_t d = ph.first_decl; d < m_decls.size(); ++d)
        m_decl_freed[d] = true;
    m_sbuf_used = ph.sbuf_used;
    m_psum_used = ph.psum_used;
}

program kernel_builder::finish() {
    drain();
    m_prog.hbm_bytes = m_hbm_used;
    if (m_stream) m_stream->set_program(m_prog);
    // The builder orders every access to the buffers it allocates; tiles placed by the kernel
    // (declare_tile_at) may share bytes the builder does not know are shared.
    if (m_direct) m_races = find_races(m_prog);
    return std::move(m_prog);
}

}  // namespace trn

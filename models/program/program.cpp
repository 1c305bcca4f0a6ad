#include "core/program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/race_check.h"
#include "isa/opcode_row.h"

namespace trn {

const char* engine_name(engine_kind e) {
    switch (e) {
        case engine_kind::pe:
            return "pe";
        case engine_kind::dve:
            return "dve";
        case engine_kind::act:
            return "act";
        case engine_kind::pool:
            return "pool";
        case engine_kind::sp:
            return "sp";
    }
    return "?";
}

const char* mem_space_name(mem_space s) {
    switch (s) {
        case mem_space::hbm:
            return "hbm";
        case mem_space::sbuf:
            return "sbuf";
        case mem_space::psum:
            return "psum";
    }
    return "?";
}

namespace {

struct named_since {
    const char* name;
    int since;
};
constexpr named_since alu_table[] = {
#define TRN_NAMED(name, since) {#name, since},
    TRN_ALU_OPS(TRN_NAMED)};
constexpr named_since act_table[] = {TRN_ACT_FUNCS(TRN_NAMED)
#undef TRN_NAMED
};

}  // namespace

const opcode_info& info(opcode o) {
    return row(o).info;
}

const char* opcode_name(opcode o) {
    return static_cast<std::size_t>(o) < opcode_count ? info(o).name : "?";
}

const char* alu_name(alu_op a) {
    return static_cast<std::size_t>(a) < std::size(alu_table)
               ? alu_table[static_cast<std::size_t>(a)].name
               : "?";
}

int alu_since(alu_op a) {
    return alu_table[static_cast<std::size_t>(a)].since;
}

const char* act_func_name(act_func f) {
    return static_cast<std::size_t>(f) < std::size(act_table)
               ? act_table[static_cast<std::size_t>(f)].name
               : "?";
}

int act_func_since(act_func f) {
    return act_table[static_cast<std::size_t>(f)].since;
}

float apply_act(act_func f, float x) {
    constexpr float inv_sqrt2 = 0.70710678118654752f, inv_sqrt_pi = 0.56418958354775628f;
    switch (f) {
        case act_func::identity:
            return x;
        case act_func::relu:
            return std::max(x, 0.0f);
        case act_func::exp:
            return std::exp(x);
        case act_func::reciprocal:
            return 1.0f / x;
        case act_func::rsqrt:
            return 1.0f / std::sqrt(x);
        case act_func::sqrt:
            return std::sqrt(x);
        case act_func::square:
            return x * x;
        case act_func::sigmoid:
            return 1.0f / (1.0f + std::exp(-x));
        case act_func::tanh:
            return std::tanh(x);
        case act_func::silu:
            return x / (1.0f + std::exp(-x));
        case act_func::gelu:
            return 0.5f * x * (1.0f + std::erf(x * inv_sqrt2));
        case act_func::log:
            return std::log(x);
        case act_func::gelu_apprx_tanh:  // 0.5 x (1 + tanh(u)) as x sigmoid(2u): no cancellation
            return x / (1.0f + std::exp(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
        case act_func::softplus:
            return std::log1p(std::exp(x));
        case act_func::mish:
            return x * std::tanh(std::log1p(std::exp(x)));
        case act_func::sin:
            return std::sin(x);
        case act_func::cos:
            return std::cos(x);
        case act_func::arctan:
            return std::atan(x);
        case act_func::abs:
            return std::fabs(x);
        case act_func::sign:
            return std::isnan(x) ? x : static_cast<float>((x > 0.0f) - (x < 0.0f));
        case act_func::erf:
            return std::erf(x);
        case act_func::gelu_dx:  // d/dx of x * Phi(x)
            return 0.5f * (1.0f + std::erf(x * inv_sqrt2)) +
                   x * inv_sqrt2 * inv_sqrt_pi * std::exp(-0.5f * x * x);
        case act_func::silu_dx: {  // d/dx of x * sigmoid(x)
            const float s = 1.0f / (1.0f + std::exp(-x));
            return s * (1.0f + x * (1.0f - s));
        }
        case act_func::negative:
            return -x;
        case act_func::tan:
            return std::tan(x);
        case act_func::erf_dx:  // d/dx of erf
            return 1.1283791670955126f * std::exp(-x * x);
        case act_func::gelu_apprx_sigmoid:  // x * sigmoid(1.702 x)
            return x / (1.0f + std::exp(-1.702f * x));
    }
    return x;
}

std::uint32_t program_sources::engine_id(engine_kind e, std::size_t i) const {
    const auto& ids = engines[std::size_t(e)];
    return i < ids.size() ? ids[i] : 0;
}

std::uint32_t program_sources::queue_id(std::size_t q, std::size_t i) const {
    return q < queues.size() && i < queues[q].size() ? queues[q][i] : 0;
}

const std::string& program_sources::name(std::uint32_t id) const {
    static const std::string none;
    return id ? names[id - 1] : none;
}

const std::string& program_sources::of_engine(engine_kind e, std::size_t i) const {
    return name(engine_id(e, i));
}

const std::string& program_sources::of_queue(std::size_t q, std::size_t i) const {
    return name(queue_id(q, i));
}

std::uint32_t program_sources::intern(const std::string& place) {
    for (std::size_t i = names.size(); i-- > 0;)  // the latest is the likeliest
        if (names[i] == place) return static_cast<std::uint32_t>(i + 1);
    names.push_back(place);
    return static_cast<std::uint32_t>(names.size());
}

namespace {

// Two programs' places agree entry by entry.
bool same_places(const program& a, const program& b) {
    for (auto e : all_engines)
        for (std::size_t i = 0; i < a.engines[std::size_t(e)].size(); ++i)
            if (a.sources.of_engine(e, i) != b.sources.of_engine(e, i)) return false;
    for (std::size_t q = 0; q < a.queues.size(); ++q)
        for (std::size_t i = 0; i < a.queues[q].size(); ++i)
            if (a.sources.of_queue(q, i) != b.sources.of_queue(q, i)) return false;
    return true;
}

}  // namespace

std::string semaphore_name(sem_id s) {
    if (s < engine_count) return engine_name(static_cast<engine_kind>(s));
    return "q" + std::to_string(s - engine_count);
}

bool operand::operator==(const operand& o) const {
    return space == o.space && type == o.type && partition == o.partition &&
           partitions == o.partitions && elems == o.elems && offset == o.offset &&
           row_stride == o.row_stride && elem_stride == o.elem_stride;
}

bool instruction::operator==(const instruction& o) const {
    return op == o.op && alu == o.alu && alu1 == o.alu1 && imm1 == o.imm1 && dst == o.dst &&
           src0 == o.src0 && src1 == o.src1 && src2 == o.src2 && dst1 == o.dst1 && src3 == o.src3 &&
           imm == o.imm && imm2 == o.imm2 && imm3 == o.imm3 && queue == o.queue &&
           flags == o.flags && func == o.func && waits == o.waits && indirect == o.indirect;
}

const char* operand_slot_name(operand_slot s) {
    static const char* const names[] = {"dst", "src0", "src1", "src2", "dst1", "src3"};
    return names[std::size_t(s)];
}

bool hbm_region::operator==(const hbm_region& o) const {
    return name == o.name && offset == o.offset && bytes == o.bytes && type == o.type &&
           input == o.input && lo == o.lo && hi == o.hi && seed == o.seed;
}

std::size_t program::instruction_count() const {
    std::size_t n = transfer_count();
    for (const auto& s : engines)
        n += s.size();
    return n;
}

std::size_t program::transfer_count() const {
    std::size_t n = 0;
    for (const auto& q : queues)
        n += q.size();
    return n;
}

bool program::operator==(const program& o) const {
    return engines == o.engines && queues == o.queues && regions == o.regions &&
           hbm_bytes == o.hbm_bytes && same_places(*this, o);
}

namespace {

// a + b and a * b, saturating at the largest value: bounds checks must not wrap around.
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

// operand::span_bytes(), saturating.
std::uint64_t span_of(const operand& op) {
    return sat_mul(sat_add(sat_mul(op.elems - 1, op.elem_stride), 1), dtype_size(op.type));
}

template <typename Where>
void check_operand(const operand& op, const char* role, const program_limits& lim,
                   std::uint64_t declared_hbm, const Where& where_fn) {
    auto where = [&] { return where_fn(); };
    if (!op.valid()) throw user_error(where() + ": operand " + role + " is empty");
    if (op.elems == 0) throw user_error(where() + ": operand " + role + " has no elements");
    if (op.elem_stride == 0) throw user_error(where() + ": operand " + role + " has stride 0");
    if (op.space == mem_space::hbm) {
        const std::uint64_t end =
            sat_add(sat_add(op.offset, sat_mul(op.partitions - 1, op.row_stride)), span_of(op));
        if (end > lim.hbm_bytes)
            throw user_error(where() + ": operand " + role + " ends at HBM byte " +
                             std::to_string(end) + ", beyond the " + std::to_string(lim.hbm_bytes) +
                             " bytes of HBM");
        if (end > declared_hbm)
            throw user_error(where() + ": operand " + role + " ends at HBM byte " +
                             std::to_string(end) + ", beyond the program's declared hbm_bytes " +
                             std::to_string(declared_hbm));
        return;
    }
    const std::uint64_t last_partition = std::uint64_t{op.partition} + op.partitions - 1;
    if (last_partition >= lim.partitions)
        throw user_error(where() + ": operand " + role + " uses partitions " +
                         std::to_string(op.partition) + ".." + std::to_string(last_partition) +
                         ": number of partitions exceeds the architecture limit of " +
                         std::to_string(lim.partitions));
    const std::uint64_t cap =
        op.space == mem_space::sbuf ? lim.sbuf_partition_bytes : lim.psum_partition_bytes;
    const std::uint64_t end = sat_add(op.offset, span_of(op));
    if (end > cap)
        throw user_error(where() + ": operand " + role + " ends at byte " + std::to_string(end) +
                         " of a " + mem_space_name(op.space) + " partition of " +
                         std::to_string(cap) + " bytes");
}

}  // namespace

void check_operand(const operand& op, const char* role, const program_limits& limits,
                   std::uint64_t hbm_bytes, const std::function<std::string()>& where) {
    check_operand<std::function<std::string()>>(op, role, limits, hbm_bytes, where);
}

void check_transfer(const dma_transfer& t, const program_limits& lim, std::uint64_t hbm_bytes,
                    const std::function<std::string()>& where) {
    check_operand(t.dst, "dst", lim, hbm_bytes, where);
    check_operand(t.src, "src", lim, hbm_bytes, where);
    if (t.priority >= lim.dma_priority_levels)
        throw user_error(where() + ": priority " + std::to_string(t.priority) +
                         (lim.dma_priority_levels > 1
                              ? " is not a DMA quality-of-service level of this core: 0 to " +
                                    std::to_string(lim.dma_priority_levels - 1) +
                                    " (core.dma.priority_levels " +
                                    std::to_string(lim.dma_priority_levels) + ")"
                              : " needs DMA quality-of-service levels, which this core has not "
                                "(core.dma.priority_levels 1; NeuronCore-v4 has 4: --config "
                                "trn3)"));
    if (t.dst.space == mem_space::psum || t.src.space == mem_space::psum)
        throw user_error(where() + ": DMA cannot reach PSUM");
    if (t.dst.elem_stride != 1 || t.src.elem_stride != 1)
        throw user_error(where() + ": DMA operands must be contiguous in each row");
    if (t.transpose) {
        // dst[c, r] = src[r, c], into SBUF (nki.isa.dma_transpose: "the source of transpose,
        // must be a tile in HBM or SBUF"; the result a tile on chip)
        if (t.dst.space != mem_space::sbuf || t.src.space != mem_space::hbm)
            throw user_error(where() +
                             ": a DMA transpose reads HBM and writes into SBUF (from SBUF, up "
                             "to 50% of a copy's rate on NeuronCore-v3, is not modelled)");
        for (const dtype d : {t.src.type, t.dst.type})
            if (dtype_size(d) != 2 && dtype_size(d) != 4)
                throw user_error(where() + ": a DMA transpose moves 2- or 4-byte elements, not " +
                                 dtype_name(d));
        if (t.rmw != alu_op::bypass)
            throw user_error(where() + ": a DMA transpose cannot read-add-write");
        if (t.dst.partitions != t.src.elems || t.dst.elems != t.src.partitions)
            throw user_error(
                where() +
                ": a DMA transpose's dst has src's elements as rows and "
                "its rows as elements (dst " +
                std::to_string(t.dst.partitions) + " x " + std::to_string(t.dst.elems) + ", src " +
                std::to_string(t.src.partitions) + " x " + std::to_string(t.src.elems) + ")");
    } else if (t.dst.partitions != t.src.partitions || t.dst.elems != t.src.elems) {
        throw user_error(where() + ": dst and src differ in rows or elements per row");
    }
    // An MX type moves as its bits: to and from itself, or an integer type of its size.
    for (const auto& [a, b] :
         {std::pair{t.dst.type, t.src.type}, std::pair{t.src.type, t.dst.type}})
        if (is_mx(a) && a != b && !(is_integer(b) && dtype_size(a) == dtype_size(b)))
            throw user_error(where() + ": a DMA moves " + dtype_name(a) +
                             " as its bits: to and from itself or an integer type of its size, "
                             "not " +
                             dtype_name(b));
    if (t.rmw == alu_op::bypass) return;
    // A read-add-write: B += A, B in SBUF, A in HBM or SBUF, both bf16 or both fp32 (the
    // Trainium3 guide; nki.isa.dma_copy's dst_rmw_op: only add)
    if (t.rmw != alu_op::add)
        throw user_error(where() + ": a DMA read-add-write adds (op=add), not " + alu_name(t.rmw));
    if (t.dst.space != mem_space::sbuf)
        throw user_error(where() + ": a DMA read-add-write adds into SBUF");
    if (t.dst.type != t.src.type || (t.dst.type != dtype::float32 && t.dst.type != dtype::bfloat16))
        throw user_error(where() +
                         ": a DMA read-add-write takes bf16 or fp32, the same for dst "
                         "and src (got " +
                         dtype_name(t.dst.type) + " and " + dtype_name(t.src.type) + ")");
}

namespace {

// A tensor indirection's operand and offsets: on chip, the offsets an integer tile in SBUF of
// the operand's partitions, starting on a quadrant (32 partitions), holding at least the
// operand's elements in the engine's snake layout; the indexed tile's `extent` columns within
// the memory.
void check_indirect(const instruction& ins, engine_kind e, const program_limits& lim,
                    std::uint64_t hbm_bytes, const std::function<std::string()>& where) {
    bool seen[operand_slot_count] = {};
    for (const auto& t : ins.indirect) {
        const std::string slot = operand_slot_name(t.slot);
        const operand& op = ins.at(t.slot);
        if (seen[std::size_t(t.slot)])
            throw user_error(where() + ": " + slot + " is indirect twice");
        seen[std::size_t(t.slot)] = true;
        if (t.slot != operand_slot::dst && t.slot != operand_slot::src0 &&
            t.slot != operand_slot::src1)
            throw user_error(where() + ": only dst, src0 and src1 may be indirect, not " + slot);
        if (!op.valid()) throw user_error(where() + ": " + slot + "_index= without " + slot + "=");
        if (op.space == mem_space::hbm)
            throw user_error(where() + ": an indirect " + slot + " is on chip (SBUF or PSUM)");
        if (t.extent == 0) throw user_error(where() + ": " + slot + "_extent is 0");
        operand whole = op;  // the indexed tile
        whole.elems = t.extent;
        check_operand(whole,
                      (slot + " (its " + std::to_string(t.extent) + " indexed columns)").c_str(),
                      lim, hbm_bytes, where);
        const std::string index = slot + "_index";
        check_operand(t.index, index.c_str(), lim, hbm_bytes, where);
        if (t.index.space != mem_space::sbuf || !is_integer(t.index.type))
            throw user_error(where() + ": " + index + " is an integer tile in SBUF, not " +
                             dtype_name(t.index.type) + " in " + mem_space_name(t.index.space));
        if (t.index.partitions != op.partitions)
            throw user_error(where() + ": " + index + " has " + std::to_string(t.index.partitions) +
                             " partitions, " + slot + " " + std::to_string(op.partitions) +
                             " (the same, as NKI's .indirect)");
        if (t.index.partition % 32 != 0)
            throw user_error(where() + ": " + index + " starts at partition " +
                             std::to_string(t.index.partition) +
                             ", not on a quadrant boundary (a multiple of 32)");
        const std::uint32_t g = indirection_group(e), n = op.elems;
        std::uint32_t rows = 0;  // the index rows the offsets of the last group reach
        for (std::uint32_t i = n > g ? n - g : 0; i < n; ++i)
            rows = std::max(rows, indirection_position(i, g, t.index.elems).first + 1);
        if (rows > t.index.partitions)
            throw user_error(where() + ": " + slot + "'s " + std::to_string(n) + " offsets need " +
                             std::to_string(rows) + " partitions of " + index + " (groups of " +
                             std::to_string(g) + " partitions on " + engine_name(e) +
                             "), which has " + std::to_string(t.index.partitions));
    }
}

}  // namespace

void check_instruction(const instruction& ins, engine_kind e, const program_limits& lim,
                       std::uint64_t hbm_bytes, const std::function<std::string()>& where) {
    if (!ins.indirect.empty()) check_indirect(ins, e, lim, hbm_bytes, where);
    if (ins.op != opcode::matmul_mx && ins.op != opcode::quantize_mx) {
        for (const operand* o : {&ins.dst, &ins.src0, &ins.src1, &ins.src2, &ins.dst1, &ins.src3})
            if (o->valid() && is_mx(o->type))
                throw user_error(where() + ": " + dtype_name(o->type) +
                                 " is an MX type: "
                                 "matmul_mx and quantize_mx take it, and DMAs move it");
        if (ins.src3.valid()) throw user_error(where() + ": src3 is given only with matmul_mx");
    }
    row(ins.op).check(ins, e, check_context{lim, hbm_bytes, where});
}

void validate_program(const program& p, const program_limits& lim) {
    if (p.queues.size() > lim.dma_queues)
        throw user_error("program uses " + std::to_string(p.queues.size()) +
                         " DMA queues; the platform has " + std::to_string(lim.dma_queues));
    if (p.hbm_bytes > lim.hbm_bytes)
        throw user_error("program needs " + std::to_string(p.hbm_bytes) +
                         " bytes of HBM; the platform has " + std::to_string(lim.hbm_bytes));
    // "FILE:LINE: " of a trace's line, when the program came from one.
    auto line_of = [&](const std::vector<std::size_t>* lines, std::size_t i) {
        if (!p.origin || !lines || i >= lines->size()) return std::string();
        return p.origin->file + ":" + std::to_string((*lines)[i]) + ": ";
    };
    for (std::size_t r = 0; r < p.regions.size(); ++r) {
        const hbm_region& g = p.regions[r];
        if (sat_add(g.offset, g.bytes) > p.hbm_bytes)
            throw user_error(
                line_of(p.origin ? &p.origin->region_lines : nullptr, r) + "region '" + g.name +
                "' ends at HBM byte " + std::to_string(sat_add(g.offset, g.bytes)) +
                ", beyond the program's declared hbm_bytes " + std::to_string(p.hbm_bytes));
    }
    std::vector<std::uint64_t> sem_total(engine_count + p.queues.size(), 0);
    std::vector<std::size_t> triggers(p.queues.size(), 0);
    for (std::size_t q = 0; q < p.queues.size(); ++q) {
        sem_total[semaphore_of_queue(q)] = p.queues[q].size();
        for (std::size_t i = 0; i < p.queues[q].size(); ++i) {
            const auto& t = p.queues[q][i];
            auto where = [&] {
                return line_of(p.origin && q < p.origin->queue_lines.size()
                                   ? &p.origin->queue_lines[q]
                                   : nullptr,
                               i) +
                       "q" + std::to_string(q) + " transfer " + std::to_string(i);
            };
            check_transfer(t, lim, p.hbm_bytes, std::cref(where));
        }
    }
    for (auto e : all_engines)
        sem_total[semaphore_of_engine(e)] = p.engines[std::size_t(e)].size();
    for (auto e : all_engines) {
        const auto& stream = p.engines[std::size_t(e)];
        for (std::size_t i = 0; i < stream.size(); ++i) {
            const auto& ins = stream[i];
            auto where = [&] {
                return line_of(p.origin ? &p.origin->engine_lines[std::size_t(e)] : nullptr, i) +
                       engine_name(e) + " instruction " + std::to_string(i) + " (" +
                       opcode_name(ins.op) + ")";
            };
            for (const auto& w : ins.waits) {
                if (w.sem >= sem_total.size())
                    throw user_error(where() + ": waits on unknown semaphore " +
                                     semaphore_name(w.sem));
                if (w.value > sem_total[w.sem])
                    throw user_error(where() + ": deadlock: waits for " + semaphore_name(w.sem) +
                                     ">=" + std::to_string(w.value) + " but " +
                                     semaphore_name(w.sem) + " only ever reaches " +
                                     std::to_string(sem_total[w.sem]));
            }
            if (ins.op == opcode::dma_trigger) {
                if (ins.queue >= p.queues.size() ||
                    triggers[ins.queue] >= p.queues[ins.queue].size())
                    throw user_error(where() + ": triggers q" + std::to_string(ins.queue) +
                                     ", which has no transfer left to start");
                ++triggers[ins.queue];
            }
            check_instruction(ins, e, lim, p.hbm_bytes, std::cref(where));
        }
    }
    for (std::size_t q = 0; q < p.queues.size(); ++q)
        if (triggers[q] != p.queues[q].size())
            throw user_error("q" + std::to_string(q) + " has " +
                             std::to_string(p.queues[q].size()) + " transfers but " +
                             std::to_string(triggers[q]) + " dma_trigger instructions");
    // A hand-written trace must order every pair of accesses to shared memory itself.
    if (p.origin) check_no_races(p);
}

}  // namespace trn

#include <random>

namespace trn {

std::vector<std::uint8_t> region_initial_bytes(const hbm_region& r) {
    std::vector<std::uint8_t> out(r.bytes);
    std::mt19937 gen(r.seed);
    const std::size_t size = dtype_size(r.type);
    auto uniform = [&] {
        const double u = static_cast<double>(gen() >> 8) / 16777216.0;  // 24 bits in [0,1)
        return static_cast<float>(r.lo + (r.hi - r.lo) * u);
    };
    for (std::size_t i = 0; i + size <= r.bytes; i += size) {
        if (is_packed(r.type)) {  // each packed value drawn alone
            for (int k = 0; k < 4; ++k)
                store_packed_value(&out[i], r.type, k, uniform());
        } else {
            store_element(&out[i], r.type, uniform());
        }
    }
    return out;
}

}  // namespace trn

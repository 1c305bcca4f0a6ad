#include "core/program.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/race_check.h"

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

const char* opcode_name(opcode o) {
    switch (o) {
        case opcode::tensor_tensor:
            return "tensor_tensor";
        case opcode::tensor_scalar:
            return "tensor_scalar";
        case opcode::tensor_copy:
            return "tensor_copy";
        case opcode::memset:
            return "memset";
        case opcode::activation:
            return "activation";
        case opcode::tensor_reduce:
            return "tensor_reduce";
        case opcode::iota:
            return "iota";
        case opcode::dma_trigger:
            return "dma_trigger";
        case opcode::matmul:
            return "matmul";
        case opcode::transpose:
            return "transpose";
        case opcode::max8:
            return "max8";
        case opcode::find_index8:
            return "find_index8";
        case opcode::scalar_tensor_tensor:
            return "scalar_tensor_tensor";
        case opcode::tensor_tensor_scan:
            return "tensor_tensor_scan";
    }
    return "?";
}

const char* alu_name(alu_op a) {
    switch (a) {
        case alu_op::bypass:
            return "bypass";
        case alu_op::add:
            return "add";
        case alu_op::subtract:
            return "subtract";
        case alu_op::multiply:
            return "multiply";
        case alu_op::max:
            return "max";
        case alu_op::min:
            return "min";
    }
    return "?";
}

const char* act_func_name(act_func f) {
    switch (f) {
        case act_func::identity:
            return "identity";
        case act_func::relu:
            return "relu";
        case act_func::exp:
            return "exp";
        case act_func::reciprocal:
            return "reciprocal";
        case act_func::rsqrt:
            return "rsqrt";
        case act_func::sqrt:
            return "sqrt";
        case act_func::square:
            return "square";
        case act_func::sigmoid:
            return "sigmoid";
        case act_func::tanh:
            return "tanh";
        case act_func::silu:
            return "silu";
        case act_func::gelu:
            return "gelu";
        case act_func::log:
            return "log";
    }
    return "?";
}

float apply_act(act_func f, float x) {
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
            return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
        case act_func::log:
            return std::log(x);
    }
    return x;
}

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
           src0 == o.src0 && src1 == o.src1 && imm == o.imm && queue == o.queue &&
           flags == o.flags && func == o.func && waits == o.waits;
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
           hbm_bytes == o.hbm_bytes;
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
            check_operand(t.dst, "dst", lim, p.hbm_bytes, where);
            check_operand(t.src, "src", lim, p.hbm_bytes, where);
            if (t.dst.space == mem_space::psum || t.src.space == mem_space::psum)
                throw user_error(where() + ": DMA cannot reach PSUM");
            if (t.dst.elem_stride != 1 || t.src.elem_stride != 1)
                throw user_error(where() + ": DMA operands must be contiguous in each row");
            if (t.dst.partitions != t.src.partitions || t.dst.row_bytes() != t.src.row_bytes())
                throw user_error(where() + ": dst and src differ in rows or bytes per row");
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
            switch (ins.op) {
                case opcode::dma_trigger:
                    if (ins.queue >= p.queues.size() ||
                        triggers[ins.queue] >= p.queues[ins.queue].size())
                        throw user_error(where() + ": triggers q" + std::to_string(ins.queue) +
                                         ", which has no transfer left to start");
                    ++triggers[ins.queue];
                    break;
                case opcode::matmul:
                    check_operand(ins.src1, "src1", lim, p.hbm_bytes, where);
                    [[fallthrough]];
                case opcode::transpose:
                    check_operand(ins.src0, "src0", lim, p.hbm_bytes, where);
                    check_operand(ins.dst, "dst", lim, p.hbm_bytes, where);
                    if (ins.dst.space != mem_space::psum || ins.src0.space != mem_space::sbuf ||
                        (ins.src1.valid() && ins.src1.space != mem_space::sbuf))
                        throw user_error(where() +
                                         ": the Tensor engine reads SBUF and writes PSUM");
                    break;
                case opcode::tensor_tensor:
                case opcode::scalar_tensor_tensor:
                case opcode::tensor_tensor_scan:
                    check_operand(ins.src1, "src1", lim, p.hbm_bytes, where);
                    if (ins.src0.space == mem_space::psum && ins.src1.space == mem_space::psum)
                        throw user_error(where() + ": both inputs in PSUM is not supported");
                    [[fallthrough]];
                case opcode::find_index8:
                case opcode::tensor_scalar:
                case opcode::activation:
                    if (ins.op != opcode::tensor_tensor && ins.op != opcode::scalar_tensor_tensor &&
                        ins.op != opcode::tensor_tensor_scan && ins.src1.valid())
                        check_operand(ins.src1, "src1", lim, p.hbm_bytes, where);
                    [[fallthrough]];
                case opcode::tensor_copy:
                case opcode::tensor_reduce:
                case opcode::max8:
                    check_operand(ins.src0, "src0", lim, p.hbm_bytes, where);
                    [[fallthrough]];
                case opcode::memset:
                case opcode::iota:
                    check_operand(ins.dst, "dst", lim, p.hbm_bytes, where);
                    if (ins.dst.space == mem_space::hbm ||
                        (ins.src0.valid() && ins.src0.space == mem_space::hbm))
                        throw user_error(where() + ": engines cannot access HBM (use a DMA)");
                    if (ins.src1.valid() && ins.src1.space == mem_space::hbm)
                        throw user_error(where() + ": engines cannot access HBM (use a DMA)");
                    if (ins.src0.valid() && ins.src0.partitions != ins.dst.partitions)
                        throw user_error(where() + ": src0 and dst partition counts differ");
                    if (ins.src1.valid() && ins.src1.partitions != ins.dst.partitions)
                        throw user_error(where() + ": src1 and dst partition counts differ");
                    switch (ins.op) {
                        case opcode::tensor_reduce:
                            break;  // dst is [P, 1..]: the reduction is broadcast
                        case opcode::max8:
                        case opcode::find_index8:
                            if (ins.dst.elems != 8 || ins.src0.elems < 8 ||
                                (ins.op == opcode::find_index8 && ins.src1.elems != 8))
                                throw user_error(where() +
                                                 ": max8/find_index8 take [P, N >= 8] and give "
                                                 "[P, 8]");
                            break;
                        case opcode::tensor_scalar:
                        case opcode::activation:
                            if (ins.src1.valid() && ins.src1.elems != 1)
                                throw user_error(where() + ": a " + opcode_name(ins.op) +
                                                 " operand must be [P, 1]");
                            [[fallthrough]];
                        default:
                            if (ins.src0.valid() && ins.src0.elems != ins.dst.elems)
                                throw user_error(where() + ": src0 and dst shapes differ");
                            if ((ins.op == opcode::tensor_tensor ||
                                 ins.op == opcode::scalar_tensor_tensor ||
                                 ins.op == opcode::tensor_tensor_scan) &&
                                ins.src1.elems != ins.dst.elems)
                                throw user_error(where() + ": src1 and dst shapes differ");
                    }
                    break;
            }
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
    for (std::size_t i = 0; i + size <= r.bytes; i += size) {
        const double u = static_cast<double>(gen() >> 8) / 16777216.0;  // 24 bits in [0,1)
        store_element(&out[i], r.type, static_cast<float>(r.lo + (r.hi - r.lo) * u));
    }
    return out;
}

}  // namespace trn

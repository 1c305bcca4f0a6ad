#include "isa/instruction.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/saturating.h"

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

namespace {

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

}  // namespace trn

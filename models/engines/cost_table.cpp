#include "engines/cost_table.h"

#include <algorithm>
#include <cstdio>

namespace trn {

namespace {
constexpr auto dve = engine_kind::dve, act = engine_kind::act, pool = engine_kind::pool;
constexpr auto any = operand_case::any;
const char* const isa_table = "hardware-facts 2";
const char* const dve_width =
    "hardware-facts 1a, 2 (NC-v3 Vector engine 256 fp32 elements per cycle; the public trn2 "
    "AdamW kernel's profile: about 0.56 cycles per element)";
const char* const pool_guess = "hardware-facts 2 (GPSIMD_START 150 + N, as iota; no Pool rule)";
// The instructions documented from the Neuron 2.26 notes onward, whose formulas the ISA
// reference gives without a NeuronCore version: the same cycles on each (model choice).
const char* const isa_v2 = "hardware-facts 2 (one formula for NC-v2 and NC-v3: model choice)";
const char* const act_measured =
    "hardware-facts 2 (NC-v3 activation: public trn2 profiles, 0.51 cycles per element; the "
    "guide's engine table says 128 elements a cycle)";
const char* const act_v4_doc =
    "hardware-facts 1f (NC-v4: the guide's Vector exponential at 4x the Scalar engine's rate "
    "implies 1 element per partition a cycle)";
const char* const act_v4 =
    "hardware-facts 1f (NC-v4 Scalar engine: tensor_scalar and tensor_copy, 2x for bf16/fp16)";
// core_barrier: no data path (the wait is the other cores' arrival, chip.barrier_latency).
double no_cycles(const instruction&) {
    return 0;
}
const char* const barrier_cost = "0 cycles (the wait is the others' arrival, chip.barrier_latency)";
// topk: 4n + k cycles, n the snake's elements (imm), k the results (imm1).
double topk_cycles(const instruction& ins) {
    return 4 * static_cast<double>(ins.imm) + static_cast<double>(ins.imm1);
}
}  // namespace

const std::vector<cost_rule>& cost_table::rules() {
    static const std::vector<cost_rule> table{
        // Vector engine (DVE)
        {dve, opcode::tensor_tensor, operand_case::all16_sbuf, 3, 0.5, true, 0, isa_table},
        {dve, opcode::tensor_tensor, operand_case::mixed_psum_sbuf, 0, 1, true, 0, isa_table},
        {dve, opcode::tensor_tensor, operand_case::arith16_sbuf, 0, 1, true, 0, isa_table},
        {dve, opcode::tensor_tensor, any, 0, 2, true, 0, isa_table},
        {dve, opcode::tensor_scalar, operand_case::all16_sbuf, 3, 0.25, true, 0, isa_table},
        {dve, opcode::tensor_scalar, any, 3, 0.5, true, 0, isa_table},
        {dve, opcode::tensor_scalar, any, 0, 1, true, 0, isa_table},
        {dve, opcode::tensor_copy, operand_case::all16_sbuf, 3, 0.25, true, 0, isa_table},
        {dve, opcode::tensor_copy, any, 3, 0.5, true, 0, isa_table},
        {dve, opcode::tensor_copy, any, 0, 1, true, 0, isa_table},
        {dve, opcode::memset, operand_case::zero16, 0, 0.5, true, 0, isa_table},
        {dve, opcode::memset, any, 0, 1, true, 0, isa_table},
        {dve, opcode::tensor_reduce, operand_case::bf16_add_max, 0, 0.5, false, 0, isa_table},
        {dve, opcode::tensor_reduce, any, 0, 1, false, 0, isa_table},
        {dve, opcode::max8, any, 0, 1, false, 0, isa_table},
        {dve, opcode::find_index8, any, 0, 1, false, 0, isa_table},
        // NC-v3: the Vector engine moves 256 elements of a non-16-bit dtype per cycle (2 per
        // partition), and a profiled trn2 kernel runs fp32 scalar_tensor_tensor at that rate
        // (hardware-facts 2): N / 2
        {dve, opcode::scalar_tensor_tensor, any, 3, 0.5, false, 0, dve_width},
        {dve, opcode::scalar_tensor_tensor, operand_case::bf16_sub_mul, 0, 1, false, 0, isa_table},
        {dve, opcode::scalar_tensor_tensor, any, 0, 2, false, 0, isa_table},
        {dve, opcode::tensor_tensor_scan, any, 0, 2, true, 0, isa_table},
        {dve, opcode::tensor_scalar_reduce, any, 0, 1, true, 0, isa_v2, true},
        {dve, opcode::reciprocal, any, 0, 8, true, 0, isa_v2},
        {dve, opcode::bn_stats, any, 0, 1, true, 0, isa_v2},
        // tensor_copy_predicated's formula (select_reduce's is not published: the same)
        {dve, opcode::select, operand_case::mixed_psum_sbuf, 0, 1, true, 0, isa_v2},
        {dve, opcode::select, any, 0, 2, true, 0, isa_v2},
        {dve, opcode::range_select, any, 3, 1, true, 0, isa_v2},  // NeuronCore-v3 and newer
        // NeuronCore-v4: 4x the Scalar engine's activation(exp) within the Vector engine's data
        // path: 512 bf16/fp16 elements a cycle, 256 of other dtypes (half that rate)
        {dve, opcode::exponential, operand_case::all16_sbuf, 4, 0.25, true, 0,
         "hardware-facts 1f (4x the Scalar engine's exp; the data path's 16-bit width)"},
        {dve, opcode::exponential, any, 4, 0.5, true, 0,
         "hardware-facts 1f (the data path's 256 elements a cycle of other dtypes)"},
        {dve, opcode::bn_aggr, any, 0, 13.0 / 3.0, true, 0, isa_v2},
        // NeuronCore-v4: "four input elements per partition, per cycle (i.e., 4x Vector
        // performance mode)"
        {dve, opcode::quantize_mx, operand_case::sbuf_only, 4, 0.25, true, 0,
         "hardware-facts 1f (quantize_mx: 4 input elements per partition a cycle)"},
        {dve, opcode::transpose, operand_case::block32, 0, 1, true, 0, isa_v2},
        // Scalar engine (ACT)
        // NC-v3: profiled trn2 kernels run activations at 2 elements per partition per cycle,
        // twice the guide's 128 a cycle (hardware-facts 2); NC-v4 keeps the documented rate.
        {act, opcode::activation, any, 3, 0.5, true, 0, act_measured},
        {act, opcode::activation, any, 4, 1, true, 0, act_v4_doc},
        {act, opcode::activation, any, 0, 1, true, 0, isa_table},
        {act, opcode::activation_reduce, any, 3, 0.5, true, 0, act_measured, true},
        {act, opcode::activation_reduce, any, 4, 1, true, 0, act_v4_doc, true},
        {act, opcode::activation_reduce, any, 0, 1, true, 0, isa_v2, true},
        // NeuronCore-v4: tensor_scalar and tensor_copy natively, 2x for bf16/fp16 (the Vector
        // engine's NC-v3 2x mode)
        {act, opcode::tensor_scalar, operand_case::all16_sbuf, 4, 0.5, true, 0, act_v4},
        {act, opcode::tensor_copy, operand_case::all16_sbuf, 4, 0.5, true, 0, act_v4},
        {act, opcode::tensor_copy, any, 4, 1, true, 0, act_v4},
        {act, opcode::tensor_scalar, any, 0, 1, true, 0, isa_table},
        {act, opcode::tensor_copy, any, 3, 1, true, 0, isa_table},
        // GpSimd engine (Pool): SBUF only
        {pool, opcode::iota, operand_case::sbuf_only, 0, 1, false, 150, isa_table},
        {pool, opcode::tensor_tensor, operand_case::sbuf_only, 0, 2, false, 150, pool_guess},
        {pool, opcode::tensor_scalar, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
        {pool, opcode::tensor_copy, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
        {pool, opcode::memset, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
        {pool, opcode::affine_select, operand_case::sbuf_only, 0, 1, false, 150, isa_v2},
        // nisa.core_barrier: a remote semaphore update and a local wait (no data path)
        {pool, opcode::core_barrier, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
         barrier_cost},
        {act, opcode::core_barrier, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
         barrier_cost},
        {dve, opcode::core_barrier, any, 3, 0, false, 0, "hardware-facts 1e", false, no_cycles,
         barrier_cost},
        {engine_kind::sp, opcode::core_barrier, any, 3, 0, false, 0, "hardware-facts 1e", false,
         no_cycles, barrier_cost},
        {pool, opcode::topk, operand_case::sbuf_only, 3, 0, false, 0, "hardware-facts 2", false,
         topk_cycles, "4 * imm + imm1 cycles (4n + k)"},
    };
    return table;
}

namespace {

bool is16(dtype t) {
    return t == dtype::bfloat16 || t == dtype::float16;
}

bool matches(operand_case c, const instruction& ins) {
    const operand* ops[] = {&ins.dst, &ins.src0, &ins.src1, &ins.src2, &ins.dst1, &ins.src3};
    auto all = [&](auto pred) {
        return std::all_of(std::begin(ops), std::end(ops),
                           [&](const operand* o) { return !o->valid() || pred(*o); });
    };
    switch (c) {
        case operand_case::any:
            return true;
        case operand_case::mixed_psum_sbuf:
            return ins.src1.valid() && ins.src0.space != ins.src1.space;
        case operand_case::arith16_sbuf:
            return (ins.alu == alu_op::add || ins.alu == alu_op::subtract ||
                    ins.alu == alu_op::multiply) &&
                   all([](const operand& o) {
                       return o.type == dtype::bfloat16 && o.space == mem_space::sbuf;
                   });
        case operand_case::all16_sbuf:
            return all([](const operand& o) { return is16(o.type) && o.space == mem_space::sbuf; });
        case operand_case::sbuf_only:
            return all([](const operand& o) { return o.space == mem_space::sbuf; });
        case operand_case::zero16:
            return ins.imm == 0 && is16(ins.dst.type);
        case operand_case::bf16_sub_mul:
            return ins.alu == alu_op::subtract && ins.alu1 == alu_op::multiply &&
                   ins.dst.elems % 2 == 0 &&
                   all([](const operand& o) { return o.type == dtype::bfloat16; });
        case operand_case::block32:
            return ins.dst.partitions <= 32 && ins.dst.elems <= 32 &&
                   ins.dst.space != mem_space::hbm && ins.src0.space != mem_space::hbm;
        case operand_case::bf16_add_max:
            return (ins.alu == alu_op::add || ins.alu == alu_op::max) &&
                   all([](const operand& o) { return o.type == dtype::bfloat16; });
    }
    return false;
}

}  // namespace

std::string formula(const cost_rule& r) {
    if (r.custom) return r.custom_text;
    char n[32];
    if (r.per_elem == 1)
        std::snprintf(n, sizeof n, "N");
    else if (r.per_elem < 1)
        std::snprintf(n, sizeof n, "N/%g", 1 / r.per_elem);
    else if (r.per_elem != static_cast<long>(r.per_elem))  // 13/3: "13N/3"
        std::snprintf(n, sizeof n, "%gN/3", r.per_elem * 3);
    else
        std::snprintf(n, sizeof n, "%gN", r.per_elem);
    std::string out = r.min_ii ? std::string("max(MIN_II, ") + n + ")" : n;
    if (r.fixed) out += " + " + std::to_string(static_cast<long>(r.fixed));
    if (r.plus_min_ii) out += " + MIN_II";
    return out + " cycles";
}

const char* describe(operand_case c) {
    switch (c) {
        case operand_case::any:
            return "any operands";
        case operand_case::mixed_psum_sbuf:
            return "one input in PSUM, the other in SBUF";
        case operand_case::arith16_sbuf:
            return "bf16 add, subtract or multiply, all in SBUF";
        case operand_case::all16_sbuf:
            return "all operands bf16/fp16 in SBUF";
        case operand_case::sbuf_only:
            return "all operands in SBUF";
        case operand_case::zero16:
            return "a zero fill of bf16/fp16";
        case operand_case::bf16_add_max:
            return "bf16, add or max";
        case operand_case::bf16_sub_mul:
            return "bf16, subtract then multiply, even N";
        case operand_case::block32:
            return "at most 32 x 32, in SBUF or PSUM";
    }
    return "?";
}

const char* tensor_engine_cost(opcode op) {
    switch (op) {
        case opcode::matmul:
            return "max(min(64, N_stationary), N_moving) passes, x4 for fp32, /2 for double_row "
                   "(hardware-facts 2)";
        case opcode::transpose:
            return "max(P, min(64, F)) (hardware-facts 2)";
        case opcode::matmul_mx:
            return "max(min(64, N_stationary), N_moving) of the packed sizes: 4 values a "
                   "processing element, 4x the bf16 rate (hardware-facts 1f)";
        default:
            return "";
    }
}

int cost_table::rules_isa(engine_kind e, opcode op) const {
    if (m_isa <= 3) return m_isa;
    for (const auto& r : rules())  // rules of its own for this opcode, else NeuronCore-v3's
        if (r.engine == e && r.op == op && r.isa == m_isa) return m_isa;
    return 3;
}

const cost_rule* cost_table::match(engine_kind e, const instruction& ins) const {
    const int isa = rules_isa(e, ins.op);
    for (const auto& r : rules())
        if (r.engine == e && r.op == ins.op && (r.isa == 0 || r.isa == isa) && matches(r.when, ins))
            return &r;
    return nullptr;
}

bool cost_table::supports(engine_kind e, opcode op) const {
    if (op == opcode::dma_trigger)
        return e == engine_kind::sp || e == engine_kind::act || e == engine_kind::pool;
    for (const auto& r : rules())
        if (r.engine == e && r.op == op && (r.isa == 0 || r.isa == rules_isa(e, op))) return true;
    return false;
}

double cost_table::cycles(engine_kind e, const instruction& ins) const {
    const cost_rule* r = match(e, ins);
    if (!r) return 0;
    if (r->custom) return r->custom(ins);
    // N is the free size of the input for the instructions whose output is smaller than it.
    const double n = info(ins.op).input_sized ? ins.src0.elems : ins.dst.elems;
    double c = r->per_elem * n;
    if (r->min_ii) c = std::max(c, m_min_ii);
    return c + r->fixed + (r->plus_min_ii ? m_min_ii : 0.0);
}

}  // namespace trn

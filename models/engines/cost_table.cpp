#include "engines/cost_table.h"

#include <algorithm>

namespace trn {

namespace {
constexpr auto dve = engine_kind::dve, act = engine_kind::act, pool = engine_kind::pool;
constexpr auto any = operand_case::any;
const char* const isa_table = "hardware-facts 2";
const char* const pool_guess = "hardware-facts 2 (GPSIMD_START 150 + N, as iota; no Pool rule)";
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
        {dve, opcode::scalar_tensor_tensor, operand_case::bf16_sub_mul, 0, 1, false, 0, isa_table},
        {dve, opcode::scalar_tensor_tensor, any, 0, 2, false, 0, isa_table},
        {dve, opcode::tensor_tensor_scan, any, 0, 2, true, 0, isa_table},
        // Scalar engine (ACT)
        {act, opcode::activation, any, 0, 1, true, 0, isa_table},
        {act, opcode::tensor_scalar, any, 0, 1, true, 0, isa_table},
        {act, opcode::tensor_copy, any, 3, 1, true, 0, isa_table},
        // GpSimd engine (Pool): SBUF only
        {pool, opcode::iota, operand_case::sbuf_only, 0, 1, false, 150, isa_table},
        {pool, opcode::tensor_tensor, operand_case::sbuf_only, 0, 2, false, 150, pool_guess},
        {pool, opcode::tensor_scalar, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
        {pool, opcode::tensor_copy, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
        {pool, opcode::memset, operand_case::sbuf_only, 0, 1, false, 150, pool_guess},
    };
    return table;
}

namespace {

bool is16(dtype t) {
    return t == dtype::bfloat16 || t == dtype::float16;
}

bool matches(operand_case c, const instruction& ins) {
    const operand* ops[] = {&ins.dst, &ins.src0, &ins.src1};
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
        case operand_case::bf16_add_max:
            return (ins.alu == alu_op::add || ins.alu == alu_op::max) &&
                   all([](const operand& o) { return o.type == dtype::bfloat16; });
    }
    return false;
}

}  // namespace

const cost_rule* cost_table::match(engine_kind e, const instruction& ins) const {
    for (const auto& r : rules())
        if (r.engine == e && r.op == ins.op && (r.isa == 0 || r.isa == m_isa) &&
            matches(r.when, ins))
            return &r;
    return nullptr;
}

bool cost_table::supports(engine_kind e, opcode op) const {
    if (op == opcode::dma_trigger)
        return e == engine_kind::sp || e == engine_kind::act || e == engine_kind::pool;
    for (const auto& r : rules())
        if (r.engine == e && r.op == op && (r.isa == 0 || r.isa == m_isa)) return true;
    return false;
}

double cost_table::cycles(engine_kind e, const instruction& ins) const {
    const cost_rule* r = match(e, ins);
    if (!r) return 0;
    // N is the free size of the input for the instructions whose output is smaller than it.
    const bool input_sized =
        ins.op == opcode::tensor_reduce || ins.op == opcode::max8 || ins.op == opcode::find_index8;
    const double n = input_sized ? ins.src0.elems : ins.dst.elems;
    double c = r->per_elem * n;
    if (r->min_ii) c = std::max(c, m_min_ii);
    return c + r->fixed;
}

}  // namespace trn

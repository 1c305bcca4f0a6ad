#include "isa/cost_rule.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace trn {

namespace {

bool is16(dtype t) {
    return t == dtype::bfloat16 || t == dtype::float16;
}

}  // namespace

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

}  // namespace trn

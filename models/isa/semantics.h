#pragma once
// The values of the engines' data-path instructions: the ALU operations, and what each
// opcode's row (isa/opcode_row.h) computes, reached through execute_alu.
#include <cstdint>
#include <vector>

#include "isa/instruction.h"

namespace trn {

// Functional semantics of the engine data-path instructions: computes dst from the packed
// source rows (rows * row_bytes each, in their own dtypes) in fp32 and writes dst packed, by the
// opcode's row. Contract: src0, src1, src2 hold the operands the instruction declares (empty
// when it has none); dst1 receives the second output of the *_reduce opcodes.
// `regs`: the executing engine's reduce registers, one per partition (activation_reduce reads
// and writes them; null: registers of this instruction only).
void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, const std::vector<std::uint8_t>& src2,
                 std::vector<std::uint8_t>& dst, std::vector<std::uint8_t>& dst1,
                 std::vector<float>* regs = nullptr);
// The same for instructions without src2 and dst1.
void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, std::vector<std::uint8_t>& dst);

float apply_alu(alu_op op, float a, float b);
// op applied to (a, b), or to (b, a) when `reversed`.
inline float apply_ordered(alu_op op, float a, float b, bool reversed) {
    return reversed ? apply_alu(op, b, a) : apply_alu(op, a, b);
}

// One instruction's operands as its row's execute function reads and writes them: element i of
// src0, src1 and dst counts row by row (i = p * elems + j); dst is sized to dst's bytes.
struct alu_io {
    const instruction& ins;
    const std::vector<std::uint8_t>& src0;
    const std::vector<std::uint8_t>& src1;
    const std::vector<std::uint8_t>& src2;
    std::vector<std::uint8_t>& dst;
    std::vector<std::uint8_t>& dst1;
    std::vector<float>* regs;
    std::size_t n;  // dst's elements

    float in0(std::size_t i) const {
        return load_element(&src0[i * dtype_size(ins.src0.type)], ins.src0.type);
    }
    float in1(std::size_t i) const {
        return load_element(&src1[i * dtype_size(ins.src1.type)], ins.src1.type);
    }
    float in2(std::size_t p) const {  // src2[p, 0]
        return load_element(&src2[p * dtype_size(ins.src2.type)], ins.src2.type);
    }
    void out(std::size_t i, float v) {
        store_element(&dst[i * dtype_size(ins.dst.type)], ins.dst.type, v);
    }
    // dst's value as stored (rounded to its dtype), which the *_reduce opcodes reduce
    float stored(std::size_t i) const {
        return load_element(&dst[i * dtype_size(ins.dst.type)], ins.dst.type);
    }
    // dst1[p, 0] = the reduction `op` of dst[p, :]
    void reduce_rows(alu_op op);
    // The reduction `op` of each row of dst through the engine's reduce registers (flags
    // racc: onto them; rzero: zeroed, nothing reduced), copied to dst1 when it is given.
    void reduce_through_registers(alu_op op);
};

}  // namespace trn

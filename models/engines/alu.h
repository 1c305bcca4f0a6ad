#pragma once
#include <cstdint>
#include <vector>

#include "core/program.h"

namespace trn {

// Functional semantics of the engine data-path instructions: computes dst from the packed
// source rows (rows * row_bytes each, in their own dtypes) in fp32 and writes dst packed.
// Contract: src0, src1, src2 hold the operands the instruction declares (empty when it has
// none); dst1 receives the second output of the *_reduce opcodes.
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

}  // namespace trn

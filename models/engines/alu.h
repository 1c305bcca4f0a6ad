#pragma once
#include <cstdint>
#include <vector>

#include "core/program.h"

namespace trn {

// Functional semantics of the engine data-path instructions: computes dst from the packed
// source rows (rows * row_bytes each, in their own dtypes) in fp32 and writes dst packed.
// Contract: srcs hold src0 then src1 as the instruction declares them.
void execute_alu(const instruction& ins, const std::vector<std::uint8_t>& src0,
                 const std::vector<std::uint8_t>& src1, std::vector<std::uint8_t>& dst);

float apply_alu(alu_op op, float a, float b);

}  // namespace trn

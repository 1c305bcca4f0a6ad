#pragma once
// The operand rules that families of opcodes share, for their rows' checks
// (isa/opcode_row.h). Each throws through the context when its rule does not hold.
#include "isa/opcode_row.h"

namespace trn::operand_checks {

// Two tensor inputs: src1 within bounds, not both inputs in PSUM.
void two_inputs(const instruction& ins, const check_context& cx);
// The per-partition operands: src2 and dst1 on chip, [P, 1] with dst's partition count
// (select's src2 may also be dst's shape); dst1 only where the row's fields have it; src1
// within bounds unless `src1_checked`.
void per_partition_operands(const instruction& ins, const check_context& cx, bool src1_checked);
// src0 within bounds.
void src0(const instruction& ins, const check_context& cx);
// dst within bounds; dst, src0 and src1 on chip; src0 and src1 with dst's partition count.
void on_chip(const instruction& ins, const check_context& cx);
// src1, if given, is [P, 1] (a per-partition scalar).
void scalar_src1(const instruction& ins, const check_context& cx);
// src0 (if given) of dst's free size, and src1 too when `src1_too`.
void same_shape(const instruction& ins, const check_context& cx, bool src1_too);

// The usual chains, first rule first: an elementwise opcode of two tensors (tensor_tensor),
// one with per-partition scalars (tensor_scalar; `needs`, if given, checks the operands the
// opcode requires, after the per-partition ones), one of src0 alone (tensor_copy).
void elementwise_two(const instruction& ins, const check_context& cx);
void elementwise_scalar(const instruction& ins, const check_context& cx,
                        void (*needs)(const instruction&, const check_context&) = nullptr);
void elementwise_one(const instruction& ins, const check_context& cx);

}  // namespace trn::operand_checks

#include "isa/operand_checks.h"

#include "core/error.h"

namespace trn {

void check_context::operand(const trn::operand& op, const char* role) const {
    check_operand(op, role, limits, hbm_bytes, where);
}

void check_context::fail(const std::string& what) const {
    throw user_error(where() + ": " + what);
}

namespace operand_checks {

void two_inputs(const instruction& ins, const check_context& cx) {
    cx.operand(ins.src1, "src1");
    if (ins.src0.space == mem_space::psum && ins.src1.space == mem_space::psum)
        cx.fail("both inputs in PSUM is not supported");
}

void per_partition_operands(const instruction& ins, const check_context& cx, bool src1_checked) {
    for (const auto& [extra, role] :
         {std::pair<const trn::operand*, const char*>{&ins.src2, "src2"}, {&ins.dst1, "dst1"}}) {
        if (!extra->valid()) continue;
        cx.operand(*extra, role);
        if (extra->space == mem_space::hbm) cx.fail("engines cannot access HBM (use a DMA)");
        const bool full = ins.op == opcode::select && extra == &ins.src2 &&
                          extra->elems == ins.dst.elems;  // select's else-tile
        if (extra->partitions != ins.dst.partitions || (extra->elems != 1 && !full))
            cx.fail(std::string(role) + " must be [P, 1] with dst's partition count");
    }
    if (ins.dst1.valid() && !(row(ins.op).info.fields & field::dst1))
        cx.fail("dst1 (a reduction) is given only with the *_reduce opcodes");
    if (!src1_checked && ins.src1.valid()) cx.operand(ins.src1, "src1");
}

void src0(const instruction& ins, const check_context& cx) {
    cx.operand(ins.src0, "src0");
}

void on_chip(const instruction& ins, const check_context& cx) {
    cx.operand(ins.dst, "dst");
    if (ins.dst.space == mem_space::hbm || (ins.src0.valid() && ins.src0.space == mem_space::hbm))
        cx.fail("engines cannot access HBM (use a DMA)");
    if (ins.src1.valid() && ins.src1.space == mem_space::hbm)
        cx.fail("engines cannot access HBM (use a DMA)");
    if (ins.src0.valid() && ins.src0.partitions != ins.dst.partitions)
        cx.fail("src0 and dst partition counts differ");
    if (ins.src1.valid() && ins.src1.partitions != ins.dst.partitions)
        cx.fail("src1 and dst partition counts differ");
}

void scalar_src1(const instruction& ins, const check_context& cx) {
    if (ins.src1.valid() && ins.src1.elems != 1)
        cx.fail(std::string("a ") + opcode_name(ins.op) + " operand must be [P, 1]");
}

void same_shape(const instruction& ins, const check_context& cx, bool src1_too) {
    if (ins.src0.valid() && ins.src0.elems != ins.dst.elems) cx.fail("src0 and dst shapes differ");
    if (src1_too && ins.src1.elems != ins.dst.elems) cx.fail("src1 and dst shapes differ");
}

void elementwise_two(const instruction& ins, const check_context& cx) {
    two_inputs(ins, cx);
    per_partition_operands(ins, cx, true);
    src0(ins, cx);
    on_chip(ins, cx);
    same_shape(ins, cx, true);
}

void elementwise_scalar(const instruction& ins, const check_context& cx,
                        void (*needs)(const instruction&, const check_context&)) {
    per_partition_operands(ins, cx, false);
    if (needs) needs(ins, cx);
    src0(ins, cx);
    on_chip(ins, cx);
    scalar_src1(ins, cx);
    same_shape(ins, cx, false);
}

void elementwise_one(const instruction& ins, const check_context& cx) {
    src0(ins, cx);
    on_chip(ins, cx);
    same_shape(ins, cx, false);
}

}  // namespace operand_checks
}  // namespace trn

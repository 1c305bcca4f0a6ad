#include "isa/operand_checks.h"

#include <algorithm>
#include <string>

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
namespace {

// A tensor indirection's operand and offsets: on chip, the offsets an integer tile in SBUF of
// the operand's partitions, starting on a quadrant (32 partitions), holding at least the
// operand's elements in the engine's snake layout; the indexed tile's `extent` columns within
// the memory.
void check_indirect(const instruction& ins, engine_kind e, const program_limits& lim,
                    std::uint64_t hbm_bytes, const std::function<std::string()>& where) {
    bool seen[operand_slot_count] = {};
    for (const auto& t : ins.indirect) {
        const std::string slot = operand_slot_name(t.slot);
        const operand& op = ins.at(t.slot);
        if (seen[std::size_t(t.slot)])
            throw user_error(where() + ": " + slot + " is indirect twice");
        seen[std::size_t(t.slot)] = true;
        if (t.slot != operand_slot::dst && t.slot != operand_slot::src0 &&
            t.slot != operand_slot::src1)
            throw user_error(where() + ": only dst, src0 and src1 may be indirect, not " + slot);
        if (!op.valid()) throw user_error(where() + ": " + slot + "_index= without " + slot + "=");
        if (op.space == mem_space::hbm)
            throw user_error(where() + ": an indirect " + slot + " is on chip (SBUF or PSUM)");
        if (t.extent == 0) throw user_error(where() + ": " + slot + "_extent is 0");
        operand whole = op;  // the indexed tile
        whole.elems = t.extent;
        check_operand(whole,
                      (slot + " (its " + std::to_string(t.extent) + " indexed columns)").c_str(),
                      lim, hbm_bytes, where);
        const std::string index = slot + "_index";
        check_operand(t.index, index.c_str(), lim, hbm_bytes, where);
        if (t.index.space != mem_space::sbuf || !is_integer(t.index.type))
            throw user_error(where() + ": " + index + " is an integer tile in SBUF, not " +
                             dtype_name(t.index.type) + " in " + mem_space_name(t.index.space));
        if (t.index.partitions != op.partitions)
            throw user_error(where() + ": " + index + " has " + std::to_string(t.index.partitions) +
                             " partitions, " + slot + " " + std::to_string(op.partitions) +
                             " (the same, as NKI's .indirect)");
        if (t.index.partition % 32 != 0)
            throw user_error(where() + ": " + index + " starts at partition " +
                             std::to_string(t.index.partition) +
                             ", not on a quadrant boundary (a multiple of 32)");
        const std::uint32_t g = indirection_group(e), n = op.elems;
        std::uint32_t rows = 0;  // the index rows the offsets of the last group reach
        for (std::uint32_t i = n > g ? n - g : 0; i < n; ++i)
            rows = std::max(rows, indirection_position(i, g, t.index.elems).first + 1);
        if (rows > t.index.partitions)
            throw user_error(where() + ": " + slot + "'s " + std::to_string(n) + " offsets need " +
                             std::to_string(rows) + " partitions of " + index + " (groups of " +
                             std::to_string(g) + " partitions on " + engine_name(e) +
                             "), which has " + std::to_string(t.index.partitions));
    }
}

}  // namespace

void check_instruction(const instruction& ins, engine_kind e, const program_limits& lim,
                       std::uint64_t hbm_bytes, const std::function<std::string()>& where) {
    if (!ins.indirect.empty()) check_indirect(ins, e, lim, hbm_bytes, where);
    if (ins.op != opcode::matmul_mx && ins.op != opcode::quantize_mx) {
        for (const operand* o : {&ins.dst, &ins.src0, &ins.src1, &ins.src2, &ins.dst1, &ins.src3})
            if (o->valid() && is_mx(o->type))
                throw user_error(where() + ": " + dtype_name(o->type) +
                                 " is an MX type: "
                                 "matmul_mx and quantize_mx take it, and DMAs move it");
        if (ins.src3.valid()) throw user_error(where() + ": src3 is given only with matmul_mx");
    }
    row(ins.op).check(ins, e, check_context{lim, hbm_bytes, where});
}

}  // namespace trn

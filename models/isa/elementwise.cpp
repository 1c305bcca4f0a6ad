// The rows of the elementwise opcodes: each element of dst from the elements at its place.
#include <cmath>

#include "isa/opcode_row.h"
#include "isa/operand_checks.h"
#include "isa/semantics.h"
#include "isa/sources.h"

namespace trn {

namespace {
namespace oc = operand_checks;
using namespace sources;
constexpr auto dve = engine_kind::dve, act = engine_kind::act, pool = engine_kind::pool;
constexpr auto any = operand_case::any;
}  // namespace

const opcode_row& row_of_tensor_tensor() {
    static const opcode_row r{
        .info = {"tensor_tensor", field::dst | field::src0 | field::src1 | field::alu, 1, false,
                 "dst = src0 alu src1"},
        .costs = {{dve, operand_case::all16_sbuf, 3, 0.5, true, 0, isa_table},
                  {dve, operand_case::mixed_psum_sbuf, 0, 1, true, 0, isa_table},
                  {dve, operand_case::arith16_sbuf, 0, 1, true, 0, isa_table},
                  {dve, any, 0, 2, true, 0, isa_table},
                  {pool, operand_case::sbuf_only, 0, 2, false, 150, pool_guess}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_two(ins, cx); },
        .execute =
            [](alu_io& io) {
                for (std::size_t i = 0; i < io.n; ++i)
                    io.out(i, apply_alu(io.ins.alu, io.in0(i), io.in1(i)));
            }};
    return r;
}

namespace {

// tensor_scalar and tensor_scalar_reduce: (src0 alu s0) [alu1 s1], s0 and s1 per partition.
void scalar_ops(alu_io& io, bool second) {
    const instruction& ins = io.ins;
    const bool rev0 = ins.flags & flag::reverse0, rev1 = ins.flags & flag::reverse1;
    for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
        const float s = ins.src1.valid() ? io.in1(p) : ins.imm;  // one per partition
        const float t = ins.src2.valid() ? io.in2(p) : ins.imm1;
        for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
            const std::size_t i = std::size_t{p} * ins.dst.elems + j;
            const float v = apply_ordered(ins.alu, io.in0(i), s, rev0);
            io.out(i,
                   second ? apply_ordered(ins.alu1, v, t, rev1 && ins.alu1 != alu_op::bypass) : v);
        }
    }
}

}  // namespace

const opcode_row& row_of_tensor_scalar() {
    static const opcode_row r{
        .info = {"tensor_scalar",
                 field::dst | field::src0 | field::src1 | field::src2 | field::alu | field::imm |
                     field::alu1 | field::imm1 | field::flags,
                 1, false,
                 "dst = (src0 alu s0) alu1 s1: s0 is imm or src1[p, 0], s1 imm1 or src2[p, 0]; "
                 "flags=rev0 / rev1 swap an operation's operands"},
        .flags = flag::reverse0 | flag::reverse1,
        .costs = {{dve, operand_case::all16_sbuf, 3, 0.25, true, 0, isa_table},
                  {dve, any, 3, 0.5, true, 0, isa_table},
                  {dve, any, 0, 1, true, 0, isa_table},
                  // NeuronCore-v4: natively, 2x for bf16/fp16 (the Vector engine's NC-v3 2x mode)
                  {act, operand_case::all16_sbuf, 4, 0.5, true, 0, act_v4},
                  {act, any, 0, 1, true, 0, isa_table},
                  {pool, operand_case::sbuf_only, 0, 1, false, 150, pool_guess}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_scalar(ins, cx); },
        .execute = [](alu_io& io) { scalar_ops(io, true); }};
    return r;
}

const opcode_row& row_of_tensor_scalar_reduce() {
    static const opcode_row r{
        .info = {"tensor_scalar_reduce",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::alu | field::imm |
                     field::alu1 | field::flags,
                 3, false,
                 "dst = src0 alu (imm or src1[p, 0]), and dst1[p, 0] = reduce alu1 over dst[p, :] "
                 "in the same pass; flags=rev0 swaps the operation's operands"},
        .flags = flag::reverse0,
        .costs = {{dve, any, 0, 1, true, 0, isa_v2, true}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::elementwise_scalar(ins, cx, [](const instruction& i, const check_context& c) {
                    if (!i.dst1.valid()) c.fail("tensor_scalar_reduce needs dst1");
                });
            },
        .execute =
            [](alu_io& io) {
                scalar_ops(io, false);
                io.reduce_rows(io.ins.alu1);
            }};
    return r;
}

const opcode_row& row_of_tensor_copy() {
    static const opcode_row r{
        .info = {"tensor_copy", field::dst | field::src0, 1, false, "dst = src0 (dtype converted)"},
        // (on the Scalar engine from NeuronCore-v3)
        .before = "on the Scalar engine, activation func=identity (nisa.activation(op=nl.copy))",
        .costs = {{dve, operand_case::all16_sbuf, 3, 0.25, true, 0, isa_table},
                  {dve, any, 3, 0.5, true, 0, isa_table},
                  {dve, any, 0, 1, true, 0, isa_table},
                  {act, operand_case::all16_sbuf, 4, 0.5, true, 0, act_v4},
                  {act, any, 4, 1, true, 0, act_v4},
                  {act, any, 3, 1, true, 0, isa_table},
                  {pool, operand_case::sbuf_only, 0, 1, false, 150, pool_guess}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_one(ins, cx); },
        .execute =
            [](alu_io& io) {
                for (std::size_t i = 0; i < io.n; ++i)
                    io.out(i, io.in0(i));
            }};
    return r;
}

const opcode_row& row_of_reciprocal() {
    static const opcode_row r{
        .info = {"reciprocal", field::dst | field::src0, 3, false,
                 "dst = 1 / src0 on the Vector engine (more precise than the Scalar engine's); "
                 "its cycles an element are core.dve.reciprocal_cycles (the reference's 8 below)"},
        .costs = {{dve, any, 0, 8, true, 0, isa_v2}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_one(ins, cx); },
        .execute =
            [](alu_io& io) {
                for (std::size_t i = 0; i < io.n; ++i)
                    io.out(i, 1.0f / io.in0(i));
            }};
    return r;
}

const opcode_row& row_of_memset() {
    static const opcode_row r{
        .info = {"memset", field::dst | field::imm, 1, false, "dst = imm"},
        .costs = {{dve, operand_case::zero16, 0, 0.5, true, 0, isa_table},
                  {dve, any, 0, 1, true, 0, isa_table},
                  {pool, operand_case::sbuf_only, 0, 1, false, 150, pool_guess}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::on_chip(ins, cx);
                oc::same_shape(ins, cx, false);
            },
        .execute =
            [](alu_io& io) {
                for (std::size_t i = 0; i < io.n; ++i)
                    io.out(i, io.ins.imm);
            }};
    return r;
}

const opcode_row& row_of_iota() {
    static const opcode_row r{
        .info = {"iota", field::dst | field::imm | field::imm1, 1, false,
                 "dst[p, i] = imm + imm1 * p + i"},
        .costs = {{pool, operand_case::sbuf_only, 0, 1, false, 150, isa_table}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::on_chip(ins, cx);
                oc::same_shape(ins, cx, false);
            },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                    for (std::uint32_t j = 0; j < ins.dst.elems; ++j)
                        io.out(std::size_t{p} * ins.dst.elems + j,
                               static_cast<float>(static_cast<double>(ins.imm) +
                                                  static_cast<double>(ins.imm1) * p + j));
            }};
    return r;
}

const opcode_row& row_of_scalar_tensor_tensor() {
    static const opcode_row r{
        .info = {"scalar_tensor_tensor",
                 field::dst | field::src0 | field::src1 | field::src2 | field::alu | field::imm |
                     field::alu1 | field::flags,
                 2, false,
                 "dst = (src0 alu s) alu1 src1: s is imm or src2[p, 0]; flags=rev0 / rev1 swap an "
                 "operation's operands"},
        .flags = flag::reverse0 | flag::reverse1,
        // NC-v3: the Vector engine moves 256 elements of a non-16-bit dtype per cycle (2 per
        // partition), and a profiled trn2 kernel runs fp32 scalar_tensor_tensor at that rate
        // (hardware-facts 2): N / 2
        .costs = {{dve, any, 3, 0.5, false, 0, dve_width},
                  {dve, operand_case::bf16_sub_mul, 0, 1, false, 0, isa_table},
                  {dve, any, 0, 2, false, 0, isa_table}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_two(ins, cx); },
        .execute =
            [](alu_io& io) {
                const instruction& ins = io.ins;
                const bool rev0 = ins.flags & flag::reverse0, rev1 = ins.flags & flag::reverse1;
                for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                    const float s = ins.src2.valid() ? io.in2(p) : ins.imm;  // one per partition
                    for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
                        const std::size_t i = std::size_t{p} * ins.dst.elems + j;
                        io.out(i,
                               apply_ordered(ins.alu1, apply_ordered(ins.alu, io.in0(i), s, rev0),
                                             io.in1(i), rev1));
                    }
                }
            }};
    return r;
}

const opcode_row& row_of_select() {
    static const opcode_row r{
        .info = {"select",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::imm |
                     field::alu | field::flags,
                 3, false,
                 "dst = src1 where src0 (the predicate) is not 0, else src2 (a tile of dst's shape "
                 "or [P, 1]) or imm; flags=rev0 inverts the predicate; dst1[p, 0], if given, = "
                 "the alu reduction of dst[p, :]"},
        .flags = flag::reverse0,
        // tensor_copy_predicated's formula (select_reduce's is not published: the same)
        .costs = {{dve, operand_case::mixed_psum_sbuf, 0, 1, true, 0, isa_v2},
                  {dve, any, 0, 2, true, 0, isa_v2}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_two(ins, cx); },
        .execute = [](alu_io& io) {  // src2 [P, 1], of dst's shape, or imm
            const instruction& ins = io.ins;
            const bool rev0 = ins.flags & flag::reverse0;
            const bool per_partition = ins.src2.valid() && ins.src2.elems == 1 && ins.dst.elems > 1;
            const std::size_t s2 = ins.src2.valid() ? dtype_size(ins.src2.type) : 0;
            for (std::size_t i = 0; i < io.n; ++i) {
                const bool keep = (io.in0(i) != 0.0f) != rev0;
                const float other =
                    !ins.src2.valid()
                        ? ins.imm
                        : load_element(&io.src2[(per_partition ? i / ins.dst.elems : i) * s2],
                                       ins.src2.type);
                io.out(i, keep ? io.in1(i) : other);
            }
            if (ins.dst1.valid()) io.reduce_rows(ins.alu);
        }};
    return r;
}

const opcode_row& row_of_range_select() {
    static const opcode_row r{
        .info = {"range_select",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::alu |
                     field::alu1 | field::imm | field::imm1,
                 3, false,
                 "dst[p, i] = src0[p, i] where (i + imm) alu src1[p, 0] and (i + imm) alu1 "
                 "src2[p, 0] both hold, else imm1; dst1[p, 0], if given, = the max of dst[p, :] "
                 "(NeuronCore-v3)"},
        .costs = {{dve, any, 3, 1, true, 0, isa_v2}},  // NeuronCore-v3 and newer
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::elementwise_scalar(ins, cx, [](const instruction& i, const check_context& c) {
                    if (!i.src1.valid() || !i.src2.valid())
                        c.fail("range_select needs src1 and src2 (its bounds)");
                });
            },
        .execute = [](alu_io& io) {  // the element's free index against per-partition bounds
            const instruction& ins = io.ins;
            for (std::uint32_t p = 0; p < ins.dst.partitions; ++p) {
                const float lo = io.in1(p), hi = io.in2(p);
                for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
                    const std::size_t i = std::size_t{p} * ins.dst.elems + j;
                    const float at = static_cast<float>(j) + ins.imm;
                    const bool keep =
                        apply_alu(ins.alu, at, lo) != 0.0f && apply_alu(ins.alu1, at, hi) != 0.0f;
                    io.out(i, keep ? io.in0(i) : ins.imm1);
                }
            }
            if (ins.dst1.valid()) io.reduce_rows(alu_op::max);
        }};
    return r;
}

const opcode_row& row_of_affine_select() {
    static const opcode_row r{
        .info = {"affine_select",
                 field::dst | field::src0 | field::alu | field::imm | field::imm1 | field::imm2 |
                     field::imm3,
                 3, false,
                 "dst[p, i] = src0[p, i] where (imm + imm1 * p + imm2 * i) alu 0 holds, else imm3 "
                 "(a predicate the GpSimd engine computes element by element: a causal mask)"},
        .costs = {{pool, operand_case::sbuf_only, 0, 1, false, 150, isa_v2}},
        .check = [](const instruction& ins, engine_kind,
                    const check_context& cx) { oc::elementwise_one(ins, cx); },
        .execute = [](alu_io& io) {  // the predicate in double: exact for integer steps
            const instruction& ins = io.ins;
            for (std::uint32_t p = 0; p < ins.dst.partitions; ++p)
                for (std::uint32_t j = 0; j < ins.dst.elems; ++j) {
                    const std::size_t i = std::size_t{p} * ins.dst.elems + j;
                    const double v = double{ins.imm} + double{ins.imm1} * p + double{ins.imm2} * j;
                    io.out(i, apply_alu(ins.alu, static_cast<float>(v), 0.0f) != 0.0f ? io.in0(i)
                                                                                      : ins.imm3);
                }
        }};
    return r;
}

}  // namespace trn

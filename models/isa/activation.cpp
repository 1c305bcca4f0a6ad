// The rows of the activation opcodes: a function of each element, and the rows' sums through
// the engine's reduce registers.
#include "isa/opcode_row.h"
#include "isa/operand_checks.h"
#include "isa/semantics.h"
#include "isa/sources.h"

namespace trn {

namespace {
namespace oc = operand_checks;
using namespace sources;
constexpr auto dve = engine_kind::dve, act = engine_kind::act;
constexpr auto any = operand_case::any;

// func(src0 * scale + bias): scale src2[p, 0] or imm (0 means 1), bias src1[p, 0] or 0.
void activate(alu_io& io) {
    const instruction& ins = io.ins;
    for (std::size_t i = 0; i < io.n; ++i) {
        const std::size_t p = i / ins.dst.elems;
        const float bias = ins.src1.valid() ? io.in1(p) : 0.0f;
        const float scale = ins.src2.valid() ? io.in2(p) : (ins.imm == 0 ? 1.0f : ins.imm);
        io.out(i, apply_act(ins.func, io.in0(i) * scale + bias));
    }
}

void check_activation(const instruction& ins, engine_kind, const check_context& cx) {
    oc::elementwise_scalar(ins, cx);
}

}  // namespace

const opcode_row& row_of_activation() {
    static const opcode_row r{
        .info = {"activation",
                 field::dst | field::src0 | field::src1 | field::src2 | field::func | field::imm, 1,
                 false,
                 "dst = func(src0 * scale + bias): scale is src2[p, 0] if given, else imm (0 means "
                 "1); bias src1[p, 0] if given, else 0"},
        // NC-v3: profiled trn2 kernels run activations at 2 elements per partition per cycle,
        // twice the guide's 128 a cycle (hardware-facts 2); NC-v4 keeps the documented rate.
        .costs = {{act, any, 3, 0.5, true, 0, act_measured},
                  {act, any, 4, 1, true, 0, act_v4_doc},
                  {act, any, 0, 1, true, 0, isa_table}},
        .check = check_activation,
        .execute = activate};
    return r;
}

const opcode_row& row_of_activation_reduce() {
    static const opcode_row r{
        .info = {"activation_reduce",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::src2 | field::func |
                     field::imm | field::alu | field::flags,
                 3, false,
                 "activation, and the reduce alu over dst[p, :] into the Scalar engine's register "
                 "of partition p (flags=racc: reduced onto it; rzero: zeroed, nothing reduced), "
                 "copied to dst1[p, 0] when dst1 is given"},
        .flags = flag::reduce_accumulate | flag::reduce_reset,
        .costs = {{act, any, 3, 0.5, true, 0, act_measured, true},
                  {act, any, 4, 1, true, 0, act_v4_doc, true},
                  {act, any, 0, 1, true, 0, isa_v2, true}},
        .check =
            [](const instruction& ins, engine_kind, const check_context& cx) {
                oc::elementwise_scalar(ins, cx);
                if (ins.alu != alu_op::add && cx.limits.isa_version > 0 &&
                    cx.limits.isa_version < 3)
                    cx.fail(std::string("reduce alu ") + alu_name(ins.alu) +
                            ": NeuronCore-v2 reduces with add only");
            },
        .execute =
            [](alu_io& io) {
                activate(io);
                io.reduce_through_registers(io.ins.alu);
            }};
    return r;
}

const opcode_row& row_of_exponential() {
    static const opcode_row r{
        .info = {"exponential",
                 field::dst | field::dst1 | field::src0 | field::src1 | field::imm | field::flags,
                 3, false,
                 "dst = exp(src0 - m), m = src1[p, 0] if given, else imm; with dst1, the sum of "
                 "dst[p, :] through the Vector engine's reduce register of partition p "
                 "(flags=racc: added onto it; rzero: zeroed, nothing reduced), copied to dst1[p, "
                 "0] (Vector engine, NeuronCore-v4)"},
        .flags = flag::reduce_accumulate | flag::reduce_reset,
        .before = "activation func=exp on the Scalar engine (nisa.activation(op=nl.exp))",
        // NeuronCore-v4: 4x the Scalar engine's activation(exp) within the Vector engine's data
        // path: 512 bf16/fp16 elements a cycle, 256 of other dtypes (half that rate)
        .costs = {{dve, operand_case::all16_sbuf, 4, 0.25, true, 0,
                   "hardware-facts 1f (4x the Scalar engine's exp; the data path's 16-bit width)"},
                  {dve, any, 4, 0.5, true, 0,
                   "hardware-facts 1f (the data path's 256 elements a cycle of other dtypes)"}},
        .check = check_activation,
        .execute = [](alu_io& io) {
            const instruction& ins = io.ins;
            for (std::size_t i = 0; i < io.n; ++i) {
                const std::size_t p = i / ins.dst.elems;
                io.out(i, apply_act(act_func::exp,
                                    io.in0(i) - (ins.src1.valid() ? io.in1(p) : ins.imm)));
            }
            if (ins.dst1.valid() || (ins.flags & (flag::reduce_accumulate | flag::reduce_reset)))
                io.reduce_through_registers(alu_op::add);
        }};
    return r;
}

}  // namespace trn
